#!/usr/bin/env bash
# A model sweep run locally and through Slurm, side by side (issue 15):
# wall time of each, and every model's per-conversion median from both.
#   bench/executors.sh BUILD_DIR [MODEL ...]
# Without models: the bundled models, the PyTorch-exported ones in
# BUILD_DIR/torch_models (those `make test` exported) whose inputs have
# fixed shapes, the two bench-sized ones of bench/run.sh and three small
# convolution nets of Debian's libonnx-testdata. The Slurm cluster is this machine
# (scripts/local-slurm.sh, stopped on exit): its CPUs bound the speed-up.
# MB_EXEC_TIER (default 1) picks the tier, MB_EXEC_CPUS (default 1) each
# Slurm task's --cpus-per-task; each run has a build cache of its own, so
# both build every conversion. The reports stay in
# BUILD_DIR/sweep.{local,slurm}.json. Not part of `make bench` (it needs
# slurm-wlm and munge: MB_WITH_SLURM=1 scripts/install-deps.sh).
set -euo pipefail

build=${1:-build}
shift || true
bin=$build/bin
root=$(cd "$(dirname "$0")/.." && pwd)
tier=${MB_EXEC_TIER:-1}
cpus=${MB_EXEC_CPUS:-1}

[ -x "$bin/modelbench" ] || {
  echo "bench/executors.sh: $bin/modelbench not found; build first (make build)" >&2
  exit 1
}

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  testdata=/usr/share/libonnx-testdata/data/pytorch-converted
  for m in "$build"/models/*.onnx "$build"/torch_models/*/model.onnx \
    "$testdata"/test_{Conv2d_groups,Conv3d,ConvTranspose2d}/model.onnx; do
    [ -f "$m" ] || continue
    # One bench takes one --shape list: models with dynamic inputs stay out.
    "$bin/modelbench" analyze "$m" 2>&1 | grep -q "is dynamic" || models+=("$m")
  done
  if [ ! -f "$build/bench_models/stamp" ] ||
    [ "$bin/mb-gen-models" -nt "$build/bench_models/stamp" ]; then
    "$bin/mb-gen-models" --bench "$build/bench_models" >/dev/null
    touch "$build/bench_models/stamp"
  fi
  for m in "$build"/bench_models/*.onnx; do
    [ -f "$m" ] && models+=("$m")
  done
fi

# Absolute paths: the local report then names the models as the merged one.
for i in "${!models[@]}"; do models[i]=$(realpath "${models[i]}"); done
tmp=$(mktemp -d)
export MB_SLURM_DIR=$tmp/slurm
cleanup() {
  "$root/scripts/local-slurm.sh" stop || true
  rm -rf "$tmp"
}
trap cleanup EXIT
eval "$("$root/scripts/local-slurm.sh" start)"

timing=(--tier "$tier" --warmup 2 --warmup-time 0 --min-iterations 10
  --min-time 0.5 --no-record)
now() { date +%s.%N; }

echo "modelbench sweep: ${#models[@]} models, tier $tier, $(nproc) CPUs:" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

start=$(now)
MODELBENCH_CACHE_DIR=$tmp/cache-local "$bin/modelbench" bench "${models[@]}" \
  "${timing[@]}" --json "$build/sweep.local.json" >"$tmp/local.out" 2>&1 || true
local_s=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')

start=$(now)
MODELBENCH_CACHE_DIR=$tmp/cache-slurm "$bin/modelbench" bench "${models[@]}" \
  "${timing[@]}" --executor slurm --cpus-per-task "$cpus" \
  --json "$build/sweep.slurm.json" >"$tmp/slurm.out" 2>&1 || true
slurm_s=$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$build/sweep.local.json" "$build/sweep.slurm.json" "$local_s" "$slurm_s" "$cpus" <<'EOF'
import json, os, sys

def load(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        sys.exit(f"bench/executors.sh: no report {path}: {e}")
    return {r["model"]["path"]: r for r in doc.get("reports", [doc])}

local, slurm = load(sys.argv[1]), load(sys.argv[2])
local_s, slurm_s, cpus = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
print(f"\nwall time: local {local_s:.1f} s, Slurm {slurm_s:.1f} s "
      f"(x{local_s / slurm_s:.2f}; --cpus-per-task {cpus})\n")
print(f"{'model':<26} {'conversion':<16} {'local ms':>10} {'Slurm ms':>10} {'ratio':>6}  node")
for path, a in local.items():
    b = slurm.get(path)
    # ".../resnet18/model.onnx" -> "resnet18", ".../mlp.onnx" -> "mlp"
    base = os.path.basename(path)
    name = os.path.basename(os.path.dirname(path)) if base == "model.onnx" else base[:-5]
    rows_b = {r["conversion"]: r for r in (b or {}).get("results", [])}
    for r in a["results"]:
        s = rows_b.get(r["conversion"], {})
        ma = r["latency_ms"]["median"] if r["status"] == "ok" else None
        mb = s.get("latency_ms", {}).get("median") if s.get("status") == "ok" else None
        ratio = f"{mb / ma:6.2f}" if ma and mb else "     -"
        text = lambda v, st: f"{v:10.3f}" if v is not None else f"{st or 'missing':>10}"
        node = (s.get("machine") or {}).get("host") or ""
        print(f"{name[:26]:<26} {r['conversion'][:16]:<16} {text(ma, r['status'])} "
              f"{text(mb, s.get('status'))} {ratio}  {node}")
EOF
