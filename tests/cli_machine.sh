#!/usr/bin/env bash
# modelbench machine: this machine's peaks as JSON and text, cached per
# thread count (a second run reads the cache, --remeasure measures again),
# and bench placing its results against them (the JSON's peaks and each
# result's roofline; --no-roofline leaves them out). No timing threshold:
# the figures need only be there and positive.
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_TEST_MODELS,
# the bundled models folder.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
export MODELBENCH_CACHE_DIR="$tmp/cache"
# Measuring and the cache folder's copy are tested here: not the suite's
# shared peaks (ctest sets MODELBENCH_PEAKS_DIR), until its own check below.
unset MODELBENCH_PEAKS_DIR

if run 0 machine --threads 2 --json; then
  cp "$tmp/out" "$tmp/first.json"
  py "machine --json: every figure there, positive where measured" '
import json, sys
p = json.load(open(sys.argv[1]))
for key in ("measured", "threads", "fp32_gflops", "fp32_source", "int8_gops",
            "int8_note", "bf16_gflops", "bf16_note", "bandwidth_gbs",
            "cpu_model", "cpu_flags_sha256", "measured_at", "from_cache"):
    assert key in p, key
assert p["measured"] == 1 and p["threads"] == 2, p
assert p["fp32_gflops"] > 0 and p["bandwidth_gbs"] > 0, p
assert p["int8_gops"] > 0 or p["int8_note"], p
assert p["bf16_gflops"] > 0 or p["bf16_note"], p
assert p["from_cache"] == 0, p
' "$tmp/first.json"
fi
if run 0 machine --threads 2 --json; then
  py "machine --json again: read from the cache, the same figures" '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b["from_cache"] == 1, b
assert a["fp32_gflops"] == b["fp32_gflops"], (a, b)
' "$tmp/first.json" "$tmp/out"
fi
if run 0 machine --threads 2 --remeasure; then
  expect_in "$tmp/out" "fp32 GEMM:" "machine --remeasure"
  expect_in "$tmp/out" "(measured now, cached)" "machine --remeasure"
fi
# MODELBENCH_PEAKS_DIR: the peaks kept there, not in the cache folder, and
# read back from there by a run with another cache.
if MODELBENCH_PEAKS_DIR=$tmp/peaks run 0 machine --threads 3 --json; then
  cp "$tmp/out" "$tmp/pd.json"
  checks=$((checks + 1))
  if ! ls "$tmp/peaks"/peaks-*-t3.json >/dev/null 2>&1 ||
    ls "$tmp/cache/machine"/peaks-*-t3.json >/dev/null 2>&1; then
    fail "MODELBENCH_PEAKS_DIR: the t3 peaks are not (only) in $tmp/peaks"
  fi
  if MODELBENCH_PEAKS_DIR=$tmp/peaks MODELBENCH_CACHE_DIR=$tmp/other \
    run 0 machine --threads 3 --json; then
    py "MODELBENCH_PEAKS_DIR: measured once, read by a run with another cache" '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["from_cache"] == 0 and b["from_cache"] == 1, (a, b)
assert a["fp32_gflops"] == b["fp32_gflops"], (a, b)
' "$tmp/pd.json" "$tmp/out"
  fi
fi
usage_error_line "--threads" machine --threads 0
usage_error_line "unexpected argument" machine extra

model="$models/resnet_blocks.onnx"
fast=(--min-time 0.05 --warmup 1 --warmup-time 0 --min-iterations 3)
if run 0 bench "$model" -c REFERENCE,ORT_CPU --threads 2 "${fast[@]}" \
  --no-record --json "$tmp/r.json" --html "$tmp/r.html"; then
  expect_in "$tmp/out" "% peak" "bench table"
  expect_in "$tmp/out" "peaks:   fp32" "bench table"
  py "bench --json: peaks and a roofline per ok result" '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["peaks"]["measured"] == 1 and r["peaks"]["from_cache"] == 1, r["peaks"]
assert r["model"]["flops"] > 0 and r["model"]["activation_bytes"] > 0, r["model"]
ok = [x for x in r["results"] if x["status"] == "ok"]
assert ok, r["results"]
for x in ok:
    rl = x["roofline"]
    assert rl["bound"] in ("compute-bound", "memory-bound", "overhead-bound"), rl
    assert rl["gflops"] > 0 and rl["intensity"] > 0 and rl["peak_share"] > 0, rl
html = open(sys.argv[2]).read()
assert html.count("<circle class=\"rpoint") == len(ok), html.count("rpoint")
' "$tmp/r.json" "$tmp/r.html"
fi
if run 0 bench "$model" -c REFERENCE "${fast[@]}" --no-record --no-roofline \
  --json "$tmp/n.json"; then
  py "bench --no-roofline: no peaks, no roofline" '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["peaks"]["measured"] == 0 and "--no-roofline" in r["peaks"]["note"], r["peaks"]
assert all(x["roofline"] is None for x in r["results"]), r["results"]
' "$tmp/n.json"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
