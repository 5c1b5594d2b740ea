#!/usr/bin/env bash
# `make bench`: the reference interpreter on ResNet-18 and MobileNetV2
# (224x224, batch 1) at 1 and 2 threads.
#   bench/run.sh BUILD_DIR [extra bench_reference options]
# MB_BENCH_THREADS (default 1,2) picks the thread counts.
set -euo pipefail

build=${1:-build}
shift || true
bin=$build/bin
models=$build/bench_models

for tool in mb-gen-models bench_reference; do
  if [ ! -x "$bin/$tool" ]; then
    echo "bench/run.sh: $bin/$tool not found; build first (make build)" >&2
    exit 1
  fi
done

# The models are ~60 MB of weights: regenerate only when the generator is
# newer than them.
if [ ! -f "$models/stamp" ] || [ "$bin/mb-gen-models" -nt "$models/stamp" ]; then
  "$bin/mb-gen-models" --bench "$models" >/dev/null
  touch "$models/stamp"
fi

echo "modelbench $(uname -m), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
exec "$bin/bench_reference" --batch 1 --threads "${MB_BENCH_THREADS:-1,2}" "$@" \
  "$models/resnet18.onnx" "$models/mobilenetv2.onnx"
