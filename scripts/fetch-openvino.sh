#!/usr/bin/env bash
# Fetches OpenVINO 2026.4.1's C API (headers + shared libraries) from PyPI
# into a release-like layout:
#   ${MODELBENCH_CACHE_DIR:-$HOME/.cache/modelbench}/openvino-2026.4.1/
#     include/openvino/c/*.h
#     lib/libopenvino_c.so.2641, libopenvino.so.2641, the CPU plugin, the
#         ONNX and IR frontends, TBB and hwloc
#
# PyPI's `openvino` wheel carries OpenVINO's C headers and libraries beside
# its Python bindings. We only download the wheel (`pip download`, pinned by
# version and sha256, no dependencies, nothing installed) and take those
# files out of it with Python's zipfile: no package code ever runs. The
# libraries find each other through their own RPATH ($ORIGIN). The wheel is
# tagged for CPython 3.11, but the C libraries in it do not use Python.
#
# Idempotent and silent when everything is present; never asks questions.
#   OPENVINO_ROOT         use this layout (include/, lib/) instead; fetch nothing.
#   MODELBENCH_CACHE_DIR  cache folder (default ~/.cache/modelbench).
# Exit status: 0 when OpenVINO is in place, or when this machine cannot take
# it (not x86-64 Linux, no pip): modelbench builds and runs without it and
# `list` says why its conversions are unavailable; 1 when a download or the
# hash check fails.
set -euo pipefail

OV_VERSION=2026.4.1
OV_SOVERSION=2641
WHEEL=openvino-2026.4.1-22982-cp311-cp311-manylinux_2_28_x86_64.whl
WHEEL_SHA256=2d22b1da03f7caf74df30e9f6417d0ab2f637e4a38e08e1dcd294d2c37407aaf
# What modelbench's adapter loads: the C API, the core, the CPU plugin, the
# ONNX and IR readers, and what they link.
LIBS=(libopenvino_c.so.$OV_SOVERSION libopenvino.so.$OV_SOVERSION
      libopenvino_intel_cpu_plugin.so
      libopenvino_onnx_frontend.so.$OV_SOVERSION
      libopenvino_ir_frontend.so.$OV_SOVERSION
      libtbb.so.12 libtbbmalloc.so.2 libtbbbind_2_5.so.3 libhwloc.so.15)

say() { echo "fetch-openvino: $*" >&2; }

if [ -n "${OPENVINO_ROOT:-}" ]; then
  if [ ! -f "$OPENVINO_ROOT/include/openvino/c/openvino.h" ] ||
     ! ls "$OPENVINO_ROOT"/lib/libopenvino_c.so* >/dev/null 2>&1; then
    say "OPENVINO_ROOT=$OPENVINO_ROOT lacks include/openvino/c/openvino.h or lib/libopenvino_c.so*; OpenVINO conversions will be unavailable"
  fi
  exit 0
fi

cache=${MODELBENCH_CACHE_DIR:-$HOME/.cache/modelbench}
dest=$cache/openvino-$OV_VERSION
if [ -f "$dest/include/openvino/c/openvino.h" ] &&
   [ -f "$dest/lib/libopenvino_c.so.$OV_SOVERSION" ] && [ -f "$dest/VERSION" ]; then
  exit 0
fi

if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
  say "the pinned OpenVINO wheel is for x86-64 Linux, not $(uname -s)/$(uname -m); OpenVINO conversions will be unavailable"
  exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  say "pip not found (Debian package 'python3-pip'); OpenVINO conversions will be unavailable." \
      "Install it and rerun $0, or set OPENVINO_ROOT."
  exit 0
fi

wheels=$cache/wheels
mkdir -p "$wheels"
work=$(mktemp -d "$cache/.fetch-openvino.XXXXXX")
trap 'rm -rf "$work"' EXIT

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

wheel=$wheels/$WHEEL
if [ ! -f "$wheel" ] || [ "$(sha256_of "$wheel")" != "$WHEEL_SHA256" ]; then
  say "downloading $WHEEL from PyPI"
  echo "openvino==$OV_VERSION --hash=sha256:$WHEEL_SHA256" >"$work/requirements.txt"
  # --require-hashes: pip refuses a file whose sha256 differs; --no-deps and
  # the explicit tags: exactly this one file, whatever Python runs pip.
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: \
         --require-hashes -r "$work/requirements.txt" \
         --python-version 3.11 --implementation cp --abi cp311 \
         --platform manylinux_2_28_x86_64 -d "$work/dl" </dev/null >&2; then
    say "pip download openvino==$OV_VERSION failed (is PyPI reachable?)"
    exit 1
  fi
  got=$(sha256_of "$work/dl/$WHEEL")
  if [ "$got" != "$WHEEL_SHA256" ]; then
    say "sha256 mismatch for $WHEEL: expected $WHEEL_SHA256, got $got"
    exit 1
  fi
  mv -f "$work/dl/$WHEEL" "$wheel"
fi

# Build the layout in a staging folder and move it into place in one step,
# so an interrupted run never leaves a half-filled layout behind.
stage=$work/openvino-$OV_VERSION
python3 - "$wheel" "$stage" "${LIBS[@]}" <<'EOF'
import os, shutil, sys, zipfile
wheel, stage, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    for name in sorted(names):
        if name.startswith("openvino/include/openvino/c/") and name.endswith(".h"):
            out = os.path.join(stage, "include", name[len("openvino/include/"):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
    os.makedirs(os.path.join(stage, "lib"), exist_ok=True)
    for lib in libs:
        name = "openvino/libs/" + lib
        if name not in names:
            sys.exit("fetch-openvino: the wheel has no " + name)
        out = os.path.join(stage, "lib", lib)
        with z.open(name) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(out, 0o755)
EOF
echo "$OV_VERSION" >"$stage/VERSION"
rm -rf "$dest"
# -T: if a concurrent run got there first, fail instead of nesting folders.
if ! mv -T "$stage" "$dest" 2>/dev/null && [ ! -f "$dest/lib/libopenvino_c.so.$OV_SOVERSION" ]; then
  say "cannot install into $dest"
  exit 1
fi
say "OpenVINO $OV_VERSION installed in $dest"
