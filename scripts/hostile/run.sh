#!/usr/bin/env bash
# Run every case of OUTDIR/cases.tsv (written by make-cases.py) against BIN.
#   scripts/hostile/run.sh BIN OUTDIR [ID_SUBSTRING] > results.md
# Each command runs from OUTDIR in `bash -c` with TT=BIN, under
# `ulimit -v 4000000` (KiB), `timeout 60` and GNU `/usr/bin/time`.
# Per-case stdout (first 1 MiB), stderr, time output and notes are kept in
# OUTDIR/results/. Prints a markdown table on stdout; exit 124 = timeout,
# exit > 128 = killed by signal (exit - 128).
set -u
bin=${1:?usage: run.sh BIN OUTDIR [ID_SUBSTRING]}
dir=${2:?usage: run.sh BIN OUTDIR [ID_SUBSTRING]}
only=${3:-}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
dir=$(cd "$dir" && pwd)
[ -x "$bin" ] || { echo "run.sh: $bin is not executable" >&2; exit 2; }
[ -f "$dir/cases.tsv" ] || { echo "run.sh: $dir/cases.tsv missing (run make-cases.py first)" >&2; exit 2; }
res=$dir/results
mkdir -p "$res"

limit_kb=${HOSTILE_VMEM_KB:-4000000}
tmo=${HOSTILE_TIMEOUT:-60}

# Markdown-safe single line: control bytes shown as ^X, pipes escaped.
cell() { LC_ALL=C tr -d '\n' | cat -v | cut -c1-"${2:-160}" | sed 's/|/\\|/g'; }

echo "binary: \`$bin\` ($("$bin" --version 2>/dev/null)); limits: timeout ${tmo}s, ulimit -v ${limit_kb} KiB"
echo
echo "| id | exit | wall s | peak RSS MB | stderr (first line) |"
echo "| --- | ---: | ---: | ---: | --- |"
while IFS=$'\t' read -r id desc cmd; do
    [ -n "$id" ] || continue
    case "$id" in *"$only"*) ;; *) continue ;; esac
    out=$res/$id.stdout err=$res/$id.stderr tf=$res/$id.time note=$res/$id.note
    rm -f "$out" "$err" "$tf" "$note"
    (
        cd "$dir" || exit 2
        ulimit -v "$limit_kb"
        export TT="$bin" NOTE="$note"
        exec /usr/bin/time -f '%e %M' -o "$tf" timeout -k 5 "$tmo" bash -c "$cmd" >"$out" 2>"$err" </dev/null
    )
    rc=$?
    # GNU time writes "Command exited with non-zero status N" first; the
    # format line is the last one. Missing if time itself was killed.
    read -r wall rss_kb < <(tail -n 1 "$tf" 2>/dev/null) || true
    case "${wall:-}" in ''|*[!0-9.]*) wall='?'; rss='?' ;; *) rss=$(( (rss_kb + 512) / 1024 )) ;; esac
    size=$(stat -c %s "$out" 2>/dev/null || echo 0)
    if [ "$size" -gt 1048576 ]; then truncate -s 1048576 "$out"; fi
    echo "$size" > "$res/$id.stdout-bytes"
    first=$(grep -m1 -v '^$' "$err" 2>/dev/null | cell 160)
    [ -s "$note" ] && first="$first [note: $(cell 200 < "$note")]"
    echo "| $id | $rc | $wall | $rss | $first |"
done < "$dir/cases.tsv"
echo
echo "Cases:"
echo
while IFS=$'\t' read -r id desc cmd; do
    [ -n "$id" ] || continue
    case "$id" in *"$only"*) ;; *) continue ;; esac
    printf -- '- `%s`: %s; stdout %s bytes\n' "$id" "$desc" "$(cat "$res/$id.stdout-bytes" 2>/dev/null || echo '?')"
done < "$dir/cases.tsv"
