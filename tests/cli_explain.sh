#!/usr/bin/env bash
# `modelbench explain MODEL A B`: two conversions profiled and compared per
# op type (REFERENCE against each hybrid engine available here, and ORT_CPU
# where ONNX Runtime is), two saved `profile --json` files compared without
# running anything, and the errors: unknown and unavailable conversions, a
# failed profiling pass, malformed saved profiles, usage. Structure only:
# no timing thresholds.
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS; MB_REQUIRE_ORT=1 makes
# a missing ONNX Runtime a failure, MB_REQUIRE_ENGINES=1 a missing engine.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

fast=(--iterations 3 --warmup 1)

# check_json FILE A B [hybrid]: the JSON's structure: both sides named, rows
# summing to each side's total, shares to 100%, the op rows, the overhead
# row; with "hybrid", B's fallbacks add up to its reference time.
check_json() {
  py "explain --json $2 $3" '
import json, sys
d = json.load(open(sys.argv[1]))
a, b = d["a"], d["b"]
assert a["conversion"] == sys.argv[2] and b["conversion"] == sys.argv[3], d
assert d["verdict"].startswith(sys.argv[3] + " is "), d["verdict"]
rows = d["rows"]
kinds = {r["kind"] for r in rows}
assert kinds <= {"op", "inserted", "segment", "overhead"}, kinds
assert sum(r["kind"] == "overhead" for r in rows) == 1, rows
for side, key in ((a, "a_ms"), (b, "b_ms")):
    total = sum(r[key] for r in rows)
    assert abs(total - side["total_ms"]) <= 1e-6 * side["total_ms"], (total, side)
    # node timers sit inside the run: they cannot sum to more than it
    assert side["overhead_ms"] >= -1e-9, side
assert abs(sum(r["difference_ms"] for r in rows) - d["difference_ms"]) < 1e-6
if abs(d["difference_ms"]) > 1e-6:
    assert abs(sum(r["share"] for r in rows) - 1.0) < 1e-6, rows
    shares = [r["share"] for r in rows]
    assert shares == sorted(shares, reverse=True), shares
ops = {r["op_type"] for r in rows if r["kind"] == "op"}
assert "MatMul" in ops or "Conv" in ops, ops
for r in rows:
    assert 0 <= r["a_fallback_ms"] <= r["a_ms"] + 1e-9, r
    assert 0 <= r["b_fallback_ms"] <= r["b_ms"] + 1e-9, r
assert not a["hybrid"] and a["fallback_ms"] == 0, a
nodes = d["nodes"]
assert nodes and all(n["name"] for n in nodes), nodes
diffs = [abs(n["difference_ms"]) for n in nodes]
assert diffs == sorted(diffs, reverse=True), diffs
if sys.argv[4] == "hybrid":
    assert b["hybrid"] and b["reference_segments"] > 0, b
    fb = sum(f["ms"] for f in d["fallbacks"] if f["side"] == "b")
    assert abs(fb - b["fallback_ms"]) < 1e-9, (fb, b)
    assert b["engine_segments"] > 0 and b["engine"], b
' "$1" "$2" "$3" "${4:-}"
}

# ---- REFERENCE against each hybrid engine available here ----
engines=0
for conv in XNNPACK ONEDNN; do
  if ! available "$conv"; then
    [ "${MB_REQUIRE_ENGINES:-0}" = 1 ] &&
      fail "$conv is unavailable but MB_REQUIRE_ENGINES=1"
    continue
  fi
  engines=$((engines + 1))
  # transformer_block: XNNPACK leaves nodes (Reshape, ...) to the
  # reference interpreter, so B is hybrid; oneDNN runs them all.
  hybrid=
  [ "$conv" = XNNPACK ] && hybrid=hybrid
  if run 0 explain "$models/transformer_block.onnx" REFERENCE "$conv" \
    "${fast[@]}" --json; then
    check_json "$tmp/out" REFERENCE "$conv" "$hybrid"
  fi
  if run 0 explain "$models/small_cnn.onnx" REFERENCE "$conv" "${fast[@]}" \
    --top 3; then
    expect_in "$tmp/out" "Nodes that differ most (3 of " "explain text nodes"
    expect_in "$tmp/out" " than REFERENCE: " "explain text verdict"
    expect_in "$tmp/out" "Time per op type" "explain text table"
    expect_in "$tmp/out" "Conv " "explain text Conv row"
    expect_in "$tmp/out" "runtime overhead" "explain text overhead row"
    expect_in "$tmp/out" "Fallbacks, inserted work, segments" \
      "explain text fallbacks"
    # The verdict comes first.
    checks=$((checks + 1))
    head -1 "$tmp/out" | grep -q "^$conv is [0-9.]*x \(faster\|slower\) than" ||
      { fail "explain text: verdict not first"; show "$tmp/out"; }
  fi
done
echo "engines profiled: $engines"

# ---- ORT_CPU ----
if available ORT_CPU; then
  if run 0 explain "$models/resnet_blocks.onnx" REFERENCE ORT_CPU \
    "${fast[@]}" --json; then
    check_json "$tmp/out" REFERENCE ORT_CPU
  fi
elif [ "${MB_REQUIRE_ORT:-0}" = 1 ]; then
  fail "ONNX Runtime unavailable but MB_REQUIRE_ORT=1"
fi

# ---- saved profiles: the same comparison without running anything ----
if run 0 profile "$models/resnet_blocks.onnx" -c REFERENCE "${fast[@]}" \
  --json; then
  cp "$tmp/out" "$tmp/a.json"
  # The same profile against itself: every difference 0, still 100% rows.
  if run 0 explain --profiles "$tmp/a.json" "$tmp/a.json" --json; then
    py "explain --profiles self" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["difference_ms"] == 0 and d["speedup"] == 1, d
assert d["model"].endswith("resnet_blocks.onnx"), d["model"]
assert all(r["difference_ms"] == 0 and r["share"] == 0 for r in d["rows"])
assert any(r["op_type"] == "Conv" for r in d["rows"]), d["rows"]
' "$tmp/out"
  fi
  run 0 explain --profiles "$tmp/a.json" "$tmp/a.json" &&
    expect_in "$tmp/out" "REFERENCE is 1.00x faster than REFERENCE" \
      "explain --profiles text"
fi

# ---- errors ----
m=$models/mlp.onnx
usage_error_line "did you mean" explain "$m" REFERENCE ONEDN
usage_error_line "available here: REFERENCE" explain "$m" NOPE REFERENCE
usage_error_line "B: 'A,B': one conversion" explain "$m" REFERENCE A,B
# EAGER needs the Python front: never available to this binary.
run 1 explain "$m" REFERENCE EAGER &&
  one_line_error "EAGER is not available here: needs the Python front" \
    "explain unavailable"
# A failed profiling pass names the side and the conversion.
run 1 explain "$tmp/missing.onnx" REFERENCE REFERENCE &&
  one_line_error "profiling A (REFERENCE)" "explain failed pass"
# A symbolic dimension without a size fails the pass; --dim gives it.
run 1 explain "$models/seq_encoder.onnx" REFERENCE REFERENCE "${fast[@]}" &&
  one_line_error "profiling A (REFERENCE): input 'input': dim 1 ('seq')" \
    "explain symbolic dim"
run 0 explain "$models/seq_encoder.onnx" REFERENCE REFERENCE "${fast[@]}" \
  --dim seq=8 &&
  expect_in "$tmp/out" "REFERENCE is " "explain --dim"
# --keep-float reaches both sides' int8 calibration: with the sensitive
# MatMul left in float, B quantises one tensor fewer (sensitive_mlp.onnx's
# three quantisable nodes, tools/gen_models.c); a name the model lacks is
# an error naming it.
s=$models/sensitive_mlp.onnx
int8=(REFERENCE INT8_STATIC+REFERENCE "${fast[@]}" --calibration-samples 8 --json)
if run 0 explain "$s" "${int8[@]}" && cp "$tmp/out" "$tmp/all_int8.json" &&
  run 0 explain "$s" "${int8[@]}" --keep-float sensitive_matmul; then
  py "explain --keep-float" '
import json, sys
def quantize_entries(path):
    rows = json.load(open(path))["rows"]
    return sum(r["b_entries"] for r in rows if r["op_type"] == "quantize")
full, kept = quantize_entries(sys.argv[1]), quantize_entries(sys.argv[2])
assert kept == full - 1 and kept > 0, (full, kept)
' "$tmp/all_int8.json" "$tmp/out"
fi
run 1 explain "$s" "${int8[@]}" --keep-float nosuch &&
  one_line_error "the model has no node named 'nosuch'" \
    "explain --keep-float unknown node"
usage_error_line "missing MODEL, A and B" explain
usage_error_line "missing the conversions A and B" explain "$m" REFERENCE
usage_error_line "unexpected argument 'X'" explain "$m" REFERENCE REFERENCE X
usage_error_line "--profiles needs A.json and B.json" explain --profiles a
usage_error_line "--iterations" explain "$m" REFERENCE REFERENCE \
  --iterations 0
usage_error_line "--dim 'seq': expected NAME=N" explain "$m" REFERENCE \
  REFERENCE --dim seq
usage_error_line "--top: '-1'" explain "$m" REFERENCE REFERENCE --top -1
echo '{"conversion": "A", "iterations": 1, "segments": [], "nodes": []}' \
  >"$tmp/bad.json"
run 1 explain --profiles "$tmp/bad.json" "$tmp/bad.json" &&
  one_line_error "missing \"mean_ms\"" "explain --profiles malformed"
run 1 explain --profiles "$tmp/none.json" "$tmp/bad.json" &&
  expect_in "$tmp/err" "none.json" "explain --profiles missing file"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
