#!/usr/bin/env bash
# `make bench-tune` (issue 29): modelbench tune on real architectures.
#   bench/tune.sh BUILD_DIR
# 1. ResNet-18 (tools/export_torch_models.py, 224x224, generated inputs) at
#    MB_BENCH_TUNE_THREADS (default 2) threads: the search's wall time from
#    an empty cache, then again with the cache it filled.
# 2. ResNet-50, ViT (ViT-S/16, 6 layers) and Swin-T from tools/export_zoo.py
#    at full size, calibrated on 32 natural-image crops and judged on 8
#    others from other photographs (tools/real_images.py --split: Debian's
#    python3-skimage, installed here), `tune --max-error 1e-3`, each from an
#    empty cache. Per model: every uniform option (accurate or not), the
#    winner (nodes kept in float, share of FLOPs in int8), medians, cosines
#    and the search's wall time. MB_BENCH_TUNE_MODELS picks the zoo models
#    (default resnet50,vit,swin_t; "" for none).
# Everything lands in BUILD_DIR/bench_tune (search logs and pages too).
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
cli=$build/bin/modelbench
out=$build/bench_tune
threads=${MB_BENCH_TUNE_THREADS:-2}
IFS=, read -r -a zoo <<<"${MB_BENCH_TUNE_MODELS-resnet50,vit,swin_t}"
if [ ! -x "$cli" ]; then
  echo "bench/tune.sh: $cli not found; build first (make build)" >&2
  exit 1
fi
MB_WITH_TORCH=1 MB_WITH_IMAGES=1 "$here/scripts/install-deps.sh"
mkdir -p "$out"

# ---- the models and the images ----
r18=$build/torch_models/resnet18/model.onnx
if [ ! -f "$r18" ]; then
  mkdir -p "$build/torch_models"
  /usr/bin/python3 "$here/tools/export_torch_models.py" "$build/torch_models" \
    resnet18 >>"$out/export.log" 2>&1
fi
for name in "${zoo[@]}"; do
  [ -f "$out/zoo/$name/model.onnx" ] ||
    /usr/bin/python3 "$here/tools/export_zoo.py" "$out/zoo" "$name" \
      >>"$out/export.log" 2>&1
done
images=$out/images
if [ ! -d "$images/evaluation/test_data_set_7" ]; then
  rm -rf "$images"
  /usr/bin/python3 "$here/tools/real_images.py" "$images" --split --count 32 \
    >>"$out/export.log"
  # 32 to calibrate on, 8 to judge by: every estimate of the per-node
  # search runs the evaluation set on the reference interpreter.
  for k in $(seq 8 31); do rm -rf "$images/evaluation/test_data_set_$k"; done
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
echo "modelbench tune, $(nproc) CPUs ($cpu), $threads threads"

# tune MODEL LOG [options]: from an empty cache unless MB_KEEP_CACHE=1;
# its wall time as the search log says it.
tune() {
  local model=$1 log=$2
  shift 2
  [ "${MB_KEEP_CACHE:-0}" = 1 ] || rm -rf "$out/cache"
  local rc=0
  "$cli" tune "$model" --max-error 1e-3 --threads "$threads" \
    --cache-dir "$out/cache" --no-record --json "$log" \
    --html "${log%.json}.html" "$@" >"${log%.json}.txt" 2>&1 || rc=$?
  # 0: found, 3: nothing meets the budget (an answer too).
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    echo "tune $model failed ($rc):" >&2
    tail -5 "${log%.json}.txt" >&2
    return 1
  fi
}

echo
echo "== ResNet-18, generated inputs"
tune "$r18" "$out/resnet18.cold.json"
MB_KEEP_CACHE=1 tune "$r18" "$out/resnet18.warm.json"
/usr/bin/python3 - "$out/resnet18.cold.json" "$out/resnet18.warm.json" <<'PY'
import json, sys
for path, what in zip(sys.argv[1:], ("empty cache", "warm cache")):
    d = json.load(open(path))
    w = d["steps"][d["winner"]] if d["winner"] is not None else None
    won = (f"{w['conversion']} {w['median_ms']:.2f} ms, cosine {w['cosine']:.6f}"
           if w else d["summary"])
    print(f"{what:12s} search {d['wall_seconds']:6.1f} s   winner {won}")
PY

summary=$here/bench/tune_summary.py
/usr/bin/python3 "$summary" "$out/resnet18.cold.json" "ResNet-18 (empty cache)"

for name in "${zoo[@]}"; do
  tune "$out/zoo/$name/model.onnx" "$out/$name.json" \
    --calibration-inputs "$images/calibration" --calibration-samples 32 \
    --inputs "$images/evaluation" --n-samples 8 || continue
  /usr/bin/python3 "$summary" "$out/$name.json" "$name (natural images)"
done
