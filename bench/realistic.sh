#!/usr/bin/env bash
# Numbers that explain themselves (issue 30, items 2 and 4), measured (run
# by `make bench` through bench/run.sh, or alone: bench/realistic.sh
# BUILD_DIR):
#   1. --ci-target 2% on the bundled resnet_blocks model (ORT_CPU, oneDNN,
#      1 thread): each result's median with its 95% interval, whether the
#      target stopped the run or --max-time did, and the speed-up with its
#      bootstrap interval;
#   2. ResNet-18 (224) at 2 threads, ORT_CPU and oneDNN, with --ci-target 2%
#      --fresh-inputs --cold-cache: the steady median beside the fresh-input
#      and cold-cache medians and their gaps.
# JSON goes to BUILD/realistic_bench/. Settings: MB_REALISTIC_CONVERSIONS
# (default ORT_CPU,ONEDNN), MB_REALISTIC_MAX_TIME (default 60 s). Needs the
# PyTorch-exported ResNet-18 for part 2 (tools/export_torch_models.py, as
# bench/run.sh makes them); without /usr/bin/python3's torch it says so.
set -euo pipefail

build=${1:-build}
bin=$build/bin
models=$build/torch_models
out=$build/realistic_bench
python=/usr/bin/python3
convs=${MB_REALISTIC_CONVERSIONS:-ORT_CPU,ONEDNN}
max_time=${MB_REALISTIC_MAX_TIME:-60}

if [ ! -x "$bin/modelbench" ]; then
  echo "bench/realistic.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
fi
mkdir -p "$out"
echo "Intervals and realistic phases (issue 30): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# summary FILE: one line per conversion of a report.
summary() {
  "$python" - "$1" <<'PY'
import json, sys

rep = json.load(open(sys.argv[1]))
print("%-14s %9s %17s %11s %18s %9s %7s %9s %7s" % (
    "conversion", "median ms", "95% CI", "stopped by", "speed-up [95% CI]",
    "fresh ms", "gap", "cold ms", "gap"))
for r in rep["results"]:
    if r["status"] != "ok":
        print("%-14s %s: %s" % (r["conversion"], r["status"], (r["error"] or "")[:70]))
        continue
    lat, ci = r["latency_ms"], r["ci_target"] or {}
    lo, hi = r["median_ci_ms"] or (0, 0)
    half = ci.get("half_width")
    stop = "%s +-%.1f%%" % ("target" if ci.get("met") else "max-time",
                            100 * half) if half is not None else "-"
    s, sci = r["speedup_vs_baseline"], r["speedup_ci"]
    speed = "%.2fx [%.2f-%.2f]" % (s, sci[0], sci[1]) if s and sci else "-"
    cells = []
    for key in ("fresh_inputs", "cold_cache"):
        p = (r["realistic"] or {}).get(key)
        cells += ["%.3f" % p["median_ms"], "%+.1f%%" % (100 * p["gap"])] if p else ["-", "-"]
    print("%-14s %9.3f %17s %11s %18s %9s %7s %9s %7s" % (
        r["conversion"], lat["median"], "%.3f-%.3f" % (lo, hi), stop, speed, *cells))
    pool = ((r["realistic"] or {}).get("fresh_inputs") or {})
    if pool:
        print("%-14s fresh-input pool: %d samples, %.1f MB" % ("", pool["pool_samples"], pool["pool_mb"]))
PY
}

echo
echo "== resnet_blocks, 1 thread, --ci-target 2% (at most $max_time s)"
"$bin/modelbench" bench "$build/models/resnet_blocks.onnx" -c "$convs" \
  --threads 1 --ci-target 2% --max-time "$max_time" --no-record \
  --json "$out/resnet_blocks.json" >"$out/resnet_blocks.txt" 2>&1 || true
summary "$out/resnet_blocks.json"

resnet=$models/resnet18/model.onnx
if [ ! -f "$resnet" ]; then
  if ! "$python" -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "ResNet-18 skipped: $python lacks torch/torchvision/onnx (make test installs them)"
    exit 0
  fi
  mkdir -p "$models"
  "$python" "$(dirname "$0")/../tools/export_torch_models.py" "$models" resnet18 \
    >"$models/export.log" 2>&1
fi
echo
echo "== ResNet-18, 2 threads, --ci-target 2% --fresh-inputs --cold-cache"
"$bin/modelbench" bench "$resnet" -c "$convs" --threads 2 --ci-target 2% \
  --max-time "$max_time" --fresh-inputs --cold-cache --no-record \
  --json "$out/resnet18.json" >"$out/resnet18.txt" 2>&1 || true
summary "$out/resnet18.json"
