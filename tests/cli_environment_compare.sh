#!/usr/bin/env bash
# The environment a run records and `compare` diffs: two bench runs of the
# bundled MLP recorded into a temporary results database, the second with
# OMP_WAIT_POLICY=passive (its HTML and Markdown reports show the
# variable); compare (by run id and by JSON file, text and
# --json) says "environment differs: OMP_WAIT_POLICY: (unset) -> passive",
# and two runs in the same environment say nothing. The JSON report's
# "environment" object carries the facts and the variables verbatim. No
# timing figure is checked.
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_TEST_MODELS,
# the bundled models folder.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
model=$models/mlp.onnx
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
export HOME=$tmp/home
# The runs differ in this variable only: whatever the caller had is gone.
unset OMP_WAIT_POLICY
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
fast=(-c REFERENCE --warmup 1 --warmup-time 0 --min-iterations 5
  --min-time 0)

run 0 bench "$model" "${fast[@]}" --json "$tmp/a.json" || exit 1
OMP_WAIT_POLICY=passive run 0 bench "$model" "${fast[@]}" \
  --json "$tmp/b.json" --html "$tmp/b.html" --markdown "$tmp/b.md" || exit 1
run 0 bench "$model" "${fast[@]}" --json "$tmp/c.json" || exit 1

# The report's environment: facts (a string that says why when unknown)
# and the variable exactly as set.
py "environment in the JSON report" '
import json, sys
a, b = (json.load(open(p))["environment"] for p in sys.argv[1:3])
for key in ("cpu_model", "cpu_flags_sha256", "isa", "governor", "smt",
            "kernel", "cpus_allowed", "threads", "libraries", "variables"):
    assert key in a, "missing environment." + key
assert a["governor"] and a["smt"] and a["kernel"], a
assert a["governor"] != "" and (a["smt"] in ("on", "off") or
    a["smt"].startswith(("on ", "off ", "unknown: "))), a["smt"]
assert a["threads"] == 1, a["threads"]
assert a["libraries"]["openblas"].startswith("OpenBLAS"), a["libraries"]
assert "OMP_WAIT_POLICY" not in a["variables"], a["variables"]
assert b["variables"]["OMP_WAIT_POLICY"] == "passive", b["variables"]
assert {k: v for k, v in b["variables"].items() if k != "OMP_WAIT_POLICY"} \
    == a["variables"], (a["variables"], b["variables"])
' "$tmp/a.json" "$tmp/b.json"

# The HTML and Markdown reports show the environment too.
expect_in "$tmp/b.html" "<h3>Environment</h3>" "HTML environment section"
expect_in "$tmp/b.html" "<code>OMP_WAIT_POLICY=passive</code>" \
  "HTML environment variable"
expect_in "$tmp/b.md" "_Environment:_ kernel" "Markdown environment line"
expect_in "$tmp/b.md" 'OMP\_WAIT\_POLICY=passive' "Markdown variable"

want="environment differs: OMP_WAIT_POLICY: (unset) -> passive"
# By run id from the results database (runs 1, 2, 3 of a fresh cache).
if run 0 history --json; then
  py "three runs recorded" '
import json, sys
ids = sorted(r["id"] for r in json.load(open(sys.argv[1]))["runs"])
assert ids == [1, 2, 3], ids
' "$tmp/out"
fi
run 0 compare 1 2 && expect_in "$tmp/out" "$want" "compare of stored runs"
cp "$tmp/out" "$tmp/compare_ids.txt"
# The other way round, the variable is unset in B.
run 0 compare 2 1 &&
  expect_in "$tmp/out" "OMP_WAIT_POLICY: passive -> (unset)" "compare 2 1"
# JSON reports compare alike.
run 0 compare "$tmp/a.json" "$tmp/b.json" &&
  expect_in "$tmp/out" "$want" "compare of JSON reports"
# A report and a stored run compare alike too.
run 0 compare "$tmp/a.json" 2 && expect_in "$tmp/out" "$want" "file vs id"
# The same environment twice: no line.
if run 0 compare 1 3; then
  checks=$((checks + 1))
  grep -q "environment" "$tmp/out" &&
    fail "compare of runs in the same environment printed one" &&
    show "$tmp/out"
fi

if run 0 compare 1 2 --json; then
  py "compare --json lists the difference" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["environment_recorded"] == {"a": True, "b": True}, d
diffs = d["environment_differences"]
assert diffs == [{"key": "OMP_WAIT_POLICY", "a": None, "b": "passive",
                  "variable": True}], diffs
' "$tmp/out"
fi
if run 0 compare 1 3 --json; then
  py "compare --json of one environment" '
import json, sys
assert json.load(open(sys.argv[1]))["environment_differences"] == []
' "$tmp/out"
fi

# A report without an environment (an older modelbench) says so.
"$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
del d["environment"]
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/a.json" "$tmp/old.json"
if run 0 compare "$tmp/old.json" "$tmp/b.json" --json; then
  py "compare --json with an old report" '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["environment_recorded"] == {"a": False, "b": True}, d
assert d["environment_differences"] == [], d
' "$tmp/out"
fi
run 0 compare "$tmp/old.json" "$tmp/b.json" &&
  expect_in "$tmp/out" "environment: not recorded in A" "old report"

# A significant change reads "slower, environment differs": B's samples
# scaled 20x so the verdict does not hinge on machine noise.
"$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r["samples_ms"] = [s * 20 for s in r["samples_ms"]]
    r["latency_ms"]["median"] *= 20
json.dump(d, open(sys.argv[2], "w"))
' "$tmp/b.json" "$tmp/b_slow.json"
if run 1 compare "$tmp/a.json" "$tmp/b_slow.json" --fail-on-regression 100
then
  expect_in "$tmp/out" "slower, environment differs" "verdict beside it"
  expect_in "$tmp/err" "(the environment differs: OMP_WAIT_POLICY)" \
    "regression message names the key"
fi

echo "--- compare 1 2 ---"
cat "$tmp/compare_ids.txt"
echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
