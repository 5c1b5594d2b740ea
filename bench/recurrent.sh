#!/usr/bin/env bash
# Recurrent layers (issue 13): the 2-layer bidirectional LSTM and GRU of
# tools/export_zoo.py (40 features, hidden 128, batch 1, 50 steps, a linear
# head) on the reference interpreter, ONNX Runtime and oneDNN's recurrent
# primitives (fp32, bf16 and int8), at 1 and 2 threads. Each conversion is timed
# in ROUNDS alternated rounds; the table gives the median over rounds of
# its median latency and its speed-up over ORT_CPU (same round), with the
# accuracy against the reference interpreter and the precision it ran at
# ("fp32 (3% of FLOPs)" where part of an int8 model ran in fp32).
#   bench/recurrent.sh BUILD_DIR
# MB_BENCH_ROUNDS (default 3), MB_BENCH_THREADS (default 1,2); needs
# /usr/bin/python3 with torch and onnx to export the models.
set -euo pipefail

build=${1:-build}
bin=$build/bin
models=$build/recurrent_models
rounds=${MB_BENCH_ROUNDS:-3}
convs=REFERENCE,ORT_CPU,ONEDNN,BF16+ONEDNN,INT8_STATIC+ONEDNN
names=(lstm_bidirectional_2layer gru_bidirectional_2layer)

exporter=$(dirname "$0")/../tools/export_zoo.py
for name in "${names[@]}"; do
  if [ ! -f "$models/$name/model.onnx" ]; then
    if ! /usr/bin/python3 -c "import torch, torchvision, onnx" 2>/dev/null; then
      echo "recurrent benchmark skipped: /usr/bin/python3 lacks torch/onnx"
      exit 0
    fi
    mkdir -p "$models"
    /usr/bin/python3 "$exporter" "$models" "$name" >>"$models/export.log" 2>&1
  fi
done

echo "Recurrent layers: 2-layer bidirectional, hidden 128, batch 1, 50 steps; median of $rounds alternated rounds"
IFS=, read -r -a thread_counts <<<"${MB_BENCH_THREADS:-1,2}"
for name in "${names[@]}"; do
  for threads in "${thread_counts[@]}"; do
    jsons=()
    for r in $(seq 1 "$rounds"); do
      out=$models/$name.t$threads.round$r.json
      "$bin/modelbench" bench "$models/$name/model.onnx" -c "$convs" \
        --threads "$threads" --baseline ORT_CPU --no-record \
        --json "$out" >/dev/null 2>&1 || true
      jsons+=("$out")
    done
    echo
    echo "== $name, $threads thread(s)"
    /usr/bin/python3 - "${jsons[@]}" <<'PY'
import json, statistics, sys
runs = {}
for path in sys.argv[1:]:
    try:
        report = json.load(open(path))
    except (OSError, ValueError):
        continue
    for r in report["results"]:
        runs.setdefault(r["conversion"], []).append(r)
print("%-19s %-6s %11s %11s %12s %10s  %s" % (
    "conversion", "status", "median ms", "vs ORT_CPU", "max abs err", "cosine",
    "precision"))
for name, rs in runs.items():
    ok = [r for r in rs if r["status"] == "ok"]
    if not ok:
        print("%-19s %-6s %s" % (name, rs[0]["status"], (rs[0]["error"] or "")[:80]))
        continue
    median = statistics.median(r["latency_ms"]["median"] for r in ok)
    speedup = statistics.median(r["speedup_vs_baseline"] or 0 for r in ok)
    acc = ok[0]["accuracy"] or {}
    print("%-19s %-6s %11.3f %10.2fx %12.2g %10.6f  %s" % (
        name, "ok", median, speedup, acc.get("max_abs_err") or 0.0,
        acc.get("cosine") or 0.0, ok[0].get("precision_label") or ""))
PY
  done
done
