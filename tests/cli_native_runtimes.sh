#!/usr/bin/env bash
# The native runtimes from the command line: tiers (list --tier, bench
# --tier), hybrid partitions (analyze --runtime), bench of XNNPACK / ONEDNN
# conversions with fallback segments in the JSON, --no-fallback naming the
# nodes, and `modelbench profile` per segment and per node (reference,
# hybrid, ORT). Engine parts run only where the engine is available here
# (modelbench list says so); MB_REQUIRE_ENGINES=1 makes a missing engine a
# failure instead of a skip.
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


# ---- tiers ----
for tier in 1 2 3; do
  if run 0 list --tier "$tier" --json; then
    py "list --tier $tier" '
import json, sys
tier = int(sys.argv[2])
rows = json.load(open(sys.argv[1]))["conversions"]
assert all(c["tier"] <= tier for c in rows), rows
# The tiers of ONNX models; PyTorch models (EAGER, ...) have their own rows.
names = [c["name"] for c in rows if c["format"] == "onnx"]
assert "REFERENCE" in names and "ORT_CPU" in names, names
if tier == 1:
    assert names == ["REFERENCE", "ORT_CPU"], names
    assert [c["name"] for c in rows if c["format"] == "pytorch"] == ["EAGER"], rows
if tier >= 2:
    for n in ("XNNPACK", "ONEDNN", "BF16+ONEDNN"):
        assert n in names, (n, names)
if tier == 3:
    assert "ORT_CPU_NO_OPT" in names, names
    # FP16+XNNPACK: tier 2 where the CPU has fp16 arithmetic; where it is
    # emulated it stays available but leaves tier 2, saying why.
    (fp,) = [c for c in rows if c["name"] == "FP16+XNNPACK"]
    assert fp["tier"] == 2 or not fp["available"] or \
        "emulated on this CPU" in fp["reason"], fp
    if fp["available"] and fp["tier"] == 3:
        print("FP16+XNNPACK: " + fp["reason"])
' "$tmp/out" "$tier"
  fi
done
run 0 list --tier 2 && expect_in "$tmp/out" "TIER" "list table tier column"
run 2 list --tier 4 && expect_in "$tmp/err" "--tier" "list --tier 4"
run 2 bench "$models/mlp.onnx" --tier 2 -c REFERENCE &&
  expect_in "$tmp/err" "--tier" "bench --tier with -c"
run 2 bench "$models/mlp.onnx" --tier 0 && expect_in "$tmp/err" "--tier" \
  "bench --tier 0"
# Tier 1: the baseline and the default ORT option, nothing else.
if run 0 bench "$models/mlp.onnx" --tier 1 "${fast[@]}" --json "$tmp/t1.json"
then
  py "bench --tier 1" '
import json, sys
names = [r["conversion"] for r in json.load(open(sys.argv[1]))["results"]]
assert names == ["REFERENCE", "ORT_CPU"], names
' "$tmp/t1.json"
fi

# ---- partitions ----
run 2 analyze "$models/mlp.onnx" --runtime nope &&
  expect_in "$tmp/err" "not a hybrid runtime" "analyze --runtime nope"
run 2 analyze "$models/mlp.onnx" --runtime ORT_CPU &&
  expect_in "$tmp/err" "not a hybrid runtime" "analyze --runtime ORT_CPU"

engines=()
for conv in XNNPACK ONEDNN; do
  if available "$conv"; then
    engines+=("$conv")
  elif [ "${MB_REQUIRE_ENGINES:-0}" = 1 ]; then
    fail "$conv is unavailable but MB_REQUIRE_ENGINES=1"
  else
    echo "SKIP: $conv is unavailable here"
  fi
done

for conv in "${engines[@]}"; do
  engine=$(echo "$conv" | tr 'A-Z' 'a-z')
  # The transformer block has ops no engine runs (Erf, LayerNormalization
  # on XNNPACK; Erf on oneDNN is native): the partition shows segments
  # alternating with the reference interpreter.
  if run 0 analyze "$models/transformer_block.onnx" --runtime "$conv" --json
  then
    py "analyze --runtime $conv" '
import json, sys
p = json.load(open(sys.argv[1]))["partition"]
engine = sys.argv[2]
assert p["runtime"] == engine, p
segs = p["segments"]
assert sum(s["nodes"] for s in segs) + p["folded_nodes"] == p["nodes"], p
assert p["native_nodes"] == sum(s["nodes"] for s in segs
                                if s["runtime"] == engine), p
assert any(s["runtime"] == engine for s in segs), p
assert len(p["unsupported"]) == p["nodes"] - p["native_nodes"] - \
    p["folded_nodes"], p
for u in p["unsupported"]:
    assert "'"'"'" in u and ":" in u, u  # "Op '"'"'name'"'"': why"
' "$tmp/out" "$engine"
  fi
  run 0 analyze "$models/resnet_blocks.onnx" --runtime "$engine" &&
    expect_in "$tmp/out" "Partition for $engine" "analyze text partition"

  # Bench: every bundled model runs (fallback where needed); the JSON has
  # segments whose nodes add up.
  for m in mlp resnet_blocks small_cnn transformer_block; do
    if run 0 bench "$models/$m.onnx" -c "$conv" "${fast[@]}" \
      --json "$tmp/$m.json"; then
      py "bench $conv $m segments" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "ok", r
assert r["accuracy"]["max_abs_err"] <= 1e-4, r["accuracy"]
segs = r["segments"]
assert segs, r
assert all(s["nodes"] > 0 and s["mean_ms"] >= 0 for s in segs), segs
assert any(s["runtime"] == sys.argv[2] for s in segs), segs
' "$tmp/$m.json" "$engine"
    fi
  done
  # --no-fallback: the nodes the engine cannot run are named; exit 1.
  if [ "$engine" = xnnpack ]; then
    run 1 bench "$models/transformer_block.onnx" -c "$conv" --no-fallback \
      "${fast[@]}" --json "$tmp/nf.json" &&
      py "--no-fallback error" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "error", r
assert "fallback is off" in r["error"], r["error"]
assert "Reshape '"'"'reshape_9" in r["error"], r["error"]
' "$tmp/nf.json"
  fi
  run 0 bench "$models/resnet_blocks.onnx" -c "$conv" --no-fallback \
    "${fast[@]}"

  # ---- profile of a hybrid conversion ----
  if run 0 profile "$models/transformer_block.onnx" -c "$conv" \
    --iterations 5 --warmup 1 --json; then
    py "profile $conv" '
import json, sys
d = json.load(open(sys.argv[1]))
engine = sys.argv[2]
assert d["iterations"] == 5 and d["mean_ms"] > 0, d
segs = d["segments"]
assert any(s["runtime"] == engine for s in segs), segs
assert all(s["runs"] == 5 for s in segs), segs
assert abs(sum(s["share"] for s in segs) - 1) < 1e-6, segs
nodes = d["nodes"]
assert nodes, d
assert [n["mean_ms"] for n in nodes] == sorted((n["mean_ms"] for n in nodes),
                                               reverse=True), nodes
assert abs(sum(n["share"] for n in nodes) - 1) < 1e-6, nodes
assert any(n["runtime"] == "reference" for n in nodes) or engine == "onednn"
# entries of the engine count the profiled runs only, not the warm-up
assert all(n["runs"] == 5 for n in nodes if n["runtime"] == engine), nodes
# oneDNN names the kernel of each node line: its implementation and types
if engine == "onednn":
    mm = [n for n in nodes if n["op_type"] in ("MatMul", "Gemm")]
    assert mm and all(" -> f32" in n["kernel"] for n in mm), mm
    assert all(n["kernel"] == "" for n in nodes if n["name"] == ""), nodes
else:
    assert all(n["kernel"] == "" for n in nodes), nodes
' "$tmp/out" "$engine"
  fi
  run 0 profile "$models/small_cnn.onnx" -c "$conv" --iterations 3 &&
    expect_in "$tmp/out" "Segments" "profile text" &&
    expect_in "$tmp/out" "$engine" "profile text runtime"
done

# ---- profile: reference and ORT, errors ----
if run 0 profile "$models/resnet_blocks.onnx" -c REFERENCE --iterations 3 \
  --json; then
  py "profile REFERENCE" '
import json, sys
d = json.load(open(sys.argv[1]))
(seg,) = d["segments"]
assert seg["runtime"] == "reference" and seg["runs"] == 3, seg
ops = {n["op_type"] for n in d["nodes"]}
assert "Conv" in ops, ops
' "$tmp/out"
fi
if available ORT_CPU; then
  if run 0 profile "$models/resnet_blocks.onnx" -c ORT_CPU --iterations 4 \
    --json; then
    py "profile ORT_CPU" '
import json, sys
d = json.load(open(sys.argv[1]))
(seg,) = d["segments"]
assert seg["runtime"] == "onnxruntime" and seg["runs"] == 4, seg
assert seg["nodes"] > 0 and d["nodes"], d
assert all(n["runs"] % 4 == 0 for n in d["nodes"]), d["nodes"]
assert any(n["op_type"] == "Conv" for n in d["nodes"]), d["nodes"]
' "$tmp/out"
  fi
fi
run 2 profile "$models/mlp.onnx" &&
  expect_in "$tmp/err" "missing -c" "profile without -c"
run 2 profile "$models/mlp.onnx" -c NOPE &&
  expect_in "$tmp/err" "NOPE" "profile unknown conversion"
run 2 profile "$models/mlp.onnx" -c REFERENCE,ORT_CPU &&
  expect_in "$tmp/err" "one conversion" "profile a list"
run 2 profile "$models/mlp.onnx" -c REFERENCE --iterations 0
run 1 profile "$tmp/missing.onnx" -c REFERENCE
run 0 profile --help && expect_in "$tmp/out" "Usage: modelbench profile" \
  "profile --help"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
