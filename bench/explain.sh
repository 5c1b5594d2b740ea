#!/usr/bin/env bash
# `modelbench explain` on the PyTorch-exported models (issue 30 item 6; run
# by `make bench` through bench/run.sh, or alone: bench/explain.sh
# BUILD_DIR): where oneDNN's time goes against the reference interpreter
# and ORT_CPU's against oneDNN's int8 on ResNet-18 (224, batch 1), and the
# reference against oneDNN on the transformer encoder (opset 17, seq 16).
# MB_EXPLAIN_THREADS (default 2) and MB_EXPLAIN_ITERATIONS (default 20) set
# the profiling passes; a conversion unavailable here is said and skipped.
# Needs the exported models (tools/export_torch_models.py, as bench/run.sh
# makes them into BUILD/torch_models); without /usr/bin/python3's torch it
# says so.
set -uo pipefail

build=${1:-build}
bin=$build/bin
models=${MB_EXPLAIN_MODELS:-$build/torch_models}
python=/usr/bin/python3
threads=${MB_EXPLAIN_THREADS:-2}
iterations=${MB_EXPLAIN_ITERATIONS:-20}

if [ ! -x "$bin/modelbench" ]; then
  echo "bench/explain.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
fi
if [ ! -f "$models/resnet18/model.onnx" ] ||
  [ ! -f "$models/transformer_encoder_op17/model.onnx" ]; then
  if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "explain skipped: $python lacks torch/torchvision/onnx (make test installs them)"
    exit 0
  fi
  mkdir -p "$models"
  "$python" "$(dirname "$0")/../tools/export_torch_models.py" "$models" \
    resnet18 transformer_encoder_op17 >"$models/export.log" 2>&1 || {
    echo "bench/explain.sh: exporting the models failed: $models/export.log" >&2
    exit 1
  }
fi

echo "== modelbench explain, $threads threads, $iterations profiled inferences per side"
echo "   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
explain() {
  echo
  echo "\$ modelbench explain $*"
  "$bin/modelbench" explain "$@" --threads "$threads" \
    --iterations "$iterations" || status=1
}
explain "$models/resnet18/model.onnx" REFERENCE ONEDNN
explain "$models/resnet18/model.onnx" ORT_CPU INT8_STATIC+ONEDNN
explain "$models/transformer_encoder_op17/model.onnx" REFERENCE ONEDNN \
  --dim seq=16
exit $status
