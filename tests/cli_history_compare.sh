#!/usr/bin/env bash
# `modelbench compare` and `modelbench history` end to end: two bench runs
# of one model compare as unchanged; a report whose samples are scaled 1.5x
# is a significant slowdown that --fail-on-regression turns into exit 1
# naming the conversion; added, removed and failed conversions; the JSON
# output; usage errors. Runs recorded in the results database (once bench
# stores them) are listed by history and compared by id.
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_TEST_MODELS,
# the bundled models folder. The cache folder is a temporary one, so the
# user's ~/.cache is never touched.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
model=$models/resnet_blocks.onnx
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
export HOME=$tmp/home
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
# 20 timed iterations give the statistics enough samples; no minimum time.
fast=(-c REFERENCE --warmup 1 --warmup-time 0 --min-iterations 20
  --min-time 0)

# doctor IN OUT PYTHON: OUT is the report IN after PYTHON edited `d`.
doctor() {
  "$python" -c "
import json, sys
d = json.load(open(sys.argv[1]))
$3
json.dump(d, open(sys.argv[2], 'w'), indent=1)
" "$1" "$2" || fail "cannot write doctored report $2"
}

# ---- two bench runs of the same model ----
run 0 bench "$model" "${fast[@]}" --json "$tmp/a.json" || exit 1
run 0 bench "$model" "${fast[@]}" --json "$tmp/b.json" || exit 1

# The same model twice: no regression beyond 1000%. Two real runs differ by
# machine noise, which on a loaded 2-core machine under ASan reaches
# several-fold; the exact no-change case is a run against itself below.
if run 0 compare "$tmp/a.json" "$tmp/b.json" --fail-on-regression 1000; then
  expect_in "$tmp/out" "REFERENCE" "compare table"
  expect_in "$tmp/out" "MEDIAN A ms" "compare table header"
  expect_in "$tmp/out" "no regression above 1000%" "compare summary"
fi
# A deliberately slowed run (the test-only hook sleeps 500 ms inside every
# timed inference of REFERENCE, a model of a few ms): a regression far
# beyond the noise allowance above, so compare exits 1 naming it.
MODELBENCH_TEST_DELAY_MS=REFERENCE=500 run 0 bench "$model" -c REFERENCE \
  --warmup 1 --warmup-time 0 --min-iterations 8 --min-time 0 \
  --json "$tmp/delayed.json" --no-record
if run 1 compare "$tmp/a.json" "$tmp/delayed.json" --fail-on-regression 1000
then
  expect_in "$tmp/err" "regression: REFERENCE is" "compare flags a slowed run"
fi
if run 0 compare "$tmp/a.json" "$tmp/b.json" --json; then
  py "compare --json of two runs" '
import json, sys
d = json.load(open(sys.argv[1]))
for key in ("a", "b", "same_model", "alpha", "confidence", "resamples",
            "fail_on_regression_pct", "conversions", "regressions"):
    assert key in d, "missing " + key
assert d["same_model"] is True
assert d["regressions"] == []
(c,) = d["conversions"]
assert c["conversion"] == "REFERENCE", c
assert c["verdict"] in ("slower", "faster", "no significant change"), c
assert c["samples_a"] >= 20 and c["samples_b"] >= 20, c
for key in ("median_a_ms", "median_b_ms", "change_pct", "ci_low_pct",
            "ci_high_pct", "p_value"):
    assert isinstance(c[key], float) or isinstance(c[key], int), key
assert c["ci_low_pct"] <= c["change_pct"] <= c["ci_high_pct"] or \
    c["verdict"] != "no significant change", c
' "$tmp/out"
fi
# A run compared with itself: exactly no change.
if run 0 compare "$tmp/a.json" "$tmp/a.json" --fail-on-regression 0 --json
then
  py "compare a run with itself" '
import json, sys
(c,) = json.load(open(sys.argv[1]))["conversions"]
assert c["verdict"] == "no significant change", c
assert c["change_pct"] == 0 and c["p_value"] == 1, c
' "$tmp/out"
fi

# ---- doctored reports: a quiet base, and every latency of it 1.5x ----
# The base replaces a.json's measured samples (whose noise under ASan on a
# loaded machine can make a real 1.5x insignificant) with a steady series
# of 40 samples around 1 ms, so the statistics below are deterministic.
doctor "$tmp/a.json" "$tmp/base.json" '
import statistics
for r in d["results"]:
    r["samples_ms"] = [1.0 + 0.002 * (i % 10) for i in range(40)]
    s = r["samples_ms"]
    r["iterations"] = len(s)
    r["latency_ms"].update(mean=statistics.mean(s), median=statistics.median(s),
                           min=min(s), max=max(s), stddev=statistics.stdev(s))'
doctor "$tmp/base.json" "$tmp/slow.json" '
for r in d["results"]:
    r["samples_ms"] = [s * 1.5 for s in r["samples_ms"]]
    for k, v in r["latency_ms"].items():
        if v is not None and k != "cv":
            r["latency_ms"][k] = v * 1.5'
# +50% exactly: a regression past a 25% threshold, named on stderr.
if run 1 compare "$tmp/base.json" "$tmp/slow.json" --fail-on-regression 25; then
  expect_in "$tmp/err" "regression: REFERENCE is 50.0% slower" \
    "compare names the regression"
  expect_in "$tmp/out" "slower" "compare verdict"
fi
if run 1 compare "$tmp/base.json" "$tmp/slow.json" --fail-on-regression 25 \
  --json; then
  py "compare --json of a regression" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["regressions"] == ["REFERENCE"], d["regressions"]
(c,) = d["conversions"]
assert c["verdict"] == "slower" and c["significant"] and c["regression"], c
assert abs(c["change_pct"] - 50) < 1e-6, c
assert c["ci_low_pct"] > 0 and c["p_value"] < 0.05, c
assert d["fail_on_regression_pct"] == 25
' "$tmp/out"
fi
# Without the flag a slowdown is reported, not a failure; the other way
# round it is faster.
run 0 compare "$tmp/base.json" "$tmp/slow.json" &&
  expect_in "$tmp/out" "slower" "compare without --fail-on-regression"
run 0 compare "$tmp/slow.json" "$tmp/base.json" --fail-on-regression 25 &&
  expect_in "$tmp/out" "faster" "compare the other way round"
# A threshold above the change lets it pass.
run 0 compare "$tmp/base.json" "$tmp/slow.json" --fail-on-regression 60

# ---- added, removed, failed ----
doctor "$tmp/a.json" "$tmp/renamed.json" '
d["results"][0]["conversion"] = "RENAMED"'
if run 0 compare "$tmp/a.json" "$tmp/renamed.json" --json; then
  py "added and removed conversions" '
import json, sys
rows = {c["conversion"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
assert rows["REFERENCE"]["verdict"] == "removed", rows
assert rows["RENAMED"]["verdict"] == "added", rows
' "$tmp/out"
fi
doctor "$tmp/a.json" "$tmp/failed.json" '
r = d["results"][0]
r["status"] = "crashed"
r["error"] = "crashed with SIGSEGV"
r["samples_ms"] = []'
if run 0 compare "$tmp/a.json" "$tmp/failed.json" --fail-on-regression 1; then
  expect_in "$tmp/out" "failed (B: crashed)" "a failed conversion"
fi

# ---- errors ----
usage_error "expected two runs" compare "$tmp/a.json"
usage_error "unexpected argument" compare "$tmp/a.json" "$tmp/b.json" x
usage_error "--alpha '0'" compare --alpha 0 "$tmp/a.json" "$tmp/b.json"
usage_error "--fail-on-regression 'x'" compare --fail-on-regression x \
  "$tmp/a.json" "$tmp/b.json"
usage_error "--limit 'x'" history --limit x
usage_error "expected KEY=VALUE" history --label nolabel
usage_error "unknown option '--nope'" history --nope
run 1 compare "$tmp/missing.json" "$tmp/a.json" &&
  expect_in "$tmp/err" "no such file, and not a run id" "a missing file"
echo '{"results": [{"conversion": "X", "status": "ok", "samples_ms": [1, "2"]}]}' \
  >"$tmp/bad.json"
run 1 compare "$tmp/bad.json" "$tmp/a.json" &&
  expect_in "$tmp/err" "samples_ms[1]" "a malformed report"
run 1 compare "$model" "$tmp/a.json"
run 1 compare 1 2 --cache-dir "$tmp/no-db" &&
  expect_in "$tmp/err" "no results database" "compare without a database"
run 0 history --cache-dir "$tmp/no-db" &&
  expect_in "$tmp/out" "no runs recorded" "history without a database"

# ---- the results database (bench records its runs there) ----
dbrun_count() {
  "$cli" history --json 2>/dev/null |
    "$python" -c 'import json, sys; print(len(json.load(sys.stdin)["runs"]))' \
      2>/dev/null || echo 0
}
if ! "$cli" history --help >/dev/null 2>&1; then
  echo "SKIP: history section: no 'history' command"
elif [ "$(dbrun_count)" -eq 0 ]; then
  echo "SKIP: history section: bench recorded no run in $MODELBENCH_CACHE_DIR"
else
  before=$(dbrun_count)
  run 0 bench "$model" "${fast[@]}"
  run 0 bench "$models/mlp.onnx" "${fast[@]}"
  after=$(dbrun_count)
  checks=$((checks + 1))
  [ "$after" -eq $((before + 2)) ] ||
    fail "history: $before runs before two benches, $after after"
  if run 0 history --json; then
    py "history --json" '
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["runs"]
ids = [r["id"] for r in runs]
assert ids == sorted(ids, reverse=True), ids
assert runs[0]["model"]["path"].endswith("mlp.onnx"), runs[0]
for r in runs:
    for key in ("id", "time", "tool_version", "model", "cpu_model",
                "conversions", "ok", "best", "labels"):
        assert key in r, key
    assert r["best"]["conversion"] == "REFERENCE", r
    assert r["best"]["median_ms"] > 0, r
    assert len(r["model"]["sha256"]) == 64, r
open(sys.argv[2], "w").write("%d %d" % (ids[0], ids[1]))
' "$tmp/out" "$tmp/ids"
  fi
  read -r mlp_id resnet_id <"$tmp/ids"
  run 0 history && expect_in "$tmp/out" "REFERENCE" "history table"
  # MODEL filters by path, and by contents through a copy elsewhere.
  cp "$model" "$tmp/copy.onnx"
  for filter in "$model" "$tmp/copy.onnx"; do
    if run 0 history "$filter" --json; then
      py "history $filter" '
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert runs and all(r["model"]["path"].endswith("resnet_blocks.onnx")
                    for r in runs), runs
' "$tmp/out"
    fi
  done
  run 0 history --limit 1 --json &&
    py "history --limit" '
import json, sys
assert len(json.load(open(sys.argv[1]))["runs"]) == 1
' "$tmp/out"
  # Stored runs compare by id, and with a file.
  run 0 compare "$resnet_id" "$tmp/a.json" --fail-on-regression 1000 &&
    expect_in "$tmp/out" "A: run $resnet_id" "compare by run id"
  # The stored run is a real one, noisy against a.json: the doctored
  # report is 20x slower so the verdict cannot hinge on machine load.
  doctor "$tmp/a.json" "$tmp/slow20.json" '
for r in d["results"]:
    r["samples_ms"] = [s * 20 for s in r["samples_ms"]]
    for k, v in r["latency_ms"].items():
        if v is not None and k != "cv":
            r["latency_ms"][k] = v * 20'
  run 1 compare "$resnet_id" "$tmp/slow20.json" --fail-on-regression 25 &&
    expect_in "$tmp/err" "REFERENCE" "regression against a stored run"
  run 0 compare "$resnet_id" "$mlp_id" &&
    expect_in "$tmp/out" "different models" "compare two models"
  run 1 compare 999999 "$tmp/a.json" &&
    expect_in "$tmp/err" "no run 999999" "a missing run id"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
