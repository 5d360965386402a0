#!/bin/sh
# Alternates the three fuzz targets in runs of SECS seconds until UNTIL (epoch).
# Usage: fuzz/loop.sh SECS UNTIL_EPOCH
cd "$(dirname "$0")"
secs=$1; until=$2
while [ "$(date +%s)" -lt "$until" ]; do
  for t in ingest_paths ingest_bytes triage_values; do
    left=$(( until - $(date +%s) ))
    [ "$left" -le 30 ] && exit 0
    [ "$left" -lt "$secs" ] && s=$left || s=$secs
    ./run.sh "$t" "$s"
  done
done
