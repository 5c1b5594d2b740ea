#!/usr/bin/env bash
# Models exported from PyTorch (torchvision CNNs, transformer encoders, BERT-
# and GPT-style models), each run by the reference interpreter and compared
# with the outputs PyTorch computed: an independent implementation, so this
# catches what self-generated expectations cannot.
#
# Needs /usr/bin/python3 with torch, torchvision and onnx. Without them the
# test is skipped, unless MB_WITH_TORCH=1 (set by `make test`) or
# MB_REQUIRE_TORCH is set: then a missing PyTorch is a failure.
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"

python=/usr/bin/python3
exporter=$MB_SOURCE_DIR/tools/export_torch_models.py
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

if ! "$python" -c 'import torch, torchvision, onnx' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ] || [ -n "${MB_REQUIRE_TORCH+set}" ]; then
    echo "FAIL: PyTorch is required here (MB_WITH_TORCH=1 or MB_REQUIRE_TORCH)" \
      "but '$python -c \"import torch, torchvision, onnx\"' fails;" \
      "install python3-torch python3-torchvision python3-onnx" >&2
    exit 1
  fi
  echo "SKIP: /usr/bin/python3 lacks torch, torchvision or onnx" \
    "(apt install python3-torch python3-torchvision python3-onnx, or run" \
    "'make test', which installs them)"
  exit 0
fi

# Exports are cached in the build tree and redone only when the exporter
# changes (the stamp holds its hash).
cache=$MB_BUILD_DIR/torch_models
stamp=$cache/exporter.sha256
want=$(sha256sum "$exporter" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "exporting PyTorch models into $cache"
  rm -rf "$cache"
  mkdir -p "$cache"
  if ! "$python" "$exporter" "$cache" >"$cache/export.log" 2>&1; then
    echo "FAIL: export failed:" >&2
    tail -n 30 "$cache/export.log" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi

failed_names=()
log=$(mktemp)
# The benches' builds and history in a folder of this run's, removed at the
# end: never the user's ~/.cache/modelbench or a cache other runs share.
MODELBENCH_CACHE_DIR=$(mktemp -d)
export MODELBENCH_CACHE_DIR
trap 'rm -rf "$log" "$MODELBENCH_CACHE_DIR"' EXIT

for dir in "$cache"/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  model=$dir/model.onnx
  [ -f "$model" ] || continue
  ok=1
  if ! "$MB_CLI" analyze "$model" >"$log" 2>&1; then
    ok=0
    step=analyze
  elif ! "$MB_CLI" check "$model" "$dir/test_data_set_0" \
    --atol 1e-4 --rtol 1e-3 >"$log" 2>&1; then
    ok=0
    step=check
  fi
  checks=$((checks + 1))
  if [ $ok = 1 ]; then
    echo "ok   $name"
  else
    fail "$name ($step):"
    tail -n 15 "$log" | sed 's/^/    /'
    failed_names+=("$name")
  fi
done

if [ "$checks" = 0 ]; then
  echo "FAIL: no exported models found in $cache" >&2
  exit 1
fi

# `modelbench bench` on four of them with the default conversions, kept
# short (a few timed iterations each): every result must carry every key of
# docs/json-schema.md, and fp32 results must match the reference within
# 1e-4. ONNX Runtime rows may be `unavailable` only where `modelbench list`
# says ONNX Runtime is missing here.
available=$("$MB_CLI" list --json | "$python" -c '
import json, sys
print(",".join(c["name"] for c in json.load(sys.stdin)["conversions"]
               if c["available"]))')
bench_json=$(mktemp)
trap 'rm -rf "$log" "$bench_json" "$MODELBENCH_CACHE_DIR"' EXIT
for name in resnet18 mobilenet_v2 transformer_encoder_op17 bert_encoder; do
  dir=$cache/$name
  checks=$((checks + 1))
  if [ ! -f "$dir/model.onnx" ]; then
    fail "bench $name: $dir/model.onnx was not exported"
    failed_names+=("bench:$name")
    continue
  fi
  # The exported test inputs give every dynamic dim (sequence lengths) and
  # valid token ids.
  "$MB_CLI" bench "$dir/model.onnx" -c REFERENCE,ORT_CPU,ORT_CPU_NO_OPT \
    --inputs "$dir" --min-time 0.05 --warmup 1 --warmup-time 0 \
    --min-iterations 3 --json "$bench_json" >"$log" 2>&1
  rc=$?
  if "$python" - "$bench_json" "$rc" "$available" >>"$log" 2>&1 <<'PY'
import json, sys
path, rc, available = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
def bad(c):
    raise ValueError("non-standard JSON constant " + c)
doc = json.load(open(path), parse_constant=bad)
for key in ("schema_version", "tool", "version", "model", "machine", "config",
            "baseline", "results"):
    assert key in doc, "missing top-level key " + key
keys = ("conversion", "id", "status", "error", "device", "runtime",
        "runtime_version", "load_ms", "first_run_ms", "latency_ms",
        "iterations", "batch_size", "throughput_sps", "inference_seconds",
        "elapsed_seconds", "peak_rss_mb", "accuracy", "speedup_vs_baseline",
        "warnings", "samples_ms", "log", "backtrace")
stats = ("mean", "median", "min", "max", "p90", "p95", "p99", "stddev", "cv")
names = [r["conversion"] for r in doc["results"]]
assert names == ["REFERENCE", "ORT_CPU", "ORT_CPU_NO_OPT"], names
for r in doc["results"]:
    name, status = r["conversion"], r["status"]
    for k in keys:
        assert k in r, "%s: missing key %s" % (name, k)
    for k in stats:
        assert k in r["latency_ms"], "%s: missing latency_ms.%s" % (name, k)
    if status == "unavailable" and name not in available:
        continue
    assert status == "ok", "%s: %s: %s" % (name, status, r["error"])
    assert r["error"] is None and r["iterations"] >= 3, name
    assert len(r["samples_ms"]) == r["iterations"], name
    assert r["latency_ms"]["median"] > 0, name
    acc = r["accuracy"]
    assert acc is not None, name + ": no accuracy"
    assert acc["max_abs_err"] <= 1e-4, "%s: max_abs_err %g" % (
        name, acc["max_abs_err"])
ok = all(r["status"] == "ok" for r in doc["results"])
assert rc in ((0,) if ok else (0, 1)), "exit status %d" % rc
PY
  then
    echo "ok   bench $name"
  else
    fail "bench $name:"
    tail -n 20 "$log" | sed 's/^/    /'
    failed_names+=("bench:$name")
  fi
done

echo "$checks checks, $failures failures"
if [ "$failures" != 0 ]; then
  echo "failed: ${failed_names[*]}"
  exit 1
fi
exit 0
