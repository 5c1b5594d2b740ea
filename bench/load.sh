#!/usr/bin/env bash
# The serving questions of issue 16, measured (run by `make bench` through
# bench/run.sh, or alone: bench/load.sh BUILD_DIR):
#   1. ResNet-18 (224) in the server scenario: the peak QPS whose run is
#      valid with p99 <= 20 ms (find-peak), per conversion at 2 threads and
#      at concurrency 1 and 2;
#   2. a batch sweep 1..16 of the same conversions at 2 threads;
#   3. a sequence-length sweep on a BERT-style encoder (bert_mask of
#      tools/export_transformers.py).
# Each part is one `modelbench load`/`bench` run with --sweep; its JSON goes
# to BUILD/load_bench/ and a summary table is printed from it.
# Settings: MB_LOAD_CONVERSIONS (default ORT_CPU,ONEDNN,BF16+ONEDNN,
# INT8_STATIC+ONEDNN), MB_LOAD_SLO (p99=20ms), MB_LOAD_MIN_DURATION (2 s
# per server run; LoadGen's own default is 60 s), MB_LOAD_SEQ (16,64,256).
# Needs the PyTorch-exported models (tools/export_torch_models.py, as
# bench/run.sh makes them); without /usr/bin/python3's torch it says so.
set -euo pipefail

build=${1:-build}
bin=$build/bin
models=$build/torch_models
out=$build/load_bench
python=/usr/bin/python3
convs=${MB_LOAD_CONVERSIONS:-ORT_CPU,ONEDNN,BF16+ONEDNN,INT8_STATIC+ONEDNN}
slo=${MB_LOAD_SLO:-p99=20ms}
min_duration=${MB_LOAD_MIN_DURATION:-2}
seqs=${MB_LOAD_SEQ:-16,64,256}

if [ ! -x "$bin/modelbench" ]; then
  echo "bench/load.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
fi
if [ ! -f "$models/resnet18/model.onnx" ]; then
  if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "load scenarios skipped: $python lacks torch/torchvision/onnx (make test installs them)"
    exit 0
  fi
  mkdir -p "$models"
  "$python" "$(dirname "$0")/../tools/export_torch_models.py" "$models" \
    >"$models/export.log" 2>&1
fi
mkdir -p "$out"
echo "Load scenarios (issue 16): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# summary KIND FILE: one line per point and conversion from a sweep's JSON.
summary() {
  "$python" - "$@" <<'EOF'
import json, sys

kind, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
reports = d.get("reports") or [d]


def num(x, fmt):
    return fmt % x if isinstance(x, (int, float)) else "-"


if kind == "peak":
    print("%-22s %5s %10s %10s %10s  %s" % ("conversion", "conc", "peak QPS",
          "p99 ms", "runs", "proving run"))
elif kind == "batch":
    print("%-22s %5s %10s %10s %12s" % ("conversion", "batch", "median ms",
          "p99 ms", "samples/s"))
else:
    print("%-22s %-10s %10s %10s %12s" % ("conversion", "point", "median ms",
          "p99 ms", "samples/s"))
for rep in reports:
    point = rep.get("sweep_point") or ""
    for r in rep["results"]:
        name = r["conversion"]
        if r["status"] != "ok":
            print("%-22s %-10s %s: %s" % (name, point, r["status"],
                                          (r["error"] or "")[:70]))
            continue
        lat = r["latency_ms"]
        if kind == "peak":
            l = r["load"]
            fp = l["find_peak"] or {}
            proof = "valid" if l["valid"] else "INVALID: %s" % l["invalid_reason"]
            if fp.get("peak_qps") is None:
                proof = "no QPS met the SLO"
            print("%-22s %5d %10s %10s %10d  %s" % (
                name, l["concurrency"], num(fp.get("peak_qps"), "%.1f"),
                num(l["slo"] and l["slo"]["latency_ms"], "%.2f"),
                len(fp.get("trials") or []), proof))
        elif kind == "batch":
            print("%-22s %5d %10s %10s %12s" % (
                name, r["batch_size"], num(lat["median"], "%.3f"),
                num(lat["p99"], "%.3f"), num(r["throughput_sps"], "%.1f")))
        else:
            print("%-22s %-10s %10s %10s %12s" % (
                name, point, num(lat["median"], "%.3f"),
                num(lat["p99"], "%.3f"), num(r["throughput_sps"], "%.1f")))
EOF
}

resnet=$models/resnet18/model.onnx
echo
echo "== ResNet-18 server: peak QPS with $slo, 2 threads, concurrency 1 and 2 (find-peak, runs of >= ${min_duration} s and 100 queries)"
"$bin/modelbench" load "$resnet" -c "$convs" --scenario server --find-peak \
  --slo "$slo" --threads 2 --sweep concurrency=1,2 \
  --min-duration "$min_duration" --min-queries 100 --no-record \
  --json "$out/resnet18_peak.json" --html "$out/resnet18_peak.html" \
  >"$out/resnet18_peak.log" 2>&1 || true
grep -E "^(Within the SLO|No conversion|  .*requests/s)" "$out/resnet18_peak.log" || true
summary peak "$out/resnet18_peak.json"

echo
echo "== ResNet-18 batch sweep 1..16, 2 threads (bench's timed loop)"
"$bin/modelbench" bench "$resnet" -c "$convs" --threads 2 \
  --sweep batch=1,2,4,8,16 --no-record \
  --json "$out/resnet18_batch.json" --html "$out/resnet18_batch.html" \
  >"$out/resnet18_batch.log" 2>&1 || true
summary batch "$out/resnet18_batch.json"

# The BERT-style encoder of tools/export_transformers.py (bert_mask: 4
# layers, d_model 256, a padding mask; batch and seq symbolic).
bert=$build/transformer_models/bert_mask/model.onnx
if [ ! -f "$bert" ] && "$python" -c "import torch, onnx" 2>/dev/null; then
  exporter=$(cd "$(dirname "$0")/../tools" && pwd)/export_transformers.py
  mkdir -p "$build/transformer_models"
  (cd "$(dirname "$exporter")" && "$python" "$exporter" \
    "$(cd "$build/transformer_models" && pwd)" bert_mask) \
    >>"$build/transformer_models/export.log" 2>&1 || true
fi
if [ -f "$bert" ]; then
  echo
  echo "== BERT-style encoder (bert_mask), sequence-length sweep seq=$seqs, batch 1, 2 threads"
  "$bin/modelbench" bench "$bert" -c "$convs" --threads 2 \
    --sweep "dim:seq=$seqs" --input-range attention_mask=1:1 --no-record \
    --json "$out/bert_seq.json" --html "$out/bert_seq.html" \
    >"$out/bert_seq.log" 2>&1 || true
  summary seq "$out/bert_seq.json"
fi
echo
echo "Reports: $out/*.html, *.json; each run's console output: $out/*.log"
