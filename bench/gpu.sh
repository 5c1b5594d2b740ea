#!/usr/bin/env bash
# The prepared device check of issue 26: what a GPU machine (the `device`
# tool's, docs in README.md "On a GPU machine") needs to measure
# modelbench's GPU figures in one call with a time limit.
#
#   bench/gpu.sh pack [--dest DIR] [--xz-level N]
#       Packs a relocatable bundle of this checkout's build into DIR
#       (default .devcarry/ at the repo root, which .gitignore ignores):
#       DIR/bundle.tar.xz and DIR/check.sh (bench/gpu_check.sh). The bundle
#       holds build/bin/modelbench, build/lib/libmodelbench.so*, the ONNX
#       Runtime library, every library `ldd` resolves for those outside
#       glibc, libstdc++ and libgcc_s (the device's own are newer), python/
#       (no tests, no caches), the bundled ONNX models, the figures driver
#       (bench/gpu_figures.py) and the source of the libtorch/AOTInductor
#       module (src/runtime/libtorch_module.cpp), which check.sh builds
#       there against the device's PyTorch. Then, with the device tool:
#         run {command: "bash .devcarry/check.sh", carry: [".devcarry"],
#              timeout_s: 600}
#   bench/gpu.sh cpu-check [--budget SECONDS] [--out DIR]
#       Packs into a temporary folder (fast compression) and runs its
#       check.sh here in its CPU mode (MB_GPU_CPU_CHECK=1) with a clean
#       environment: unpack, ldd, `modelbench list`, a bench of a bundled
#       model, the figures driver's --dry-run. Proves the bundle is
#       relocatable without a GPU; tests/cli_gpu_bundle.sh does the same
#       with checks.
#
# Environment: MB_BUILD_DIR (default build/), MB_ORT_DIR (the ONNX Runtime
# lib/ folder; default the one CMakeCache.txt names, else the newest
# ~/.cache/modelbench/onnxruntime-*/lib).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${MB_BUILD_DIR:-$root/build}

die() {
  echo "bench/gpu.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

# Libraries the device has newer versions of: glibc's own, the C++ runtime.
system_lib='^(libc|libm|libmvec|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso)\.so'

# Libraries most machines have, carried for those that lack them.
fallback_lib='^(libgomp|libz|libgfortran|libquadmath)\.so'

# The ONNX Runtime lib/ folder the build uses.
ort_dir() {
  if [ -n "${MB_ORT_DIR:-}" ]; then
    echo "$MB_ORT_DIR"
    return
  fi
  local inc
  inc=$(sed -n 's/^[A-Za-z_]*ORT[A-Za-z_]*INCLUDE[A-Za-z_]*:[A-Z]*=\(.*\)$/\1/p' \
    "$build/CMakeCache.txt" 2>/dev/null | head -1)
  if [ -n "$inc" ] && [ -d "$inc/../lib" ]; then
    (cd "$inc/../lib" && pwd)
    return
  fi
  # shellcheck disable=SC2012 # names are ours: onnxruntime-X.Y.Z
  ls -d "$HOME"/.cache/modelbench/onnxruntime-*/lib 2>/dev/null | sort -V | tail -1
}

# deps FILE...: the non-system libraries ldd resolves for FILEs, as
# "soname path" lines; fails naming any that ldd cannot find.
deps() {
  local f missing
  for f in "$@"; do
    missing=$(ldd "$f" | awk '/not found/ {print $1}')
    [ -z "$missing" ] || die "ldd $f: not found: $missing"
    ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | grep -Ev "$system_lib" | sort -u
}

pack() {
  local dest=$root/.devcarry level=6
  while [ $# -gt 0 ]; do
    case $1 in
    --dest) dest=${2:?--dest needs a folder}; shift 2 ;;
    --xz-level) level=${2:?--xz-level needs 0-9}; shift 2 ;;
    *) die "pack: unknown option '$1' (--dest DIR, --xz-level N)" ;;
    esac
  done
  case $level in [0-9]) ;; *) die "pack: --xz-level '$level': a digit 0-9" ;; esac
  local bin=$build/bin/modelbench lib=$build/lib/libmodelbench.so ort
  [ -x "$bin" ] || die "no $bin: build first (cmake --build build -j2)"
  [ -e "$lib" ] || die "no $lib: build first (cmake --build build -j2)"
  ort=$(ort_dir)
  [ -n "$ort" ] && [ -d "$ort" ] || die "no ONNX Runtime lib/ folder (set MB_ORT_DIR)"
  local ort_lib
  ort_lib=$(find "$ort" -maxdepth 1 -name 'libonnxruntime.so.*' -type f | sort -V | tail -1)
  [ -n "$ort_lib" ] || die "no libonnxruntime.so.* in $ort"

  local stage
  stage=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: stage is local
  trap "rm -rf '$stage'" EXIT
  mkdir -p "$stage"/{bin,lib,ort,models,bench,shim/include,shim/src/runtime}
  cp "$bin" "$stage/bin/"
  cp -P "$build"/lib/libmodelbench.so* "$stage/lib/"
  # ONNX Runtime and its own links (libonnxruntime.so.1 -> the file).
  cp -P "$ort"/libonnxruntime.so* "$stage/ort/"
  # Under their sonames, where the loader looks for them. The compiler's
  # runtimes and zlib go to lib/fallback/: check.sh uses them only where
  # the machine has none (its own are newer, and code it compiles, such as
  # Inductor's OpenMP kernels, needs its own libgomp).
  local soname path
  mkdir -p "$stage/lib/fallback"
  while read -r soname path; do
    case $soname in libmodelbench.so* | libonnxruntime.so*) continue ;; esac
    if [[ $soname =~ $fallback_lib ]]; then
      cp -L "$path" "$stage/lib/fallback/$soname"
    else
      cp -L "$path" "$stage/lib/$soname"
    fi
  done < <(deps "$bin" "$lib" "$ort_lib")
  tar -C "$root" -cf - --exclude=__pycache__ --exclude='*.pyc' --exclude=python/tests \
    python | tar -C "$stage" -xf -
  # _paths.py names this build's folders; the bundle's are set by check.sh.
  rm -f "$stage/python/modelbench/_paths.py"
  find "$build/models" -maxdepth 1 -name '*.onnx' -size -8M -exec cp {} "$stage/models/" \;
  cp "$root/bench/gpu_figures.py" "$stage/bench/"
  # The module's source, with every header it could include.
  cp "$root"/include/*.h "$stage/shim/include/"
  (cd "$root" && find src -name '*.h' -print0 | tar --null -T - -cf -) | tar -C "$stage/shim" -xf -
  cp "$root/src/runtime/libtorch_module.cpp" "$stage/shim/src/runtime/"
  # The module's own CMake project (tools/aoti-module), as in the tree.
  mkdir -p "$stage/shim/tools/aoti-module" "$stage/shim/cmake"
  cp "$root/tools/aoti-module/CMakeLists.txt" "$stage/shim/tools/aoti-module/"
  cp "$root/cmake/aoti_module.cmake" "$stage/shim/cmake/"
  {
    echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "dirty: $(git -C "$root" status --porcelain 2>/dev/null | grep -c . || true)"
    echo "packed: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
    echo "glibc: $(ldd --version | head -1)"
    echo "onnxruntime: $ort_lib"
  } >"$stage/BUNDLE"

  mkdir -p "$dest"
  rm -f "$dest/bundle.tar.xz" "$dest/check.sh"
  tar -C "$stage" -cf - . | xz -T2 "-$level" >"$dest/bundle.tar.xz.part"
  mv "$dest/bundle.tar.xz.part" "$dest/bundle.tar.xz"
  cp "$root/bench/gpu_check.sh" "$dest/check.sh"
  local bytes
  bytes=$(stat -c %s "$dest/bundle.tar.xz")
  # The device tool carries 64 MiB in all, the working tree included.
  [ "$bytes" -lt $((48 * 1024 * 1024)) ] ||
    die "$dest/bundle.tar.xz is $((bytes / 1048576)) MiB: over the 48 MiB this check allows itself"
  echo "packed $dest/bundle.tar.xz ($((bytes / 1024)) KiB) and $dest/check.sh"
}

cpu_check() {
  local budget=90 out=""
  while [ $# -gt 0 ]; do
    case $1 in
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) die "cpu-check: unknown option '$1' (--budget S, --out DIR)" ;;
    esac
  done
  local carry
  carry=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$carry'" EXIT
  (pack --dest "$carry" --xz-level 0)
  [ -n "$out" ] || out=$carry/out
  mkdir -p "$out"
  # A clean environment, from a folder outside the checkout: what the
  # bundle needs must be in it.
  (cd "$carry" && env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" \
    OUT="$out" MB_GPU_CPU_CHECK=1 MB_GPU_BUDGET="$budget" \
    MB_GPU_PYTHON="${MB_GPU_PYTHON:-}" bash "$carry/check.sh")
  echo "results in $out:"
  ls "$out"
  [ "$out" != "$carry/out" ] || cat "$out/summary.md"
  local failed
  failed=$(awk -F'\t' 'NR > 1 && $2 != "0" && $2 !~ /^skipped/ {print $1}' "$out/steps.tsv")
  [ -z "$failed" ] || die "cpu-check: failed steps: $(echo $failed)"
}

case ${1:-} in
pack) shift; pack "$@" ;;
cpu-check) shift; cpu_check "$@" ;;
*) usage ;;
esac
