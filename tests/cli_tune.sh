#!/usr/bin/env bash
# modelbench tune: the fastest configuration within an accuracy budget.
# sensitive_mlp.onnx (tools/gen_models.c) has three quantisable nodes, one
# of which ("sensitive_matmul") int8 ruins: tune must find it by its
# per-node sensitivity, keep exactly that node in float, and measure the
# result accurate on the engine. A budget nothing meets (--max-error 1e-12,
# int8 candidates only, at least one node staying int8) gives the clear
# answer and exit status 3. The search log has the fields
# docs/json-schema.md documents. No timing is asserted: which candidate is
# fastest is the machine's business; only int8 candidates take part where
# an outcome would depend on it.
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

model=$models/sensitive_mlp.onnx
quick=(--round-time 0.05 --calibration-samples 32)
convs=INT8_STATIC+REFERENCE
for c in INT8_STATIC+ORT_CPU INT8_STATIC+XNNPACK INT8_STATIC+ONEDNN; do
  available "$c" && convs=$convs,$c
done

# The search log's documented fields, on every step.
schema='
import json, sys
d = json.load(open(sys.argv[1]))
top = {"schema_version", "tool", "version", "kind", "model_path", "max_error",
       "slo", "wall_seconds", "budget_exhausted", "found", "winner",
       "closest", "fastest_uniform", "summary", "steps"}
assert top <= set(d), top - set(d)
assert d["kind"] == "tune" and d["schema_version"] == 1, d
step = {"index", "phase", "round", "conversion", "threads", "kept_float",
        "int8_flops_share", "estimated", "status", "error_message", "error",
        "cosine", "accurate", "median_ms", "slo_latency_ms", "min_seconds",
        "dropped"}
phases = {"uniform", "sensitivity", "mixed-estimate", "mixed"}
for i, s in enumerate(d["steps"]):
    assert step <= set(s), step - set(s)
    assert s["index"] == i and s["phase"] in phases, s
    assert isinstance(s["kept_float"], list), s
    assert s["estimated"] == (s["phase"] in ("sensitivity", "mixed-estimate")), s
'

# ---- the sensitive node is found and kept in float ----
run 0 tune "$model" --max-error 1e-3 -c "$convs" "${quick[@]}" \
  --json "$tmp/log.json" && {
  expect_in "$tmp/out" "kept in float (1): sensitive_matmul" "the winner's line"
  py "the search log's schema" "$schema" "$tmp/log.json"
  py "tune keeps exactly sensitive_matmul in float, accurately" '
import json, sys
d = json.load(open(sys.argv[1]))
steps = d["steps"]
assert d["found"] and d["winner"] is not None, d["summary"]
w = steps[d["winner"]]
assert w["phase"] == "mixed", w
assert w["kept_float"] == ["sensitive_matmul"], w["kept_float"]
assert w["accurate"] and w["error"] <= 1e-3 and w["median_ms"] > 0, w
assert 0 < w["int8_flops_share"] < 1, w
# Every uniform int8 candidate was inaccurate.
uniform = [s for s in steps if s["phase"] == "uniform" and s["status"] == "ok"]
assert uniform and not any(s["accurate"] for s in uniform), uniform
# The sensitivity ranks it first: alone in float it fixes the model.
sens = {s["kept_float"][0]: s["error"] for s in steps
        if s["phase"] == "sensitivity"}
assert len(sens) == 3, sens
assert min(sens, key=sens.get) == "sensitive_matmul", sens
assert sens["sensitive_matmul"] < 1e-3 < min(
    v for k, v in sens.items() if k != "sensitive_matmul"), sens
# The target is scaled by the all-int8 error of the estimator (per int8
# form, a mixed-estimate keeping nothing before the others of that form)
# against that of the engine: the same inaccurate int8 model.
est = [s for s in steps if s["phase"] == "mixed-estimate"]
empty = [s for s in est if not s["kept_float"]]
assert est and est[0] in empty, est[:1]
assert all(s["error"] > 1e-3 and not s["accurate"] for s in empty), empty
' "$tmp/log.json"
}

# ---- the history records the winner's run ----
run 0 history --label tune=winner --json && py "the winner's run is in the history" '
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"] if isinstance(d, dict) else d
assert len(runs) == 1, runs
' "$tmp/out"

# ---- nothing meets the budget: a clear answer, exit 3 ----
run 3 tune "$model" --max-error 1e-12 -c INT8_STATIC+REFERENCE "${quick[@]}" \
  --json "$tmp/none.json" --no-record && {
  expect_in "$tmp/out" "no configuration meets --max-error 1e-12: the closest is INT8_STATIC+REFERENCE" \
    "the answer when nothing meets the budget"
  py "the search log of a failed search" "$schema" "$tmp/none.json"
  py "no winner, a closest, the reason" '
import json, sys
d = json.load(open(sys.argv[1]))
assert not d["found"] and d["winner"] is None, d
assert d["closest"] is not None, d
assert d["summary"].startswith("no configuration meets"), d["summary"]
last = [s for s in d["steps"] if s["phase"] == "mixed-estimate"][-1]
assert "all but one quantisable node in float" in last["dropped"], last
' "$tmp/none.json"
}

# ---- usage ----
usage_error "missing --max-error" tune "$model"
usage_error "--max-error 'x'" tune "$model" --max-error x
usage_error "--threads '0'" tune "$model" --max-error 1e-3 --threads 0
usage_error "--budget 'soon'" tune "$model" --max-error 1e-3 --budget soon
usage_error "--slo" tune "$model" --max-error 1e-3 --slo p99
usage_error "unknown conversion 'NOPE'" tune "$model" --max-error 1e-3 -c NOPE

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
