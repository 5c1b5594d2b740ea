#!/usr/bin/env bash
# `modelbench bench` and `modelbench list` end to end: the table, the JSON
# report and its required keys, exit codes (0 all ran, 1 a conversion
# failed, 2 usage), conversion-name suggestions, config files, timeouts that
# leave the other conversions' results intact, and a JSON file that already
# holds finished results while a later conversion is still running.
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_TEST_MODELS,
# the bundled models folder. Runs in well under 30 s: every benchmark uses
# tiny measurement settings.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
model=$models/mlp.onnx
python=/usr/bin/python3
tmp=$(mktemp -d)
bg_pid=
cleanup() {
  [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# Builds and the history in a folder of this run's: neither read from nor
# left in a cache another run (or the user) keeps.
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
fast=(--min-time 0.05 --warmup 1 --warmup-time 0 --min-iterations 3)

# check_json FILE EXPECTED_STATUSES: the report parses and every result has
# every key issue 3 requires; statuses are "NAME=status,NAME=status".
check_json() {
  checks=$((checks + 1))
  if ! "$python" - "$1" "$2" >"$tmp/py" 2>&1 <<'EOF'; then
import json, sys
report = json.load(open(sys.argv[1]))
want = dict(kv.split("=") for kv in sys.argv[2].split(","))
for key in ("tool", "version", "model", "machine", "config", "results"):
    assert key in report, "missing top-level key " + key
for key in ("path", "sha256", "inputs"):
    assert key in report["model"], "missing model." + key
for key in ("cpu_model", "cores", "isa_flags", "os"):
    assert key in report["machine"], "missing machine." + key
for key in ("batch_size", "n_samples", "device", "isolate", "fail_fast",
            "threads", "warmup", "warmup_time", "min_iterations", "min_time",
            "max_time", "timeout", "seed", "conversions"):
    assert key in report["config"], "missing config." + key
required = ("conversion", "id", "status", "error", "device", "runtime",
            "runtime_version", "load_ms", "first_run_ms", "latency_ms",
            "iterations", "batch_size", "throughput_sps", "peak_rss_mb",
            "accuracy", "speedup_vs_baseline", "warnings", "samples_ms")
got = {}
for r in report["results"]:
    for key in required:
        assert key in r, "%s: missing key %s" % (r.get("conversion"), key)
    got[r["conversion"]] = r["status"]
    if r["status"] == "ok":
        # Failed results have null for what was never measured.
        for key in ("mean", "median", "min", "max", "p90", "p95", "p99",
                    "stddev", "cv"):
            assert key in r["latency_ms"], "missing latency_ms." + key
        for key in ("max_abs_err", "max_rel_err", "cosine"):
            assert key in r["accuracy"], "missing accuracy." + key
        assert r["iterations"] >= 3, "too few iterations"
        assert len(r["samples_ms"]) == r["iterations"], "samples != iterations"
        assert r["latency_ms"]["median"] > 0, "median not positive"
        assert r["error"] is None, "ok result with an error"
    else:
        assert r["error"], "failed result without an error message"
assert got == want, "statuses %s, expected %s" % (got, want)
EOF
    fail "JSON report $1: $(cat "$tmp/py")"
    return 1
  fi
}

# --- help, list ---
run 0 bench --help && expect_in "$tmp/out" "--conversions" "bench --help"
run 0 list && {
  expect_in "$tmp/out" "REFERENCE" "list"
  expect_in "$tmp/out" "ORT_CPU_NO_OPT" "list"
}
run 0 list --json && {
  checks=$((checks + 1))
  "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
names = [c["name"] for c in d["conversions"]]
assert names[:5] == ["REFERENCE", "ORT_CPU", "ORT_CPU_NO_OPT", "ORT_CPU_BASIC",
                     "ORT_CPU_EXTENDED"], names
for c in d["conversions"]:
    for k in ("id", "name", "runtime", "device", "precision", "default",
              "available", "reason"):
        assert k in c, k
    assert c["available"] or c["reason"], c
' "$tmp/out" || fail "list --json: bad JSON"
}
run 0 list --runtimes && expect_in "$tmp/out" "reference" "list --runtimes"
run 0 list --runtimes --json && {
  checks=$((checks + 1))
  "$python" -c 'import json,sys; assert json.load(open(sys.argv[1]))["runtimes"]' \
    "$tmp/out" || fail "list --runtimes --json: bad JSON"
}
usage_error_line "unknown option '--bogus'" list --bogus

# --- a benchmark: table on stdout, JSON file, nothing extra on stderr ---
if run 0 bench "$model" -c REFERENCE "${fast[@]}" --json "$tmp/r.json"; then
  expect_in "$tmp/out" "REFERENCE" "bench table"
  expect_in "$tmp/out" "median" "bench table"
  check_json "$tmp/r.json" "REFERENCE=ok"
  checks=$((checks + 1))
  # Not a TTY: no progress line and no colour codes.
  if grep -q $'\033' "$tmp/out" "$tmp/err"; then
    fail "bench: escape codes written when not a TTY"
  fi
  [ -s "$tmp/err" ] && { fail "bench: unexpected stderr"; show "$tmp/err"; }
fi

# Names are case-insensitive and trimmed; the baseline may be an id.
run 0 bench "$model" -c ' reference ' --baseline 1 "${fast[@]}" &&
  expect_in "$tmp/out" "REFERENCE" "bench -c ' reference '"

# --- usage errors: exit 2, one line naming the culprit ---
usage_error_line "did you mean ORT_CPU" bench "$model" -c REFERENCE,ORT_CUP
usage_error_line "unknown conversion id 99" bench "$model" -c 99
usage_error_line "REFERENCE is listed twice" bench "$model" -c REFERENCE,1
usage_error_line "entry 2 is empty" bench "$model" -c REFERENCE,,2
usage_error_line "--baseline ORT_CPU: not among the conversions run" \
  bench "$model" -c REFERENCE --baseline ORT_CPU
usage_error_line "--threads '0'" bench "$model" --threads 0
usage_error_line "--timeout '-1'" bench "$model" --timeout -1
usage_error_line "--device 'gpu'" bench "$model" --device gpu
usage_error_line "--log-level 'loud'" bench "$model" --log-level loud
usage_error_line "--shape 'input=1,x'" bench "$model" --shape input=1,x
usage_error_line "--input-range" bench "$model" --input-range input=5:1
usage_error_line "unknown option '--bogus'" bench "$model" --bogus
usage_error_line "missing MODEL" bench
usage_error_line "only apply to generated inputs" \
  bench "$model" --inputs "$tmp" --shape input=1,784
usage_error_line "no input 'nope'" bench "$model" -c REFERENCE "${fast[@]}" \
  --shape nope=1,2

# --- config files ---
printf '{\n  "batchsize": 2\n}\n' >"$tmp/bad.json"
usage_error_line "unknown key 'batchsize' (did you mean batch_size?)" \
  bench "$model" --config "$tmp/bad.json"
printf '{"threads": "4"}' >"$tmp/bad2.json"
usage_error_line "key 'threads' must be an integer, got string" \
  bench "$model" --config "$tmp/bad2.json"
printf '{"threads": 1,}' >"$tmp/bad3.json"
usage_error_line "bad3.json:1:15: trailing comma" \
  bench "$model" --config "$tmp/bad3.json"
usage_error_line "missing.json" bench "$model" --config "$tmp/missing.json"
# A good file; flags after or before it override it (-c here).
cat >"$tmp/good.json" <<'EOF'
{"conversions": ["ORT_CPU"], "min_time": 0.05, "warmup": 1,
 "warmup_time": 0, "min_iterations": 3, "seed": 3,
 "shapes": {"input": [2, 784]}}
EOF
if run 0 bench "$model" -c REFERENCE --config "$tmp/good.json" \
  --json "$tmp/c.json"; then
  check_json "$tmp/c.json" "REFERENCE=ok"
  checks=$((checks + 1))
  "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["config"]["seed"] == 3, d["config"]
assert d["model"]["inputs"][0]["shape"] == [2, 784], d["model"]
' "$tmp/c.json" || fail "config file settings not applied"
fi

# --- failures: exit 1, the other conversions' results kept ---
# A tiny timeout kills every worker: each is recorded as a timeout.
if run 1 bench "$model" -c REFERENCE "${fast[@]}" --timeout 0.001 \
  --json "$tmp/t.json"; then
  expect_in "$tmp/out" "timeout" "bench --timeout table"
  check_json "$tmp/t.json" "REFERENCE=timeout"
fi

# A conversion that hangs: ONNX Runtime "loaded" from a FIFO blocks in
# dlopen() inside its worker. It must time out while REFERENCE completes,
# and the JSON file must hold REFERENCE's result while ORT_CPU still hangs.
mkfifo "$tmp/hang.so"
checks=$((checks + 1))
env -u ONNXRUNTIME_ROOT MODELBENCH_ORT_LIB="$tmp/hang.so" \
  "$cli" bench "$model" -c REFERENCE,ORT_CPU "${fast[@]}" --timeout 4 \
  --json "$tmp/h.json" >"$tmp/hout" 2>"$tmp/herr" &
bg_pid=$!
# Polled for as long as bench runs, not a fixed count: REFERENCE's run takes
# about 1 s here and several where the machine is slow or loaded; ORT_CPU
# then hangs its 4 s, the window where the JSON holds REFERENCE alone.
partial=no
started=$SECONDS
while kill -0 "$bg_pid" 2>/dev/null; do
  sleep 0.1
  if [ -s "$tmp/h.json" ] && "$python" -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert [x["status"] for x in r] == ["ok"]
' "$tmp/h.json" 2>/dev/null; then
    partial=yes
    break
  fi
done
wait "$bg_pid"
rc=$?
bg_pid=
[ "$partial" = yes ] ||
  fail "no partial JSON with REFERENCE while ORT_CPU hung (bench ran $((SECONDS - started)) s)"
if [ "$rc" -ne 1 ]; then
  fail "hanging conversion: exit $rc, expected 1"
  show "$tmp/herr" "$tmp/hout"
else
  check_json "$tmp/h.json" "REFERENCE=ok,ORT_CPU=timeout"
  expect_in "$tmp/hout" "timed out after 4 s" "hanging conversion table"
fi

# Unavailable conversions: a failure when asked for by name, not when they
# are merely part of the default set. A file that is not a library makes
# ONNX Runtime unavailable deterministically.
echo "not a library" >"$tmp/notalib.so"
export MODELBENCH_ORT_LIB="$tmp/notalib.so"
saved_root=${ONNXRUNTIME_ROOT-}
unset ONNXRUNTIME_ROOT
if run 1 bench "$model" -c REFERENCE,ORT_CPU "${fast[@]}" \
  --json "$tmp/u.json"; then
  check_json "$tmp/u.json" "REFERENCE=ok,ORT_CPU=unavailable"
  expect_in "$tmp/out" "unavailable" "unavailable conversion table"
fi
if run 0 bench "$model" "${fast[@]}" --json "$tmp/d.json"; then
  check_json "$tmp/d.json" \
    "REFERENCE=ok,ORT_CPU=unavailable,ORT_CPU_NO_OPT=unavailable"
fi
run 0 list && expect_in "$tmp/out" "notalib.so" "list shows why ORT is missing"
unset MODELBENCH_ORT_LIB
[ -n "$saved_root" ] && export ONNXRUNTIME_ROOT=$saved_root

# --timeout NAME=S limits one conversion: it times out, the others finish.
# (0.001 s is too short even to probe a runtime, so this holds with or
# without ONNX Runtime installed.)
if run 1 bench "$model" -c REFERENCE,ORT_CPU "${fast[@]}" \
  --timeout ORT_CPU=0.001 --json "$tmp/n.json"; then
  check_json "$tmp/n.json" "REFERENCE=ok,ORT_CPU=timeout"
fi
usage_error_line "--timeout ORT_CPU_BASIC: not among the conversions run" \
  bench "$model" -c REFERENCE --timeout ORT_CPU_BASIC=1
usage_error_line "unknown conversion 'ORT_CUP'" \
  bench "$model" -c REFERENCE --timeout ORT_CUP=1

# --traceback shows a failed conversion's log tail; the run still exits 1.
run 1 bench "$model" -c REFERENCE "${fast[@]}" --timeout 0.001 --traceback

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
