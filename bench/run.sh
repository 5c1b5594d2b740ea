#!/usr/bin/env bash
# `make bench`: the reference interpreter on ResNet-18 and MobileNetV2
# (224x224, batch 1) at 1 and 2 threads, then the harness benchmark
# (bench_harness: overhead per iteration around a no-op runtime, fidelity of
# the ORT_CPU median against a standalone loop, reference vs ORT_CPU_NO_OPT).
#   bench/run.sh BUILD_DIR [extra bench_reference options]
# MB_BENCH_THREADS (default 1,2) picks the thread counts; MB_BENCH_HARNESS=0
# skips the harness benchmark, MB_BENCH_ROUNDS (default 3) sets its rounds.
set -euo pipefail

build=${1:-build}
shift || true
bin=$build/bin
models=$build/bench_models

for tool in mb-gen-models bench_reference bench_harness; do
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
"$bin/bench_reference" --batch 1 --threads "${MB_BENCH_THREADS:-1,2}" "$@" \
  "$models/resnet18.onnx" "$models/mobilenetv2.onnx"

if [ "${MB_BENCH_HARNESS:-1}" != 0 ]; then
  echo
  # The overhead part needs only a tiny model: the bundled MLP.
  if [ ! -f "$build/models/mlp.onnx" ]; then
    echo "bench/run.sh: $build/models/mlp.onnx not found; build first (make build)" >&2
    exit 1
  fi
  "$bin/bench_harness" --rounds "${MB_BENCH_ROUNDS:-3}" "$build/models/mlp.onnx" \
    "$models/resnet18.onnx" "$models/mobilenetv2.onnx"
fi
