#!/usr/bin/env bash
# Models exported from PyTorch (torchvision CNNs, transformer encoders, BERT-
# and GPT-style models), each run by the reference interpreter and compared
# with the outputs PyTorch computed: an independent implementation, so this
# catches what self-generated expectations cannot.
#
# Needs /usr/bin/python3 with torch, torchvision and onnx. Without them the
# test is skipped, unless MB_WITH_TORCH=1 (set by `make test`) or
# MB_REQUIRE_TORCH is set: then a missing PyTorch is a failure.
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"

python=/usr/bin/python3
exporter=$MB_SOURCE_DIR/tools/export_torch_models.py

if ! "$python" -c 'import torch, torchvision, onnx' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ] || [ -n "${MB_REQUIRE_TORCH+set}" ]; then
    echo "FAIL: PyTorch is required here (MB_WITH_TORCH=1 or MB_REQUIRE_TORCH)" \
      "but '$python -c \"import torch, torchvision, onnx\"' fails;" \
      "install python3-torch python3-torchvision python3-onnx" >&2
    exit 1
  fi
  echo "SKIP: /usr/bin/python3 lacks torch, torchvision or onnx" \
    "(apt install python3-torch python3-torchvision python3-onnx, or run" \
    "'make test', which installs them)"
  exit 0
fi

# Exports are cached in the build tree and redone only when the exporter
# changes (the stamp holds its hash).
cache=$MB_BUILD_DIR/torch_models
stamp=$cache/exporter.sha256
want=$(sha256sum "$exporter" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "exporting PyTorch models into $cache"
  rm -rf "$cache"
  mkdir -p "$cache"
  if ! "$python" "$exporter" "$cache" >"$cache/export.log" 2>&1; then
    echo "FAIL: export failed:" >&2
    tail -n 30 "$cache/export.log" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi

passed=0
failed=0
failures=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

for dir in "$cache"/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  model=$dir/model.onnx
  [ -f "$model" ] || continue
  ok=1
  if ! "$MB_CLI" analyze "$model" >"$log" 2>&1; then
    ok=0
    step=analyze
  elif ! "$MB_CLI" check "$model" "$dir/test_data_set_0" \
    --atol 1e-4 --rtol 1e-3 >"$log" 2>&1; then
    ok=0
    step=check
  fi
  if [ $ok = 1 ]; then
    echo "ok   $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name ($step):"
    tail -n 15 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
    failures+=("$name")
  fi
done

if [ $((passed + failed)) = 0 ]; then
  echo "FAIL: no exported models found in $cache" >&2
  exit 1
fi
echo "$passed passed, $failed failed"
if [ $failed != 0 ]; then
  echo "failed: ${failures[*]}"
  exit 1
fi
exit 0
