#!/usr/bin/env bash
# Seeds a fuzzing corpus with the model.onnx files of the ONNX backend test
# data (libonnx-testdata): usage: fuzz/make_corpus.sh OUTDIR [MAX_BYTES]
set -euo pipefail
out=${1:?usage: make_corpus.sh OUTDIR [MAX_BYTES]}
max=${2:-131072}
data=${MB_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
mkdir -p "$out"
n=0
while IFS= read -r -d '' f; do
  [ "$(stat -c %s "$f")" -le "$max" ] || continue
  # Name by content so duplicate models collapse into one entry.
  sum=$(sha1sum "$f" | cut -c1-40)
  cp "$f" "$out/$sum"
  n=$((n + 1))
done < <(find "$data" -name model.onnx -print0 2>/dev/null)
echo "corpus: $(ls "$out" | wc -l) models (of $n under $max bytes) from $data"
