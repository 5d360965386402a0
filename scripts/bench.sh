#!/usr/bin/env bash
# End-to-end speed and memory of torchtriage on synthetic traces.
#
#   scripts/bench.sh [--sizes 1,4,20] [--formats json,gz,zst] [--cmd stats|triage]
#                    [--runs 3] [--reference DIR] [--data DIR]
#
# For each size (GB) and format it generates bench-data/<N>g.<fmt> once
# (scripts/gen-trace.sh), runs `torchtriage <cmd> --quiet` --runs times and
# prints the median wall time, MB/s of uncompressed JSON and the peak RSS
# (GNU time's maximum resident set size). With --reference DIR (the folder
# holding analyze_llm_torch_profile.py) it also runs the Python reference once
# on the plain 1 GB file and prints its time and peak RSS, or where it failed.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1; formats=json,gz,zst; cmd=stats; runs=3; reference=""; data=bench-data
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift ;;
    --formats) formats=$2; shift ;;
    --cmd) cmd=$2; shift ;;
    --runs) runs=$2; shift ;;
    --reference) reference=$2; shift ;;
    --data) data=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
cargo build --quiet --release --bin torchtriage --example gen_trace
mkdir -p "$data"
bin=./target/release/torchtriage

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-22s %-7s %10s %10s %12s %12s\n' file cmd "median s" "MB/s" "peak RSS MB" "json MB"
for gb in ${sizes//,/ }; do
  plain="$data/${gb}g.json"
  [ -f "$plain" ] || ./target/release/examples/gen_trace --size-mb $((gb * 1024)) "$plain" 2>/dev/null
  json_bytes=$(stat -c %s "$plain")
  for fmt in ${formats//,/ }; do
    case "$fmt" in
      json) f="$plain" ;;
      gz) f="$plain.gz"; [ -f "$f" ] || gzip -1 -c "$plain" > "$f" ;;
      zst) f="$plain.zst"; [ -f "$f" ] || zstd -q -3 -T2 "$plain" -o "$f" ;;
      *) echo "unknown format $fmt" >&2; exit 2 ;;
    esac
    times=(); rss=()
    for _ in $(seq "$runs"); do
      out=$( { /usr/bin/time -f '%e %M' "$bin" "$cmd" --quiet "$f" > /dev/null; } 2>&1 | tail -1)
      times+=("${out% *}"); rss+=("${out#* }")
    done
    t=$(printf '%s\n' "${times[@]}" | median)
    r=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
    awk -v f="$(basename "$f")" -v c="$cmd" -v t="$t" -v r="$r" -v b="$json_bytes" \
      'BEGIN { printf "%-22s %-7s %10s %10.0f %12.1f %12.1f\n", f, c, t, b / 1e6 / t, r / 1024, b / 1e6 }'
  done
done

if [ -n "$reference" ]; then
  f="$data/1g.json"
  echo "reference: python3 $reference/analyze_llm_torch_profile.py --mapping-input $f --formal-input $f"
  out=$( { /usr/bin/time -f '%e %M %x' python3 "$reference/analyze_llm_torch_profile.py" \
      --mapping-input "$f" --formal-input "$f" > /dev/null 2>"$data/reference.stderr"; } 2>&1 | tail -1) || true
  read -r t r code <<< "$out"
  awk -v t="$t" -v r="$r" -v c="$code" -v e="$data/reference.stderr" \
    'BEGIN { printf "reference: %s s, peak RSS %.1f MB, exit %s (stderr in %s)\n", t, r / 1024, c, e }'
fi
