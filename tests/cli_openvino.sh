#!/usr/bin/env bash
# OpenVINO from the command line: OPENVINO, BF16+OPENVINO and
# INT8_STATIC+OPENVINO benched beside ORT with their accuracy, the int8
# build kept in the cache, `profile` per OpenVINO node, and a broken
# OpenVINO library making its conversions unavailable (with the loader's
# reason) while the rest of the run goes on. Without OpenVINO the test
# skips, unless MB_REQUIRE_OPENVINO=1 (`make test` sets it).
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

quick=(--warmup 1 --warmup-time 0 --min-iterations 5 --min-time 0 --no-record)

run 0 list --json || exit 1
if ! "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
sys.exit(0 if rows["OPENVINO"]["available"] else 1)' "$tmp/out"; then
  if [ "${MB_REQUIRE_OPENVINO:-0}" = 1 ]; then
    fail "OpenVINO is required (MB_REQUIRE_OPENVINO=1) but unavailable"
    grep -A2 OPENVINO "$tmp/out" | head -5
  else
    echo "SKIP: OpenVINO unavailable here (modelbench list says why)"
  fi
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

# ---- bench: accuracy against the reference, the int8 build cached ----
conversions=ORT_CPU,OPENVINO,BF16+OPENVINO,INT8_STATIC+OPENVINO
for pass in 1 2; do
  run 0 bench "$models/resnet_blocks.onnx" -c "$conversions" --threads 2 \
    "${quick[@]}" --json "$tmp/r$pass.json" || continue
  py "bench pass $pass" '
import json, sys
path, pass_ = sys.argv[1], int(sys.argv[2])
r = {x["conversion"]: x for x in json.load(open(path))["results"]}
ov = r["OPENVINO"]
assert ov["status"] == "ok" and ov["runtime"] == "openvino", ov
assert ov["runtime_version"].startswith("20"), ov["runtime_version"]
assert ov["accuracy"]["max_abs_err"] < 1e-4, ov["accuracy"]
assert not ov["inaccurate"], ov
q = r["INT8_STATIC+OPENVINO"]
assert q["status"] == "ok" and q["precision"] == "int8", q
assert q["accuracy"]["cosine"] > 0.99, q["accuracy"]
# The QDQ model is the build: made once, found the second time.
assert q["cache_hit"] == (pass_ == 2), (pass_, q["cache_hit"], q["build_reason"])
b = r["BF16+OPENVINO"]
if b["status"] == "ok":
    assert b["precision"] == "bf16" and b["accuracy"]["cosine"] > 0.999, b
    # bf16 reached the plugin: not bit-identical to fp32.
    assert b["accuracy"]["max_abs_err"] > ov["accuracy"]["max_abs_err"], (b["accuracy"], ov["accuracy"])
else:
    assert b["status"] == "unavailable" and "bf16" in b["error"], b
' "$tmp/r$pass.json" "$pass"
done

# ---- profile: OpenVINO's own nodes and kernels ----
if run 0 profile "$models/small_cnn.onnx" -c OPENVINO --iterations 5; then
  expect_in "$tmp/out" "openvino" "profile segment"
  expect_in "$tmp/out" "Convolution" "profile nodes"
fi

# ---- a broken library: unavailable with the loader's reason ----
echo "not a library" >"$tmp/broken.so"
export MODELBENCH_OPENVINO_LIB=$tmp/broken.so
if run 0 list --json; then
  py "list with a broken OpenVINO" '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
for n in ("OPENVINO", "INT8_STATIC+OPENVINO"):
    assert not rows[n]["available"], rows[n]
    assert "cannot load" in rows[n]["reason"] and "broken.so" in rows[n]["reason"], rows[n]
assert rows["REFERENCE"]["available"]
' "$tmp/out"
fi
# The other conversions still run; the run says what was unavailable.
if run 1 bench "$models/mlp.onnx" -c REFERENCE,OPENVINO "${quick[@]}" \
     --json "$tmp/broken.json"; then
  py "bench with a broken OpenVINO" '
import json, sys
r = {x["conversion"]: x for x in json.load(open(sys.argv[1]))["results"]}
assert r["REFERENCE"]["status"] == "ok", r["REFERENCE"]
assert r["OPENVINO"]["status"] == "unavailable", r["OPENVINO"]
assert "cannot load" in r["OPENVINO"]["error"], r["OPENVINO"]
' "$tmp/broken.json"
fi
unset MODELBENCH_OPENVINO_LIB

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
