#!/usr/bin/env bash
# The distance of `triage` to the floor of reading the file:
#   scripts/floor.sh ROUNDS FILE BIN...
# Each round runs `wc -l FILE`, then each binary's `triage -q FILE`, in turn
# (so the builds and the floor share the machine's state); prints the median
# wall time of each in ms and each binary's median over the `wc -l` median.
# The file's pages are first dropped from the page cache and read back once,
# as scripts/ab.sh and scripts/bench.sh do: a file just written sits in the
# cache in small pages, which `wc -l` reads more slowly than those of a file
# read from disk, so the floor would depend on how the file came there.
# As root the whole page cache is dropped too (/proc/sys/vm/drop_caches):
# the file's own drop can leave its pages where they were (a tiled 1.12 GB
# trace read by `wc -l` in 200 ms after it, in 130 ms after the whole cache
# was dropped and the file read back).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: floor.sh ROUNDS FILE BIN..." >&2; exit 2; }
rounds=$1 file=$2
shift 2
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
dd if="$file" iflag=nocache count=0 status=none 2>/dev/null || true
[ -w /proc/sys/vm/drop_caches ] && { sync; echo 1 > /proc/sys/vm/drop_caches; } 2>/dev/null || true
cat "$file" > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$rounds"); do
    /usr/bin/time -f %e -o "$tmp/x" wc -l "$file" > /dev/null
    cat "$tmp/x" >> "$tmp/wc"
    j=0
    for b in "$@"; do
        /usr/bin/time -f %e -o "$tmp/x" "$b" triage -q "$file" > /dev/null 2>&1
        cat "$tmp/x" >> "$tmp/b$j"
        j=$((j + 1))
    done
done
floor=$(median < "$tmp/wc")
echo "$file wc -l $(awk -v w="$floor" 'BEGIN {printf "%d", w * 1000}') ms"
j=0
for b in "$@"; do
    m=$(median < "$tmp/b$j")
    echo "  $b $(awk -v m="$m" -v w="$floor" 'BEGIN {printf "%d ms ", m * 1000; if (w > 0) printf "%.2fx", m / w; else printf "-"}')"
    j=$((j + 1))
done
