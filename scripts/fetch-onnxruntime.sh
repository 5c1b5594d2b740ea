#!/usr/bin/env bash
# Fetches ONNX Runtime 1.30.0 (shared library + C headers) from the npm
# registry into a standard ORT release layout:
#   ${MODELBENCH_CACHE_DIR:-$HOME/.cache/modelbench}/onnxruntime-1.30.0/
#     include/onnxruntime_c_api.h ...
#     lib/libonnxruntime.so.1, lib/libonnxruntime.so -> libonnxruntime.so.1
#
# Microsoft publishes no Linux C package on a registry we can reach, but two
# npm packages carry exactly what we need: onnxruntime-node ships the Linux
# shared library and com.github.asus4.onnxruntime ships the C headers
# (inside its iOS framework). We only download their tarballs with
# `npm pack` and unpack them with tar: no package install script ever runs.
# Each tarball is checked against the registry's sha512 integrity string,
# pinned below, before anything is extracted from it.
#
# Idempotent and silent when everything is present; never asks questions.
#   ONNXRUNTIME_ROOT       use this ORT release layout instead; fetch nothing.
#   MODELBENCH_CACHE_DIR   cache folder (default ~/.cache/modelbench).
# Exit status: 0 when ORT is in place, or when npm is missing (modelbench
# builds and runs without ORT; its conversions are then unavailable);
# 1 when a download or an integrity check fails.
set -euo pipefail

ORT_VERSION=1.30.0
LIB_PACKAGE=onnxruntime-node@1.30.0
LIB_INTEGRITY=sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw==
HEADERS_PACKAGE=com.github.asus4.onnxruntime@0.4.9
HEADERS_INTEGRITY=sha512-BkzxduSZ9IkeDP6Q8lz2TFU2ie7hSSvS7ZIfzMooExoq0CNzJnuuGaUJ7IsojBgqO4ouD1jXah8OYyJbCN29Fg==
HEADERS_DIR='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'

say() { echo "fetch-onnxruntime: $*" >&2; }

if [ -n "${ONNXRUNTIME_ROOT:-}" ]; then
  if [ ! -f "$ONNXRUNTIME_ROOT/include/onnxruntime_c_api.h" ] ||
     ! ls "$ONNXRUNTIME_ROOT"/lib/libonnxruntime.so* >/dev/null 2>&1; then
    say "ONNXRUNTIME_ROOT=$ONNXRUNTIME_ROOT lacks include/onnxruntime_c_api.h or lib/libonnxruntime.so*; ORT conversions will be unavailable"
  fi
  exit 0
fi

cache=${MODELBENCH_CACHE_DIR:-$HOME/.cache/modelbench}
dest=$cache/onnxruntime-$ORT_VERSION
if [ -f "$dest/include/onnxruntime_c_api.h" ] && [ -f "$dest/lib/libonnxruntime.so.1" ] &&
   [ -L "$dest/lib/libonnxruntime.so" ]; then
  exit 0
fi

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64) arch=x64 ;;
  Linux/aarch64) arch=arm64 ;;
  *)
    say "no ONNX Runtime build for $(uname -s)/$(uname -m) in $LIB_PACKAGE; ORT conversions will be unavailable"
    exit 0
    ;;
esac
LIB_PATH=package/bin/napi-v6/linux/$arch/libonnxruntime.so.1

if ! command -v npm >/dev/null 2>&1; then
  say "npm not found (Debian package 'npm'); ORT conversions will be unavailable." \
      "Install npm and rerun $0, or set ONNXRUNTIME_ROOT to an ONNX Runtime release."
  exit 0
fi

# Prints the "sha512-<base64>" integrity string of a file.
integrity_of() {
  if command -v openssl >/dev/null 2>&1; then
    printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
  else
    python3 -c 'import base64,hashlib,sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode(), end="")' "$1"
  fi
}

tarballs=$cache/tarballs
mkdir -p "$tarballs"
work=$(mktemp -d "$cache/.fetch-ort.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Ensures the verified tarball of package $1 (integrity $2) is in the cache
# and prints its path. A cached tarball that fails the check is fetched again.
fetch_tarball() {
  local spec=$1 expected=$2 name version file got
  name=${spec%@*}
  version=${spec##*@}
  file=$tarballs/$name-$version.tgz
  if [ -f "$file" ] && [ "$(integrity_of "$file")" = "$expected" ]; then
    echo "$file"
    return
  fi
  say "downloading $spec from the npm registry"
  mkdir -p "$work/pack"
  # --ignore-scripts: pack never runs lifecycle scripts of a registry spec,
  # but say so anyway; cd so that no package.json around us is involved.
  if ! (cd "$work/pack" && npm pack "$spec" --pack-destination "$work/pack" \
          --ignore-scripts --loglevel=error >/dev/null </dev/null); then
    say "npm pack $spec failed (is the registry reachable?)"
    exit 1
  fi
  got=$(integrity_of "$work/pack/$name-$version.tgz")
  if [ "$got" != "$expected" ]; then
    say "integrity mismatch for $spec: expected $expected, got $got"
    exit 1
  fi
  mv -f "$work/pack/$name-$version.tgz" "$file"
  echo "$file"
}

lib_tgz=$(fetch_tarball "$LIB_PACKAGE" "$LIB_INTEGRITY")
headers_tgz=$(fetch_tarball "$HEADERS_PACKAGE" "$HEADERS_INTEGRITY")

# Build the layout in a staging folder and move it into place in one step,
# so an interrupted run never leaves a half-filled layout behind.
stage=$work/onnxruntime-$ORT_VERSION
mkdir -p "$stage/include" "$stage/lib" "$work/x"
tar -xzf "$lib_tgz" -C "$work/x" "$LIB_PATH"
tar -xzf "$headers_tgz" -C "$work/x" --wildcards "$HEADERS_DIR/*.h"
install -m 0755 "$work/x/$LIB_PATH" "$stage/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"
install -m 0644 "$work/x/$HEADERS_DIR"/*.h "$stage/include/"
echo "$ORT_VERSION" >"$stage/VERSION"
rm -rf "$dest"
# -T: if a concurrent run got there first, fail instead of nesting folders.
if ! mv -T "$stage" "$dest" 2>/dev/null && [ ! -f "$dest/lib/libonnxruntime.so.1" ]; then
  say "cannot install into $dest"
  exit 1
fi
say "ONNX Runtime $ORT_VERSION installed in $dest"
