#!/usr/bin/env bash
# Transformers on oneDNN against ONNX Runtime (issue 17): the models of
# tools/export_transformers.py (nn.TransformerEncoder at opset 17 and 13,
# nn.MultiheadAttention, a GPT block, BERT with an attention mask, and a
# BERT-base-shaped encoder), batch 1, sequence 128, 2 threads. Each model is
# benchmarked in ROUNDS alternated rounds (one `modelbench bench` per round
# runs the conversions one after another); the table gives per conversion
# the median over rounds of its median latency, the median over rounds of
# its speed-up over ORT_CPU (same round), its best sample over all rounds
# and the speed-up that gives, and the accuracy against the reference
# interpreter (max abs error, cosine). The load average is printed per
# model: on a shared machine the medians measure the load (oneDNN's OpenMP
# threads spin at barriers and stall when a core is taken), the best
# samples less so.
#   bench/transformers.sh BUILD_DIR [MODEL ...]
# MB_BENCH_ROUNDS (default 3), MB_BENCH_THREADS (default 2),
# MB_BENCH_CONVERSIONS (default ORT_CPU,ONEDNN,BF16+ONEDNN,INT8_STATIC+ORT_CPU,
# INT8_STATIC+ONEDNN); needs /usr/bin/python3 with torch and onnx.
set -euo pipefail

build=${1:-build}
shift || true
bin=$build/bin
models=$build/transformer_models
rounds=${MB_BENCH_ROUNDS:-3}
threads=${MB_BENCH_THREADS:-2}
convs=${MB_BENCH_CONVERSIONS:-ORT_CPU,ONEDNN,BF16+ONEDNN,INT8_STATIC+ORT_CPU,INT8_STATIC+ONEDNN}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(encoder_op17 encoder_op13 mha gpt_block bert_mask bert_base)

# The exporter runs from tools/ (it imports its neighbours), so both paths
# it is given are absolute.
exporter=$(cd "$(dirname "$0")/../tools" && pwd)/export_transformers.py
for name in "${names[@]}"; do
  if [ ! -f "$models/$name/model.onnx" ]; then
    if ! /usr/bin/python3 -c "import torch, onnx" 2>/dev/null; then
      echo "transformers benchmark skipped: /usr/bin/python3 lacks torch/onnx"
      exit 0
    fi
    mkdir -p "$models"
    models_abs=$(cd "$models" && pwd)
    (cd "$(dirname "$exporter")" && /usr/bin/python3 "$exporter" "$models_abs" "$name") \
      >>"$models/export.log" 2>&1
    if [ ! -f "$models/$name/model.onnx" ]; then
      echo "bench/transformers.sh: exporting $name failed; see $models/export.log" >&2
      exit 1
    fi
  fi
done

# The bf16 peak as oneDNN reaches it here: a 1024^3 bf16 matmul (a few ms,
# short enough for a quiet moment on a busy machine), its best sample.
peak=$models/peak_matmul1024.onnx
[ -f "$peak" ] || /usr/bin/python3 - "$peak" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
n = 1024
w = numpy_helper.from_array(
    (np.random.default_rng(0).standard_normal((n, n)) * 0.03).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "peak",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])], [w])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
peak_gflops=0
if "$bin/modelbench" bench "$peak" -c BF16+ONEDNN --threads "$threads" --no-record --min-time 5 \
    --json "$models/peak.json" >/dev/null 2>&1; then
  peak_gflops=$(/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; \
print('%.0f' % (2 * 1024**3 / r['latency_ms']['min'] / 1e6) if r['status'] == 'ok' else 0)" \
    "$models/peak.json")
fi
echo "bf16 peak (1024^3 MatMul, BF16+ONEDNN, $threads threads): $peak_gflops GFLOP/s"

echo "Transformers on oneDNN vs ORT_CPU: batch 1, sequence 128, $threads threads, median of $rounds alternated rounds"
for name in "${names[@]}"; do
  dir=$models/$name
  d=$(/usr/bin/python3 -c "import onnx,sys; m=onnx.load(sys.argv[1], load_external_data=False); \
print([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim][-1])" "$dir/model.onnx" 2>/dev/null || echo 256)
  shapes=(--shape "input=1,128,$d")
  analyze_shapes=("${shapes[@]}")
  # The attention mask with padding: the exported test inputs (analyze
  # takes shapes only).
  if [ "$name" = bert_mask ]; then
    shapes=(--inputs "$dir")
    analyze_shapes+=(--shape "attention_mask=1,128")
  fi
  # A model analyze cannot count gets no GFLOP/s column, not a silent end
  # of the script (set -e with pipefail).
  flops=$("$bin/modelbench" analyze "$dir/model.onnx" "${analyze_shapes[@]}" 2>/dev/null |
    sed -n 's/^FLOPs .*(\([0-9]*\)).*/\1/p' || true)
  jsons=()
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  for r in $(seq 1 "$rounds"); do
    out=$models/$name.round$r.json
    "$bin/modelbench" bench "$dir/model.onnx" -c "$convs" "${shapes[@]}" \
      --threads "$threads" --baseline ORT_CPU --no-record \
      --json "$out" >/dev/null 2>&1 || true
    jsons+=("$out")
  done
  echo
  echo "== $name (d_model $d; load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/python3 - "${flops:-0}" "$peak_gflops" "${jsons[@]}" <<'PY'
import json, statistics, sys
flops, peak = float(sys.argv[1]), float(sys.argv[2])
runs = {}
for path in sys.argv[3:]:
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        continue
    for r in results:
        runs.setdefault(r["conversion"], []).append(r)
rows = [("conversion", "median ms", "vs ORT_CPU", "best ms", "vs ORT_CPU (best)",
         "GFLOP/s (best)", "max abs err", "cosine", "status")]
best = {c: min((min(r["samples_ms"]) for r in rs if r["status"] == "ok" and r.get("samples_ms")),
               default=None) for c, rs in runs.items()}
for conv, rs in runs.items():
    ok = [r for r in rs if r["status"] == "ok"]
    med = statistics.median([r["latency_ms"]["median"] for r in ok]) if ok else None
    sp = [r["speedup_vs_baseline"] for r in ok if r.get("speedup_vs_baseline")]
    acc = [r["accuracy"] for r in ok if r.get("accuracy")]
    err = max((a["max_abs_err"] for a in acc), default=None)
    cos = min((a["cosine"] for a in acc), default=None)
    rate = "-"
    if best[conv] and flops:
        rate = "%.0f" % (flops / best[conv] / 1e6)
        if conv == "BF16+ONEDNN" and peak:
            rate += " (%.0f%% of peak)" % (100 * flops / best[conv] / 1e6 / peak)
    rows.append((conv, "-" if med is None else "%.2f" % med,
                 "%.2fx" % statistics.median(sp) if sp else "-",
                 "-" if best[conv] is None else "%.2f" % best[conv],
                 "%.2fx" % (best["ORT_CPU"] / best[conv])
                 if best[conv] and best.get("ORT_CPU") else "-", rate,
                 "-" if err is None else "%.2g" % err,
                 "-" if cos is None else "%.6f" % cos,
                 ",".join(sorted({r["status"] for r in rs}))))
width = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
for row in rows:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, width)).rstrip())
PY
done
