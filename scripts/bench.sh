#!/usr/bin/env bash
# End-to-end speed and memory of torchtriage, and of the Python reference.
#
#   scripts/bench.sh [--sizes 1,4,20] [--formats json,gz,zst] [--cmd triage|stats]
#                    [--runs 3] [--data DIR]
#                    [--reference DIR] [--ref-timeout SECONDS] [--real DIR]
#
# For each size (GB) and format it generates DIR/<N>g.json (+ .gz, .zst) once
# with the synthetic generator (examples/gen_trace.rs), runs
# `torchtriage <cmd> --quiet` --runs times and prints the median wall time,
# MB/s of uncompressed JSON (1 MB = 10^6 bytes) and the largest peak RSS (GNU
# time's maximum resident set size, converted from KiB to MB) of the runs,
# with the scale bar 64 MB + 10% of the JSON size beside it.
#
# With --real DIR it also times `triage` on every *.json / *.json.gz trace in
# DIR (for example ../shared/traces/traceMap), with at least 15 runs.
#
# With --reference DIR (the folder holding analyze_llm_torch_profile.py) it
# runs the Python reference once per --real trace and once on the plain 1 GB
# file (mapping = formal = that trace, as `torchtriage triage` does), after
# all torchtriage runs, and prints its time and peak RSS, or where it failed
# (exit code; 124 = stopped by --ref-timeout, default 3600 s).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1,4,20; formats=json,gz,zst; cmd=triage; runs=3; reference=""; ref_timeout=3600
data=bench-data; real=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) sizes=$2; shift ;;
    --formats) formats=$2; shift ;;
    --cmd) cmd=$2; shift ;;
    --runs) runs=$2; shift ;;
    --reference) reference=$2; shift ;;
    --ref-timeout) ref_timeout=$2; shift ;;
    --real) real=$2; shift ;;
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

# measure ERRFILE CMD...: one run; prints "SECONDS RSS_KB EXIT" (wall time
# from the clock in ns, peak RSS and exit status from GNU time).
measure() {
  local err=$1 tf t0 t1; shift
  tf=$(mktemp)
  t0=$(date +%s%N)
  /usr/bin/time -o "$tf" -f '%M %x' "$@" > /dev/null 2>> "$err" || true
  t1=$(date +%s%N)
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(tail -1 "$tf")"
  rm -f "$tf"
}

# time_runs FILE: median seconds and max peak RSS (KB) of --runs runs.
time_runs() {
  local f=$1 times=() rss=() t r code
  for _ in $(seq "$runs"); do
    read -r t r code <<< "$(measure /dev/stderr "$bin" "$cmd" --quiet "$f")"
    [ "$code" = 0 ] || { echo "torchtriage failed on $f (exit $code)" >&2; exit 1; }
    times+=("$t"); rss+=("$r")
  done
  echo "$(printf '%s\n' "${times[@]}" | median) $(printf '%s\n' "${rss[@]}" | sort -n | tail -1)"
}

# Peak RSS is printed in MB of 10^6 bytes (GNU time reports KiB), like the
# JSON size, and "RSS bar MB" is the scale bar: 64 MB + 10% of the JSON size.
row() { # FILE CMD SECONDS RSS_KB BYTES
  awk -v f="$1" -v c="$2" -v t="$3" -v r="$4" -v b="$5" \
    'BEGIN { printf "%-44s %-7s %10s %10.0f %12.1f %12.1f %12.1f\n", f, c, t, b / 1e6 / t, r * 1024 / 1e6, b / 1e6, 64 + b / 1e7 }'
}

# reference_run FILE: one run of the Python reference; prints "SECONDS RSS_KB EXIT".
reference_run() {
  measure "$data/reference.stderr" timeout "$ref_timeout" python3 "$reference/analyze_llm_torch_profile.py" \
    --mapping-input "$1" --formal-input "$1"
}

echo "# $(date -u '+%F %T UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), runs $runs"
printf '%-44s %-7s %10s %10s %12s %12s %12s\n' file cmd "median s" "MB/s" "peak RSS MB" "json MB" "RSS bar MB"
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
    read -r t r <<< "$(time_runs "$f")"
    row "$(basename "$f")" "$cmd" "$t" "$r" "$json_bytes"
  done
done

real_traces=()
if [ -n "$real" ]; then
  mapfile -t real_traces < <(find "$real" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' \) | sort)
  for f in "${real_traces[@]}"; do
    bytes=$(case "$f" in *.gz) gzip -dc "$f" | wc -c ;; *) stat -c %s "$f" ;; esac)
    # Small files: more runs, as their times are a few tens of ms.
    read -r t r <<< "$(runs=$((runs < 15 ? 15 : runs)) time_runs "$f")"
    row "$(basename "$f")" "$cmd" "$t" "$r" "$bytes"
    echo "$f $t" >> "$data/ours.real"
  done
fi

if [ -n "$reference" ]; then
  : > "$data/reference.stderr"
  for f in "${real_traces[@]}"; do
    read -r t r code <<< "$(reference_run "$f")"
    ours=$(awk -v f="$f" '$1 == f { v = $2 } END { print v }' "$data/ours.real")
    awk -v f="$(basename "$f")" -v t="$t" -v r="$r" -v c="$code" -v o="$ours" \
      'BEGIN { printf "reference %-34s %8s s, peak RSS %8.1f MB, exit %s; torchtriage %s s: %.0fx faster\n", f, t, r * 1024 / 1e6, c, o, t / o }'
  done
  f="$data/1g.json"
  if [ -f "$f" ]; then
    echo "reference on $f (timeout ${ref_timeout} s) started $(date -u '+%T UTC')"
    read -r t r code <<< "$(reference_run "$f")"
    awk -v t="$t" -v r="$r" -v c="$code" -v e="$data/reference.stderr" \
      'BEGIN { printf "reference 1g.json: %s s, peak RSS %.1f MB, exit %s%s (stderr in %s)\n", t, r * 1024 / 1e6, c, (c == 124 ? " = stopped by the timeout" : ""), e }'
  fi
fi
rm -f "$data/ours.real"
