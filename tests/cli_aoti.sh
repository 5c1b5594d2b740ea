#!/usr/bin/env bash
# EXPORT+AOT_INDUCTOR from the command line, where it fails: a package that
# is not one, a manifest without the form or with the front's reason for
# lacking it, a form's build record that is not a number, and a module that
# is not there. (A real package is compiled and run, from the Python front
# and from this CLI, by python/tests/test_aoti.py: compiling one takes
# AOTInductor half a minute.) Without the AOTInductor module (no PyTorch
# 2.x wheel at build time, sanitizer builds) the test skips, unless
# MB_WITH_TORCH2=1 (`make test`) in a normal build.
#
# Environment (set by ctest): MB_CLI, MB_SANITIZE.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

quick=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record)

if ! available EXPORT+AOT_INDUCTOR; then
  if [ "${MB_WITH_TORCH2:-0}" = 1 ] && [ "${MB_SANITIZE:-OFF}" != ON ]; then
    fail "EXPORT+AOT_INDUCTOR is required (MB_WITH_TORCH2=1) but unavailable"
    "$cli" list | grep AOT_INDUCTOR
  else
    echo "SKIP: EXPORT+AOT_INDUCTOR unavailable here (modelbench list says why)"
  fi
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

# manifest NAME FORMATS: a one-input model whose forms are FORMATS (JSON).
manifest() {
  cat >"$tmp/$1.json" <<EOF
{"modelbench_model": 1, "name": "$1",
 "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 16]}],
 "outputs": [{"name": "y", "dtype": "float32", "shape": [2, 4]}],
 "formats": $2}
EOF
}

# fails NEEDLE MODEL [ARGS...]: the conversion fails (exit 1) saying NEEDLE.
fails() {
  run 1 bench "$tmp/$2.json" -c EXPORT+AOT_INDUCTOR "${quick[@]}" \
    --json "$tmp/r.json" "${@:3}" || return
  checks=$((checks + 1))
  if ! grep -qF -- "$1" "$tmp/out" "$tmp/err" "$tmp/r.json"; then
    fail "$2: '$1' not found"
    show "$tmp/err" "$tmp/out"
  fi
}

echo "not a zip" >"$tmp/corrupt.pt2"
manifest corrupt "{\"aoti\": {\"path\": \"corrupt.pt2\"}}"
fails "corrupt.pt2: not an AOTInductor package libtorch" corrupt

manifest missing "{\"aoti\": {\"path\": \"none.pt2\"}}"
fails "none.pt2" missing

# (A manifest needs one form it has: the TorchScript one here, never read.)
manifest refused '{"aoti": {"error": "AOTInductor packages need PyTorch 2.6 or newer"},
                   "torchscript": {"path": "corrupt.pt2"}}'
fails "AOTInductor packages need PyTorch 2.6 or newer" refused

# A form's build record must be what the front writes.
manifest badms "{\"aoti\": {\"path\": \"corrupt.pt2\", \"build_ms\": \"fast\"}}"
run 1 bench "$tmp/badms.json" -c EXPORT+AOT_INDUCTOR "${quick[@]}" &&
  expect_in "$tmp/err" '"build_ms" must be a number >= 0' "build_ms not a number"

# The module not where it is said to be: unavailable, and why.
MODELBENCH_AOTI_MODULE=$tmp/none.so run 0 list &&
  expect_in "$tmp/out" "MODELBENCH_AOTI_MODULE=$tmp/none.so: no such file" \
    "list without the module"

# EXPORT+AOT_INDUCTOR can run on CUDA. With the wheel's libtorch taken to
# be one without CUDA (no libtorch_cuda.so beside its libtorch_cpu.so),
# --device cuda fails it saying why, decided without loading the module;
# the device override places it on the CPU, where the package is loaded.
run 0 list --json &&
  py "list --json: EXPORT+AOT_INDUCTOR devices" '
import json, sys
row = [c for c in json.load(open(sys.argv[1]))["conversions"] if c["name"] == "EXPORT+AOT_INDUCTOR"][0]
assert [d["device"] for d in row["devices"]] == ["cpu", "cuda"], row' "$tmp/out"
mkdir -p "$tmp/nocuda" && : >"$tmp/nocuda/libtorch_cpu.so"
MODELBENCH_AOTI_TORCH_LIB=$tmp/nocuda/libtorch_cpu.so fails \
  "EXPORT+AOT_INDUCTOR cannot run on cuda here (cuda: this libtorch ($tmp/nocuda/libtorch_cpu.so) is built without CUDA" \
  corrupt --device cuda
MODELBENCH_AOTI_TORCH_LIB=$tmp/nocuda/libtorch_cpu.so fails \
  "corrupt.pt2: not an AOTInductor package libtorch" corrupt --device cuda \
  --allow-device-override

# A module built elsewhere (tools/aoti-module) against another wheel: the
# runtime's version is that wheel's (its torch/version.py), not the one
# this build saw.
mkdir -p "$tmp/wheel/torch/lib" && : >"$tmp/wheel/torch/lib/libtorch_cpu.so"
echo "__version__ = '9.8.7+cu130'" >"$tmp/wheel/torch/version.py"
MODELBENCH_AOTI_TORCH_LIB=$tmp/wheel/torch/lib/libtorch_cpu.so fails \
  "corrupt.pt2: not an AOTInductor package libtorch" corrupt &&
  py "the version of a module built elsewhere" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["runtime_version"] == "9.8.7", r["runtime_version"]' "$tmp/r.json"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
