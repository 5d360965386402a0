#!/usr/bin/env bash
# End-to-end speed and memory of torchtriage, and of the Python reference.
#
#   scripts/bench.sh [--sizes 1,4,20] [--formats json,gz,zst] [--cmd triage|stats]
#                    [--runs 3] [--data DIR] [--no-build] [--pgo]
#                    [--tile TRACE [--tile-script PATH] [--synthetic]]
#                    [--reference DIR] [--ref-timeout SECONDS] [--real DIR]
#
# Sizes are in GB of 2^30 bytes and may be fractional (--sizes 0.05). For
# each size and format it generates DIR/<N>g.json (+ .gz with gzip -1, .zst
# with zstd -3) once with the synthetic generator (examples/gen_trace.rs),
# runs `torchtriage <cmd> --quiet` --runs times and prints the median wall
# time, MB/s of uncompressed JSON (1 MB = 10^6 bytes) and the largest peak
# RSS (GNU time's maximum resident set size, converted from KiB to MB) of the
# runs, with the scale bar 64 MB + 5% of the JSON size beside it.
#
# Beside each row it prints the floor of reading the input: the median wall
# time of `wc -l` on the uncompressed JSON (for a .gz / .zst row, on the
# plain JSON file it was made from) over as many runs, torchtriage's time as
# a multiple of it ("x wc"), and for a .gz / .zst row the median time of
# `gzip -dc` / `zstd -dc` to /dev/null ("dec s"). Before a file's timed
# commands its pages are dropped from the page cache (`dd iflag=nocache
# count=0`) and it is read back once (`cat FILE > /dev/null`), so each one
# starts from the page cache when the file fits there, and from the same
# cache however the file got there: how a file came into the cache changes
# how fast it reads back (a 1.12 GB trace just written by tile-trace.py gave
# `wc -l` 0.23 s, the same file read back after the drop 0.13 s).
# As root the whole page cache is dropped too (/proc/sys/vm/drop_caches):
# the file's own drop can leave its pages where they were (a tiled 1.12 GB
# trace read by `wc -l` in 200 ms after it, in 130 ms after the whole cache
# was dropped and the file read back).
#
# With --tile TRACE (a real trace, .json or .json.gz) the traces are that
# trace tiled up to each size instead of synthetic ones (--synthetic keeps
# the synthetic ones too): DIR/<trace>-x<COPIES>.json, with COPIES =
# ceil(size / the trace's uncompressed JSON size), written once by
# tile-trace.py (--tile-script PATH, or $TILE_TRACE; default
# ../shared/tools/tile-trace.py), and its .gz (gzip -6) and .zst (zstd -3)
# once when those formats are asked.
#
# With --real DIR it also times `triage` on every *.json / *.json.gz trace in
# DIR (for example ../shared/traces/traceMap), with at least 15 runs; its
# wc -l floor is taken on each trace decompressed once into the --data DIR.
#
# With --reference DIR (the folder holding analyze_llm_torch_profile.py) it
# runs the Python reference once per --real trace and once on the plain 1 GB
# file (mapping = formal = that trace, as `torchtriage triage` does), after
# all torchtriage runs, and prints its time and peak RSS, or where it failed
# (exit code; 124 = stopped by --ref-timeout, default 3600 s).
#
# --pgo times the profile-guided build of scripts/pgo-build.sh
# (target/pgo/torchtriage), building it first unless --no-build; the figures
# in docs/architecture.md name the build they were taken with.
#
# --no-build uses the binaries already in target/ (or $CARGO_TARGET_DIR)
# instead of running `cargo build --release` first. Relative paths are taken
# from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1,4,20; formats=json,gz,zst; cmd=triage; runs=3; reference=""; ref_timeout=3600
data=bench-data; real=""; build=1; tile=""; tile_script=${TILE_TRACE:-../shared/tools/tile-trace.py}
synthetic=""; pgo=""
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
    --tile) tile=$2; shift ;;
    --tile-script) tile_script=$2; shift ;;
    --synthetic) synthetic=1 ;;
    --no-build) build="" ;;
    --pgo) pgo=1 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$tile" ] || synthetic=1
for gb in ${sizes//,/ }; do
  [[ $gb =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "size $gb is not a number of GB" >&2; exit 2; }
done
for fmt in ${formats//,/ }; do
  case "$fmt" in json|gz|zst) ;; *) echo "unknown format $fmt" >&2; exit 2 ;; esac
done
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
if [ -n "$tile" ]; then
  [ -f "$tile" ] || { echo "--tile: no trace $tile" >&2; exit 2; }
  [ -f "$tile_script" ] || {
    echo "--tile: no tile script $tile_script (set --tile-script PATH or TILE_TRACE)" >&2; exit 2; }
  command -v python3 >/dev/null || { echo "--tile needs python3" >&2; exit 2; }
fi
target=${CARGO_TARGET_DIR:-target}
bin=$target/release/torchtriage
gen=$target/release/examples/gen_trace
if [ -n "$pgo" ]; then
  bin=$target/pgo/torchtriage
  [ -z "$build" ] || { cargo build --quiet --release --example gen_trace && scripts/pgo-build.sh > /dev/null; }
else
  [ -z "$build" ] || cargo build --quiet --release --bin torchtriage --example gen_trace
fi
for b in "$bin" ${synthetic:+"$gen"}; do
  [ -x "$b" ] || { echo "no $b (build it, or leave out --no-build)" >&2; exit 2; }
done
mkdir -p "$data"

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

# median_time CMD...: median seconds of --runs runs of CMD (stdout to /dev/null).
median_time() {
  local times=() t r code
  for _ in $(seq "$runs"); do
    read -r t r code <<< "$(measure /dev/stderr "$@")"
    [ "$code" = 0 ] || { echo "$* failed (exit $code)" >&2; exit 1; }
    times+=("$t")
  done
  printf '%s\n' "${times[@]}" | median
}

warm() {
  dd if="$1" iflag=nocache count=0 status=none 2>/dev/null || true
  [ -w /proc/sys/vm/drop_caches ] && { sync; echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null || true
  cat "$1" > /dev/null
}

# Peak RSS is printed in MB of 10^6 bytes (GNU time reports KiB), like the
# JSON size, and "RSS bar MB" is the scale bar: 64 MB + 5% of the JSON size.
# "wc -l s" is the floor on the plain JSON, "x wc" torchtriage's time over it
# and "dec s" the time of decompressing a .gz / .zst input ("-" for JSON).
header() {
  printf '%-52s %-7s %10s %10s %12s %12s %12s %8s %7s %8s\n' \
    file cmd "median s" "MB/s" "peak RSS MB" "json MB" "RSS bar MB" "wc -l s" "x wc" "dec s"
}
row() { # FILE CMD SECONDS RSS_KB BYTES WC_SECONDS DEC_SECONDS
  awk -v f="$1" -v c="$2" -v t="$3" -v r="$4" -v b="$5" -v w="$6" -v d="$7" \
    'BEGIN { printf "%-52s %-7s %10s %10.0f %12.1f %12.1f %12.1f %8s %7s %8s\n", f, c, t, b / 1e6 / t, r * 1024 / 1e6, b / 1e6, 64 + b / 2e7, w, (w > 0 ? sprintf("%.1f", t / w) : "-"), d }'
}

# bench_row FILE PLAIN: times torchtriage on FILE, `gzip -dc` / `zstd -dc`
# on a compressed FILE and `wc -l` on PLAIN (FILE's uncompressed JSON; once
# for consecutive rows of the same PLAIN) and prints the row; the median
# time of torchtriage is left in last_t.
wc_plain=""; wc_time=""; last_t=""
bench_row() {
  local f=$1 plain=$2 tr t r dec=-
  warm "$f"
  tr=$(time_runs "$f")
  read -r t r <<< "$tr"
  case "$f" in
    *.gz) dec=$(median_time gzip -dc "$f") ;;
    *.zst) dec=$(median_time zstd -dc "$f") ;;
  esac
  if [ "$plain" != "$wc_plain" ]; then
    warm "$plain"
    wc_time=$(median_time wc -l "$plain")
    wc_plain=$plain
  fi
  row "$(basename "$f")" "$cmd" "$t" "$r" "$(stat -c %s "$plain")" "$wc_time" "$dec"
  last_t=$t
}

# bench_formats PLAIN GZIP_LEVEL: one row per --formats of PLAIN, making its
# .gz and .zst once.
bench_formats() {
  local plain=$1 level=$2 f fmt
  for fmt in ${formats//,/ }; do
    case "$fmt" in
      json) f="$plain" ;;
      gz) f="$plain.gz"; [ -f "$f" ] || { gzip "-$level" -c "$plain" > "$f.part"; mv "$f.part" "$f"; } ;;
      zst) f="$plain.zst"; [ -f "$f" ] || { zstd -q -f -3 -T2 "$plain" -o "$f.part"; mv "$f.part" "$f"; } ;;
    esac
    bench_row "$f" "$plain"
  done
}

# reference_run FILE: one run of the Python reference; prints "SECONDS RSS_KB EXIT".
reference_run() {
  measure "$data/reference.stderr" timeout "$ref_timeout" python3 "$reference/analyze_llm_torch_profile.py" \
    --mapping-input "$1" --formal-input "$1"
}

if [ -n "$tile" ]; then
  tile_json_bytes=$(case "$tile" in *.gz) gzip -dc "$tile" | wc -c ;; *) stat -c %s "$tile" ;; esac)
  tile_name=$(basename "$tile"); tile_name=${tile_name%.gz}; tile_name=${tile_name%.json}
fi

echo "# $(date -u '+%F %T UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), runs $runs"
[ -z "$tile" ] || awk -v f="$tile" -v b="$tile_json_bytes" 'BEGIN { printf "# tiled from %s (%.1f MB of JSON)\n", f, b / 1e6 }'
header
for gb in ${sizes//,/ }; do
  if [ -n "$synthetic" ]; then
    plain="$data/${gb}g.json"
    if [ ! -f "$plain" ]; then
      "$gen" --size-kb "$(awk -v g="$gb" 'BEGIN { printf "%.0f", g * 1048576 }')" "$plain.part" 2>/dev/null
      mv "$plain.part" "$plain"
    fi
    bench_formats "$plain" 1
  fi
  if [ -n "$tile" ]; then
    copies=$(awk -v g="$gb" -v j="$tile_json_bytes" \
      'BEGIN { t = g * 1073741824; c = int(t / j); if (c * j < t) c++; if (c < 1) c = 1; printf "%.0f", c }')
    plain="$data/$tile_name-x$copies.json"
    if [ ! -f "$plain" ]; then
      python3 "$tile_script" "$tile" "$plain.part" "$copies"
      mv "$plain.part" "$plain"
    fi
    bench_formats "$plain" 6
  fi
done

real_traces=()
if [ -n "$real" ]; then
  mapfile -t real_traces < <(find "$real" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' \) | sort)
  for f in "${real_traces[@]}"; do
    plain=$f
    case "$f" in
      *.gz)
        plain="$data/$(basename "${f%.gz}")"
        [ -f "$plain" ] || { gzip -dc "$f" > "$plain.part"; mv "$plain.part" "$plain"; } ;;
    esac
    # Small files: more runs, as their times are a few tens of ms.
    runs=$((runs < 15 ? 15 : runs)) bench_row "$f" "$plain"
    echo "$f $last_t" >> "$data/ours.real"
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
