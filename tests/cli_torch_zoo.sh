#!/usr/bin/env bash
# The zoo of real PyTorch architectures (tools/export_zoo.py --small:
# torchvision classification, segmentation and video models, a 2-layer
# bidirectional LSTM and GRU, a Conv1d keyword spotter, MultiheadAttention,
# a ConvTranspose/InstanceNorm/PReLU/Resize decoder): each must match
# PyTorch on the reference interpreter (within 1e-4 of its output scale),
# then run every available tier-2 conversion with status ok (OpenVINO's
# int8 quantised by NNCF on three of them, by modelbench's calibration on
# the rest). An `inaccurate` flag is an honest answer there, not a failure.
#
# The bench part is left out of sanitizer builds (MB_SANITIZE=ON), where it
# would take most of CI's time; the comparison with PyTorch runs in both.
# Needs /usr/bin/python3 with torch, torchvision and onnx; without them the
# test is skipped, unless MB_WITH_TORCH=1 (set by `make test`).
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"

python=/usr/bin/python3
exporter=$MB_SOURCE_DIR/tools/export_zoo.py
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

if ! "$python" -c 'import torch, torchvision, onnx' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ] || [ -n "${MB_REQUIRE_TORCH+set}" ]; then
    echo "FAIL: PyTorch is required here (MB_WITH_TORCH=1 or MB_REQUIRE_TORCH)" \
      "but '$python -c \"import torch, torchvision, onnx\"' fails" >&2
    exit 1
  fi
  echo "SKIP: /usr/bin/python3 lacks torch, torchvision or onnx"
  exit 0
fi

# Exports are cached in the build tree, redone when an exporter changes;
# MB_ZOO_CACHE names another folder (make test-asan: the normal build's,
# which test-unit filled: the sanitizer run exports nothing again).
cache=${MB_ZOO_CACHE:-$MB_BUILD_DIR/torch_zoo}
stamp=$cache/exporter.sha256
want=$(cat "$exporter" "$MB_SOURCE_DIR/tools/export_torch_models.py" |
  sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "exporting the zoo into $cache"
  rm -rf "$cache"
  mkdir -p "$cache"
  if ! "$python" "$exporter" "$cache" --small >"$cache/export.log" 2>&1; then
    echo "FAIL: export failed:" >&2
    tail -n 30 "$cache/export.log" >&2
    exit 1
  fi
  echo "$want" >"$stamp"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
count=0
for dir in "$cache"/*/; do
  dir=${dir%/}
  name=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  count=$((count + 1))
  checks=$((checks + 1))
  if "$MB_CLI" check "$dir/model.onnx" "$dir/test_data_set_0" --rtol 1e-3 \
    --atol "$(cat "$dir/atol.txt")" >"$tmp/log" 2>&1; then
    echo "ok   $name matches PyTorch"
  else
    fail "$name does not match PyTorch:"
    tail -n 10 "$tmp/log" | sed 's/^/    /'
  fi
done
if [ "$count" -lt 23 ]; then
  echo "FAIL: only $count zoo models were exported (23 expected)" >&2
  exit 1
fi

if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "SKIP: the tier-2 bench of the zoo (sanitizer build)"
else
  # One short measurement per conversion: this checks that each runs and
  # what it reports, not how fast. INT8_STATIC+OPENVINO is quantised by
  # modelbench's own calibration here: NNCF (a Python process per model,
  # 10-15 s each on a 2-core machine) runs on three of the architectures
  # below instead of all 23.
  checks=$((checks + 1))
  quick=(--warmup 1 --warmup-time 0 --min-iterations 1 --min-time 0
    --calibration-samples 2 --no-record)
  MODELBENCH_NNCF_PYTHON=$tmp/no-nncf "$MB_CLI" bench "$cache" --recursive --tier 2 \
    "${quick[@]}" --json "$tmp/zoo.json" >"$tmp/bench.log" 2>&1
  if ! "$python" - "$tmp/zoo.json" <<'EOF'; then
import json, os, sys
data = json.load(open(sys.argv[1]))
reports = data.get("reports", [data])
# What a runtime itself cannot do with a zoo model, with the words of its
# failure: OpenVINO 2026.4.1's ONNX reader refuses Dropout in training mode
# (swin_t's export writes training_mode = true with ratio 0; the int8 row's
# optimize pass removes it first), and its low-precision
# MoveFakeQuantize pass dereferences a null node on DenseNet's quantised
# Concat (SIGSEGV in compile_model, the run goes on). Anything else that
# fails is a failure; a known case that passes is said.
known = {
    ("swin_t", "OPENVINO"): ("error", "Training mode is not supported for Dropout"),
    ("densenet121", "INT8_STATIC+OPENVINO"): ("crashed", "SIGSEGV"),
}
bad = []
for rep in reports:
    model = os.path.basename(os.path.dirname(rep["model"]["path"]))
    names = [r["conversion"] for r in rep["results"]]
    for r in rep["results"]:
        want = known.get((model, r["conversion"]))
        if want and r["status"] == want[0] and want[1] in (r["error"] or ""):
            print("known: %s %s: %s" % (model, r["conversion"], want[1]))
            continue
        if want and r["status"] == "ok":
            print("note: %s %s now runs (was a known failure)" % (model, r["conversion"]))
        if r["status"] != "ok":
            bad.append("%s %s: %s %s" % (model, r["conversion"], r["status"],
                                         (r["error"] or "")[:300]))
        if r.get("precision_share") is not None:
            assert 0 <= r["precision_share"] <= 1, r
    for want in ("REFERENCE", "ORT_CPU", "XNNPACK", "ONEDNN"):
        if want not in names:
            bad.append("%s: %s did not run (%s)" % (model, want, names))
print("%d models x %d conversions" % (len(reports), len(reports[0]["results"])))
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
    fail "a tier-2 conversion did not end ok (bench log: last lines)"
    tail -n 20 "$tmp/bench.log" | sed 's/^/    /'
  else
    echo "ok   every tier-2 conversion of every zoo model"
  fi

  # NNCF, OpenVINO's own quantiser, on a residual CNN, a transformer and a
  # recurrent network (where the project's venv has it: MB_WITH_TORCH2=1).
  if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
    checks=$((checks + 1))
    "$MB_CLI" bench "$cache/resnet50/model.onnx" "$cache/vit/model.onnx" \
      "$cache/lstm_bidirectional_2layer/model.onnx" -c INT8_STATIC+OPENVINO \
      "${quick[@]}" --json "$tmp/nncf.json" >"$tmp/nncf.log" 2>&1
    if "$python" - "$tmp/nncf.json" <<'EOF'; then
import json, sys
data = json.load(open(sys.argv[1]))
reports = data.get("reports", [data])
assert len(reports) == 3, len(reports)
for rep in reports:
    for r in rep["results"]:
        assert r["status"] == "ok", (rep["model"]["path"], r["status"], r["error"])
        assert not [w for w in r["warnings"] if "not NNCF" in w], r["warnings"]
EOF
      echo "ok   NNCF quantises a CNN, a transformer and an LSTM for OpenVINO"
    else
      fail "NNCF on the zoo's resnet50, vit and LSTM (bench log: last lines)"
      tail -n 20 "$tmp/nncf.log" | sed 's/^/    /'
    fi
  fi
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
