#!/usr/bin/env bash
# The build cache seen from `bench`: a second identical run takes every
# build from the cache (cache_hit true, build_ms 0); changing the model, an
# input shape or a build option rebuilds exactly what changed; --rebuild
# always/never, --lean-cache, --no-cache; two concurrent runs on one cache
# both succeed; `cache report` covers the runs; --build-only builds every
# conversion (measuring and recording nothing) and the next run hits.
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

fast=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0)
# The conversions whose builds differ: nothing to build (REFERENCE), ORT's
# optimised model (ORT_CPU), a partition plan (XNNPACK) when available.
convs=REFERENCE,ORT_CPU_NO_OPT
for c in ORT_CPU XNNPACK ONEDNN; do
  if "$cli" list --json | "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(sys.stdin)["conversions"]}
sys.exit(0 if rows[sys.argv[1]]["available"] else 1)' "$c"; then
    convs=$convs,$c
  fi
done
cp "$models/small_cnn.onnx" "$tmp/model.onnx"

# hits FILE EXPECTED: EXPECTED is "NAME=hit|built|none,..." per conversion.
hits() {
  py "cache hits in $1 ($2)" '
import json, sys
want = dict(kv.split("=") for kv in sys.argv[2].split(","))
for r in json.load(open(sys.argv[1]))["results"]:
    name = r["conversion"]
    if name not in want:
        continue
    w = want[name]
    assert r["status"] == "ok", r
    if w == "hit":
        assert r["cache_hit"] is True and r["build_ms"] == 0, r
        assert r["build_reason"] == "hit", r
    elif w == "none":
        assert r["cache_hit"] is None and r["build_ms"] is None, r
    else:
        assert r["cache_hit"] is False and r["build_ms"] >= 0, r
        assert w == "built" or w in r["build_reason"], (w, r["build_reason"])
    assert r["cache_hit"] is None or r["build_id"], r
' "$1" "$2"
}

every() { # every STATE: STATE for each conversion of $convs
  local out="" c
  for c in ${convs//,/ }; do out=$out${out:+,}$c=$1; done
  echo "$out"
}

run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --json "$tmp/1.json" &&
  hits "$tmp/1.json" "$(every new)"
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --json "$tmp/2.json" &&
  hits "$tmp/2.json" "$(every hit)"
# A build option of the hybrid runtimes only: --no-fallback rebuilds
# XNNPACK/ONEDNN and nothing else.
expect=$(every hit)
expect=${expect//XNNPACK=hit/XNNPACK=build options changed}
expect=${expect//ONEDNN=hit/ONEDNN=build options changed}
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --no-fallback \
  --json "$tmp/5.json" && hits "$tmp/5.json" "$expect"
# Another input shape: every build again (the key's input signature, and
# the reason names the change); each key keeps its own build, so both
# shapes hit afterwards.
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
  --json "$tmp/4.json" && hits "$tmp/4.json" "$(every 'input signature')"
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
  --json "$tmp/4b.json" && hits "$tmp/4b.json" "$(every hit)"
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" \
  --json "$tmp/4c.json" && hits "$tmp/4c.json" "$(every hit)"
# An edited model (one weight byte changed): every build again.
if py_has onnx "an edited model built again"; then
  "$python" - "$tmp/model.onnx" <<'PY'
import sys
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
t = m.graph.initializer[0]
a = numpy_helper.to_array(t).copy()
a.flat[0] += 1.0
t.CopyFrom(numpy_helper.from_array(a, t.name))
onnx.save(m, sys.argv[1])
PY
  run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
    --json "$tmp/6.json" && hits "$tmp/6.json" "$(every built)"
fi
# --rebuild always builds again; --rebuild never uses what is there and
# fails a conversion without a build; --no-cache leaves the cache alone.
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
  --rebuild always --json "$tmp/7.json" && hits "$tmp/7.json" "$(every always)"
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
  --rebuild never --json "$tmp/8.json" && hits "$tmp/8.json" "$(every hit)"
if run 1 bench "$tmp/model.onnx" -c REFERENCE "${fast[@]}" --rebuild never \
  --batch-size 3 --json "$tmp/9.json"; then
  py "--rebuild never without a build" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "error" and "build cache" in r["error"], r
' "$tmp/9.json"
fi
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --no-cache \
  --json "$tmp/10.json" && hits "$tmp/10.json" "$(every none)"
run 2 bench "$tmp/model.onnx" --rebuild sometimes &&
  expect_in "$tmp/err" "--rebuild 'sometimes'" "a bad --rebuild"
# --lean-cache: state kept, artifacts dropped, so the next run builds.
run 0 bench "$tmp/model.onnx" -c "$convs" "${fast[@]}" --batch-size 2 \
  --lean-cache --json "$tmp/11.json" && hits "$tmp/11.json" "$(every hit)"
if [[ $convs == *ORT_CPU,* || $convs == *ORT_CPU ]]; then
  run 0 bench "$tmp/model.onnx" -c ORT_CPU "${fast[@]}" --batch-size 2 \
    --json "$tmp/12.json" &&
    hits "$tmp/12.json" "ORT_CPU=lean"
fi

# The int8 form is part of the build key: a model quantised with 8-bit
# weights (for a CPU with VNNI) is not reused where 7-bit or mixed ones are
# wanted (a CPU without, or --int8-weights), and each form keeps its own
# build. The result says which form ran and why; auto is what `list` says.
int8=INT8_DYNAMIC+ORT_CPU,INT8_STATIC+REFERENCE
both() { echo "INT8_DYNAMIC+ORT_CPU=$1,INT8_STATIC+REFERENCE=$1"; }
form() { # form FILE FORM FORCED: each result's int8_weights and reason
  py "int8 form in $1 ($2)" '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert r["int8_weights"] == sys.argv[2], r
    assert r["int8_form"], r
    if sys.argv[3] == "forced":
        assert r["int8_form"].startswith("--int8-weights " + sys.argv[2]), r
' "$1" "$2" "$3"
}
changed="build options changed"
run 0 bench "$tmp/model.onnx" -c "$int8" "${fast[@]}" --int8-weights 8 \
  --json "$tmp/q8.json" && hits "$tmp/q8.json" "$(both new)" &&
  form "$tmp/q8.json" 8 forced
run 0 bench "$tmp/model.onnx" -c "$int8" "${fast[@]}" --int8-weights 7 \
  --json "$tmp/q7.json" && hits "$tmp/q7.json" "$(both "$changed")" &&
  form "$tmp/q7.json" 7 forced
run 0 bench "$tmp/model.onnx" -c "$int8" "${fast[@]}" --int8-weights mixed \
  --json "$tmp/qm.json" && hits "$tmp/qm.json" "$(both "$changed")" &&
  form "$tmp/qm.json" mixed forced
run 0 bench "$tmp/model.onnx" -c "$int8" "${fast[@]}" --int8-weights 8 \
  --json "$tmp/q8b.json" && hits "$tmp/q8b.json" "$(both hit)"
# auto: the form `list` reports for the runtime here (8, or mixed on a CPU
# without VNNI), from a build made above for that form.
auto=$("$cli" list --json | "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(sys.stdin)["conversions"]}
print(rows["INT8_DYNAMIC+ORT_CPU"]["int8_weights"])')
run 0 bench "$tmp/model.onnx" -c "$int8" "${fast[@]}" --json "$tmp/qa.json" &&
  hits "$tmp/qa.json" "$(both hit)" && form "$tmp/qa.json" "$auto" auto
run 2 bench "$tmp/model.onnx" --int8-weights 6 &&
  expect_in "$tmp/err" "--int8-weights '6'" "a bad --int8-weights"

# Two concurrent runs on one cache, on a model neither has built: both
# succeed, every build ends up ok, nothing is torn.
cp "$models/mlp.onnx" "$tmp/fresh.onnx"
"$cli" bench "$tmp/fresh.onnx" -c "$convs" "${fast[@]}" \
  --json "$tmp/c1.json" >"$tmp/c1.out" 2>&1 &
p1=$!
"$cli" bench "$tmp/fresh.onnx" -c "$convs" "${fast[@]}" \
  --json "$tmp/c2.json" >"$tmp/c2.out" 2>&1 &
p2=$!
wait $p1
r1=$?
wait $p2
r2=$?
checks=$((checks + 1))
if [ $r1 -ne 0 ] || [ $r2 -ne 0 ]; then
  fail "concurrent runs: exit $r1 and $r2"
  show "$tmp/c1.out" "$tmp/c2.out"
fi
py "concurrent runs" '
import json, sys
a = json.load(open(sys.argv[1]))["results"]
b = json.load(open(sys.argv[2]))["results"]
for x, y in zip(a, b):
    assert x["status"] == "ok" and y["status"] == "ok", (x, y)
    assert x["build_id"] == y["build_id"], (x, y)
    # One built it, the other found it built (or both built it one after
    # the other when a hit was impossible): never two failures.
    assert x["cache_hit"] is not None and y["cache_hit"] is not None
' "$tmp/c1.json" "$tmp/c2.json"
if run 0 cache list --json; then
  py "cache list after everything" '
import json, sys
d = json.load(open(sys.argv[1]))
builds = d["builds"] if isinstance(d, dict) else d
assert builds, d
for b in builds:
    status = b.get("status") or b.get("state", {}).get("status")
    assert status in ("ok", "failed"), b
' "$tmp/out"
fi
if run 0 cache report -o "$tmp/report.csv"; then
  py "cache report" '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows, rows
assert all(any(v for v in r.values()) for r in rows)
' "$tmp/report.csv"
fi

# ---- --build-only: builds into the cache, measures and records nothing;
# the next run starts from every build ----
# A model this script has not built before (no edit, so no onnx module
# needed): resnet_blocks.
cp "$models/resnet_blocks.onnx" "$tmp/fresh.onnx"
runs_before=$("$cli" history --json | "$python" -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
run 0 bench "$tmp/fresh.onnx" -c "$convs" --build-only --json "$tmp/bo.json" &&
  py "--build-only builds and loads, measures nothing" '
import json, sys
report = json.load(open(sys.argv[1]))
assert report["reference"] is None or report["reference"] == "", report["reference"]
for r in report["results"]:
    assert r["status"] == "built" and r["error"] is None, r
    assert r["latency_ms"] is None or r["latency_ms"]["median"] is None, r
    assert r["load_ms"] is not None and r["load_ms"] >= 0, r
    assert r["cache_hit"] is False and r["build_ms"] >= 0, r
rec = report["recommendation"]
assert rec["fastest_accurate"] is None and rec["summary"].startswith("Build only: "), rec
' "$tmp/bo.json"
expect_in "$tmp/out" "Build only: " "--build-only's summary"
runs_after=$("$cli" history --json | "$python" -c 'import json,sys; print(len(json.load(sys.stdin)["runs"]))')
checks=$((checks + 1))
[ "$runs_before" = "$runs_after" ] ||
  fail "a --build-only run was recorded in the history ($runs_before -> $runs_after runs)"
run 0 bench "$tmp/fresh.onnx" -c "$convs" "${fast[@]}" --json "$tmp/bo2.json" &&
  hits "$tmp/bo2.json" "$(every hit)"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
