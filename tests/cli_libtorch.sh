#!/usr/bin/env bash
# The TORCHSCRIPT conversion from the command line: `modelbench bench
# model.pt -c TORCHSCRIPT --shape ...` on TorchScript files written by
# tests/torchscript_models.py (a CNN, two inputs and a tuple, a dict, an
# int64 input through a manifest), accuracy against TORCHSCRIPT itself, and
# the errors a user meets (a wrong number of --shape inputs, a corrupt file,
# no --shape, forward() failing, a module returning a non-tensor, a module
# that cannot be found). Outputs against torch's own values are checked by
# tests/test_runtime_libtorch.c.
#
# Needs /usr/bin/python3 with torch and the libtorch module (libtorch-dev at
# configure time). Without them the test is skipped, unless MB_WITH_TORCH=1
# (set by `make test`): then it fails.
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"

cli=$MB_CLI
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$MB_SOURCE_DIR/tests/shell_lib.sh"

required=0
[ "${MB_WITH_TORCH:-0}" = 1 ] && required=1
skip() {
  if [ $required = 1 ]; then
    echo "FAIL: $* (required: MB_WITH_TORCH=1)" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 0
}

# Each process that probes or runs TORCHSCRIPT loads libtorch (seconds under
# ASan): the test keeps their number down.
run 0 list --json || exit 1
cp "$tmp/out" "$tmp/list.json"
reason=$("$python" -c '
import json, sys
row = [c for c in json.load(open(sys.argv[1]))["conversions"] if c["name"] == "TORCHSCRIPT"][0]
print("" if row["available"] else row["reason"])' "$tmp/list.json")
if [ -n "$reason" ]; then
  # Unavailable says what to do about it.
  case "$reason" in
  *libtorch*) ;;
  *) echo "FAIL: TORCHSCRIPT unavailable without naming libtorch: $reason" >&2; exit 1 ;;
  esac
  skip "TORCHSCRIPT unavailable: $reason"
fi
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
  skip "/usr/bin/python3 lacks torch or numpy (apt install python3-torch python3-numpy)"
fi

models=$tmp/models
if ! "$python" "$MB_SOURCE_DIR/tests/torchscript_models.py" "$models" >"$tmp/gen.log" 2>&1; then
  echo "FAIL: tests/torchscript_models.py failed:" >&2
  tail -n 20 "$tmp/gen.log" >&2
  exit 1
fi

fast=(--min-time 0.05 --warmup 1 --warmup-time 0 --min-iterations 3 --no-record)

# result JSON EXPR...: a Python check on the JSON report's only result `r`.
result() {
  local json=$1 what=$2
  shift 2
  py "$what" '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["results"]) == 1, [x["conversion"] for x in d["results"]]
r = d["results"][0]
assert r["conversion"] == "TORCHSCRIPT", r["conversion"]
for check in sys.argv[2:]:
    assert eval(check), (check, r)' "$json" "$@"
}

# --- list ---
py "list --json: TORCHSCRIPT row" '
import json, sys
row = [c for c in json.load(open(sys.argv[1]))["conversions"] if c["name"] == "TORCHSCRIPT"][0]
assert (row["id"], row["runtime"], row["format"], row["tier"], row["default"]) == \
    (50, "libtorch", "torchscript", 2, True), row
assert row["available"], row' "$tmp/list.json"

# --- benchmarks ---
# The default set of a TorchScript file is TORCHSCRIPT alone.
run 0 bench "$models/cnn.pt" --shape x=1,3,16,16 "${fast[@]}" --json "$tmp/cnn.json" &&
  result "$tmp/cnn.json" "bench cnn.pt" 'r["status"] == "ok"' \
    'r["runtime"] == "libtorch"' 'r["runtime_version"].startswith(("1.", "2."))' \
    '0 < r["latency_ms"]["median"] < 1000' 'r["iterations"] >= 3' \
    'r["load_ms"] > 0' 'r["throughput_sps"] > 0' \
    'any("accuracy unknown" in w for w in r["warnings"])'
expect_in "$tmp/out" "TORCHSCRIPT ok" "bench cnn.pt table"

run 0 bench "$models/two_io.pt" -c TORCHSCRIPT --shape a=2,4 --shape b=2,3 \
  --threads 2 "${fast[@]}" --json "$tmp/two.json" &&
  result "$tmp/two.json" "bench two_io.pt at 2 threads" 'r["status"] == "ok"'

# Accuracy against TORCHSCRIPT itself: declared outputs (a manifest), error 0.
run 0 bench "$models/cnn_manifest.json" -c TORCHSCRIPT --reference TORCHSCRIPT \
  "${fast[@]}" --json "$tmp/ref.json" &&
  result "$tmp/ref.json" "--reference TORCHSCRIPT" 'r["status"] == "ok"' \
    'r["accuracy"]["max_abs_err"] == 0' \
    '[o["name"] for o in r["accuracy"]["outputs"]] == ["logits"]'
# An int64 input (declared in the manifest, which names the reference).
run 0 bench "$models/int64_manifest.json" --input-range ids=0:9 "${fast[@]}" \
  --json "$tmp/int64.json" &&
  result "$tmp/int64.json" "int64 input" 'r["status"] == "ok"' \
    'r["accuracy"]["max_abs_err"] == 0'

# --- errors ---
# fails CODE NEEDLE ARGS...: exit CODE, NEEDLE in the output or the JSON.
fails() {
  local code=$1 needle=$2
  shift 2
  run "$code" "$@" "${fast[@]}" --json "$tmp/err.json" || return
  checks=$((checks + 1))
  if ! grep -qF -- "$needle" "$tmp/out" "$tmp/err" "$tmp/err.json" 2>/dev/null; then
    fail "modelbench $*: '$needle' not found"
    show "$tmp/err" "$tmp/out"
  fi
}
fails 1 "two_io.pt: forward(a, b) takes 2 tensors but 1 input is given" \
  bench "$models/two_io.pt" -c TORCHSCRIPT --shape a=2,4
fails 1 "corrupt.pt: not a TorchScript file" \
  bench "$models/corrupt.pt" -c TORCHSCRIPT --shape x=1,4
fails 2 "give --shape NAME=D0,D1,... for each argument of forward()" \
  bench "$models/cnn.pt" -c TORCHSCRIPT
fails 1 "forward() returns something other than tensors: the result[1] is int" \
  bench "$models/returns_int.pt" -c TORCHSCRIPT --shape x=2,2
fails 1 "mat1 and mat2 shapes cannot be multiplied" \
  bench "$models/two_io.pt" -c TORCHSCRIPT --shape a=2,5 --shape b=2,3 &&
  result "$tmp/err.json" "forward() failing keeps TorchScript's traceback" \
    'r["status"] == "error"' '"Traceback of TorchScript" in r["backtrace"]'

# A module that is not there or not a library: unavailable, and why.
MODELBENCH_LIBTORCH_MODULE=$tmp/none.so fails 1 \
  "MODELBENCH_LIBTORCH_MODULE=$tmp/none.so: no such file" \
  bench "$models/cnn.pt" -c TORCHSCRIPT --shape x=1,3,16,16
# Probing loads nothing (a bench's parent process never holds a libtorch):
# a module that is there but broken fails the conversion that loads it.
echo "not a library" >"$tmp/bad.so"
MODELBENCH_LIBTORCH_MODULE=$tmp/bad.so fails 1 "cannot load $tmp/bad.so" \
  bench "$models/cnn.pt" -c TORCHSCRIPT --shape x=1,3,16,16

# --- devices ---
# TORCHSCRIPT can run on CUDA (on the PyTorch 2.x wheel's libtorch). With
# that libtorch taken to be one without CUDA (no libtorch_cuda.so beside
# its libtorch_cpu.so), CUDA is unusable with why, decided without loading
# anything; --device cuda fails the conversion with it, and the device
# override runs it on the CPU.
py "list --json: TORCHSCRIPT devices" '
import json, sys
row = [c for c in json.load(open(sys.argv[1]))["conversions"] if c["name"] == "TORCHSCRIPT"][0]
assert [d["device"] for d in row["devices"]] == ["cpu", "cuda"], row' "$tmp/list.json"
mkdir -p "$tmp/nocuda" && : >"$tmp/nocuda/libtorch_cpu.so"
MODELBENCH_AOTI_TORCH_LIB=$tmp/nocuda/libtorch_cpu.so run 0 list --json &&
  cp "$tmp/out" "$tmp/list_nocuda.json"
py "list --json: TORCHSCRIPT without a CUDA libtorch" '
import json, sys
row = [c for c in json.load(open(sys.argv[1]))["conversions"] if c["name"] == "TORCHSCRIPT"][0]
here = {d["device"]: d["here"] for d in row["devices"]}
assert here == {"cpu": True, "cuda": False}, row
assert "built without CUDA" in row["devices_reason"] or "built without a PyTorch" in row["devices_reason"], row' \
  "$tmp/list_nocuda.json"
MODELBENCH_AOTI_TORCH_LIB=$tmp/nocuda/libtorch_cpu.so fails 1 \
  "TORCHSCRIPT cannot run on cuda here" \
  bench "$models/cnn.pt" -c TORCHSCRIPT --shape x=1,3,16,16 --device cuda
checks=$((checks + 1))
grep -qF "built without" "$tmp/out" "$tmp/err" "$tmp/err.json" 2>/dev/null ||
  fail "--device cuda: why not CUDA not said"
MODELBENCH_AOTI_TORCH_LIB=$tmp/nocuda/libtorch_cpu.so run 0 bench "$models/cnn.pt" \
  -c TORCHSCRIPT --shape x=1,3,16,16 --device cuda --allow-device-override \
  "${fast[@]}" --json "$tmp/override.json" &&
  result "$tmp/override.json" "--device cuda --allow-device-override" \
    'r["status"] == "ok"' 'r["device"] == "cpu"'

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
