#!/usr/bin/env bash
# Transformers on oneDNN against ONNX Runtime (issue 17): the models of
# tools/export_transformers.py (nn.TransformerEncoder at opset 17 and 13,
# nn.MultiheadAttention, a GPT block, BERT with an attention mask, and a
# BERT-base-shaped encoder), batch 1, sequence 128, 2 threads. Each model is
# benchmarked in ROUNDS alternated rounds (one `modelbench bench` per round
# runs the conversions one after another); the table gives per conversion
# the median over rounds of its median latency, the median over rounds of
# its speed-up over ORT_CPU (same round), and the accuracy against the
# reference interpreter (max abs error, cosine).
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

exporter=$(dirname "$0")/../tools/export_transformers.py
for name in "${names[@]}"; do
  if [ ! -f "$models/$name/model.onnx" ]; then
    if ! /usr/bin/python3 -c "import torch, onnx" 2>/dev/null; then
      echo "transformers benchmark skipped: /usr/bin/python3 lacks torch/onnx"
      exit 0
    fi
    mkdir -p "$models"
    (cd "$(dirname "$exporter")" && /usr/bin/python3 "$exporter" "$models" "$name") \
      >>"$models/export.log" 2>&1
  fi
done

echo "Transformers on oneDNN vs ORT_CPU: batch 1, sequence 128, $threads threads, median of $rounds alternated rounds"
for name in "${names[@]}"; do
  dir=$models/$name
  d=$(/usr/bin/python3 -c "import onnx,sys; m=onnx.load(sys.argv[1], load_external_data=False); \
print([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim][-1])" "$dir/model.onnx" 2>/dev/null || echo 256)
  shapes=(--shape "input=1,128,$d")
  # The attention mask with padding: the exported test inputs.
  [ "$name" = bert_mask ] && shapes=(--inputs "$dir")
  jsons=()
  for r in $(seq 1 "$rounds"); do
    out=$models/$name.round$r.json
    "$bin/modelbench" bench "$dir/model.onnx" -c "$convs" "${shapes[@]}" \
      --threads "$threads" --baseline ORT_CPU --no-record \
      --json "$out" >/dev/null 2>&1 || true
    jsons+=("$out")
  done
  echo
  echo "== $name (d_model $d)"
  /usr/bin/python3 - "${jsons[@]}" <<'PY'
import json, statistics, sys
runs = {}
for path in sys.argv[1:]:
    try:
        results = json.load(open(path))["results"]
    except (OSError, ValueError, KeyError):
        continue
    for r in results:
        runs.setdefault(r["conversion"], []).append(r)
rows = [("conversion", "median ms", "vs ORT_CPU", "max abs err", "cosine", "status")]
for conv, rs in runs.items():
    ok = [r for r in rs if r["status"] == "ok"]
    med = statistics.median([r["latency_ms"]["median"] for r in ok]) if ok else None
    sp = [r["speedup_vs_baseline"] for r in ok if r.get("speedup_vs_baseline")]
    acc = [r["accuracy"] for r in ok if r.get("accuracy")]
    err = max((a["max_abs_err"] for a in acc), default=None)
    cos = min((a["cosine"] for a in acc), default=None)
    rows.append((conv, "-" if med is None else "%.2f" % med,
                 "%.2fx" % statistics.median(sp) if sp else "-",
                 "-" if err is None else "%.2g" % err,
                 "-" if cos is None else "%.6f" % cos,
                 ",".join(sorted({r["status"] for r in rs}))))
width = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
for row in rows:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, width)).rstrip())
PY
done
