#!/usr/bin/env bash
# Model conversions end to end: OPTIMIZE+, FP16+, INT8_DYNAMIC+ and
# INT8_STATIC+ conversions benchmark with status ok on the bundled models,
# judged against the reference with --max-error (inaccurate flag) and
# top-1 agreement for classifier outputs; `modelbench convert` writes
# models that onnx.checker accepts and that bench runs again.
#
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

fast=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record
  --calibration-samples 4)
ort=0
"$cli" list --json | "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(sys.stdin)["conversions"]}
sys.exit(0 if rows["ORT_CPU"]["available"] else 1)' && ort=1
convs=OPTIMIZE+REFERENCE,FP16+REFERENCE,INT8_STATIC+REFERENCE
[ $ort = 1 ] &&
  convs=$convs,FP16+ORT_CPU,INT8_DYNAMIC+ORT_CPU,INT8_STATIC+ORT_CPU

# Every conversion runs on every bundled model; fp32 ones stay exact,
# reduced ones within the default --max-error (cosine >= 0.999) on these
# small models, and the MLP's [8, 10] logits give top-1 agreement.
for m in mlp small_cnn resnet_blocks transformer_block; do
  if run 0 bench "$models/$m.onnx" -c "$convs" "${fast[@]}" --batch-size 8 \
    --json "$tmp/$m.json"; then
    py "conversions on $m" '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert r["status"] == "ok", r
    acc = r["accuracy"]
    if r["precision"] == "fp32":
        assert acc["max_abs_err"] <= 1e-4, (r["conversion"], acc)
    assert r["inaccurate"] is False, (r["conversion"], acc, r["warnings"])
    assert acc["cosine"] >= 0.999, (r["conversion"], acc)
    if sys.argv[2] in ("mlp", "small_cnn"):
        (o,) = acc["outputs"]
        assert o["top1_rows"] == 8, o
        assert 0 <= o["top1_agreement"] <= 1, o
    assert r["build_ms"] is not None and r["build_ms"] >= 0, r
' "$tmp/$m.json" "$m"
  fi
done
# Accuracy covers every evaluation sample: --n-samples 5 of batch 3 gives
# top-1 agreement over 15 rows (and the worst error over the samples).
if run 0 bench "$models/mlp.onnx" -c REFERENCE,FP16+REFERENCE "${fast[@]}" \
  --n-samples 5 --batch-size 3 --json "$tmp/samples.json"; then
  py "accuracy over several samples" '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    (o,) = r["accuracy"]["outputs"]
    assert o["top1_rows"] == 15, o
    assert r["accuracy"]["top1_agreement"] == o["top1_agreement"], r
' "$tmp/samples.json"
fi
# A tight --max-error flags the reduced-precision ones inaccurate (and the
# recommendation skips them); fp32 is judged by rtol/atol.
if run 0 bench "$models/small_cnn.onnx" -c REFERENCE,FP16+REFERENCE \
  "${fast[@]}" --max-error 1e-12 --json "$tmp/tight.json"; then
  py "--max-error flags" '
import json, sys
rows = {r["conversion"]: r for r in json.load(open(sys.argv[1]))["results"]}
assert rows["REFERENCE"]["inaccurate"] is False
f = rows["FP16+REFERENCE"]
assert f["inaccurate"] is True, f
assert any(w.startswith("inaccurate:") for w in f["warnings"]), f["warnings"]
' "$tmp/tight.json"
  expect_in "$tmp/out" "Deploy REFERENCE" "the inaccurate option is not recommended"
fi
run 2 bench "$models/mlp.onnx" --max-error 0 && expect_in "$tmp/err" \
  "--max-error" "--max-error 0"

# ---- --inputs FILE.npy: one array for a model with one input ----
"$python" -c 'import numpy as np, sys; np.save(sys.argv[1], np.full((2, 784), 0.5, np.float32))' \
  "$tmp/one.npy"
if run 0 bench "$models/mlp.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/one.npy" \
  --json "$tmp/one.json"; then
  py "--inputs FILE.npy: its shape is the sample" '
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["model"]["inputs"][0]["shape"] == [2, 784], rep["model"]["inputs"]
assert rep["results"][0]["status"] == "ok", rep["results"][0]
' "$tmp/one.json"
fi
run 2 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/one.npy" &&
  expect_in "$tmp/err" "one .npy file feeds a model with one input and this one has 2" \
    "--inputs FILE.npy for a two-input model"
run 1 bench "$models/small_cnn.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/one.npy" &&
  expect_in "$tmp/err" "has shape [2,784]" "--inputs FILE.npy of the wrong shape"

# ---- --inputs FILE.npz: the arrays of numpy.savez, by name or position ----
"$python" -c '
import os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
x = rng.standard_normal((1, 8, 64), dtype=np.float32)
m = np.ones((1, 8), np.float32)
np.savez(os.path.join(d, "named.npz"), input=x, mask=m)           # stored
np.savez_compressed(os.path.join(d, "positional.npz"), x, m)      # arr_0, arr_1, deflated
np.savez(os.path.join(d, "misspelt.npz"), input=x, maks=m)
data = open(os.path.join(d, "positional.npz"), "rb").read()
open(os.path.join(d, "truncated.npz"), "wb").write(data[: len(data) // 2])
import io, zipfile
for name, method, member in (("bzip2.npz", zipfile.ZIP_BZIP2, "input.npy"),
                             ("text.npz", zipfile.ZIP_STORED, "notes.txt")):
    with zipfile.ZipFile(os.path.join(d, name), "w", method) as z:
        buf = io.BytesIO()
        np.save(buf, x)
        z.writestr(member, buf.getvalue())
os.makedirs(os.path.join(d, "npz"))
np.savez(os.path.join(d, "npz", "a.npz"), input=x, mask=m)
np.savez(os.path.join(d, "npz", "b.npz"), input=x[:, :4], mask=m[:, :4])
' "$tmp"
for f in named positional; do
  if run 0 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" \
    --inputs "$tmp/$f.npz" --json "$tmp/$f.json"; then
    py "--inputs $f.npz: its arrays are the sample" '
import json, sys
rep = json.load(open(sys.argv[1]))
shapes = {i["name"]: i["shape"] for i in rep["model"]["inputs"]}
assert shapes == {"input": [1, 8, 64], "mask": [1, 8]}, shapes
assert rep["results"][0]["status"] == "ok", rep["results"][0]
' "$tmp/$f.json"
  fi
done
run 1 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/misspelt.npz" &&
  expect_in "$tmp/err" "misspelt.npz: no 'mask', 'input_1' or 'arr_1' array" \
    "--inputs FILE.npz without an input's array names it"
run 1 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/truncated.npz" &&
  expect_in "$tmp/err" "truncated.npz: not a .npz file (no zip end record)" \
    "--inputs FILE.npz cut short"
run 1 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/bzip2.npz" &&
  expect_in "$tmp/err" "'input.npy': .npz compression method 12 is not supported" \
    "--inputs FILE.npz compressed otherwise than numpy does"
run 1 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --inputs "$tmp/text.npz" &&
  expect_in "$tmp/err" "'notes.txt': not a .npy member" \
    "--inputs FILE.npz holding something else than arrays"
# A folder of .npz archives: one sample each, every one read (b's shapes
# differ from a's).
run 1 bench "$models/seq_encoder.onnx" -c REFERENCE "${fast[@]}" --n-samples 2 --inputs "$tmp/npz" &&
  expect_in "$tmp/err" "b.npz: input 'input' has shape [1,4,64]" \
    "--inputs FOLDER of .npz archives: every archive a sample"

# ---- --calibration-inputs: calibrate on other data than the evaluation ----
"$python" -c '
import os, sys
import numpy as np
rng = np.random.default_rng(7)
for d, scale in (("calA", 1.0), ("calB", 3.0)):
    for k in range(3):
        os.makedirs(f"{sys.argv[1]}/{d}/s{k}", exist_ok=True)
        x = (rng.standard_normal((2, 784)) * scale).astype(np.float32)
        np.save(f"{sys.argv[1]}/{d}/s{k}/input.npy", x)
' "$tmp"
calib() {
  run 0 bench "$models/mlp.onnx" -c INT8_STATIC+REFERENCE "${fast[@]}" \
    --batch-size 2 --calibration-inputs "$@" --json "$tmp/cal.json"
}
calib "$tmp/calA" && cp "$tmp/cal.json" "$tmp/calA.json"
run 0 convert "$models/mlp.onnx" -c INT8_STATIC+REFERENCE -o "$tmp/calA.onnx" --batch-size 2 \
  --calibration-inputs "$tmp/calA" &&
  expect_in "$tmp/out" "3 calibration batches, --calibration-inputs" \
    "convert calibrates on the given folder"
# The calibration is kept (<cache>/calibration): the same model, batches and
# method calibrate once, whatever the int8 form or the nodes kept in float;
# other batches calibrate again. The model written is the same either way.
if run 0 convert "$models/mlp.onnx" -c INT8_STATIC+REFERENCE \
  -o "$tmp/calA2.onnx" --batch-size 2 --calibration-inputs "$tmp/calA"; then
  expect_in "$tmp/out" "3 calibration batches, --calibration-inputs; the calibration from the cache" \
    "convert reuses the kept calibration"
  if cmp -s "$tmp/calA.onnx" "$tmp/calA2.onnx"; then
    checks=$((checks + 1))
  else
    fail "the model from a kept calibration differs from the first"
  fi
fi
run 0 convert "$models/mlp.onnx" -c INT8_STATIC+REFERENCE -o "$tmp/calA3.onnx" \
  --batch-size 2 --calibration-inputs "$tmp/calA" --int8-weights 7 &&
  expect_in "$tmp/out" "the calibration from the cache" \
    "another int8 form reuses the kept calibration"
if run 0 convert "$models/mlp.onnx" -c INT8_STATIC+REFERENCE \
  -o "$tmp/calA4.onnx" --batch-size 2 --calibration-inputs "$tmp/calA" \
  --no-cache; then
  if grep -q "from the cache" "$tmp/out"; then
    fail "convert --no-cache reused a kept calibration"
  else
    checks=$((checks + 1))
  fi
fi
if run 0 convert "$models/mlp.onnx" -c INT8_STATIC+REFERENCE \
  -o "$tmp/calB.onnx" --batch-size 2 --calibration-inputs "$tmp/calB"; then
  if grep -q "from the cache" "$tmp/out"; then
    fail "other calibration batches reused a kept calibration"
  else
    checks=$((checks + 1))
  fi
fi
if calib "$tmp/calA"; then
  py "same calibration data: a cache hit" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "ok" and r["cache_hit"] is True, r
' "$tmp/cal.json"
fi
if calib "$tmp/calB"; then
  py "other calibration data: a rebuild with other ranges" '
import json, sys
(a,) = json.load(open(sys.argv[1]))["results"]
(b,) = json.load(open(sys.argv[2]))["results"]
assert b["cache_hit"] is False and b["status"] == "ok", b
assert b["build_id"] != a["build_id"], (a["build_id"], b["build_id"])
assert b["accuracy"]["max_abs_err"] != a["accuracy"]["max_abs_err"], (a, b)
' "$tmp/calA.json" "$tmp/cal.json"
fi
if calib "$tmp/calB" --calibration-method percentile; then
  py "percentile calibration: its own build" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["cache_hit"] is False and r["status"] == "ok", r
' "$tmp/cal.json"
fi
usage_error "expected minmax or percentile" bench "$models/mlp.onnx" \
  --calibration-method median
usage_error "not a folder" bench "$models/mlp.onnx" \
  --calibration-inputs "$tmp/no-such-dir"
# Data of the wrong shape: that conversion fails with a message, not a crash.
mkdir -p "$tmp/calbad/s0"
"$python" -c 'import numpy as np, sys; np.save(sys.argv[1], np.zeros((2, 5), np.float32))' \
  "$tmp/calbad/s0/input.npy"
if run 1 bench "$models/mlp.onnx" -c INT8_STATIC+REFERENCE "${fast[@]}" \
  --batch-size 2 --calibration-inputs "$tmp/calbad" --json "$tmp/calbad.json"; then
  py "bad calibration data is the conversion's error" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "error", r
assert "calibration inputs" in r["error"], r["error"]
' "$tmp/calbad.json"
fi

# ---- the engines' int8: the same calibration, cached beside the model ----
for c in INT8_STATIC+ONEDNN INT8_STATIC+XNNPACK; do
  available "$c" || continue
  for m in small_cnn resnet_blocks mlp; do
    if run 0 bench "$models/$m.onnx" -c "$c" "${fast[@]}" --batch-size 2 \
      --json "$tmp/q.json"; then
      py "$c on $m" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "ok", r
assert r["precision"] == "int8", r
acc = r["accuracy"]
assert acc["cosine"] >= 0.99, acc
assert 0 < acc["max_abs_err"], acc  # int8 really ran
assert r["cache_hit"] is False, r
' "$tmp/q.json"
    fi
  done
  # Second run: the float model and quant_params.json come from the cache.
  if run 0 bench "$models/mlp.onnx" -c "$c" "${fast[@]}" --batch-size 2 \
    --json "$tmp/q2.json"; then
    py "$c cache hit" '
import json, sys
(a,) = json.load(open(sys.argv[1]))["results"]
(b,) = json.load(open(sys.argv[2]))["results"]
assert b["cache_hit"] is True and b["status"] == "ok", b
assert b["accuracy"]["max_abs_err"] == a["accuracy"]["max_abs_err"], (a, b)
' "$tmp/q.json" "$tmp/q2.json"
  fi
  # A damaged parameters file: a warning, rebuilt in memory, still ok.
  f=$(find "$MODELBENCH_CACHE_DIR" -path "*/mlp-*/$c-*/quant_params.json" |
    head -1)
  if [ -z "$f" ]; then
    fail "$c: no cached quant_params.json"
  else
    echo '{"format": 1' >"$f"
    if run 0 bench "$models/mlp.onnx" -c "$c" "${fast[@]}" --batch-size 2 \
      --json "$tmp/q3.json"; then
      py "$c with damaged cached parameters" '
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "ok", r
assert any("cannot load the cached converted model" in w
           for w in r["warnings"]), r["warnings"]
' "$tmp/q3.json"
    fi
  fi
  out=$tmp/${c//+/_}.onnx
  if run 0 convert "$models/small_cnn.onnx" -c "$c" -o "$out" \
    --calibration-samples 4; then
    expect_in "$tmp/out" "quantisation parameters in $tmp/${c//+/_}.quant_params.json" \
      "convert $c names the parameters"
    py "convert $c writes the parameters" '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "modelbench-quant-params", p
kinds = {t["kind"] for t in p["tensors"]}
assert {"activation", "weight"} <= kinds, kinds
' "$tmp/${c//+/_}.quant_params.json"
  fi
done

# ---- profile runs the converted model, not the float one ----
if [ $ort = 1 ] && run 0 profile "$models/small_cnn.onnx" -c INT8_STATIC+ORT_CPU \
  --json; then
  py "profile of INT8_STATIC+ORT_CPU shows ORT's int8 kernels" '
import json, sys
ops = {n["op_type"] for n in json.load(open(sys.argv[1]))["nodes"]}
assert "QLinearConv" in ops, ops
' "$tmp/out"
fi
for c in INT8_STATIC+ONEDNN INT8_STATIC+XNNPACK FP16+REFERENCE; do
  available "$c" || continue
  run 0 profile "$models/small_cnn.onnx" -c "$c" --calibration-samples 4 \
    --calibration-method percentile &&
    expect_in "$tmp/out" "conversion   $c" "profile $c"
done
run 0 profile "$models/mlp.onnx" -c INT8_STATIC+REFERENCE --batch-size 2 \
  --calibration-inputs "$tmp/calA" && expect_in "$tmp/out" \
  "conversion   INT8_STATIC+REFERENCE" "profile with --calibration-inputs"
usage_error "expected minmax or percentile" profile "$models/mlp.onnx" \
  -c INT8_STATIC+REFERENCE --calibration-method max

# ---- convert ----
for c in OPTIMIZE+REFERENCE FP16+REFERENCE INT8_STATIC+REFERENCE \
  INT8_DYNAMIC+ORT_CPU; do
  out=$tmp/${c//+/_}.onnx
  if run 0 convert "$models/resnet_blocks.onnx" -c "$c" -o "$out" \
    --calibration-samples 4; then
    expect_in "$tmp/out" "wrote $out" "convert $c"
    py "onnx.checker on $c" '
import sys
try:
    import onnx
except ImportError:
    sys.exit(0)
onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)
' "$out"
    # The written model runs, and matches the original's reference closely.
    run 0 bench "$out" -c REFERENCE "${fast[@]}"
  fi
done
if run 0 analyze "$tmp/INT8_STATIC_REFERENCE.onnx" --json; then
  py "the static model is QDQ" '
import json, sys
ops = {o["op_type"] for o in json.load(open(sys.argv[1]))["operators"]}
assert {"QuantizeLinear", "DequantizeLinear"} <= ops, ops
' "$tmp/out"
fi
run 0 convert "$models/mlp.onnx" -c REFERENCE -o "$tmp/same.onnx" &&
  expect_in "$tmp/out" "no conversion steps" "a conversion without steps"
run 2 convert "$models/mlp.onnx" -c NOPE -o "$tmp/x.onnx"
run 2 convert "$models/mlp.onnx" -c FP16+REFERENCE &&
  expect_in "$tmp/err" "missing -o" "convert without -o"
run 2 convert -c FP16+REFERENCE -o "$tmp/x.onnx" &&
  expect_in "$tmp/err" "missing MODEL" "convert without a model"
run 1 convert "$tmp/missing.onnx" -c FP16+REFERENCE -o "$tmp/x.onnx"
run 1 convert "$models/mlp.onnx" -c FP16+REFERENCE -o "$tmp/no/such/dir/x.onnx"
run 0 convert --help && expect_in "$tmp/out" "Usage: modelbench convert" \
  "convert --help"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
