#!/usr/bin/env bash
# The device check of issue 26, run on the GPU machine as .devcarry/check.sh
# (bench/gpu.sh pack puts it there beside bundle.tar.xz):
#   bash .devcarry/check.sh
# It unpacks the bundle to a temporary folder, points the loader and the
# Python front at it, builds the libtorch/AOTInductor module against the
# device's PyTorch (in the background, its outcome reported), and runs
# bench/gpu_figures.py: ResNet-18 batch 1, BERT-base batch 1, ResNet-18
# batch 32, BERT-base batch 32, then a CPU-vs-GPU batch sweep, each step
# under `timeout` within one overall budget. What comes back lies in $OUT
# (at most 8 files): summary.md (the tables and the issue's checks),
# figures.json (every figure), the sweep's report (sweep.json, sweep.html)
# and logs.tar.gz (every log and raw report). summary.md is rewritten after
# every step, so a run cut short still says what it measured.
#
# Environment: OUT (default a new /tmp folder), MB_GPU_BUDGET (seconds for
# everything, default 540), MB_GPU_PYTHON (default /opt/torch/.venv/bin/
# python3, else python3), MB_GPU_TORCH_DIR (the torch/ folder to build the
# module against; default that Python's), MB_GPU_SHIM_FLAGS (extra CMake
# options for the module, e.g. -DMB_CUDA_INCLUDE_DIR=...), MB_GPU_WORK (the unpack folder; default a new /tmp
# folder), MB_GPU_CPU_CHECK=1 (no GPU work: unpack, ldd, list, a bench of a
# bundled ONNX model and the driver's --dry-run; bench/gpu.sh cpu-check),
# MB_GPU_PHASES (the phases to run, in order, e.g. "resnet18_b1 sweep";
# default resnet18_b1 bert_b1 resnet18_b32 bert_b32 sweep),
# MB_GPU_FIGURES_ARGS (more arguments for every phase, e.g. "--conversions
# EAGER;FP16+COMPILE_CUDAGRAPHS" or "--quick").
set -u

here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
budget=${MB_GPU_BUDGET:-540}
cpu_only=${MB_GPU_CPU_CHECK:-0}
reserve=20 # seconds kept for the summary and the tarball
OUT=${OUT:-$(mktemp -d /tmp/modelbench-gpu-out.XXXXXX)}
work=${MB_GPU_WORK:-$(mktemp -d /tmp/modelbench-gpu.XXXXXX)}
bundle=$work/bundle
raw=$work/results
logs=$raw/logs
mkdir -p "$OUT" "$bundle" "$logs" "$raw/figures"
steps=$raw/steps.tsv
printf 'step\tstatus\tseconds\tcap\n' >"$steps"

left() {
  echo $((start + budget - $(date +%s)))
}

# step NAME CAP COMMAND...: COMMAND under `timeout`, for at most CAP
# seconds and never past the budget less the reserve; its output in
# logs/NAME.log, its outcome a line of steps.tsv. Returns its status (124:
# timed out or no time left).
step() {
  local name=$1 cap=$2 rc t0
  shift 2
  local room=$(($(left) - reserve))
  if [ "$room" -lt 5 ]; then
    printf '%s\tskipped (out of time)\t0\t%s\n' "$name" "$cap" >>"$steps"
    return 124
  fi
  [ "$cap" -le "$room" ] || cap=$room
  t0=$(date +%s)
  # A function of this script runs in a child bash (timeout runs programs).
  if declare -F "$1" >/dev/null; then
    set -- bash -c "$(declare -f "$1"); $1" "$@"
  fi
  timeout -k 5 "$cap" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" $(($(date +%s) - t0)) "$cap" >>"$steps"
  return $rc
}

# ---- the bundle ----
if ! step unpack 120 tar -xJf "$here/bundle.tar.xz" -C "$bundle"; then
  echo "check.sh: cannot unpack $here/bundle.tar.xz (logs in $logs)" >&2
  cp "$logs/unpack.log" "$steps" "$OUT/" 2>/dev/null
  exit 1
fi
# lib/fallback/ holds the compiler's runtimes and zlib: used only where
# this machine has none of its own.
use_fallbacks() {
  local f soname dir
  for f in "$bundle"/lib/fallback/*; do
    [ -f "$f" ] || continue
    soname=${f##*/}
    for dir in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib; do
      [ -e "$dir/$soname" ] && { echo "$soname: the machine's $dir/$soname"; continue 2; }
    done
    ln -sf "fallback/$soname" "$bundle/lib/$soname"
    echo "$soname: the bundle's"
  done
}
use_fallbacks >"$logs/fallback.log" 2>&1
export LD_LIBRARY_PATH=$bundle/lib
export MODELBENCH_ORT_LIB=$bundle/ort/libonnxruntime.so.1
export MODELBENCH_LIBRARY=$bundle/lib/libmodelbench.so
export PYTHONPATH=$bundle/python
export MODELBENCH_CACHE_DIR=$work/cache
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
cli=$bundle/bin/modelbench
figures=$bundle/bench/gpu_figures.py
export bundle logs cli
export MB_GPU_CLI=$cli

python=${MB_GPU_PYTHON:-}
if [ -z "$python" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then
    python=/opt/torch/.venv/bin/python3
  else
    python=$(command -v python3)
  fi
fi
export python

# Every library of the bundle must resolve, from the bundle or the system.
ldd_check() {
  local f bad=0
  for f in "$cli" "$bundle"/lib/*.so* "$MODELBENCH_ORT_LIB"; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    if ldd "$f" | grep 'not found'; then
      echo "^ $f"
      bad=1
    fi
  done
  ldd "$cli" "$MODELBENCH_LIBRARY"
  return $bad
}
step ldd 30 ldd_check

machine_info() {
  cat "$bundle/BUNDLE"
  echo "device host: $(uname -n) $(uname -r)"
  ldd --version | head -1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
    --format=csv 2>&1 || echo "no nvidia-smi"
  "$python" -c 'import sys, torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))' 2>&1 ||
    echo "no torch in $python"
}
step machine 60 machine_info
step list 30 "$cli" list
step list_python 90 "$python" -m modelbench list

# A bundled ONNX model on the CPU: the C engine and ONNX Runtime from the
# bundle.
smoke_model=$(find "$bundle/models" -name 'mlp*.onnx' | sort | head -1)
[ -n "$smoke_model" ] || smoke_model=$(find "$bundle/models" -name '*.onnx' | sort | head -1)
step smoke_bench 60 "$cli" bench "$smoke_model" -c REFERENCE,ORT_CPU --warmup 1 \
  --warmup-time 0 --min-iterations 3 --min-time 0 --no-record --json "$raw/smoke.json"

# ---- the libtorch/AOTInductor module, built against the device's PyTorch ----
# Its own CMake project (tools/aoti-module: CUDA events where the wheel has
# libtorch_cuda and the CUDA headers are found); the module goes beside
# libmodelbench.so, where the libtorch adapter looks, and
# MODELBENCH_AOTI_TORCH_LIB names the wheel's libtorch it links. Only the
# aoti module: a libmodelbench-libtorch.so there would make CPU TORCHSCRIPT
# look for Debian's libtorch, which this machine lacks.
shim_torch_dir=${MB_GPU_TORCH_DIR:-}
[ -n "$shim_torch_dir" ] || [ "$cpu_only" = 1 ] ||
  shim_torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' \
    2>/dev/null) || shim_torch_dir=""
[ -n "$shim_torch_dir" ] && export MODELBENCH_AOTI_TORCH_LIB=$shim_torch_dir/lib/libtorch_cpu.so
shim_build() {
  local torch_dir=$shim_torch_dir src=$bundle/shim rc=0
  [ -n "$torch_dir" ] || { echo "no torch/ folder to build against"; return 1; }
  echo "torch: $torch_dir; $(g++ --version | head -1); $(cmake --version 2>/dev/null | head -1)"
  # shellcheck disable=SC2086 # MB_GPU_SHIM_FLAGS is a word list of -D options
  (set -x
    cmake -S "$src/tools/aoti-module" -B "$work/aoti" -DMB_AOTI_TORCH_DIR="$torch_dir" \
      -DCMAKE_BUILD_TYPE=Release ${MB_GPU_SHIM_FLAGS:-} &&
      cmake --build "$work/aoti" -j "$(nproc)") >"$logs/shim_aoti.log" 2>&1 || rc=1
  grep -E "AOTInductor module" "$logs/shim_aoti.log"
  tail -20 "$logs/shim_aoti.log"
  if [ "$rc" = 0 ]; then
    cp "$work/aoti/libmodelbench-aoti.so" "$bundle/lib/libmodelbench-aoti.so.part" &&
      mv "$bundle/lib/libmodelbench-aoti.so.part" "$bundle/lib/libmodelbench-aoti.so"
    ldd "$bundle/lib/libmodelbench-aoti.so" | grep -E 'not found|libtorch|libc10'
  fi
  return $rc
}
shim_pid=""
if [ "$cpu_only" = 1 ] && [ -z "${MB_GPU_TORCH_DIR:-}" ]; then
  printf 'shim_build\tskipped (CPU check; set MB_GPU_TORCH_DIR to try it)\t0\t0\n' >>"$steps"
else
  # Beside the figures: one core of many, done before the figures that
  # use it (the module is looked up when a conversion starts).
  step shim_build 300 shim_build &
  shim_pid=$!
fi

summarize() {
  timeout -k 2 30 "$python" "$figures" --summary --results "$raw" --out "$OUT/summary.md" \
    >>"$logs/summary.log" 2>&1
}

# ---- the figures: the most important first, each with a share of what is
# left (a step that ends early leaves its time to the next) ----
if [ "$cpu_only" = 1 ]; then
  step figures_dry_run 120 "$python" "$figures" --dry-run --results "$raw"
else
  phases=(
    "resnet18_b1 30 --model resnet18 --batch 1"
    "bert_b1 25 --model bert --batch 1"
    "resnet18_b32 17 --model resnet18 --batch 32"
    "bert_b32 15 --model bert --batch 32"
    "sweep 13 --sweep"
  )
  # MB_GPU_PHASES: the phases to run, by name, in this order.
  if [ -n "${MB_GPU_PHASES:-}" ]; then
    chosen=()
    for want in $MB_GPU_PHASES; do
      for phase in "${phases[@]}"; do
        [ "${phase%% *}" = "$want" ] && chosen+=("$phase")
      done
    done
    phases=("${chosen[@]}")
  fi
  shares_left=0
  for phase in "${phases[@]}"; do
    read -r _ share _ <<<"$phase"
    shares_left=$((shares_left + share))
  done
  for phase in "${phases[@]}"; do
    read -r name share args <<<"$phase"
    room=$(($(left) - reserve))
    cap=$((room * share / shares_left))
    shares_left=$((shares_left - share))
    # The driver stops starting work at its own deadline, 10 s before the
    # cap, so that what it measured is written.
    # shellcheck disable=SC2086 # args is a word list
    step "$name" "$cap" "$python" "$figures" $args ${MB_GPU_FIGURES_ARGS:-} --results "$raw" \
      --deadline $(($(date +%s) + cap - 10))
    summarize
  done
fi

if [ -n "$shim_pid" ]; then
  wait "$shim_pid"
fi
# The reserve is for this: not a step, which would find no time left.
summarize

# ---- what comes back: at most 8 files, 16 MiB each ----
for f in figures.json sweep.json sweep.html; do
  [ -f "$raw/$f" ] && cp "$raw/$f" "$OUT/"
done
cp "$steps" "$OUT/steps.tsv"
# Logs and reports, not the build caches (packages, pickled modules).
(cd "$raw" && find . -type f \( -name '*.log' -o -name '*.json' -o -name '*.tsv' -o \
  -name '*.html' \) -size -4M -print0 | tar --null -T - -czf "$OUT/logs.tar.gz") 2>/dev/null
if [ "$(stat -c %s "$OUT/logs.tar.gz" 2>/dev/null || echo 0)" -gt $((15 * 1024 * 1024)) ]; then
  (cd "$raw" && find . -type f \( -name '*.log' -o -name '*.json' -o -name '*.tsv' \) \
    -size -256k -print0 | tar --null -T - -czf "$OUT/logs.tar.gz") 2>/dev/null
fi
echo "check.sh: $(($(date +%s) - start)) s; results in $OUT:"
ls -l "$OUT"
[ -f "$OUT/summary.md" ] && cat "$OUT/summary.md"
exit 0
