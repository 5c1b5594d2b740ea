#!/usr/bin/env bash
# int8 on a CPU without VNNI, whatever CPU runs the suite: modelbench runs
# on an emulated AVX2-only CPU (qemu-x86_64 -cpu Haswell-v4: AVX2 and FMA,
# no AVX-512, no VNNI), where ONNX Runtime's u8 x s8 kernels add pairs of
# products in 16 bits and saturate. ONNX Runtime has no switch to hold its
# kernels to an ISA (oneDNN's tests use ONEDNN_MAX_CPU_ISA instead), so this
# is how an AVX-512 or AMX machine proves the AVX2 path of ORT's int8.
# There `list` and each result say the mixed form (7-bit weights where a
# product's input is signed) and why, and the int8 conversions on ORT and
# the reference interpreter are accurate (cosine >= 0.999 against the
# reference interpreter, also run emulated), with the mixed form and with
# --int8-weights 7 (every product exact). With --int8-weights 8 the result
# says it was forced and what auto would pick; its accuracy is printed, not
# checked (whether products saturate depends on the data).
#
# Needs qemu-user (`make test` installs it: MB_WITH_QEMU=1) and ONNX
# Runtime; skipped without them, unless make test asked for them. Skipped in
# the sanitizer build (ASan's shadow memory does not map under qemu-user).
# Sized for the slowest host: emulation is many times slower on some (an
# AVX-512 Xeon runs qemu's AVX2 far slower than an EPYC does), so the
# benches leave out the roofline's peak measurement (--no-roofline: minutes
# of emulated sgemm, the bulk of this test's 388 s where it was written)
# and each step has a time budget; one over it fails, naming the step.
# Environment (set by ctest): MB_CLI, MB_TEST_MODELS, MB_SANITIZE.
set -u

cli=${MB_CLI:?set MB_CLI to the modelbench binary}
models=${MB_TEST_MODELS:?set MB_TEST_MODELS to the bundled models folder}
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MODELBENCH_CACHE_DIR=$tmp/cache
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "skipped: sanitizer build (ASan does not run under qemu-user)"
  exit 0
fi
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  if [ "${MB_WITH_QEMU:-0}" = 1 ]; then
    echo "FAIL: qemu-x86_64 not found but MB_WITH_QEMU=1: install qemu-user" \
      "(MB_WITH_QEMU=1 scripts/install-deps.sh)"
    exit 1
  fi
  echo "skipped: no qemu-x86_64 (apt install qemu-user)"
  exit 0
fi
ort=$("$cli" list --json | "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(sys.stdin)["conversions"]}
print(int(rows["INT8_STATIC+ORT_CPU"]["available"]))')
if [ "$ort" != 1 ]; then
  if [ "${MB_REQUIRE_ORT:-0}" = 1 ]; then
    echo "FAIL: ONNX Runtime unavailable but MB_REQUIRE_ORT=1"
    exit 1
  fi
  echo "skipped: ONNX Runtime unavailable"
  exit 0
fi

# The emulated CPU: its own cpuid, so runtimes dispatch as on a real one.
native=$cli
cli=$tmp/modelbench-avx2
cat >"$cli" <<EOF
#!/bin/sh
exec qemu-x86_64 -cpu Haswell-v4 "$native" "\$@" 2>>"$tmp/qemu.err"
EOF
chmod +x "$cli"

# timed STEP CMD...: runs CMD, keeps STEP's seconds for the summary and
# fails STEP when it takes longer than step_budget seconds (about 10 s each
# on an idle 2-core EPYC; the budget leaves room for a slow, loaded host).
step_budget=120
step_times=()
timed() {
  local step=$1 start=$SECONDS rc
  shift
  "$@"
  rc=$?
  local took=$((SECONDS - start))
  step_times+=("$step: ${took} s")
  if [ "$took" -gt "$step_budget" ]; then
    fail "step '$step' took ${took} s, over its ${step_budget} s budget (emulation too slow here?)"
  fi
  return "$rc"
}

# list on the emulated CPU: the mixed form for ORT and the reference
# interpreter (which runs ORT's model), 8 for XNNPACK; the reason names
# the missing VNNI.
if timed "list" run 0 list --json; then
  py "list on an AVX2-only CPU" '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
for name in ("INT8_DYNAMIC+ORT_CPU", "INT8_STATIC+ORT_CPU", "INT8_STATIC+REFERENCE"):
    r = rows[name]
    assert r["available"] and r["int8_weights"] == "mixed", r
    assert "int8 with 7-bit weights where a product\u0027s input is signed" in r["reason"], r
    assert "this CPU has no VNNI" in r["reason"], r
x = rows["INT8_STATIC+XNNPACK"]
assert not x["available"] or x["int8_weights"] == "8", x
for name, r in rows.items():
    if "INT8" not in name or name.endswith("EAGER"):
        assert r["int8_weights"] is None, r
' "$tmp/out"
fi

model=$models/transformer_block.onnx
quick=(--warmup 0 --warmup-time 0 --min-iterations 2 --min-time 0
  --calibration-samples 16 --n-samples 2 --no-record --no-roofline)
convs=INT8_DYNAMIC+ORT_CPU,INT8_STATIC+ORT_CPU,INT8_STATIC+REFERENCE
# OpenVINO's CPU plugin dispatches its int8 kernels on cpuid too: the same
# accuracy, where it is fetched, with NNCF's form (7-bit weights on every
# layer: NNCF has no mixed one).
if "$python" -c '
import json, sys
rows = {c["name"]: c for c in json.load(open(sys.argv[1]))["conversions"]}
r = rows["INT8_STATIC+OPENVINO"]
# OpenVINO quantises with NNCF, whose answer is 7-bit weights everywhere.
assert r["available"] and r["int8_weights"] == "7", r
assert "NNCF" in r["reason"] and "no VNNI" in r["reason"], r
' "$tmp/out" 2>/dev/null; then
  convs=$convs,INT8_STATIC+OPENVINO
elif [ "${MB_REQUIRE_OPENVINO:-0}" = 1 ]; then
  fail "INT8_STATIC+OPENVINO is not available with 7-bit weights on the emulated CPU"
fi
# accurate FILE FORM: every result ok, of FORM, cosine >= 0.999.
accurate() {
  py "int8 on an AVX2-only CPU, $2 weights: accurate" '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert r["status"] == "ok", r
    form = "7" if r["conversion"] == "INT8_STATIC+OPENVINO" else sys.argv[2]
    assert r["int8_weights"] == form, r
    assert "no VNNI" in r["int8_form"], r
    cos = min(o["cosine"] for o in r["accuracy"]["outputs"])
    print("  %s: %s weights, cosine %.6f" % (r["conversion"], form, cos))
    assert cos >= 0.999 and not r["inaccurate"], (r["conversion"], cos)
' "$1" "$2" && cat "$tmp/py"
}
if timed "bench, auto int8 form" run 0 bench "$model" -c "$convs" "${quick[@]}" \
  --json "$tmp/auto.json"; then
  accurate "$tmp/auto.json" mixed
  expect_in "$tmp/out" "int8 weights:" "the table's int8 note"
  expect_in "$tmp/out" "7-bit weights where a product's input is signed" \
    "the table's int8 note"
fi
timed "bench --int8-weights 7" run 0 bench "$model" -c "$convs" "${quick[@]}" \
  --int8-weights 7 --json "$tmp/seven.json" && accurate "$tmp/seven.json" 7
if timed "bench --int8-weights 8" run 0 bench "$model" -c "$convs" "${quick[@]}" \
  --int8-weights 8 --json "$tmp/eight.json"; then
  py "--int8-weights 8 on an AVX2-only CPU" '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert r["status"] == "ok" and r["int8_weights"] == "8", r
    auto = "7" if r["conversion"] == "INT8_STATIC+OPENVINO" else "mixed"
    assert r["int8_form"].startswith("--int8-weights 8 (auto would choose " + auto), r
    cos = min(o["cosine"] for o in r["accuracy"]["outputs"])
    print("  %s: 8-bit weights forced, cosine %.6f%s"
          % (r["conversion"], cos, " (inaccurate)" if r["inaccurate"] else ""))
' "$tmp/eight.json" && cat "$tmp/py"
fi

echo "emulated steps (budget ${step_budget} s each):"
printf '  %s\n' "${step_times[@]}"
echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
