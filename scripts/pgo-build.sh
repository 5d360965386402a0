#!/usr/bin/env bash
# Builds torchtriage with profile-guided optimisation (PGO): the same code,
# laid out and inlined by the compiler for where a run spends its time
# (docs/architecture.md, "Nineteenth round", measures what it gains).
#
#   scripts/pgo-build.sh [--install] [--out PATH] [--keep]
#
# 1. builds an instrumented binary (-Cprofile-generate) into target/pgo-gen,
#    and the synthetic trace generator as usual;
# 2. runs it on training traces made from the repository alone: synthetic
#    traces of both frame layouts (64 MB each, one of them gzipped too), the
#    public traces of tests/data and the bundled fixture, through `triage`
#    (markdown, JSON and HTML), `stats`, `diff` and `batch`;
# 3. merges the profiles with llvm-profdata (rustup's llvm-tools component,
#    added when missing) and builds the release binary with -Cprofile-use
#    into target/pgo, copying it to --out PATH (default target/pgo/torchtriage;
#    target/ is $CARGO_TARGET_DIR when set) and printing that path in full;
#    --install copies it to $CARGO_INSTALL_ROOT/bin (else $CARGO_HOME/bin,
#    else ~/.cargo/bin), where `cargo install` puts the command, instead.
#
# The binary computes exactly what a plain `cargo build --release` one does;
# the profile only guides the compiler's layout and inlining. The training
# traces live in a temporary folder removed at the end (--keep keeps it and
# prints its path). Needs rustup's llvm-tools component (added when missing,
# which needs the network) unless llvm-profdata of the compiler's LLVM version
# is on PATH as `llvm-profdata`.
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target=$PWD/$target ;; esac
install=""; out=""; keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --install) install=1 ;;
    --out) [ $# -ge 2 ] || { echo "pgo-build.sh: --out needs a path" >&2; exit 2; }
      out=$2; case "$out" in /*) ;; *) out=$here/$out ;; esac; shift ;;
    --keep) keep=1 ;;
    *) echo "pgo-build.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$install" ] && [ -n "$out" ]; then
  echo "pgo-build.sh: --install and --out name two places for the binary; give one" >&2
  exit 2
fi
[ -n "$out" ] || out=$target/pgo/torchtriage

# llvm-profdata must read the format of the compiler's own LLVM: rustup's
# llvm-tools first, then one on PATH of that LLVM version, then rustup's
# added now.
llvm_major=$(rustc -Vv | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
host=$(rustc -Vv | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v llvm-profdata > /dev/null \
  && llvm-profdata merge --version 2> /dev/null | grep -q "LLVM version $llvm_major\."; then
  profdata=$(command -v llvm-profdata)
fi
if [ ! -x "$profdata" ] && command -v rustup > /dev/null; then
  rustup component add llvm-tools >&2 || true
fi
if [ ! -x "$profdata" ]; then
  echo "pgo-build.sh: no llvm-profdata for LLVM $llvm_major (rustup component add llvm-tools)" >&2
  exit 2
fi

work=$(mktemp -d)
training=""
# On the way out: a training run that failed (its stderr went to the log)
# is shown, then the training data is removed unless --keep.
finish() {
  local status=$?
  if [ -n "$training" ]; then
    exec 2>&3
    echo "pgo-build.sh: a training run failed (exit $status); the end of its log:" >&2
    tail -n 20 "$work/train.log" >&2
  fi
  [ -n "$keep" ] || rm -rf "$work"
}
trap finish EXIT
[ -z "$keep" ] || echo "pgo-build.sh: training data kept in $work" >&2

echo "pgo-build.sh: instrumented build" >&2
# The instrumented and the optimised builds must compile the crate alike
# (same targets, so the same dependency features), or the profile's
# functions do not match the optimised build's and go unused: the trace
# generator is built on its own, without instrumentation.
cargo build --quiet --release --example gen_trace
gen=$target/release/examples/gen_trace
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$work/raw" \
  cargo build --quiet --release --target-dir "$target/pgo-gen" --bin torchtriage
bin=$target/pgo-gen/release/torchtriage

echo "pgo-build.sh: training runs (log: $work/train.log)" >&2
exec 3>&2 2>"$work/train.log"
training=1
"$gen" --size-mb 64 --seed 11 "$work/syn.json" > /dev/null
"$gen" --size-mb 64 --seed 12 --overlapping-frames "$work/ov.json" > /dev/null
"$gen" --size-mb 32 --seed 13 --format gz "$work/syn.json.gz" > /dev/null
"$gen" --size-mb 32 --seed 13 --format gz --slow-kernel gemm "$work/slow.json.gz" > /dev/null
"$bin" triage -q "$work/syn.json" > /dev/null
"$bin" triage -q "$work/ov.json" > /dev/null
"$bin" triage -q --format json "$work/syn.json.gz" > /dev/null
"$bin" stats -q "$work/syn.json" > /dev/null
"$bin" diff -q "$work/syn.json.gz" "$work/slow.json.gz" > /dev/null || true
for f in fixtures/synthetic_vllm_small.json $(find tests/data/traces -name '*.json.gz' | sort); do
  for fmt in markdown json html; do
    "$bin" triage -q --format "$fmt" "$f" > /dev/null || true
  done
done
"$bin" batch -q tests/data/traces/param_dlrm_8rank > /dev/null || true
training=""
exec 2>&3 3>&-
"$profdata" merge -o "$work/merged.profdata" "$work/raw"

echo "pgo-build.sh: optimised build" >&2
use="${RUSTFLAGS:-} -Cprofile-use=$work/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false"
RUSTFLAGS="$use" cargo build --quiet --release --target-dir "$target/pgo" --bin torchtriage
if [ -n "$install" ]; then
  # Copied rather than built again by `cargo install`: such a build, given
  # the same profile, ran no faster than a plain one (it resolves the
  # dependencies afresh, without Cargo.lock, so it need not compile the code
  # the profile was taken from).
  dest=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin
  mkdir -p "$dest"
  out=$dest/torchtriage
fi
cp "$target/pgo/release/torchtriage" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
echo "$out"
