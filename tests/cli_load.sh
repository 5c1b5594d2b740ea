#!/usr/bin/env bash
# `modelbench load` and `--sweep`/`--dim` from the command line: a server
# run's figures in JSON and CSV under bench's names, an INVALID run with its
# reason, find-peak's search in the report, a sweep's one report per point,
# and the usage errors. Timing-independent: the checks look at what the run
# says and how, not how fast it was (test_load.c checks the queueing).
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

mlp=$models/mlp.onnx
seq=$models/seq_encoder.onnx
short=(--min-duration 0.3 --min-queries 20 --warmup 1 --warmup-time 0)

# 1. Server: Poisson arrivals at --qps, latency from arrival, the SLO.
if run 0 load "$mlp" -c REFERENCE --scenario server --qps 40 "${short[@]}" \
  --slo p99=500ms --no-record --json "$tmp/server.json" \
  --csv "$tmp/server.csv" --markdown "$tmp/server.md"; then
  expect_in "$tmp/out" "load:    server, concurrency 1, 40 QPS" "settings line"
  expect_in "$tmp/out" "queue mean/max" "load table"
  expect_in "$tmp/out" "(ideal queue " "ideal queue beside the p99"
  expect_in "$tmp/out" "; generator lateness p99 " "generator lateness"
  expect_in "$tmp/out" " us; hand-off p99 " "hand-off delay"
  expect_in "$tmp/out" "Within the SLO p99 <= 500 ms" "SLO recommendation"
  py "server JSON" '
import json, sys
d = json.load(open(sys.argv[1]))
cfg = d["config"]
assert cfg["scenario"] == "server" and cfg["qps"] == 40, cfg
assert cfg["concurrency"] == 1 and cfg["find_peak"] is False, cfg
assert d["sweep_point"] is None, d["sweep_point"]
assert cfg["slo"] == {"p99": 500}, cfg
(r,) = d["results"]
assert r["status"] == "ok", r
l = r["load"]
assert l["scenario"] == "server" and l["concurrency"] == 1, l
assert l["target_qps"] == 40 and l["achieved_qps"] > 0, l
assert l["queries"] >= 20 and l["samples_per_query"] == 1, l
assert isinstance(l["valid"], bool), l
assert (l["invalid_reason"] is None) == l["valid"], l
assert l["queue_depth"]["max"] >= 0 and l["queue_depth"]["mean"] >= 0, l
assert set(l["slo"]) == {"latency_ms", "met", "over_share"}, l["slo"]
assert 0 <= l["slo"]["over_share"] <= 1, l["slo"]
assert l["find_peak"] is None, l
lat = r["latency_ms"]
# Latency counts from the scheduled arrival: never below the service time.
assert lat["p99"] >= lat["median"] >= l["service_ms"]["min"] > 0, (lat, l)
assert r["iterations"] == l["queries"] - l["unserved"], r
# What the harness added, apart from the latency; the ideal queue on the
# arrivals and service times of the run (one session: never slower than the
# run, never faster than a service).
for key in ("generator_lateness_us", "handoff_us"):
    d = l[key]
    assert set(d) == {"p50", "p99", "max"}, (key, d)
    assert 0 <= d["p50"] <= d["p99"] <= d["max"], (key, d)
assert l["service_ms"]["min"] <= l["ideal_p99_ms"] <= lat["max"], l
assert l["ideal_p99_ms"] <= lat["p99"] * (1 + 1e-9), (l, lat)
assert isinstance(l["harness_excess"], bool), l
assert l["harness_excess"] == any("ideal queue" in w for w in r["warnings"]), r
assert l["idle_sleeps"] >= 0 and l["spin_fallbacks"] >= 0, l
# Spinning throughout exactly when a CPU is spare for the generator (one
# session of one thread here); else a learned margin within its bounds.
import os
assert l["spin_always"] == (2 <= len(os.sched_getaffinity(0))), l
if l["spin_always"]:
    assert l["spin_margin_us"] is None and l["idle_sleeps"] == 0, l
else:
    assert 50 <= l["spin_margin_us"] <= 250, l
assert l["steal_ms"] is None or l["steal_ms"] >= 0, l
' "$tmp/server.json"
  py "server CSV" '
import csv, sys
(row,) = list(csv.DictReader(open(sys.argv[1])))
assert row["scenario"] == "server" and row["concurrency"] == "1", row
assert row["target_qps"] == "40" and float(row["achieved_qps"]) > 0, row
assert row["load_valid"] in ("yes", "no"), row
assert row["slo_met"] in ("yes", "no") and row["slo_latency_ms"], row
assert row["peak_qps"] == "n/a: no find-peak", row
' "$tmp/server.csv"
  expect_in "$tmp/server.md" "**Load** (server" "Markdown load line"
fi

# 2. A run cut by --max-time before --min-duration: INVALID, with why.
if run 0 load "$mlp" -c REFERENCE --scenario server --qps 50 --min-duration 5 \
  --min-queries 10 --max-time 0.3 --no-record --json "$tmp/invalid.json"; then
  expect_in "$tmp/out" "INVALID" "the table says INVALID"
  py "INVALID JSON" '
import json, sys
l = json.load(open(sys.argv[1]))["results"][0]["load"]
assert l["valid"] is False, l
assert "below --min-duration 5 s" in l["invalid_reason"], l
' "$tmp/invalid.json"
fi

# 3. Offline with two sessions and single-stream: samples per second, p90.
if run 0 load "$mlp" -c REFERENCE --scenario offline --concurrency 2 \
  --batch-size 2 "${short[@]}" --no-record --json "$tmp/offline.json"; then
  py "offline JSON" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
l = r["load"]
assert l["scenario"] == "offline" and l["concurrency"] == 2, l
assert l["samples_per_query"] == 2 and r["batch_size"] == 2, (l, r)
assert l["target_qps"] is None and l["queue_depth"] is None, l
assert l["generator_lateness_us"] is None and l["handoff_us"] is None, l
assert l["ideal_p99_ms"] is None and l["harness_excess"] is None, l
assert l["spin_always"] is None and l["spin_margin_us"] is None, l
assert l["steal_ms"] is None, l
assert r["throughput_sps"] > 0, r
' "$tmp/offline.json"
fi
if run 0 load "$mlp" -c REFERENCE --scenario single-stream "${short[@]}" \
  --no-record --json "$tmp/single.json"; then
  py "single-stream JSON" '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["load"]["scenario"] == "single-stream", r["load"]
assert r["load"]["concurrency"] == 1 and r["latency_ms"]["p90"] > 0, r
' "$tmp/single.json"
fi

# 4. Find-peak: the search's runs and the QPS it settled on.
if run 0 load "$mlp" -c REFERENCE --scenario server --find-peak \
  --slo p99=200ms --qps 20 --min-duration 0.2 --min-queries 10 \
  --warmup 1 --warmup-time 0 --no-record --json "$tmp/peak.json" \
  --html "$tmp/peak.html"; then
  py "find-peak JSON" '
import json, sys
l = json.load(open(sys.argv[1]))["results"][0]["load"]
fp = l["find_peak"]
assert fp and len(fp["trials"]) >= 2, l
for t in fp["trials"]:
    assert t["target_qps"] > 0 and isinstance(t["slo_met"], bool), t
ok = [t["target_qps"] for t in fp["trials"] if t["valid"] and t["slo_met"]]
if ok:
    # The peak is the highest QPS a valid run met the SLO at.
    assert fp["peak_qps"] == max(ok), (fp["peak_qps"], ok)
else:
    assert fp["peak_qps"] is None, fp
' "$tmp/peak.json"
  expect_in "$tmp/peak.html" 'id="sweep-qps-latency-0"' "QPS chart"
  expect_in "$tmp/peak.html" 'class="slo"' "the SLO line on the QPS chart"
fi

# 5. Sweeps: one report per point, the points named, builds per point.
if run 0 bench "$mlp" -c REFERENCE --sweep batch=1,2 --sweep threads=1,2 \
  --warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 \
  --json "$tmp/sweep.json" --csv "$tmp/sweep.csv" --html "$tmp/sweep.html" \
  --label suite=sweep; then
  expect_in "$tmp/out" "[point 4/4] batch=2 threads=2" "point progress"
  py "sweep JSON" '
import json, sys
d = json.load(open(sys.argv[1]))
pts = [r["sweep_point"] for r in d["reports"]]
assert pts == ["batch=1 threads=1", "batch=1 threads=2", "batch=2 threads=1",
               "batch=2 threads=2"], pts
for r in d["reports"]:
    b = int(r["sweep_point"].split()[0].split("=")[1])
    assert r["model"]["inputs"][0]["shape"][0] == b, r["model"]["inputs"]
    assert r["results"][0]["batch_size"] == b, r["results"][0]
' "$tmp/sweep.json"
  py "sweep CSV" '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["sweep_point"] for r in rows][-1] == "batch=2 threads=2", rows
assert len(rows) == 4, rows
' "$tmp/sweep.csv"
  expect_in "$tmp/sweep.html" 'id="sweep-batch-latency-0"' "batch chart"
  expect_in "$tmp/sweep.html" 'id="sweep-threads-throughput-0"' \
    "threads chart"
  # Each point is a run of its own in the results database, labelled.
  if run 0 history "$mlp" --label suite=sweep --json; then
    py "sweep points in history" '
import json, sys
d = json.load(open(sys.argv[1]))
points = sorted(r["labels"].get("sweep", "") for r in d["runs"])
assert points == ["batch=1 threads=1", "batch=1 threads=2", "batch=2 threads=1",
                  "batch=2 threads=2"], points
assert all(r["labels"]["suite"] == "sweep" for r in d["runs"]), d["runs"]
' "$tmp/out"
  fi
fi

# 6. --dim and a sweep over a symbolic dimension.
usage_error "pass --dim seq=N" bench "$seq" -c REFERENCE --no-record
usage_error "symbolic dimensions: 'batch', 'seq'" bench "$seq" -c REFERENCE \
  --dim sequence=4 --no-record
if run 0 bench "$seq" -c REFERENCE --sweep dim:seq=4,16 --warmup 1 \
  --warmup-time 0 --min-iterations 3 --min-time 0 --no-record \
  --json "$tmp/dim.json" --html "$tmp/dim.html"; then
  py "dim sweep JSON" '
import json, sys
d = json.load(open(sys.argv[1]))
shapes = [[i["shape"] for i in r["model"]["inputs"]] for r in d["reports"]]
assert shapes == [[[1, 4, 64], [1, 4]], [[1, 16, 64], [1, 16]]], shapes
' "$tmp/dim.json"
  expect_in "$tmp/dim.html" 'id="sweep-dim-seq-latency-0"' "dimension chart"
fi

# 7. Usage errors: exit 2 with a message naming the option.
usage_error "--scenario 'bogus': expected single-stream, server or offline" \
  load "$mlp" --scenario bogus
usage_error "--scenario server needs --qps" load "$mlp" --scenario server
usage_error "--find-peak searches the highest QPS within an SLO" \
  load "$mlp" --scenario server --qps 10 --find-peak
usage_error "expected pNN=LATENCY" load "$mlp" --scenario server --qps 10 \
  --slo p99=fast
usage_error "--concurrency '0'" load "$mlp" --scenario offline --concurrency 0
usage_error "--qps '-3'" load "$mlp" --scenario server --qps -3
usage_error "--sweep bogus: unknown key" bench "$mlp" --sweep bogus=1,2
usage_error "'x' is not a positive integer" bench "$mlp" --sweep batch=1,x

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
