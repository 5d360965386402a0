#!/usr/bin/env bash
# Generates a synthetic vLLM-eager-like Kineto trace.
#   scripts/gen-trace.sh SIZE_MB OUT [json|gz|zst] [SEED] [--slow-kernel TEXT] [--drop-kernel TEXT]
# With the same seed, --slow-kernel (that kernel twice as long) and
# --drop-kernel (that kernel left out) make the second trace of a pair for
# `torchtriage diff`.
set -euo pipefail
size=${1:?size in MB}
out=${2:?output path}
# OUT is relative to where the script was run from, not the repository.
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
cd "$(dirname "$0")/.."
fmt=${3:-json}
seed=${4:-11400714819323198485}
cargo build --quiet --release --example gen_trace
./target/release/examples/gen_trace --size-mb "$size" --format "$fmt" --seed "$seed" "${@:5}" "$out"
