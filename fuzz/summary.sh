#!/bin/sh
# Prints one row per fuzz run logged by run.sh: target, start (UTC), wall
# seconds, executions, exit code (0 = ran out its time, 77 = found a crash),
# then the totals.
cd "$(dirname "$0")"
for f in logs/*-*.log; do
  t=$(basename "$f" .log | sed 's/-[0-9T]*$//'); start=$(basename "$f" .log | sed 's/.*-//')
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$f" | awk '{print $2}')
  line=$(grep '^target=' "$f")
  wall=$(echo "$line" | sed 's/.*wall_seconds=\([0-9]*\).*/\1/'); rc=$(echo "$line" | sed 's/.*exit=//')
  [ -n "$line" ] && echo "$t $start ${wall:-?} ${execs:-0} $rc"
done | awk '{printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5; s+=$3; e+=$4} END {printf "| total | | %d s (%.2f h) | %d | |\n", s, s/3600, e}'
