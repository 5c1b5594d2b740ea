#!/usr/bin/env bash
# The int8 forms (issue 25): 7-bit, mixed (7-bit weights where a product's
# input is signed, 8-bit where it is non-negative) and 8-bit weights, on
# ResNet-18 and the transformer encoder of bench/transformers.sh
# (encoder_op17), batch 1, 2 threads: every int8 conversion's median
# latency, speed-up over ORT_CPU and cosine against the reference
# interpreter (minimum over outputs and evaluation samples), once per form
# (--int8-weights 7, mixed and 8), at
# the CPU's own ISA and with oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA=AVX2,
# which shows what a CPU without VNNI gets from oneDNN). ONNX Runtime has no
# such switch: where qemu-user is installed (`apt install qemu-user`), its
# int8 conversions also run on an emulated AVX2-only CPU (qemu-x86_64 -cpu
# Haswell-v4), for their accuracy only (emulated timings mean nothing).
#   bench/int8_forms.sh BUILD_DIR
# MB_BENCH_THREADS (default 2), MB_BENCH_SAMPLES (default 20 evaluation
# samples); MB_BENCH_INT8_NATIVE=0 skips the native runs (the table then
# shows the last ones' reports); needs /usr/bin/python3 with torch,
# torchvision and onnx.
set -euo pipefail

build=${1:-build}
bin=$build/bin
threads=${MB_BENCH_THREADS:-2}
samples=${MB_BENCH_SAMPLES:-20}
out=$build/int8_forms
mkdir -p "$out"
# shellcheck source=bench/two_models.sh
. "$(dirname "$0")/two_models.sh"
rc=0
two_models "$build" "$out" "int8 forms benchmark" || rc=$?
[ "$rc" -ne 2 ] || exit 0
[ "$rc" -eq 0 ] || exit 1

echo "int8 weights, 7 / mixed / 8 bits: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $threads threads"
"$bin/modelbench" list | grep -E '^(20|21|22|32|42) ' | sed 's/  */ /g'

convs=ORT_CPU,INT8_DYNAMIC+ORT_CPU,INT8_STATIC+ORT_CPU,INT8_STATIC+ONEDNN,INT8_STATIC+XNNPACK
# bench NAME DIR TAG BITS [env ...]: one run, its JSON under $out.
bench() {
  local name=$1 dir=$2 tag=$3 bits=$4
  shift 4
  local inputs=()
  [ "$name" = resnet18 ] || inputs=(--inputs "$dir")
  env "$@" "$bin/modelbench" bench "$dir/model.onnx" "${inputs[@]}" -c "$convs" \
    --baseline ORT_CPU --threads "$threads" --n-samples "$samples" \
    --int8-weights "$bits" --no-record --json "$out/$name.$tag.$bits.json" \
    >"$out/$name.$tag.$bits.log" 2>&1 || true
}
[ "${MB_BENCH_INT8_NATIVE:-1}" = 0 ] || for name in resnet18 encoder_op17; do
  dir=$torch_models/$name
  [ "$name" = resnet18 ] || dir=$tf_models/$name
  for bits in 7 mixed 8; do
    bench "$name" "$dir" native "$bits"
    bench "$name" "$dir" avx2 "$bits" ONEDNN_MAX_CPU_ISA=AVX2
  done
done

/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
print()
forms = ("7", "mixed", "8")
print(f"{'model':13} {'oneDNN ISA':10} {'conversion':22}"
      + "".join(f" {f + ' ms':>9} {'x ORT':>6} {'cosine':>9}" for f in forms))
for name in ("resnet18", "encoder_op17"):
    for tag in ("native", "avx2"):
        runs = {}
        for bits in forms:
            path = os.path.join(out, f"{name}.{tag}.{bits}.json")
            if os.path.exists(path):
                runs[bits] = {r["conversion"]: r for r in json.load(open(path))["results"]}
        if not runs:
            continue
        for conv in next(iter(runs.values())):
            cells = []
            for bits in forms:
                r = runs.get(bits, {}).get(conv)
                if not r or r["status"] != "ok":
                    cells.append(f"{'-':>9} {'-':>6} {'-':>9}")
                    continue
                cos = min((o["cosine"] for o in (r.get("accuracy") or {}).get("outputs", [])),
                          default=float("nan"))
                cells.append(f"{r['latency_ms']['median']:9.3f} "
                             f"{r.get('speedup_vs_baseline') or 0:6.2f} {cos:9.6f}")
            # ONEDNN_MAX_CPU_ISA moves oneDNN only: the other rows of the
            # AVX2 runs repeat the native ones (ORT_CPU stays, the baseline).
            if tag == "avx2" and "ONEDNN" not in conv and conv != "ORT_CPU":
                continue
            isa = "AVX2" if tag == "avx2" else "own"
            print(f"{name:13} {isa:10} {conv:22} " + " ".join(cells))
PY

# ONNX Runtime's AVX2 kernels on an emulated AVX2-only CPU: accuracy only.
if command -v qemu-x86_64 >/dev/null; then
  echo
  echo "ONNX Runtime on an emulated AVX2 CPU (qemu-x86_64 -cpu Haswell-v4): cosine only"
  for name in encoder_op17 resnet18; do
    dir=$torch_models/$name
    [ "$name" = resnet18 ] || dir=$tf_models/$name
    inputs=()
    [ "$name" = resnet18 ] || inputs=(--inputs "$dir")
    # Emulated, ResNet-18 takes minutes an inference: its static int8 only
    # (INT8_DYNAMIC quantises just its last Gemm), on 2 samples.
    convs=INT8_DYNAMIC+ORT_CPU,INT8_STATIC+ORT_CPU samples=4
    [ "$name" = resnet18 ] && convs=INT8_STATIC+ORT_CPU samples=2
    for bits in 7 mixed 8; do
      # The same run natively first: its builds (calibration on the
      # reference interpreter) land in the cache, where the emulated run
      # finds them (same key: the form is forced), so that only the
      # reference outputs and ORT itself run emulated.
      args=("$dir/model.onnx" "${inputs[@]}" -c "$convs"
        --threads 1 --n-samples "$samples" --calibration-samples 16 --warmup 0
        --warmup-time 0 --min-iterations 1 --min-time 0 --timeout 3000
        --int8-weights "$bits" --no-record)
      "$bin/modelbench" bench "${args[@]}" >/dev/null 2>&1 || true
      qemu-x86_64 -cpu Haswell-v4 "$bin/modelbench" bench "${args[@]}" \
        --json "$out/$name.qemu.$bits.json" >"$out/$name.qemu.$bits.log" 2>&1 || true
      /usr/bin/python3 - "$out/$name.qemu.$bits.json" "$name" "$bits" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print(f"  {sys.argv[2]:13} {sys.argv[3]:5}: no report (see the .log beside it)")
    sys.exit(0)
for r in d["results"]:
    outs = (r.get("accuracy") or {}).get("outputs", [])
    cos = min((o["cosine"] for o in outs), default=float("nan"))
    print(f"  {sys.argv[2]:13} {sys.argv[3]:5} {r['conversion']:22} {r['status']:7} "
          f"cosine {cos:.6f}{'  inaccurate' if r.get('inaccurate') else ''}")
PY
    done
  done
fi
