#!/usr/bin/env bash
# modelbench tune --output: the winner as a model file that bench runs
# again. On sensitive_mlp.onnx (tools/gen_models.c: three quantisable
# nodes, "sensitive_matmul" ruined by int8) the winner keeps
# sensitive_matmul in float; the file is the QDQ model convert writes for
# it, with the configuration in its metadata_props "modelbench.tune"
# (docs/json-schema.md, "The tuned model"): the per-node precision names
# sensitive_matmul fp32 and the two Gemms int8, and the graph agrees (no
# DequantizeLinear feeds sensitive_matmul, one feeds each Gemm's weight).
# bench on the file, without -c, runs the recorded configuration, and it is
# accurate. A bad --output path is a clear error (exit 1) and the search
# log is still written; no winner, no file. Only QDQ int8 candidates take
# part (INT8_STATIC+REFERENCE, and +ORT_CPU where ONNX Runtime is), so the
# file is a QDQ model whichever wins. No timing is asserted.
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

# Every check here reads the tuned model's graph and metadata with onnx.
if ! py_has onnx "the tuned model's checks"; then
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

model=$models/sensitive_mlp.onnx
quick=(--round-time 0.05 --calibration-samples 32 --no-record)
convs=INT8_STATIC+REFERENCE
available INT8_STATIC+ORT_CPU && convs=$convs,INT8_STATIC+ORT_CPU
tuned=$tmp/sensitive.tuned.onnx

# ---- the winner is written, with its configuration ----
run 0 tune "$model" --max-error 1e-3 -c "$convs" --threads 1,2 "${quick[@]}" \
  --json "$tmp/log.json" --output "$tuned" && {
  expect_in "$tmp/out" "wrote the winner's model to $tuned" "where it was written"
  py "the tuned model's metadata and graph" '
import hashlib, json, sys
import onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
log = json.load(open(sys.argv[2]))
w = log["steps"][log["winner"]]
props = {p.key: p.value for p in m.metadata_props}
assert list(props).count("modelbench.tune") == 1, props.keys()
d = json.loads(props["modelbench.tune"])
assert d["schema_version"] == 1 and d["tool"] == "modelbench", d
assert d["conversion"] == w["conversion"] and d["threads"] == w["threads"], (d, w)
assert d["bench_conversion"] == {"INT8_STATIC+ORT_CPU": "ORT_CPU",
    "INT8_STATIC+REFERENCE": "REFERENCE"}[d["conversion"]], d
assert d["kept_float"] == ["sensitive_matmul"], d
prec = d["node_precision"]
assert prec["sensitive_matmul"] == "fp32", prec
others = {k: v for k, v in prec.items() if k != "sensitive_matmul"}
assert len(others) == 2 and set(others.values()) == {"int8"}, prec
assert d["max_error"] == 1e-3 and d["error"] == w["error"], d
# No labels: no task budget, no task accuracy.
assert d["max_accuracy_drop"] is None and d["baseline"] is None, d
assert d["baseline_task_accuracy"] is None and d["task_accuracy"] is None, d
assert d["cosine"] == w["cosine"] and d["median_ms"] == w["median_ms"], d
assert d["int8_flops_share"] == w["int8_flops_share"] and 0 < d["int8_flops_share"] < 1, d
assert d["model_path"] == sys.argv[3], d
assert d["model_sha256"] == hashlib.sha256(open(sys.argv[3], "rb").read()).hexdigest(), d
assert d["version"], d
# The graph: what feeds each quantisable node.
producer = {o: n for n in m.graph.node for o in n.output}
nodes = {n.name: n for n in m.graph.node}
def dequantized(name):
    return [i for i in nodes[name].input
            if i in producer and producer[i].op_type == "DequantizeLinear"]
assert not dequantized("sensitive_matmul"), nodes["sensitive_matmul"]
for name in others:
    assert len(dequantized(name)) >= 2, (name, nodes[name])  # activation, weight
' "$tuned" "$tmp/log.json" "$model"
}

# ---- exactly what convert writes, plus the metadata ----
run 0 convert "$model" -c "$("$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["steps"][d["winner"]]["conversion"])' "$tmp/log.json")" \
  --keep-float sensitive_matmul --calibration-samples 32 -o "$tmp/converted.onnx" &&
  py "the tuned model is convert's, with the metadata" '
import sys
import onnx
t, c = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
assert not c.metadata_props, c.metadata_props
del t.metadata_props[:]
assert t.SerializeToString() == c.SerializeToString()
' "$tuned" "$tmp/converted.onnx"

# ---- analyze and check read it ----
run 0 analyze "$tuned" && expect_in "$tmp/out" "QDQ" "analyze sees the QDQ model" &&
  expect_in "$tmp/out" "1 node kept in float" "analyze shows the record"
# check against the float model's outputs on an input in the generated
# range: the tuned model is within 0.05 (all-int8, sensitive_matmul
# quantised too, is off by about 0.6).
mkdir -p "$tmp/set"
"$python" -c '
import sys
import numpy as np
import onnx.numpy_helper as h
x = np.random.default_rng(0).uniform(-1, 1, (1, 64)).astype(np.float32)
open(sys.argv[1] + "/input_0.pb", "wb").write(h.from_array(x, "input").SerializeToString())
' "$tmp/set"
run 0 run "$model" --inputs "$tmp/set" --outputs "$tmp/set" &&
  run 0 check "$tuned" "$tmp/set" --rtol 0.05 --atol 0.05

# ---- bench runs it again by name ----
run 0 bench "$tuned" --min-time 0.05 --no-record --json "$tmp/bench.json" && {
  expect_in "$tmp/err" "was tuned (metadata modelbench.tune): running" \
    "bench says it runs the recorded configuration"
  py "bench ran the recorded configuration, accurately" '
import json, sys
import onnx
m = onnx.load(sys.argv[2])
d = json.loads({p.key: p.value for p in m.metadata_props}["modelbench.tune"])
r = json.load(open(sys.argv[1]))
results = r["results"]
assert [x["conversion"] for x in results] == [d["bench_conversion"]], results
x = results[0]
assert x["status"] == "ok", x
assert r["config"]["threads"] == d["threads"], (r["config"], d)
assert not x.get("inaccurate"), x
' "$tmp/bench.json" "$tuned"
}
# -c and --threads override it.
run 0 bench "$tuned" -c REFERENCE --threads 3 --min-time 0.05 --no-record \
  --json "$tmp/bench2.json" && py "-c and --threads override the record" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["conversion"] for x in r["results"]] == ["REFERENCE"] and r["config"]["threads"] == 3, r["config"]
' "$tmp/bench2.json"
run 0 bench "$tuned" --threads 3 --min-time 0.05 --no-record --json "$tmp/bench3.json" &&
  expect_in "$tmp/err" "at 3 threads" "--threads overrides the recorded threads"

# ---- a winner that does not change the graph: the model, with the record ----
run 0 tune "$model" --max-error 1e-3 -c REFERENCE "${quick[@]}" \
  --output "$tmp/plain.onnx" && py "a runtime-only winner gets the model as given, with the record" '
import json, sys
import onnx
t, src = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
d = json.loads({p.key: p.value for p in t.metadata_props}["modelbench.tune"])
assert d["conversion"] == d["bench_conversion"] == "REFERENCE" and d["kept_float"] == [], d
assert set(d["node_precision"].values()) == {"fp32"} and len(d["node_precision"]) == 3, d
assert d["int8_flops_share"] is None, d
del t.metadata_props[:]
assert t.SerializeToString() == src.SerializeToString()
' "$tmp/plain.onnx" "$model"

# ---- a record that does not parse: bench names the file and the field ----
"$python" -c '
import sys
import onnx
m = onnx.load(sys.argv[1])
onnx.helper.set_model_props(m, {"modelbench.tune": "{\"bench_conversion\": 7, \"threads\": 1}"})
onnx.save(m, sys.argv[2])
' "$model" "$tmp/broken.onnx"
run 1 bench "$tmp/broken.onnx" --min-time 0.05 --no-record &&
  expect_in "$tmp/err" "broken.onnx: metadata modelbench.tune" "a bad record names the file" &&
  expect_in "$tmp/err" "bench_conversion" "a bad record names the field"

# ---- a bad --output path: a clear error, the log still written ----
run 1 tune "$model" --max-error 1e-3 -c "$convs" "${quick[@]}" \
  --json "$tmp/bad.json" --output "$tmp/no/such/dir/x.onnx" && {
  expect_in "$tmp/err" "$tmp/no/such/dir/x.onnx: --output: the winner's model not written" \
    "the error names the path"
  py "the search log survives a bad --output" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["found"] and d["winner"] is not None, d
' "$tmp/bad.json"
}

# ---- no winner: no file ----
run 3 tune "$model" --max-error 1e-12 -c INT8_STATIC+REFERENCE "${quick[@]}" \
  --output "$tmp/none.onnx" && {
  expect_in "$tmp/out" "no model written to $tmp/none.onnx" "no winner, no file"
  checks=$((checks + 1))
  [ ! -e "$tmp/none.onnx" ] || fail "a file was written without a winner"
}

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
