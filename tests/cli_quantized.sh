#!/usr/bin/env bash
# Pre-quantised models end to end: a QDQ model (written by `modelbench
# convert -c INT8_STATIC+REFERENCE`) is reported as quantised by `analyze`
# and by bench's JSON (model.quantized, model.quantization), and every
# conversion of it, fp32 ones included, is judged by the cosine criterion
# (accuracy.criterion): ONNX Runtime rounds differently from the reference
# interpreter at the quantisation boundaries and misses rtol/atol on most
# values, yet is accurate, so it is the most portable option. The float
# model keeps rtol/atol.
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS; MB_REQUIRE_ORT=1
# makes a missing ONNX Runtime a failure instead of a skipped part.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

fast=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record)
convs=REFERENCE
if available ORT_CPU; then
  convs=REFERENCE,ORT_CPU
elif [ "${MB_REQUIRE_ORT:-0}" = 1 ]; then
  fail "ONNX Runtime unavailable but MB_REQUIRE_ORT=1"
else
  echo "ORT_CPU unavailable: only REFERENCE is judged"
fi
qdq=$tmp/resnet_qdq.onnx

# ---- analyze ----
run 0 convert "$models/resnet_blocks.onnx" -c INT8_STATIC+REFERENCE -o "$qdq" \
  --calibration-samples 4
run 0 analyze "$qdq" &&
  expect_in "$tmp/out" "quantized    yes: QDQ: " "analyze of the QDQ model"
run 0 analyze "$models/resnet_blocks.onnx" &&
  expect_in "$tmp/out" "quantized    no" "analyze of the float model"
if run 0 analyze "$qdq" --json; then
  py "analyze --json of the QDQ model" '
import json, sys
a = json.load(open(sys.argv[1]))
assert a["quantized"] is True, a["quantized"]
assert a["quantization"].startswith("QDQ: "), a["quantization"]
assert "QuantizeLinear" in a["quantization"], a["quantization"]
' "$tmp/out"
fi

# ---- bench: every conversion of the QDQ model judged by cosine ----
if run 0 bench "$qdq" -c "$convs" "${fast[@]}" --json "$tmp/qdq.json" \
  --csv "$tmp/qdq.csv"; then
  expect_in "$tmp/out" "quant:   pre-quantised, every conversion judged by cosine (QDQ: " \
    "the table says the model is quantised"
  py "the QDQ model's results" '
import csv, json, sys
rep = json.load(open(sys.argv[1]))
assert rep["model"]["quantized"] is True, rep["model"]
assert rep["model"]["quantization"].startswith("QDQ: "), rep["model"]
accurate = {row["conversion"]: row["accurate"] for row in csv.DictReader(open(sys.argv[2]))}
for r in rep["results"]:
    name = r["conversion"]
    assert r["status"] == "ok", r
    assert r["accuracy"]["criterion"] == "cosine", (name, r["accuracy"])
    assert r["accuracy"]["cosine"] >= 0.999, (name, r["accuracy"])
    assert not r["inaccurate"], (name, r["warnings"])
    assert not any("values differ" in w for w in r["warnings"]), r["warnings"]
    assert accurate[name] == "yes", (name, accurate)
names = [r["conversion"] for r in rep["results"]]
if "ORT_CPU" in names:
    assert rep["recommendation"]["most_portable"] == "ORT_CPU", rep["recommendation"]
' "$tmp/qdq.json" "$tmp/qdq.csv"
fi

# ---- bench: the float model keeps rtol/atol ----
if run 0 bench "$models/resnet_blocks.onnx" -c "$convs" "${fast[@]}" \
  --json "$tmp/float.json"; then
  py "the float model's results" '
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["model"]["quantized"] is False, rep["model"]
assert rep["model"]["quantization"] is None, rep["model"]
for r in rep["results"]:
    assert r["accuracy"]["criterion"] == "rtol_atol", r["accuracy"]
' "$tmp/float.json"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
