#!/usr/bin/env bash
# INT8_STATIC+OPENVINO's quantiser (issue 31): NNCF's post-training
# quantisation (the default where the project's venv has NNCF) beside
# modelbench's own calibration (MODELBENCH_NNCF_PYTHON pointed at nothing),
# on ResNet-18 and the transformer encoder of bench/transformers.sh
# (encoder_op17), batch 1: median latency, speed-up over OPENVINO (fp32),
# cosine against the reference interpreter and the build's seconds, with
# ORT_CPU and INT8_STATIC+ONEDNN beside them. The two quantisers alternate
# for MB_BENCH_ROUNDS rounds (default 3); the table shows each one's median
# over the rounds. Every build is made afresh (--rebuild always).
#   bench/nncf.sh BUILD_DIR
# MB_BENCH_THREADS (default 2), MB_BENCH_SAMPLES (default 20 evaluation
# samples); needs /usr/bin/python3 with torch, torchvision and onnx.
set -euo pipefail

build=${1:-build}
bin=$build/bin
threads=${MB_BENCH_THREADS:-2}
samples=${MB_BENCH_SAMPLES:-20}
rounds=${MB_BENCH_ROUNDS:-3}
out=$build/nncf
mkdir -p "$out"
# shellcheck source=bench/two_models.sh
. "$(dirname "$0")/two_models.sh"
rc=0
two_models "$build" "$out" "NNCF benchmark" || rc=$?
[ "$rc" -ne 2 ] || exit 0
[ "$rc" -eq 0 ] || exit 1

echo "INT8_STATIC+OPENVINO, NNCF / modelbench's calibration: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $threads threads"
for round in $(seq 1 "$rounds"); do
  for name in resnet18 encoder_op17; do
    dir=$torch_models/$name
    inputs=()
    if [ "$name" != resnet18 ]; then
      dir=$tf_models/$name
      inputs=(--inputs "$dir")
    fi
    for quantiser in nncf own; do
      envs=()
      [ "$quantiser" = nncf ] || envs=(MODELBENCH_NNCF_PYTHON=/nonexistent)
      convs=INT8_STATIC+OPENVINO
      [ "$quantiser" = own ] || convs=ORT_CPU,OPENVINO,INT8_STATIC+OPENVINO,INT8_STATIC+ONEDNN
      env "${envs[@]}" "$bin/modelbench" bench "$dir/model.onnx" "${inputs[@]}" -c "$convs" \
        --threads "$threads" --n-samples "$samples" --rebuild always --no-record \
        --json "$out/$name.$quantiser.$round.json" >"$out/$name.$quantiser.$round.log" 2>&1 || true
    done
  done
done

/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print(f"\n{'model':13} {'conversion':34} {'median ms':>10} {'x OPENVINO':>10} {'cosine':>9} {'build s':>8}")
for name in ("resnet18", "encoder_op17"):
    rows = {}
    for q in ("nncf", "own"):
        for r in range(1, rounds + 1):
            path = os.path.join(out, f"{name}.{q}.{r}.json")
            if not os.path.exists(path):
                continue
            for x in json.load(open(path))["results"]:
                key = x["conversion"] if x["conversion"] != "INT8_STATIC+OPENVINO" else \
                    "INT8_STATIC+OPENVINO (" + ("NNCF" if q == "nncf" else "modelbench's") + ")"
                if q == "own" and "not NNCF" not in " ".join(x.get("warnings", [])):
                    key += " ?"
                rows.setdefault(key, []).append(x)
    base = rows.get("OPENVINO")
    base_ms = statistics.median(x["latency_ms"]["median"] for x in base if x["status"] == "ok") if base else None
    for key, xs in rows.items():
        ok = [x for x in xs if x["status"] == "ok"]
        if not ok:
            print(f"{name:13} {key:34} {xs[0]['status']}: {xs[0].get('error', '')[:60]}")
            continue
        ms = statistics.median(x["latency_ms"]["median"] for x in ok)
        cos = min((x.get("accuracy") or {}).get("cosine", float("nan")) for x in ok)
        build = statistics.median(max(x.get("build_ms") or 0, 0) for x in ok) / 1e3
        speed = f"{base_ms / ms:.2f}x" if base_ms else "-"
        print(f"{name:13} {key:34} {ms:10.3f} {speed:>10} {cos:9.6f} {build:8.2f}")
PY
