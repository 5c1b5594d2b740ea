#!/usr/bin/env bash
# Confidence intervals and the realistic phases from the command line
# (issue 30): `bench --ci-target 2% --fresh-inputs --cold-cache` on the
# bundled MLP writes, per result, the median's interval, the speed-up's
# interval, how the ci-target ended and both realistic phases, with values
# that agree with each other (met => half_width <= target; the median inside
# its interval; the pool holds more than one sample; gap = median / steady
# median - 1); the table shows the extra columns (the JSON read back is
# test_measure's); a config file takes the same keys; a bad --ci-target is a
# usage error naming the value. A tiny --max-time reports "max-time". No
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
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
fast=(-c REFERENCE,ORT_CPU --warmup 1 --warmup-time 0 --min-iterations 10
  --min-time 0 --no-record)
available ORT_CPU || fast=(-c REFERENCE --warmup 1 --warmup-time 0
  --min-iterations 10 --min-time 0 --no-record)

run 0 bench "$model" "${fast[@]}" --max-time 20 --ci-target 2% \
  --fresh-inputs --cold-cache --json "$tmp/r.json" || exit 1
cp "$tmp/out" "$tmp/table.txt"
check_report='
import json, sys
report = json.load(open(sys.argv[1]))
assert report["config"]["ci_target"] == 0.02, report["config"]["ci_target"]
assert report["config"]["fresh_inputs"] is True
assert report["config"]["cold_cache"] is True
for r in report["results"]:
    name = r["conversion"]
    assert r["status"] == "ok", (name, r["status"], r["error"])
    lat = r["latency_ms"]
    lo, hi = r["median_ci_ms"]
    assert lo <= lat["median"] <= hi, (name, lo, lat["median"], hi)
    ci = r["ci_target"]
    assert ci["target"] == 0.02, ci
    assert ci["stopped_by"] == ("ci-target" if ci["met"] else "max-time"), ci
    if ci["met"]:
        assert ci["half_width"] is not None and ci["half_width"] <= 0.02, ci
        assert abs((hi - lo) / 2 / lat["median"] - ci["half_width"]) < 1e-9, ci
    else:
        assert any("stopped at --max-time" in w for w in r["warnings"]), r
    lo, hi = r["speedup_ci"]
    assert lo <= hi and lo > 0, r["speedup_ci"]
    fresh = r["realistic"]["fresh_inputs"]
    cold = r["realistic"]["cold_cache"]
    assert fresh["pool_samples"] > 1, fresh
    assert fresh["pool_mb"] > 0 and cold["flush_mb"] > 0, (fresh, cold)
    for phase in (fresh, cold):
        assert phase["iterations"] >= 10, phase
        assert 0 < phase["median_ms"] <= phase["p99_ms"], phase
        assert abs(phase["gap"] - (phase["median_ms"] / lat["median"] - 1)) \
            < 1e-9, (phase, lat["median"])
base = [r for r in report["results"] if r["conversion"] == report["baseline"]]
lo, hi = base[0]["speedup_ci"]
assert lo <= 1 <= hi, base[0]["speedup_ci"]
'
py "ci-target and realistic fields agree" "$check_report" "$tmp/r.json"
expect_in "$tmp/table.txt" "+-95%" "the table shows the median's interval"
expect_in "$tmp/table.txt" "fresh ms" "the table shows the fresh-inputs column"
expect_in "$tmp/table.txt" "cold ms" "the table shows the cold-cache column"
expect_in "$tmp/table.txt" "until the median's 95% interval is within +-2%" \
  "the table's header says the target"

# A config file: the same keys.
printf '{"ci_target": "2%%", "fresh_inputs": true, "max_time": 0.000001}\n' \
  >"$tmp/config.json"
run 0 bench "$model" -c REFERENCE --warmup 0 --warmup-time 0 --min-time 0 \
  --no-record --config "$tmp/config.json" --json "$tmp/max.json" || exit 1
py "a tiny --max-time stops by max-time" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["ci_target"]["met"] is False, r["ci_target"]
assert r["ci_target"]["stopped_by"] == "max-time", r["ci_target"]
assert any("stopped at --max-time" in w for w in r["warnings"]), r["warnings"]
assert r["realistic"]["fresh_inputs"]["pool_samples"] > 1
assert r["realistic"]["cold_cache"] is None
' "$tmp/max.json"
printf '{"ci_target": 2}\n' >"$tmp/bad.json"
usage_error "ci_target" bench "$model" -c REFERENCE --no-record \
  --config "$tmp/bad.json"

usage_error "--ci-target: ci target '2'" bench "$model" --ci-target 2
usage_error "--ci-target: ci target '0%'" bench "$model" --ci-target 0%

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
