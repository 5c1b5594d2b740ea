#!/usr/bin/env bash
# Cold start, energy and cost (issue 30, items 3 and 7): `bench --cold
# --price-per-core-hour` on the bundled MLP with OPTIMIZE+REFERENCE (a
# conversion with a build step) and REFERENCE (none). The JSON report's
# cold_start, energy and cost_per_million hold together: the miss built
# (build_miss_ms > 0) and the run hit, the times to a first result are the
# sums of their parts, the cost is the price x threads x seconds per
# inference, energy is a figure or the reason there is none; a fake
# powercap tree ($MODELBENCH_POWERCAP_DIR) gives a figure; the table,
# Markdown, CSV and HTML show them; bad prices are usage errors naming the
# option. No timing figure is checked against a threshold.
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
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
fast=(-c OPTIMIZE+REFERENCE,REFERENCE --warmup 3 --warmup-time 0
  --min-iterations 30 --min-time 0 --no-record --threads 2)

run 0 bench "$model" "${fast[@]}" --cold --price-per-core-hour 0.05 \
  --json "$tmp/a.json" --markdown "$tmp/a.md" --csv "$tmp/a.csv" \
  --html "$tmp/a.html" || exit 1
cp "$tmp/out" "$tmp/a.txt"

# The miss workers' logs go with the run's, as an ok conversion's do.
checks=$((checks + 1))
left=$(find "$MODELBENCH_CACHE_DIR" -name '*.cold-miss.log' | head -3)
[ -z "$left" ] || fail "cold-miss logs left behind: $left"

py "cold start, energy and cost in the JSON report" '
import json, math, sys
r = json.load(open(sys.argv[1]))
c = r["config"]
assert c["cold"] is True and c["price_per_core_hour"] == 0.05, c
res = {x["conversion"]: x for x in r["results"]}
for name, x in res.items():
    assert x["status"] == "ok", (name, x["error"])
    cs = x["cold_start"]
    assert cs is not None, name
    for k in ("build_miss_ms", "build_hit_ms", "load_ms",
              "first_inference_ms", "time_to_first_result_ms",
              "time_to_first_result_miss_ms", "model_read_ms"):
        assert isinstance(cs[k], (int, float)) and cs[k] >= 0, (name, k, cs)
    # The miss is a build of its own; the run then hit the cache.
    assert x["cache_hit"] is True, (name, x["cache_hit"], cs["note"])
    assert cs["note"] is None, (name, cs["note"])
    assert cs["first_inference_ms"] == x["first_run_ms"], (name, cs)
    assert math.isclose(cs["load_ms"], cs["model_read_ms"] + x["load_ms"],
                        rel_tol=1e-9), (name, cs)
    assert math.isclose(cs["time_to_first_result_ms"],
                        cs["build_hit_ms"] + cs["load_ms"] +
                        cs["first_inference_ms"], rel_tol=1e-9), (name, cs)
    assert math.isclose(cs["time_to_first_result_miss_ms"],
                        cs["build_miss_ms"] + cs["load_ms"] +
                        cs["first_inference_ms"], rel_tol=1e-9), (name, cs)
    steady = cs["iterations_to_steady"]
    # first + warm-up + timed: at most 1 + warm-up + 100 - 5.
    assert steady is None or (isinstance(steady, int) and 0 <= steady
                              <= x["iterations"] + 200), (name, steady)
    # threads 2 x 1 session x price / 3600 x 1e6 / samples per second.
    want = 0.05 * 2 / 3600 * 1e6 / x["throughput_sps"]
    assert math.isclose(x["cost_per_million"], want, rel_tol=1e-9), (
        name, x["cost_per_million"], want)
    e = x["energy"]
    assert isinstance(e, dict), (name, e)
    if "unavailable" in e:
        assert isinstance(e["unavailable"], str) and e["unavailable"], e
    else:
        assert e["joules_per_inference"] > 0, e
# OPTIMIZE+REFERENCE converts the model: its miss is a real build.
assert res["OPTIMIZE+REFERENCE"]["cold_start"]["build_miss_ms"] > 0
' "$tmp/a.json"

# The table: a cold-start section and the cost column; the energy column
# or the reason there is none.
expect_in "$tmp/a.txt" "cold start" "--cold table"
expect_in "$tmp/a.txt" "build miss" "--cold table"
expect_in "$tmp/a.txt" "cost/M" "--price-per-core-hour column"
expect_in "$tmp/a.txt" "cheapest accurate:" "cheapest named"
if ! grep -q "J/inf" "$tmp/a.txt"; then
  expect_in "$tmp/a.txt" "energy unavailable" "why no energy"
fi
expect_in "$tmp/a.md" "**Cold start**" "Markdown cold start"
expect_in "$tmp/a.md" "**Energy and cost**" "Markdown energy and cost"
expect_in "$tmp/a.html" "<h3>Cold start</h3>" "HTML cold start"
expect_in "$tmp/a.html" "<h3>Energy and cost</h3>" "HTML energy and cost"
expect_in "$tmp/a.html" "cheapest accurate" "HTML cheapest"
py "CSV columns" '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == 2, rows
for row in rows:
    float(row["cost_per_million"])
    float(row["cold_build_miss_ms"])
    float(row["time_to_first_result_ms"])
    e = row["joules_per_inference"]
    assert e.startswith("n/a: ") or float(e) >= 0, e
' "$tmp/a.csv"

# A fake powercap tree: one package zone (its counter does not move, so
# 0 J), a sub-zone and the MMIO copy, neither of which counts.
fake=$tmp/powercap
mkdir -p "$fake/intel-rapl:0" "$fake/intel-rapl:0:0" "$fake/intel-rapl-mmio:0"
for z in "intel-rapl:0" "intel-rapl:0:0" "intel-rapl-mmio:0"; do
  echo 1000 >"$fake/$z/energy_uj"
  echo 262143328850 >"$fake/$z/max_energy_range_uj"
done
MODELBENCH_POWERCAP_DIR=$fake run 0 bench "$model" -c REFERENCE --warmup 1 \
  --warmup-time 0 --min-iterations 5 --min-time 0 --no-record \
  --json "$tmp/b.json" || exit 1
py "energy from a fake powercap tree" '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["config"]["cold"] is False and r["config"]["price_per_core_hour"] is None
x = r["results"][0]
assert x["cold_start"] is None and x["cost_per_million"] is None, x
e = x["energy"]
assert e == {"joules_per_inference": 0, "joules": 0,
             "domains": "intel-rapl:0"}, e
' "$tmp/b.json"
MODELBENCH_POWERCAP_DIR=$tmp/none run 0 bench "$model" -c REFERENCE \
  --warmup 1 --warmup-time 0 --min-iterations 5 --min-time 0 --no-record \
  --json "$tmp/c.json" || exit 1
py "no powercap: the reason" '
import json, sys
e = json.load(open(sys.argv[1]))["results"][0]["energy"]
assert e["unavailable"].startswith("no ") and "exposes no RAPL" in e["unavailable"], e
' "$tmp/c.json"

# A config file sets both; bad prices name the option.
echo '{"cold": true, "price_per_core_hour": 0.5}' >"$tmp/cfg.json"
run 0 bench "$model" -c REFERENCE --warmup 1 --warmup-time 0 \
  --min-iterations 5 --min-time 0 --no-record --config "$tmp/cfg.json" \
  --json "$tmp/d.json" || exit 1
py "config file keys" '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["config"]["cold"] is True and r["config"]["price_per_core_hour"] == 0.5
assert r["results"][0]["cold_start"] is not None
assert r["results"][0]["cost_per_million"] > 0
' "$tmp/d.json"
usage_error "--price-per-core-hour 'x'" bench "$model" --price-per-core-hour x
usage_error "--price-per-core-hour '0'" bench "$model" --price-per-core-hour 0
echo '{"price_per_core_hour": "cheap"}' >"$tmp/bad.json"
run 2 bench "$model" --config "$tmp/bad.json"
expect_in "$tmp/err" "price_per_core_hour" "config error names the key"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
