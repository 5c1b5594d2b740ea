#!/usr/bin/env bash
# What a first request costs and what an inference costs (issue 30, items
# 3 and 7), measured (run by `make bench` through bench/run.sh, or alone:
# bench/cold_energy.sh BUILD_DIR): ResNet-18 (224, batch 1) under every
# tier-2 conversion at 2 threads with --cold and --price-per-core-hour,
# the cold-start table (build on a cache miss and hit, load, first
# inference, iterations to steady state), the cost per million inferences
# and the energy per inference where RAPL is readable (else why not).
# Settings: MB_COLD_THREADS (2), MB_COLD_PRICE (0.05 per core-hour).
# Needs the PyTorch-exported ResNet-18 (tools/export_torch_models.py, as
# bench/run.sh makes it); without /usr/bin/python3's torch it says so.
set -euo pipefail

build=${1:-build}
bin=$build/bin
models=$build/torch_models
out=$build/cold_energy_bench
python=/usr/bin/python3
threads=${MB_COLD_THREADS:-2}
price=${MB_COLD_PRICE:-0.05}

if [ ! -x "$bin/modelbench" ]; then
  echo "bench/cold_energy.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
fi
if [ ! -f "$models/resnet18/model.onnx" ]; then
  if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "cold start and energy skipped: $python lacks torch/torchvision/onnx (make test installs them)"
    exit 0
  fi
  mkdir -p "$models"
  "$python" "$(dirname "$0")/../tools/export_torch_models.py" "$models" resnet18 \
    >"$models/export.log" 2>&1
fi
mkdir -p "$out"
echo "Cold start, energy and cost (issue 30): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
# The table (cold-start section, cost column, energy or why not) is the
# output; the JSON keeps every figure.
"$bin/modelbench" bench "$models/resnet18/model.onnx" --tier 2 \
  --threads "$threads" --cold --price-per-core-hour "$price" --no-record \
  --json "$out/resnet18.json"
