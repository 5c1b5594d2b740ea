#!/usr/bin/env bash
# OpenVINO from the command line: OPENVINO, BF16+OPENVINO and
# INT8_STATIC+OPENVINO benched beside ORT with their accuracy, the int8
# build kept in the cache, NNCF as its quantiser (required where the
# project's venv is, MB_WITH_TORCH2=1), modelbench's own calibration
# without NNCF and NNCF's failure failing that conversion only,
# `profile` per OpenVINO node, and a broken
# OpenVINO library making its conversions unavailable (with the loader's
# reason) while the rest of the run goes on. Without OpenVINO the test
# skips, unless MB_REQUIRE_OPENVINO=1 (`make test` sets it).
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

quick=(--warmup 1 --warmup-time 0 --min-iterations 5 --min-time 0 --no-record)

# The list in a file of its own: bench's exit code below is decided from it,
# after sections that run only where something is installed.
run_to list 0 list --json || exit 1
if ! "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
sys.exit(0 if rows["OPENVINO"]["available"] else 1)' "$tmp/list.out"; then
  if [ "${MB_REQUIRE_OPENVINO:-0}" = 1 ]; then
    fail "OpenVINO is required (MB_REQUIRE_OPENVINO=1) but unavailable"
    grep -A2 OPENVINO "$tmp/list.out" | head -5
  else
    echo "SKIP: OpenVINO unavailable here (modelbench list says why)"
  fi
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

# ---- a Dropout that drops nothing, fed by Constant nodes ----
# torch.onnx.export writes Swin-T's attention dropout as Dropout(ratio 0,
# training_mode true), both Constant nodes: an identity, which OpenVINO's
# ONNX frontend refuses ("Training mode is not supported for Dropout op");
# the OPENVINO row's cleanup removes it first.
if "$python" - "$tmp/dropout.onnx" <<'PY'
import sys
try:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save
except ImportError:
    sys.exit(1)
w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4) / 16, "w")
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
    helper.make_node("Constant", [], ["ratio"], name="c_ratio",
                     value=numpy_helper.from_array(np.array(0.0, np.float32))),
    helper.make_node("Constant", [], ["training"], name="c_training",
                     value=numpy_helper.from_array(np.array(True))),
    helper.make_node("Dropout", ["h", "ratio", "training"], ["y", "mask"], name="dropout"),
]
g = helper.make_graph(nodes, "dropout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
then
  run 0 bench "$tmp/dropout.onnx" -c OPENVINO "${quick[@]}" --json "$tmp/dropout.json" &&
    py "OPENVINO runs a model with a Dropout of ratio 0" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["status"] == "ok", r["error"]
assert r["accuracy"]["max_abs_err"] < 1e-5, r["accuracy"]
' "$tmp/dropout.json"
else
  echo "SKIP: no onnx module for the Dropout model"
fi

# ---- bench: accuracy against the reference, the int8 build cached ----
conversions=ORT_CPU,OPENVINO,BF16+OPENVINO,INT8_STATIC+OPENVINO
# A conversion named with -c that is unavailable here makes bench exit 1:
# BF16+OPENVINO on a CPU without native bf16 (an AVX2-only EPYC, say).
bench_rc=0
"$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
sys.exit(0 if rows["BF16+OPENVINO"]["available"] else 1)' "$tmp/list.out" || bench_rc=1
for pass in 1 2; do
  run "$bench_rc" bench "$models/resnet_blocks.onnx" -c "$conversions" --threads 2 \
    "${quick[@]}" --json "$tmp/r$pass.json" || continue
  py "bench pass $pass" '
import json, os, sys
path, pass_ = sys.argv[1], int(sys.argv[2])
r = {x["conversion"]: x for x in json.load(open(path))["results"]}
ov = r["OPENVINO"]
assert ov["status"] == "ok" and ov["runtime"] == "openvino", ov
assert ov["runtime_version"].startswith("20"), ov["runtime_version"]
assert ov["accuracy"]["max_abs_err"] < 1e-4, ov["accuracy"]
assert not ov["inaccurate"], ov
q = r["INT8_STATIC+OPENVINO"]
assert q["status"] == "ok" and q["precision"] == "int8", q
assert q["accuracy"]["cosine"] > 0.99, q["accuracy"]
# The QDQ model is the build: made once, found the second time.
assert q["cache_hit"] == (pass_ == 2), (pass_, q["cache_hit"], q["build_reason"])
nncf = [w for w in q["warnings"] if "not NNCF" in w]
if os.environ.get("MB_WITH_TORCH2") == "1":
    assert not nncf, q["warnings"]
b = r["BF16+OPENVINO"]
if b["status"] == "ok":
    assert b["precision"] == "bf16" and b["accuracy"]["cosine"] > 0.999, b
    # bf16 reached the plugin: not bit-identical to fp32.
    assert b["accuracy"]["max_abs_err"] > ov["accuracy"]["max_abs_err"], (b["accuracy"], ov["accuracy"])
else:
    assert b["status"] == "unavailable" and "bf16" in b["error"], b
' "$tmp/r$pass.json" "$pass"
done

# ---- the quantiser: NNCF where the venv has it, else modelbench's ----
if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
  # NNCF's build is in the cache under NNCF's version.
  if run 0 cache list --json; then
    py "NNCF's build in the cache" '
import json, os, sys
b = [x for x in json.load(open(sys.argv[1]))["builds"] if x["conversion"] == "INT8_STATIC+OPENVINO"]
assert len(b) == 1, b
key = json.load(open(os.path.join(b[0]["folder"], "state.json")))["key"]
assert ";quantizer=nncf-" in key["options"], key
' "$tmp/out"
  fi
fi
# Without NNCF: modelbench's calibration, a build of its own, and a warning.
if MODELBENCH_NNCF_PYTHON=$tmp/no-python run 0 bench "$models/resnet_blocks.onnx" \
     -c INT8_STATIC+OPENVINO --threads 2 "${quick[@]}" --json "$tmp/own.json"; then
  py "INT8_STATIC+OPENVINO without NNCF" '
import json, sys
q = {x["conversion"]: x for x in json.load(open(sys.argv[1]))["results"]}["INT8_STATIC+OPENVINO"]
assert q["status"] == "ok" and q["accuracy"]["cosine"] > 0.99, q
w = [x for x in q["warnings"] if "not NNCF" in x]
assert len(w) == 1 and "no-python" in w[0], q["warnings"]
if "'"${MB_WITH_TORCH2:-0}"'" == "1":
    assert q["cache_hit"] is False, q  # not the NNCF build of pass 1
' "$tmp/own.json"
fi
# A forced mixed int8 form is modelbench's alone: its calibration, saying so.
if [ "${MB_WITH_TORCH2:-0}" = 1 ] &&
   run 0 bench "$models/mlp.onnx" -c INT8_STATIC+OPENVINO --int8-weights mixed \
     "${quick[@]}" --json "$tmp/mixed.json"; then
  py "INT8_STATIC+OPENVINO with --int8-weights mixed" '
import json, sys
q = json.load(open(sys.argv[1]))["results"][0]
assert q["status"] == "ok" and q["int8_weights"] == "mixed", q
assert any("not NNCF" in w and "no mixed int8 form" in w for w in q["warnings"]), q["warnings"]
' "$tmp/mixed.json"
fi
# NNCF failing on a model: that conversion fails with its words, the
# others are measured.
if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
  printf 'import sys\nprint("nncf_quantize: NNCF cannot quantise: planted failure", file=sys.stderr)\nsys.exit(1)\n' >"$tmp/fail.py"
  if MODELBENCH_NNCF_SCRIPT=$tmp/fail.py run 1 bench "$models/mlp.onnx" \
       -c OPENVINO,INT8_STATIC+OPENVINO "${quick[@]}" --no-cache --json "$tmp/nncf-fail.json"; then
    py "NNCF failing" '
import json, sys
r = {x["conversion"]: x for x in json.load(open(sys.argv[1]))["results"]}
assert r["OPENVINO"]["status"] == "ok", r["OPENVINO"]
q = r["INT8_STATIC+OPENVINO"]
assert q["status"] == "error" and "planted failure" in q["error"] and "NNCF" in q["error"], q
' "$tmp/nncf-fail.json"
  fi
fi

# ---- profile: OpenVINO's own nodes and kernels ----
if run 0 profile "$models/small_cnn.onnx" -c OPENVINO --iterations 5; then
  expect_in "$tmp/out" "openvino" "profile segment"
  expect_in "$tmp/out" "Convolution" "profile nodes"
fi

# ---- a broken library: unavailable with the loader's reason ----
echo "not a library" >"$tmp/broken.so"
export MODELBENCH_OPENVINO_LIB=$tmp/broken.so
if run_to broken-list 0 list --json; then
  py "list with a broken OpenVINO" '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
for n in ("OPENVINO", "INT8_STATIC+OPENVINO"):
    assert not rows[n]["available"], rows[n]
    assert "cannot load" in rows[n]["reason"] and "broken.so" in rows[n]["reason"], rows[n]
assert rows["REFERENCE"]["available"]
' "$tmp/broken-list.out"
fi
# The other conversions still run; the run says what was unavailable.
if run 1 bench "$models/mlp.onnx" -c REFERENCE,OPENVINO "${quick[@]}" \
     --json "$tmp/broken.json"; then
  py "bench with a broken OpenVINO" '
import json, sys
r = {x["conversion"]: x for x in json.load(open(sys.argv[1]))["results"]}
assert r["REFERENCE"]["status"] == "ok", r["REFERENCE"]
assert r["OPENVINO"]["status"] == "unavailable", r["OPENVINO"]
assert "cannot load" in r["OPENVINO"]["error"], r["OPENVINO"]
' "$tmp/broken.json"
fi
unset MODELBENCH_OPENVINO_LIB

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
