# Sourced by the benchmarks of ResNet-18 and the transformer encoder of
# bench/transformers.sh (int8_forms.sh, nncf.sh): exports both once into
# BUILD/torch_models/resnet18 and BUILD/transformer_models/encoder_op17
# with /usr/bin/python3 (torch, torchvision, onnx) and sets torch_models and
# tf_models to those folders' parents.
#   two_models BUILD LOG_DIR WHO
# Returns 2 (after saying so) when /usr/bin/python3 lacks what exporting
# needs, 1 when an export failed (its log in LOG_DIR/export.log).
two_models() {
  local build=$1 log=$2/export.log who=$3
  if ! /usr/bin/python3 -c "import torch, torchvision, onnx" 2>/dev/null; then
    echo "$who skipped: /usr/bin/python3 lacks torch/torchvision/onnx"
    return 2
  fi
  local tools
  tools=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)
  torch_models=$(mkdir -p "$build/torch_models" && cd "$build/torch_models" && pwd)
  tf_models=$(mkdir -p "$build/transformer_models" && cd "$build/transformer_models" && pwd)
  [ -f "$torch_models/resnet18/model.onnx" ] ||
    /usr/bin/python3 "$tools/export_torch_models.py" "$torch_models" resnet18 >>"$log" 2>&1 || true
  [ -f "$tf_models/encoder_op17/model.onnx" ] ||
    (cd "$tools" && /usr/bin/python3 export_transformers.py "$tf_models" encoder_op17) \
      >>"$log" 2>&1 || true
  local m
  for m in "$torch_models/resnet18" "$tf_models/encoder_op17"; do
    if [ ! -f "$m/model.onnx" ]; then
      echo "$who: exporting $m failed; see $log" >&2
      return 1
    fi
  done
}
