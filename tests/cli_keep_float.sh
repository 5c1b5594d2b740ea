#!/usr/bin/env bash
# Per-node precision of int8 conversions (bench/convert/profile
# --keep-float, config key keep_float). sensitive_mlp.onnx (tools/
# gen_models.c) has one MatMul, "sensitive_matmul", whose input int8
# cannot represent: every int8 conversion of it is inaccurate, and with that
# node kept in float it is accurate again, on every engine that runs the
# quantised model (ORT_CPU, ONEDNN, XNNPACK, the reference interpreter),
# which shows each really runs the node in float. Also: unknown names fail
# naming the node with the nearest names; the list is part of the build
# key as a set; each int8 result records it ("kept_float").
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS; MB_REQUIRE_ORT=1
# makes a missing ONNX Runtime a failure.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

model=$models/sensitive_mlp.onnx
fast=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record
  --calibration-samples 32)
convs=INT8_STATIC+REFERENCE
for c in INT8_STATIC+ORT_CPU INT8_DYNAMIC+ORT_CPU INT8_STATIC+ONEDNN \
  INT8_STATIC+XNNPACK; do
  if available "$c"; then
    convs=$convs,$c
  elif [ "${MB_REQUIRE_ORT:-0}" = 1 ] && [ "${c#*+}" = ORT_CPU ]; then
    fail "$c unavailable but MB_REQUIRE_ORT=1"
  else
    echo "$c unavailable: not checked"
  fi
done

# results FILE ACCURATE KEPT: every result ok, judged (in)accurate as
# ACCURATE says, with kept_float == KEPT (a JSON list).
results() {
  py "results of $1" '
import json, sys
d = json.load(open(sys.argv[1]))
accurate = sys.argv[2] == "accurate"
kept = json.loads(sys.argv[3])
assert d["config"]["keep_float"] == kept, d["config"]["keep_float"]
assert d["results"], d
for r in d["results"]:
    assert r["status"] == "ok", r
    assert r["kept_float"] == kept, (r["conversion"], r["kept_float"])
    assert r["inaccurate"] == (not accurate), (r["conversion"], r["accuracy"])
    cos = min(o["cosine"] for o in r["accuracy"]["outputs"])
    assert (cos > 0.999) == accurate, (r["conversion"], cos)
' "$@"
}

# ---- every engine: all int8 is inaccurate, the node in float fixes it ----
run 0 bench "$model" -c "$convs" "${fast[@]}" --json "$tmp/all.json" &&
  results "$tmp/all.json" inaccurate '[]'
run 0 bench "$model" -c "$convs" "${fast[@]}" --json "$tmp/kept.json" \
  --keep-float sensitive_matmul &&
  results "$tmp/kept.json" accurate '["sensitive_matmul"]'
# Another node in float does not help.
run 0 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --json "$tmp/other.json" --keep-float gemm_14 &&
  results "$tmp/other.json" inaccurate '["gemm_14"]'
# The config file's key does the same.
printf '{"keep_float": ["sensitive_matmul"]}\n' >"$tmp/config.json"
run 0 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --config "$tmp/config.json" --json "$tmp/file.json" &&
  results "$tmp/file.json" accurate '["sensitive_matmul"]'
# fp32 conversions have no kept_float.
run 0 bench "$model" -c REFERENCE "${fast[@]}" --json "$tmp/fp32.json" \
  --keep-float sensitive_matmul &&
  py "kept_float is null for fp32" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["kept_float"] is None, r["kept_float"]' "$tmp/fp32.json"

# ---- the build key: a set ----
cache_hit() { # cache_hit FILE EXPECTED(true|false)
  py "cache_hit of $1" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert str(r["cache_hit"]).lower() == sys.argv[2], r["cache_hit"]' "$@"
}
run 0 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --keep-float gemm_5,sensitive_matmul --json "$tmp/k1.json" &&
  cache_hit "$tmp/k1.json" false
run 0 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --keep-float sensitive_matmul --keep-float gemm_5 --json "$tmp/k2.json" &&
  cache_hit "$tmp/k2.json" true
run 0 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --keep-float sensitive_matmul,gemm_14 --json "$tmp/k3.json" &&
  cache_hit "$tmp/k3.json" false

# ---- unknown names ----
run 1 bench "$model" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --keep-float sensitive_matmol &&
  one_line_error "no node named 'sensitive_matmol' (did you mean sensitive_matmul" \
    "bench --keep-float with a typo"
run 1 convert "$model" -c INT8_STATIC+ORT_CPU -o "$tmp/x.onnx" \
  --keep-float nope &&
  expect_in "$tmp/err" "no node named 'nope'" "convert --keep-float nope"
usage_error "--keep-float: expected NODE" bench "$model" --keep-float ,

# ---- NNCF (INT8_STATIC+OPENVINO): the nodes go to its ignored scope ----
# NNCF places no quantizer on a kept node's inputs; what it does elsewhere
# (its own ranges) is NNCF's, so only the graph is checked here.
if available INT8_STATIC+OPENVINO; then
  run 0 convert "$model" -c INT8_STATIC+OPENVINO -o "$tmp/nncf.onnx" \
    --calibration-samples 32 --keep-float sensitive_matmul
  if grep -q "quantize_nncf: NNCF" "$tmp/out" &&
    py_has onnx "NNCF's graph"; then
    py "NNCF left sensitive_matmul in float" '
import sys
import onnx
m = onnx.load(sys.argv[1])
producer = {o: n.op_type for n in m.graph.node for o in n.output}
nodes = {n.name: n for n in m.graph.node}
dq = lambda name: [i for i in nodes[name].input if producer.get(i) == "DequantizeLinear"]
assert not dq("sensitive_matmul"), nodes["sensitive_matmul"]
assert len(dq("gemm_5")) == 2, nodes["gemm_5"]  # the others are quantised
' "$tmp/nncf.onnx"
    run 0 bench "$model" -c INT8_STATIC+OPENVINO "${fast[@]}" \
      --keep-float sensitive_matmul --json "$tmp/nncf.json" &&
      py "quantised by NNCF, not modelbench's calibration" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["status"] == "ok" and r["kept_float"] == ["sensitive_matmul"], r
assert not [w for w in r["warnings"] if "not NNCF" in w], r["warnings"]
' "$tmp/nncf.json"
  else
    echo "NNCF not found: its ignored scope not checked"
  fi
fi

# ---- convert: fewer QuantizeLinear nodes ----
qdq_count() { # the QuantizeLinear count of analyze's QDQ line
  "$cli" analyze "$1" | sed -n 's/.*QDQ: \([0-9]*\) QuantizeLinear.*/\1/p'
}
run 0 convert "$model" -c INT8_STATIC+ORT_CPU -o "$tmp/q0.onnx" \
  --calibration-samples 4
run 0 convert "$model" -c INT8_STATIC+ORT_CPU -o "$tmp/q1.onnx" \
  --calibration-samples 4 --keep-float sensitive_matmul &&
  expect_in "$tmp/out" "1 left in float" "convert's summary"
q0=$(qdq_count "$tmp/q0.onnx")
q1=$(qdq_count "$tmp/q1.onnx")
checks=$((checks + 1))
if [ -z "$q0" ] || [ -z "$q1" ] || [ "$q1" -ge "$q0" ]; then
  fail "QuantizeLinear nodes: $q0 without, $q1 with --keep-float"
fi

# ---- profile: oneDNN's kernel for the node is f32 ----
# Checked by the data types that end each node's kernel ("SRC x WEIGHTS ->
# DST"), never by the implementation named before them: oneDNN picks
# gemm:jit on an AVX2 CPU and brg:avx512_core_vnni on a Xeon.
if available INT8_STATIC+ONEDNN; then
  run_to profile 0 profile "$model" -c INT8_STATIC+ONEDNN --calibration-samples 4 \
    --keep-float sensitive_matmul --top 0 --json &&
    py "oneDNN runs sensitive_matmul in f32, the Gemms in int8" '
import json, re, sys
types = {}  # node name -> (op type, source, weights, destination)
for n in json.load(open(sys.argv[1]))["nodes"]:
    m = re.search(r"(\w+) x (\w+) -> (\w+)$", n["kernel"])
    if n["runtime"] == "onednn" and m:
        types[n["name"]] = (n["op_type"],) + m.groups()
assert types.get("sensitive_matmul") == ("MatMul", "f32", "f32", "f32"), types
gemms = {name: t for name, t in types.items() if t[0] == "Gemm"}
assert sorted(gemms) == ["gemm_14", "gemm_5"], types
assert all(t[1:3] == ("u8", "s8") for t in gemms.values()), gemms' "$tmp/profile.out"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
