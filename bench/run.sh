#!/usr/bin/env bash
# `make bench`: the reference interpreter on ResNet-18 and MobileNetV2
# (224x224, batch 1) at 1 and 2 threads, then the harness benchmark
# (bench_harness: overhead per iteration around a no-op runtime, fidelity of
# the ORT_CPU median against a standalone loop, reference vs ORT_CPU_NO_OPT).
#   bench/run.sh BUILD_DIR [extra bench_reference options]
# Then the runtimes side by side on PyTorch-exported models (ResNet-18,
# MobileNetV2, EfficientNet-B0, ShuffleNetV2, a transformer encoder, a
# GPT-style decoder, BERT): every CPU conversion of tier 2 at batch 1 and 2
# threads, one `modelbench bench` run per model, baseline ORT_CPU.
# MB_BENCH_THREADS (default 1,2) picks the thread counts; MB_BENCH_HARNESS=0
# skips the harness benchmark, MB_BENCH_ROUNDS (default 3) sets its rounds;
# MB_BENCH_RUNTIMES=0 skips the runtimes comparison (it needs
# /usr/bin/python3 with torch, torchvision and onnx to export the models).
# Last the conversions of issue #5 side by side (FP16, INT8 dynamic, INT8
# static on ORT, oneDNN and XNNPACK over ORT_CPU, with accuracy over 50
# evaluation samples) on ResNet-18, MobileNetV2, a transformer encoder and
# BERT; MB_BENCH_CONVERSIONS=0 skips it. Then bench/transformers.sh (issue
# 17: transformers on oneDNN against ORT_CPU); MB_BENCH_TRANSFORMERS=0
# skips it. Then bench/int8_forms.sh (issue 25: 7-bit, mixed and 8-bit int8
# weights); MB_BENCH_INT8=0 skips it. Then bench/recurrent.sh (issue 13: a 2-layer bidirectional
# LSTM and GRU on the reference, ORT_CPU and oneDNN's recurrent
# primitives); MB_BENCH_RECURRENT=0 skips it. Then bench/roofline.sh
# (issue 30: the roofline); MB_BENCH_ROOFLINE=0 skips it. Then bench/load.sh
# (issue 16: load scenarios and sweeps); MB_BENCH_LOAD=0 skips it. Then
# bench/realistic.sh, bench/cold_energy.sh and bench/explain.sh (issue 30:
# intervals and realistic figures, cold start, energy and cost, explain);
# MB_BENCH_REALISTIC=0, MB_BENCH_COLD=0 and MB_BENCH_EXPLAIN=0 skip them.
# Then the Python front (bench/pytorch.py): ResNet-18 under PyTorch's and
# the engine's conversions, the digits CNN with task accuracy, EAGER's
# fidelity against a plain loop, a function profile across batch sizes and
# the PyTorch conversions' cached builds, and alma-torch itself beside
# modelbench (bench/alma_peer.py, MB_BENCH_ALMA=0 skips it);
# MB_BENCH_PYTORCH=0 skips them all. Last bench/tune.sh (issue 29: modelbench
# tune on ResNet-18, ResNet-50, ViT and Swin-T); MB_BENCH_TUNE=0 skips it.
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

if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ]; then
  echo
  torch_models=$build/torch_models
  exporter=$(dirname "$0")/../tools/export_torch_models.py
  if [ ! -f "$torch_models/resnet18/model.onnx" ]; then
    if ! /usr/bin/python3 -c "import torch, torchvision, onnx" 2>/dev/null; then
      echo "runtimes comparison skipped: /usr/bin/python3 lacks torch/torchvision/onnx (make test installs them)"
      exit 0
    fi
    mkdir -p "$torch_models"
    /usr/bin/python3 "$exporter" "$torch_models" >"$torch_models/export.log" 2>&1
  fi
  echo "Runtimes side by side: batch 1 (the exported sequence models: their test inputs), 2 threads"
  for name in resnet18 mobilenet_v2 efficientnet_b0 shufflenet_v2_x1_0 \
    transformer_encoder_op17 gpt_decoder bert_encoder; do
    dir=$torch_models/$name
    [ -f "$dir/model.onnx" ] || continue
    echo
    echo "== $name"
    # The sequence models have dynamic sequence lengths: their exported
    # test inputs fix them.
    inputs=()
    case $name in
    transformer_* | gpt_* | bert_*) inputs=(--inputs "$dir") ;;
    esac
    "$bin/modelbench" bench "$dir/model.onnx" "${inputs[@]}" --tier 2 \
      --baseline ORT_CPU --threads 2 --no-record \
      --json "$torch_models/$name.bench.json" || true
  done
fi

if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_CONVERSIONS:-1}" != 0 ]; then
  echo
  echo "Conversions side by side: speed-up over ORT_CPU with accuracy (batch 1, 2 threads, 50 samples)"
  for name in resnet18 mobilenet_v2 transformer_encoder_op17 bert_encoder; do
    dir=$build/torch_models/$name
    [ -f "$dir/model.onnx" ] || continue
    echo
    echo "== $name"
    inputs=()
    case $name in
    transformer_* | bert_*) inputs=(--inputs "$dir") ;;
    esac
    "$bin/modelbench" bench "$dir/model.onnx" "${inputs[@]}" \
      -c ORT_CPU,FP16+ORT_CPU,INT8_DYNAMIC+ORT_CPU,INT8_STATIC+ORT_CPU,INT8_STATIC+ONEDNN,INT8_STATIC+XNNPACK \
      --baseline ORT_CPU --threads 2 --n-samples 50 --no-record \
      --json "$build/torch_models/$name.conversions.json" || true
  done
fi

if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_TRANSFORMERS:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/transformers.sh" "$build"
fi

# The int8 forms, 7-bit, mixed and 8-bit weights (issue 25):
# bench/int8_forms.sh;
# MB_BENCH_INT8=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_INT8:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/int8_forms.sh" "$build"
fi

# INT8_STATIC+OPENVINO's quantiser, NNCF beside modelbench's calibration
# (issue 31): bench/nncf.sh; MB_BENCH_NNCF=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_NNCF:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/nncf.sh" "$build"
fi

if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_RECURRENT:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/recurrent.sh" "$build"
fi

# The roofline of issue 30 (bench/roofline.sh): the machine's peaks, and
# ResNet-18 and a transformer encoder placed against them per tier-2
# conversion. MB_BENCH_ROOFLINE=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_ROOFLINE:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/roofline.sh" "$build"
fi

# The serving questions of issue 16 (bench/load.sh): ResNet-18's peak QPS
# within p99 <= 20 ms per conversion at concurrency 1 and 2, a batch sweep
# and a sequence-length sweep. MB_BENCH_LOAD=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_LOAD:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/load.sh" "$build"
fi

# Intervals and realistic figures of issue 30 (bench/realistic.sh):
# --ci-target 2% on resnet_blocks, and ResNet-18's fresh-input and
# cold-cache medians beside the steady one. MB_BENCH_REALISTIC=0 skips.
if [ "${MB_BENCH_REALISTIC:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/realistic.sh" "$build"
fi

# What a first request and an inference cost (bench/cold_energy.sh, issue
# 30): ResNet-18's cold start, energy and cost per tier-2 conversion.
# MB_BENCH_COLD=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_COLD:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/cold_energy.sh" "$build"
fi

# Where one conversion's time goes against another's (bench/explain.sh,
# issue 30 item 6). MB_BENCH_EXPLAIN=0 skips.
if [ "${MB_BENCH_RUNTIMES:-1}" != 0 ] && [ "${MB_BENCH_EXPLAIN:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/explain.sh" "$build"
fi

# The Python front: PyTorch's conversions beside the engine's on ResNet-18,
# the trained digits CNN with task accuracy, and the fidelity of the EAGER
# median against a plain loop (bench/pytorch.py). MB_BENCH_PYTORCH=0 skips.
if [ "${MB_BENCH_PYTORCH:-1}" != 0 ]; then
  echo
  if /usr/bin/python3 -c "import torch, torchvision, sklearn" 2>/dev/null; then
    MODELBENCH_LIBRARY=$build/lib/libmodelbench.so /usr/bin/python3 "$(dirname "$0")/pytorch.py"
  else
    echo "PyTorch front skipped: /usr/bin/python3 lacks torch, torchvision or sklearn (make test installs them)"
  fi
  # The same on the current PyTorch from PyPI (make test makes its venv).
  venv_python=$("$(dirname "$0")/../scripts/python-venv.sh" --path)
  if [ -x "$venv_python" ]; then
    echo
    MB_BENCH_PYTORCH_PARTS=resnet,fidelity,shapes,builds,torch2,aoti MODELBENCH_LIBRARY=$build/lib/libmodelbench.so \
      "$venv_python" "$(dirname "$0")/pytorch.py"
    # alma itself beside modelbench on the same modules (issue 31);
    # MB_BENCH_ALMA=0 skips it.
    if [ "${MB_BENCH_ALMA:-1}" != 0 ]; then
      echo
      MODELBENCH_LIBRARY=$build/lib/libmodelbench.so "$venv_python" "$(dirname "$0")/alma_peer.py"
    fi
  else
    echo "PyTorch 2.x front skipped: no $venv_python (scripts/python-venv.sh makes it)"
  fi
fi

# modelbench tune (issue 29): ResNet-18's search time from an empty and a
# warm cache, then ResNet-50, ViT and Swin-T on natural images
# (bench/tune.sh, also `make bench-tune`). MB_BENCH_TUNE=0 skips it.
if [ "${MB_BENCH_TUNE:-1}" != 0 ]; then
  echo
  "$(dirname "$0")/tune.sh" "$build"
fi
