#!/bin/sh
# Runs one fuzz target for SECONDS at the lowest priority and logs libFuzzer's
# final statistics (executions, duration) to logs/. Build first with
#   cargo +nightly fuzz build -O -s none   (or RUSTC_BOOTSTRAP=1 cargo fuzz build -O -s none)
# Usage: fuzz/run.sh TARGET SECONDS
set -eu
cd "$(dirname "$0")"
t=$1; secs=$2
mkdir -p "corpus/$t" "artifacts/$t" logs
log="logs/$t-$(date -u +%Y%m%dT%H%M%S).log"
start=$(date +%s)
set +e
nice -n 19 "target/x86_64-unknown-linux-gnu/release/$t" "corpus/$t" seeds \
    -dict=dict.txt -max_len=16384 -max_total_time="$secs" -rss_limit_mb=1024 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1
rc=$?
set -e
echo "target=$t wall_seconds=$(( $(date +%s) - start )) exit=$rc" >>"$log"
tail -n 20 "$log" | grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|target=' || true
