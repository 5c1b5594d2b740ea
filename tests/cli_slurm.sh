#!/usr/bin/env bash
# `bench --executor slurm` against a real Slurm: the test starts its own
# one-node cluster (scripts/local-slurm.sh: munged, slurmctld, slurmd with
# a generated slurm.conf in a temporary folder, free ports) and stops it on
# every exit path. Checks: a 3-model bench through Slurm gives the same
# statuses and result keys as the same bench run locally; --split
# conversions merges one model's tasks into one report; a task killed with
# scancel is reported with Slurm's state, and rerun with --retries 1;
# --no-wait then `jobs status` and `jobs collect`; a Slurm that is not
# running gives a clear error naming what was tried; the Python front's
# benchmark_model, `modelbench script` (models selected by hash) and a
# script's manifest through `python3 -m modelbench bench` run on Slurm.
#
# Needs Debian's slurm-wlm and munge. Without them the test is skipped,
# unless MB_WITH_SLURM=1 (set by `make test`, which installs them).
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_TEST_MODELS:?MB_TEST_MODELS must name the models folder}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"

cli=$MB_CLI
python=/usr/bin/python3
models=$MB_TEST_MODELS
script=$MB_SOURCE_DIR/scripts/local-slurm.sh

for tool in munged slurmctld slurmd sbatch squeue scancel; do
  if ! command -v $tool >/dev/null 2>&1; then
    if [ "${MB_WITH_SLURM:-0}" = 1 ]; then
      echo "FAIL: $tool not found but MB_WITH_SLURM=1: install slurm-wlm and" \
        "munge (MB_WITH_SLURM=1 scripts/install-deps.sh)" >&2
      exit 1
    fi
    echo "SKIP: $tool not found (apt install slurm-wlm munge, or run" \
      "'make test', which installs them)"
    exit 0
  fi
done

tmp=$(mktemp -d)
export MB_SLURM_DIR=$tmp/slurm
cleanup() {
  "$script" stop || echo "FAIL: scripts/local-slurm.sh stop failed" >&2
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=tests/shell_lib.sh
. "$MB_SOURCE_DIR/tests/shell_lib.sh"

if ! started=$("$script" start 2>"$tmp/start.err"); then
  # Where the daemons cannot run at all (a sandbox without sockets or
  # setuid) the test says why and skips, unless `make test` asked for it.
  if [ "${MB_WITH_SLURM:-0}" = 1 ]; then
    echo "FAIL: scripts/local-slurm.sh start" >&2
    cat "$tmp/start.err" >&2
    exit 1
  fi
  echo "SKIP: the local Slurm cluster did not start:"
  tail -n 20 "$tmp/start.err"
  exit 0
fi
eval "$started"
: "${SLURM_CONF:?local-slurm.sh start did not export SLURM_CONF}"
# The run folders and build cache live where every "node" sees them.
export MODELBENCH_CACHE_DIR=$tmp/cache
quick=(--tier 1 --warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0)
three=("$models/mlp.onnx" "$models/small_cnn.onnx" "$models/resnet_blocks.onnx")

# Waits (at most $2 seconds) until `squeue` shows task $1 (JOB_N) running.
wait_running() {
  local i
  for ((i = 0; i < $2 * 5; i++)); do
    [ "$(squeue -h -r -j "${1%_*}" -t all -o '%i %T' | awk -v t="$1" '$1 == t {print $2}')" = RUNNING ] && return 0
    sleep 0.2
  done
  return 1
}

# The run folders there are now, one per line: new_job waits for another.
run_list() {
  ls "$MODELBENCH_CACHE_DIR/runs" 2>/dev/null
}

# The first Slurm job of the run started after `run_list` printed $1: waits
# (at most 90 s; a loaded machine may take a while to submit) until that
# run's run.json names its job, and prints it. The new run is the one not
# in the list: run ids sort by time only to the second.
new_job() {
  "$python" - "$MODELBENCH_CACHE_DIR/runs" "$1" <<'EOF'
import json, os, sys, time
folder, before = sys.argv[1], set(sys.argv[2].split())
for _ in range(450):
    runs = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    for run in sorted(runs - before):
        try:
            jobs = json.load(open(os.path.join(folder, run, "run.json")))["jobs"]
        except (OSError, ValueError, KeyError):
            jobs = []
        if jobs:
            print(jobs[0])
            sys.exit(0)
    time.sleep(0.2)
sys.exit("no new run with a Slurm job within 90 s")
EOF
}

# ---- 1. three models locally and through Slurm: same statuses and keys ----
run 0 bench "${three[@]}" "${quick[@]}" --no-record --json "$tmp/local.json"
run 0 bench "${three[@]}" "${quick[@]}" --executor slurm \
  --json "$tmp/slurm.json" --csv "$tmp/slurm.csv" --html "$tmp/slurm.html" \
  --label nightly=1
expect_in "$tmp/err" "3 tasks on slurm" "bench --executor slurm"
expect_in "$tmp/out" "3 models benchmarked, 0 failed" "bench --executor slurm"
py "local and Slurm reports agree" '
import json, sys
local = json.load(open(sys.argv[1]))["reports"]
slurm = json.load(open(sys.argv[2]))["reports"]
assert [r["model"]["path"] for r in local] == [r["model"]["path"] for r in slurm], "models differ"
for a, b in zip(local, slurm):
    sa = [(r["conversion"], r["status"]) for r in a["results"]]
    sb = [(r["conversion"], r["status"]) for r in b["results"]]
    assert sa == sb, (sa, sb)
    assert all(s == "ok" for _, s in sb), sb
    for ra, rb in zip(a["results"], b["results"]):
        assert set(ra) == set(rb), set(ra) ^ set(rb)
        assert rb["machine"]["host"], rb["machine"]
        assert len(rb["samples_ms"]) >= 3
    assert a["model"]["sha256"] == b["model"]["sha256"]
' "$tmp/local.json" "$tmp/slurm.json"
expect_in "$tmp/slurm.csv" "ORT_CPU" "the merged CSV"
expect_in "$tmp/slurm.html" "resnet_blocks" "the merged HTML"
run 0 history --label executor=slurm
py "three runs recorded with the executor's labels" '
import sys
rows = [l for l in open(sys.argv[1]) if "nightly=1" in l and "executor=slurm" in l]
assert len(rows) == 3, open(sys.argv[1]).read()
' "$tmp/out"

# ---- 2. --split conversions: one model, one task per conversion ----
run 0 bench "$models/mlp.onnx" "${quick[@]}" --executor slurm \
  --split conversions --json "$tmp/split.json" --no-record
expect_in "$tmp/err" "2 tasks on slurm" "--split conversions"
py "a split model comes back as one report in its planned order" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["conversion"] for x in r["results"]] == ["REFERENCE", "ORT_CPU"], r["results"]
assert all(x["status"] == "ok" for x in r["results"])
assert r["baseline"] == "REFERENCE" and r["results"][0]["speedup_vs_baseline"] == 1
' "$tmp/split.json"

# ---- 3. scancel: reported with Slurm's state; rerun with --retries 1 ----
slow=(--tier 1 --warmup 0 --warmup-time 0 --min-iterations 3 --min-time 4)
before=$(run_list)
"$cli" bench "$models/mlp.onnx" "$models/small_cnn.onnx" "${slow[@]}" \
  --executor slurm --no-record --json "$tmp/cancel.json" \
  >"$tmp/cancel.out" 2>"$tmp/cancel.err" &
pid=$!
job=$(new_job "$before")
checks=$((checks + 1))
if wait_running "${job}_0" 60; then
  scancel "${job}_0"
else
  fail "task ${job}_0 never ran"
fi
wait $pid
rc=$?
checks=$((checks + 1))
[ $rc -eq 1 ] || fail "a cancelled task: exit $rc, expected 1"
expect_in "$tmp/cancel.err" "CANCELLED" "scancel"
py "the cancelled task is recorded with its state, the other kept" '
import json, sys
reports = json.load(open(sys.argv[1]))["reports"]
cancelled = reports[0]["results"]
assert all(r["status"] == "error" and "CANCELLED" in r["error"] for r in cancelled), cancelled
assert all(r["status"] == "ok" for r in reports[1]["results"]), reports[1]["results"]
' "$tmp/cancel.json"

before=$(run_list)
"$cli" bench "$models/mlp.onnx" "${slow[@]}" --executor slurm --retries 1 \
  --no-record --json "$tmp/retry.json" >"$tmp/retry.out" 2>"$tmp/retry.err" &
pid=$!
job=$(new_job "$before")
if wait_running "${job}_0" 60; then
  scancel "${job}_0"
else
  fail "task ${job}_0 of the --retries run never ran"
  squeue -h -r -t all >&2 || true
fi
wait $pid
rc=$?
checks=$((checks + 1))
[ $rc -eq 0 ] || { fail "a retried task: exit $rc, expected 0"; show "$tmp/retry.err"; }
expect_in "$tmp/retry.err" "resubmitting (attempt 2 of 2)" "--retries 1"
py "the rerun task ran to its end" '
import json, sys
r = json.load(open(sys.argv[1]))
assert all(x["status"] == "ok" for x in r["results"]), r["results"]
' "$tmp/retry.json"

# ---- 4. --no-wait, then jobs status and jobs collect ----
run 0 bench "$models/mlp.onnx" "${quick[@]}" --executor slurm --no-wait \
  --json "$tmp/later.json"
id=$(head -n 1 "$tmp/out")
expect_in "$tmp/err" "modelbench jobs collect $id" "--no-wait"
run 0 jobs status "$id"
expect_in "$tmp/out" "run $id (slurm)" "jobs status"
run 0 jobs collect "$id"
expect_in "$tmp/out" "ORT_CPU" "jobs collect"
py "jobs collect wrote the report bench was asked for" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
' "$tmp/later.json"
run 0 jobs collect "$MODELBENCH_CACHE_DIR/runs/$id"
expect_in "$tmp/err" "collected before" "a second jobs collect"
run 0 jobs status "$id"
expect_in "$tmp/out" "(collected)" "jobs status after collect"
run 1 jobs status nosuchrun
expect_in "$tmp/err" "no run 'nosuchrun'" "jobs status of an unknown run"

# ---- 5. usage errors and a Slurm that is not running ----
usage_error "--no-wait needs --executor" bench "$models/mlp.onnx" --no-wait
usage_error "expected slurm or ssh" bench "$models/mlp.onnx" --executor pbs
usage_error "are Slurm's" bench "$models/mlp.onnx" --executor ssh:h --mem 1G
sed "s/^SlurmctldPort=.*/SlurmctldPort=9/" "$SLURM_CONF" >"$tmp/down.conf"
SLURM_CONF=$tmp/down.conf run 1 bench "$models/mlp.onnx" "${quick[@]}" \
  --executor slurm
expect_in "$tmp/err" "tried 'scontrol ping' with SLURM_CONF=$tmp/down.conf" \
  "a Slurm that is not running"

# ---- 6. the Python front: benchmark_model(..., executor="slurm") ----
# Debian's python cannot load an ASan library; without torch the section is
# skipped unless MB_WITH_TORCH=1 (make test), where that is a failure.
if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "skipped the Python front's section: sanitizer build"
elif ! "$python" -c 'import torch' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
    fail "MB_WITH_TORCH=1 but $python cannot import torch"
  else
    echo "skipped the Python front's section: $python lacks torch"
  fi
else
  checks=$((checks + 1))
  if ! PYTHONPATH=$MB_SOURCE_DIR/python \
    MODELBENCH_LIBRARY=$MB_BUILD_DIR/lib/libmodelbench.so \
    "$python" - "$tmp/python.json" >"$tmp/python.out" 2>&1 <<'EOF'
import logging, sys
import torch
import modelbench

logging.basicConfig(level=logging.INFO)  # the engine's lines, "1 task on slurm"

model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
config = {"warmup": 0, "warmup_time": 0, "min_iterations": 3, "min_time": 0,
          "n_samples": 2, "record": False, "json": sys.argv[1]}
results = modelbench.benchmark_model(model, config, conversions=["EAGER", "ORT_CPU"],
                                     data=torch.randn(8), executor="slurm",
                                     executor_options={"retries": 0})
assert [results[c]["bench_status"] for c in ("EAGER", "ORT_CPU")] == ["ok", "ok"], results
assert results["EAGER"]["machine"]["host"], results["EAGER"]
for bad, kind in (({"partiton": "x"}, ValueError), ({"sbatch_args": "--x"}, TypeError)):
    try:
        modelbench.benchmark_model(model, config, conversions=["EAGER"],
                                   data=torch.randn(8), executor="slurm",
                                   executor_options=bad)
    except kind as e:
        print("refused:", e)
    else:
        raise AssertionError(f"{bad} was accepted")
print("python front through slurm: ok")
EOF
  then
    fail "benchmark_model(..., executor=\"slurm\")"
    show "$tmp/python.out"
  fi
  expect_in "$tmp/python.out" "did you mean 'partition'" "a misspelt executor option"
  expect_in "$tmp/python.out" "1 task on slurm" "benchmark_model through Slurm"

  # ---- 7. modelbench script on Slurm: two models of a script by hash ----
  mkdir -p "$tmp/scripts"
  cat >"$tmp/scripts/demo.py" <<'EOF'
# labels: task::slurm-demo
import torch
from torch import nn

net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten())
head = nn.Linear(6, 2)
other = nn.Linear(5, 5)
net(torch.randn(1, 3, 8, 8))
head(torch.randn(2, 6))
other(torch.randn(1, 5))
EOF
  squick=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0)
  run 0 script "$tmp/scripts" --analyze-only --json "$tmp/found.json"
  hashes=$("$python" -c '
import json, sys
models = json.load(open(sys.argv[1]))["scripts"][0]["models"]
print(",".join(m["sha256"][:10] for m in models if m["name"] in ("Sequential", "Linear")))
' "$tmp/found.json")
  # ::H0,H1: the Sequential and the first Linear, not the other Linear.
  run 0 script "$tmp/scripts/demo.py::${hashes%,*}" -c EAGER,ORT_CPU "${squick[@]}" --executor slurm --retries 0 \
    --json "$tmp/script.json" --keep-run-dir
  expect_in "$tmp/err" "2 tasks on slurm" "modelbench script --executor slurm"
  py "the script's two selected models ran on Slurm, with their labels" '
import json, sys
reports = json.load(open(sys.argv[1]))["reports"]
assert [r["model"]["name"] for r in reports] == ["Sequential", "Linear"], reports
for r in reports:
    assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
    assert all(x["machine"]["host"] for x in r["results"]), r["results"]
    assert r["labels"]["task"] == "slurm-demo", r["labels"]
' "$tmp/script.json"
  # The run folder is in the cache folder, which the nodes share.
  kept=$(sed -n 's/^run folder kept: //p' "$tmp/out")
  case "$kept" in
  "$MODELBENCH_CACHE_DIR"/script-runs/*) ;;
  *) fail "the script's run folder is not in the cache folder: '$kept'" ;;
  esac
  # A kept manifest through the Python front's CLI: the tasks run
  # python3 -m modelbench, not a bare 'bench'; its pytorch form is a
  # pickle, which the tasks load only because --trust-code reaches them.
  manifest=$(ls "$kept"/*/Sequential-*/manifest.json | head -n 1)
  checks=$((checks + 1))
  if ! PYTHONPATH=$MB_SOURCE_DIR/python \
    MODELBENCH_LIBRARY=$MB_BUILD_DIR/lib/libmodelbench.so \
    "$python" -m modelbench bench "$manifest" -c EAGER "${squick[@]}" \
    --executor slurm --retries 0 --no-record --json "$tmp/manifest.json" \
    --trust-code \
    >"$tmp/manifest.out" 2>&1; then
    fail "python3 -m modelbench bench MANIFEST --executor slurm"
    show "$tmp/manifest.out"
  fi
  py "the manifest's EAGER ran on Slurm" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["status"] for x in r["results"]] == ["ok"], r["results"]
' "$tmp/manifest.json"
  rm -rf "$kept"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
