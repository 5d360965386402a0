#!/usr/bin/env bash
# `torchtriage batch` against `triage` run on each file one after another.
#
#   scripts/bench-batch.sh [--files 8] [--size-mb 260] [--jobs N] [--data bench-data/batch8]
#
# Generates --files synthetic traces of --size-mb each once (odd seeds 1, 3,
# 5, ...: the generator ors the seed with 1, so even seeds would repeat; named
# rank<i>.pt.trace.json so the rank comes from the file name), then prints the
# machine load, the wall time and peak RSS (GNU time) of one `batch` run over
# the directory and of each sequential `triage` run, and their totals.
set -euo pipefail
cd "$(dirname "$0")/.."
files=8; size=260; jobs=""; data=bench-data/batch8
while [ $# -gt 0 ]; do
  case "$1" in
    --files) files=$2; shift ;;
    --size-mb) size=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --data) data=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
cargo build --quiet --release --bin torchtriage --example gen_trace
bin=./target/release/torchtriage
mkdir -p "$data"
for i in $(seq 0 $((files - 1))); do
  f="$data/rank$i.pt.trace.json"
  [ -f "$f" ] || ./target/release/examples/gen_trace --size-mb "$size" --seed $((2 * i + 1)) "$f" >/dev/null 2>&1
done
total_mb=$(du -cm "$data"/rank*.pt.trace.json | tail -1 | cut -f1)
echo "data: $files files, $total_mb MB in $data; $(nproc) cores"
echo "load before: $(uptime)"

run() { # label, command...: prints "label wall_s cpu_s peak_rss_mb"
  local label=$1; shift
  local out wall user sys rss
  out=$( { /usr/bin/time -f '%e %U %S %M' "$@" > /dev/null; } 2>&1 | tail -1)
  read -r wall user sys rss <<< "$out"
  printf '%-28s %8s s %8s s %8d MB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024))
}

# Wall time depends on what else runs: with scheduler autogroups
# (/proc/sys/kernel/sched_autogroup_enabled) a session gets its share of the
# cores however many threads it runs, so on a shared machine compare CPU too.
printf '%-28s %10s %10s %11s\n' run wall "CPU (u+s)" "peak RSS"
jobs_arg=(); [ -n "$jobs" ] && jobs_arg=(--jobs "$jobs")
run "batch (jobs ${jobs:-$(nproc)})" "$bin" batch --quiet "${jobs_arg[@]}" "$data"
seq_wall=0; seq_cpu=0; seq_rss=0
for f in "$data"/rank*.pt.trace.json; do
  line=$(run "triage $(basename "$f")" "$bin" triage --quiet "$f")
  echo "$line"
  read -r _ _ wall _ cpu _ rss _ <<< "$line"
  seq_wall=$(echo "$seq_wall + $wall" | bc); seq_cpu=$(echo "$seq_cpu + $cpu" | bc)
  [ "$rss" -gt "$seq_rss" ] && seq_rss=$rss
done
printf '%-28s %8s s %8s s %8d MB\n' "triage x$files, sequential" "$seq_wall" "$seq_cpu" "$seq_rss"
echo "load after: $(uptime)"
echo "autogroup scheduling: $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo unknown)"
