#!/usr/bin/env bash
# Makes the seed corpus of one fuzz target and prints the largest input
# length the fuzzer should try (its -max_len):
#   fuzz/make_corpus.sh TARGET OUTDIR BUILD_DIR
# Seeds come from the project (files its code writes) and from Debian
# packages (libonnx-testdata), never from the network.
set -euo pipefail
target=${1:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
out=${2:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
build=${3:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
data=${MB_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
mkdir -p "$out"

# Copies the files under $1 named $2 of at most $3 bytes, keeping their
# folders (libFuzzer reads a corpus folder recursively).
add_files() {
  local from=$1 name=$2 max=$3
  [ -d "$from" ] || return 0
  (cd "$from" && find . -name "$name" -size -$((max + 1))c -print0 |
    tar --null -T - -cf -) | tar -xf - -C "$out"
}

case $target in
  loader)
    # Every model of the ONNX backend test suite.
    add_files "$data" model.onnx 131072
    echo 131072 ;;
  *)
    echo "make_corpus.sh: no seeds for target '$target'" >&2
    exit 2 ;;
esac
