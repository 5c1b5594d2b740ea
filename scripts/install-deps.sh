#!/usr/bin/env bash
# Installs the Debian packages modelbench needs, only those missing.
# Idempotent and silent when everything is present; never asks questions.
#   MB_WITH_TORCH=1  also install PyTorch/torchvision/onnx (for the PyTorch
#                    export tests; `make test` sets it).
#   MB_WITH_FUZZ=1   also install clang (libFuzzer).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  protobuf-c-compiler libprotobuf-c-dev   # ONNX parsing (code generated at build time)
  libonnx-dev                             # onnx.proto
  libonnx-testdata                        # ONNX backend test suite
  libopenblas-dev                         # sgemm for Conv/MatMul/Gemm
)
if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
  packages+=(python3-torch python3-torchvision python3-onnx python3-numpy)
fi
if [ "${MB_WITH_FUZZ:-0}" = 1 ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

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
