#!/usr/bin/env bash
# A/B timing of torchtriage builds on the same inputs, in one run:
#   scripts/ab.sh [-n RUNS] [-c "triage -q"] BIN_A BIN_B [BIN_C...] -- FILE...
# For each file, runs every binary RUNS times (interleaved A B A B ...), and
# prints per binary the median wall time and the largest peak RSS (GNU
# time's %e and %M; RSS in MB of 10^6 bytes), plus the `wc -l` floor of the
# file (median of RUNS). Each file's pages are first dropped from the page
# cache and read back once, as scripts/bench.sh does, so the floor does not
# depend on how the file came into the cache. Output is a markdown table.
# As root the whole page cache is dropped too (/proc/sys/vm/drop_caches):
# the file's own drop can leave its pages where they were (a tiled 1.12 GB
# trace read by `wc -l` in 200 ms after it, in 130 ms after the whole cache
# was dropped and the file read back).
set -euo pipefail
runs=3 cmd="triage -q"
while [ $# -gt 0 ]; do
    case "$1" in
        -n) runs=$2; shift 2 ;;
        -c) cmd=$2; shift 2 ;;
        *) break ;;
    esac
done
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#bins[@]} -ge 1 ] && [ $# -ge 1 ] || { echo "usage: ab.sh [-n RUNS] [-c CMD] BIN... -- FILE..." >&2; exit 2; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
tmp=$(mktemp -d)
echo "| file | binary | median s | peak RSS MB | runs | wc -l floor s |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for f in "$@"; do
    dd if="$f" iflag=nocache count=0 status=none 2>/dev/null || true
    [ -w /proc/sys/vm/drop_caches ] && { sync; echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null || true
    cat "$f" > /dev/null
    for i in $(seq "$runs"); do /usr/bin/time -f '%e' -o "$tmp/wc.$i" wc -l "$f" > /dev/null; done
    floor=$(cat "$tmp"/wc.* | median)
    for i in $(seq "$runs"); do
        for b in "${!bins[@]}"; do
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %M' -o "$tmp/t.$b.$i" "${bins[$b]}" $cmd "$f" > /dev/null 2>"$tmp/err"
        done
    done
    for b in "${!bins[@]}"; do
        med=$(cat "$tmp"/t."$b".* | awk '{print $1}' | median)
        rss=$(cat "$tmp"/t."$b".* | awk '{print $2}' | sort -n | tail -1)
        printf '| %s | %s | %.2f | %.1f | %d | %s |\n' "$(basename "$f")" "${bins[$b]}" "$med" "$(echo "$rss * 1.024 / 1000" | bc -l)" "$runs" "$floor"
    done
    rm -f "$tmp"/t.* "$tmp"/wc.*
done
rm -rf "$tmp"
