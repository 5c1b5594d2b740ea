#!/usr/bin/env bash
# The roofline of issue 30 (item 1), measured (run by `make bench` through
# bench/run.sh, or alone: bench/roofline.sh BUILD_DIR): this machine's peaks
# at MB_ROOFLINE_THREADS (default 2) threads, measured again, then ResNet-18
# (224) and the transformer encoder (seq MB_ROOFLINE_SEQ, default 128) under
# every tier-2 conversion, with each one's achieved GFLOP/s, intensity,
# share of its precision's peak and bound. JSON and HTML (the roofline
# chart) go to BUILD/roofline_bench/. Needs the PyTorch-exported models
# (tools/export_torch_models.py, as bench/run.sh makes them).
set -euo pipefail

build=${1:-build}
bin=$build/bin
models=$build/torch_models
out=$build/roofline_bench
python=/usr/bin/python3
threads=${MB_ROOFLINE_THREADS:-2}
seq=${MB_ROOFLINE_SEQ:-128}

if [ ! -x "$bin/modelbench" ]; then
  echo "bench/roofline.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
fi
if [ ! -f "$models/resnet18/model.onnx" ] ||
  [ ! -f "$models/transformer_encoder_op17/model.onnx" ]; then
  if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "roofline skipped: $python lacks torch/torchvision/onnx (make test installs them)"
    exit 0
  fi
  mkdir -p "$models"
  "$python" "$(dirname "$0")/../tools/export_torch_models.py" "$models" \
    resnet18 transformer_encoder_op17 >"$models/export.log" 2>&1
fi
mkdir -p "$out"
echo "Roofline (issue 30): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/modelbench" machine --threads "$threads" --remeasure

run() {
  local name=$1
  shift
  "$bin/modelbench" bench "$@" --tier 2 --threads "$threads" --no-record \
    --json "$out/$name.json" --html "$out/$name.html" >"$out/$name.txt" 2>&1 ||
    true
  echo
  echo "$name (HTML with the roofline chart: $out/$name.html)"
  "$python" - "$out/$name.json" <<'PY'
import json, sys

r = json.load(open(sys.argv[1]))
m = r["model"]
print("model: %.3g GFLOPs, %.3g MB weights, %.3g MB activations per run" % (
    (m["flops"] or 0) / 1e9, (m["weight_bytes"] or 0) / 1e6,
    (m["activation_bytes"] or 0) / 1e6))
print("%-22s %10s %9s %9s %-16s %7s  %s" % ("conversion", "median ms",
      "GFLOP/s", "FLOP/B", "peak", "% peak", "bound"))
rows = sorted(r["results"], key=lambda x: (x["status"] != "ok",
              (x["latency_ms"] or {}).get("median") or 0))
for x in rows:
    rl = x.get("roofline")
    if x["status"] != "ok" or not rl:
        print("%-22s %s" % (x["conversion"], x["status"]))
        continue
    print("%-22s %10.3f %9.2f %9.2f %-16s %6.1f%%  %s" % (
        x["conversion"], x["latency_ms"]["median"], rl["gflops"],
        rl["intensity"] or 0, "%s %.0f" % (rl["peak_precision"],
        rl["peak_gflops"]), 100 * rl["peak_share"], rl["bound"]))
PY
}

run resnet18 "$models/resnet18/model.onnx"
run transformer_encoder "$models/transformer_encoder_op17/model.onnx" \
  --dim "seq=$seq"
