#!/usr/bin/env bash
# Every error a user can reach through the CLI: each must exit with the
# right code (1 failure, 2 usage) and print exactly one line on stderr that
# names the file / node / op / tensor at fault, without sanitizer reports.
# Small broken models are generated at test time with python3 + onnx (those
# cases are skipped when the onnx module is missing).
#
# Environment (set by ctest): MB_CLI, the modelbench binary; MB_TEST_MODELS,
# the bundled models folder.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

# expect CODE NEEDLE -- ARGS...: runs the CLI (run: exit code, no sanitizer
# output); a failure prints one line on stderr containing NEEDLE, a success
# NEEDLE (when given) on stdout.
expect() {
  local code=$1 needle=$2
  shift 3
  run "$code" "$@" || return
  if [ "$code" -ne 0 ]; then
    one_line_error "$needle" "modelbench $*" || return
  elif [ -n "$needle" ]; then
    expect_in "$tmp/out" "$needle" "modelbench $*" || return
  fi
  echo "ok   modelbench $*"
}

# ---- the command line itself ----
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown option '--bogus'" -- --bogus
expect 0 "" -- --version
expect 0 "" -- version
# Other tools' words (benchit's) are answered with ours.
expect 2 "did you mean 'modelbench bench'" -- benchmark
expect 2 "did you mean 'modelbench script'" -- benchit
expect 0 "Commands:" -- --help
for c in analyze run check list-ops; do
  expect 0 "Usage: modelbench $c" -- "$c" --help
done
expect 2 "missing MODEL" -- analyze
expect 2 "missing MODEL" -- run
expect 2 "missing TESTDIR" -- check model.onnx
expect 2 "unknown option '--bogus'" -- analyze model.onnx --bogus
expect 2 "'--seed' requires an argument" -- run model.onnx --seed
expect 2 "--repeat 'abc'" -- run model.onnx --repeat abc
expect 2 "--threads '0'" -- run model.onnx --threads 0
expect 2 "--batch-size '-3'" -- analyze model.onnx --batch-size -3
expect 2 "--shape 'x'" -- analyze model.onnx --shape x
expect 2 "dim 'a'" -- analyze model.onnx --shape x=1,a
expect 2 "dim '99999999999999999999'" -- analyze model.onnx --shape x=99999999999999999999
expect 2 "--rtol 'x'" -- check model.onnx dir --rtol x
expect 2 "--range" -- run model.onnx --range 5
expect 2 "--inputs and --random" -- run model.onnx --inputs d --random
expect 2 "unexpected argument 'extra'" -- analyze model.onnx extra
expect 2 "unexpected argument 'x'" -- list-ops x

# ---- unreadable models ----
expect 1 "$tmp/missing.onnx" -- analyze "$tmp/missing.onnx"
expect 1 "$tmp/missing.onnx" -- run "$tmp/missing.onnx"
expect 1 "$tmp" -- analyze "$tmp"
: >"$tmp/empty.onnx"
expect 1 "$tmp/empty.onnx" -- analyze "$tmp/empty.onnx"
expect 1 "$tmp/empty.onnx" -- run "$tmp/empty.onnx"
# Deterministic garbage.
LC_ALL=C awk 'BEGIN { srand(7); for (i = 0; i < 4096; i++) printf "%c", int(rand() * 256) }' \
  >"$tmp/random.onnx"
expect 1 "$tmp/random.onnx" -- analyze "$tmp/random.onnx"
# Model files of other kinds say what they are; bench reads them.
printf '{"modelbench_model": 1}' >"$tmp/manifest.json"
expect 1 "it is JSON: a model manifest?" -- analyze "$tmp/manifest.json"
printf 'PK\003\004 not really a zip' >"$tmp/model.pt"
expect 1 "a TorchScript file?" -- run "$tmp/model.pt"
expect 2 "give --shape NAME=D0,D1" -- bench "$tmp/model.pt" --no-record
expect 1 "no \"formats\"" -- bench "$tmp/manifest.json" --no-record
printf '{"modelbench_model": 1, "inputs": [], "formats": {"onnx": {"error": "x"}, "pytorch": {"path": "m.json"}}, "refrence": "EAGER"}' \
  >"$tmp/typo.json"
expect 1 "unknown key 'refrence'" -- bench "$tmp/typo.json" --no-record
if [ -n "$models" ] && [ -f "$models/small_cnn.onnx" ]; then
  size=$(stat -c %s "$models/small_cnn.onnx")
  head -c $((size / 2)) "$models/small_cnn.onnx" >"$tmp/truncated.onnx"
  expect 1 "$tmp/truncated.onnx" -- analyze "$tmp/truncated.onnx"
  expect 1 "$tmp/truncated.onnx" -- run "$tmp/truncated.onnx"

  mlp=$models/mlp.onnx
  expect 0 "FLOPs" -- analyze "$mlp"
  expect 2 "nope" -- analyze "$mlp" --shape nope=1,784
  expect 2 "'input'" -- analyze "$mlp" --shape nope=1,784
  expect 2 "rank 2" -- analyze "$mlp" --shape input=1,2,3
  expect 2 "'input'" -- analyze "$mlp" --shape input=4294967296,4294967296
  expect 2 "'input'" -- run "$mlp" --shape input=4294967296,4294967296
  expect 2 "nope" -- run "$mlp" --range nope=0:1
  expect 2 "--shape, --batch-size and --range" -- run "$mlp" --inputs "$tmp" --batch-size 2
  : >"$tmp/a_file"
  expect 1 "$tmp/a_file" -- run "$mlp" --inputs "$tmp/a_file"
  expect 1 "$tmp/a_file" -- check "$mlp" "$tmp/a_file"
  mkdir -p "$tmp/emptydir"
  expect 1 "$tmp/emptydir" -- check "$mlp" "$tmp/emptydir"
  expect 1 "has 0 input_N.pb" -- run "$mlp" --inputs "$tmp/emptydir"
else
  echo "skip: bundled models not found (MB_TEST_MODELS)"
fi

# ---- generated broken models (python3 + onnx) ----
python=/usr/bin/python3
if ! "$python" -c 'import onnx, numpy' 2>/dev/null; then
  echo "skip: python3 onnx/numpy not available for generated models"
else
  "$python" - "$tmp" <<'EOF' || fail "model generator failed"
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as T

out = sys.argv[1]

def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="cli_errors")
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))

def vi(name, dims, t=T.FLOAT):
    return helper.make_tensor_value_info(name, t, dims)

def pb(path, array, name):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())

save("unknown_op", [helper.make_node("FrobnicateOp", ["x"], ["y"], name="frob")],
     [vi("x", [2, 3])], [vi("y", [2, 3])])
save("dangling", [helper.make_node("Relu", ["ghost"], ["y"], name="relu_ghost")],
     [vi("x", [2, 3])], [vi("y", [2, 3])])
save("relu", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [vi("x", [2, 3])], [vi("y", [2, 3])])
save("dynamic", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [vi("x", ["batch", "seq"])], [vi("y", ["batch", "seq"])])
weird = 'in"pu\\t\n\u00e9'
save("weird_names", [helper.make_node("Relu", [weird], ["y"], name="n\"1")],
     [vi(weird, [2, 3])], [vi("y", [2, 3])])

x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
pb(f"{out}/good/test_data_set_0/input_0.pb", x, "x")
pb(f"{out}/good/test_data_set_0/output_0.pb", np.maximum(x, 0), "y")
pb(f"{out}/good/test_data_set_1/input_0.pb", -x, "x")
pb(f"{out}/good/test_data_set_1/output_0.pb", np.maximum(-x, 0), "y")
pb(f"{out}/bad/input_0.pb", x, "x")
pb(f"{out}/bad/output_0.pb", np.maximum(x, 0) + 0.5, "y")
pb(f"{out}/wrong_rank/input_0.pb", x.reshape(6), "x")
pb(f"{out}/wrong_dtype/input_0.pb", x.astype(np.int64), "x")
pb(f"{out}/wrong_dims/input_0.pb", x.T.copy(), "x")
os.makedirs(f"{out}/not_pb", exist_ok=True)
with open(f"{out}/not_pb/input_0.pb", "wb") as f:
    f.write(b"\xff\xff\xff\xff garbage")
EOF
  expect 0 "FrobnicateOp" -- analyze "$tmp/unknown_op.onnx"
  expect 1 "FrobnicateOp" -- run "$tmp/unknown_op.onnx"
  expect 1 "frob" -- run "$tmp/unknown_op.onnx"
  expect 1 "ghost" -- analyze "$tmp/dangling.onnx"
  expect 1 "ghost" -- run "$tmp/dangling.onnx"
  relu=$tmp/relu.onnx
  expect 0 "output 'y'" -- run "$relu"
  expect 0 "output 'y'" -- run "$relu" --inputs "$tmp/good/test_data_set_0" --outputs "$tmp/written"
  [ -f "$tmp/written/output_0.pb" ] || fail "run --outputs wrote no output_0.pb"
  expect 0 "3 runs" -- run "$relu" --inputs "$tmp/good/test_data_set_1" --repeat 3
  expect 0 "2 of 2 outputs within tolerance" -- check "$relu" "$tmp/good"
  expect 0 "1 of 1 outputs within tolerance" -- check "$relu" "$tmp/good/test_data_set_1"
  # A mismatch prints the errors on stdout and exits 1 (stderr stays empty).
  "$cli" check "$relu" "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  checks=$((checks + 1))
  if [ $rc -ne 1 ] || ! grep -q "MISMATCH" "$tmp/out"; then
    fail "check mismatch: exit $rc"
    cat "$tmp/out" "$tmp/err"
  else
    echo "ok   modelbench check (mismatch)"
  fi
  expect 0 "" -- check "$relu" "$tmp/bad" --atol 0.6
  expect 1 "input_0.pb" -- run "$relu" --inputs "$tmp/wrong_rank"
  expect 1 "shape [6]" -- run "$relu" --inputs "$tmp/wrong_rank"
  expect 1 "'x'" -- run "$relu" --inputs "$tmp/wrong_dtype"
  expect 1 "int64" -- run "$relu" --inputs "$tmp/wrong_dtype"
  expect 1 "shape [3,2]" -- run "$relu" --inputs "$tmp/wrong_dims"
  expect 1 "input_0.pb" -- run "$relu" --inputs "$tmp/not_pb"
  expect 1 "input_0.pb" -- check "$relu" "$tmp/not_pb"
  : >"$tmp/outfile"
  expect 1 "$tmp/outfile" -- run "$relu" --outputs "$tmp/outfile"
  expect 2 "--shape x=" -- run "$tmp/dynamic.onnx"
  expect 2 "rank 2" -- analyze "$tmp/dynamic.onnx" --json --shape x=1
  expect 0 "[2,7]" -- run "$tmp/dynamic.onnx" --shape x=2,7
  expect 0 "--shape" -- analyze "$tmp/dynamic.onnx"

  # JSON output must parse, whatever the names contain.
  for m in "$relu" "$tmp/weird_names.onnx" "$tmp/unknown_op.onnx" "$tmp/dynamic.onnx"; do
    checks=$((checks + 1))
    if "$cli" analyze "$m" --json | "$python" -c 'import json, sys; json.load(sys.stdin)'; then
      echo "ok   analyze --json $m parses"
    else
      fail "analyze --json $m is not valid JSON"
    fi
  done
  checks=$((checks + 1))
  if "$cli" list-ops --json | "$python" -c 'import json, sys; json.load(sys.stdin)'; then
    echo "ok   list-ops --json parses"
  else
    fail "list-ops --json is not valid JSON"
  fi
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
