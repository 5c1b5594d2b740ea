#!/usr/bin/env bash
# Installs the Debian packages modelbench needs, only those missing.
# Idempotent and silent when everything is present; never asks questions.
#   MB_WITH_TORCH=1  also install PyTorch/torchvision/onnx, pytest,
#                    scikit-learn and cloudpickle (the PyTorch export tests,
#                    the Python front's tests and examples, `modelbench
#                    script`) and libtorch-dev (the TORCHSCRIPT conversion's
#                    C++ module); `make test` sets it.
#   MB_WITH_TORCH2=1 also make the virtual environment with the current
#                    PyTorch from PyPI (scripts/python-venv.sh, pins in
#                    python/requirements-torch2.txt): the Python suite runs
#                    on it too (`make test` sets it).
#   MB_WITH_BROWSER=1 also install chromium (the HTML report's browser test;
#                    `make test` sets it).
#   MB_WITH_FUZZ=1   also install clang (libFuzzer; `make test` and `make fuzz`
#                    set it).
#   MB_WITH_SLURM=1  also install Slurm (slurm-wlm: slurmctld, slurmd, the
#                    client tools), munge and OpenSSH's server and client:
#                    scripts/local-slurm.sh and the executors' tests
#                    (`bench --executor slurm|ssh`; `make test` sets it).
#   MB_WITH_QEMU=1   also install qemu-user: the int8 tests run ONNX
#                    Runtime's kernels on an emulated AVX2-only CPU
#                    (qemu-x86_64 -cpu Haswell-v4), whatever CPU runs them
#                    (`make test` sets it).
#   MB_WITH_IMAGES=1 also install python3-skimage: the photographs
#                    tools/real_images.py crops into natural-looking inputs
#                    (`make bench-tune`).
#   MB_WITH_ORT=0    skip ONNX Runtime (default: fetch it with
#                    scripts/fetch-onnxruntime.sh, installing npm if needed).
#   MB_WITH_OPENVINO=0 skip OpenVINO (default: fetch its C API from PyPI's
#                    wheel with scripts/fetch-openvino.sh, installing pip if
#                    needed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(
  build-essential cmake pkg-config
  protobuf-c-compiler libprotobuf-c-dev   # ONNX parsing (code generated at build time)
  libonnx-dev                             # onnx.proto
  libonnx-testdata                        # ONNX backend test suite
  libopenblas-dev                         # sgemm for Conv/MatMul/Gemm
  libxnnpack-dev libpthreadpool-dev       # XNNPACK conversions
  libdnnl-dev                             # oneDNN conversions
  libsqlite3-dev                          # results database
  zlib1g-dev                              # .npz inputs (deflated members)
  python3                                 # the PyTorch conversions' registry rows, made at build time
)
if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
  packages+=(python3-torch python3-torchvision python3-onnx python3-numpy
             python3-pytest python3-sklearn python3-cloudpickle)
  packages+=(libtorch-dev)                # TORCHSCRIPT (libmodelbench-libtorch.so)
fi
if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
  packages+=(python3-venv)                # scripts/python-venv.sh
fi
if [ "${MB_WITH_BROWSER:-0}" = 1 ]; then
  packages+=(chromium)                    # the HTML report's browser test
fi
if [ "${MB_WITH_SLURM:-0}" = 1 ]; then
  packages+=(slurm-wlm slurmctld slurmd slurm-client munge
             openssh-server openssh-client)
fi
if [ "${MB_WITH_FUZZ:-0}" = 1 ]; then
  packages+=(clang libclang-rt-dev)
fi
if [ "${MB_WITH_IMAGES:-0}" = 1 ]; then
  packages+=(python3-skimage)             # tools/real_images.py's photographs
fi
if [ "${MB_WITH_QEMU:-0}" = 1 ]; then
  packages+=(qemu-user)                   # an AVX2-only CPU for the int8 tests
fi
# npm only downloads ONNX Runtime's tarballs; a Node.js from elsewhere
# (NodeSource) brings its own npm, so Debian's is added only when none is.
if [ "${MB_WITH_ORT:-1}" = 1 ] && ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

# pip only downloads OpenVINO's wheel (nothing is installed with it).
if [ "${MB_WITH_OPENVINO:-1}" = 1 ]; then
  packages+=(python3-pip)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "modelbench: installing missing packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo="sudo -n"
    else
      echo "modelbench: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq </dev/null >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
  echo "modelbench: packages installed"
fi

# PyTorch 2.x from PyPI into its virtual environment; silent when present.
if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
  "$here/python-venv.sh"
fi

# ONNX Runtime into the user's cache (no root needed); silent when present.
if [ "${MB_WITH_ORT:-1}" = 1 ]; then
  "$here/fetch-onnxruntime.sh"
fi

# OpenVINO's C API into the user's cache; silent when present.
if [ "${MB_WITH_OPENVINO:-1}" = 1 ]; then
  "$here/fetch-openvino.sh"
fi
