#!/usr/bin/env bash
# Makes the seed corpus of one fuzz target and prints the largest input
# length the fuzzer should try (its -max_len):
#   fuzz/make_corpus.sh TARGET OUTDIR BUILD_DIR
# Seeds come from the project (files its code writes) and from Debian
# packages (libonnx-testdata), never from the network. A target may also
# get a libFuzzer dictionary, written to OUTDIR.dict.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
target=${1:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
out=${2:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
build=${3:?usage: make_corpus.sh TARGET OUTDIR BUILD_DIR}
data=${MB_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
mkdir -p "$out"

# Copies the files under $1 named $2 of at most $3 bytes, keeping their
# folders (libFuzzer reads a corpus folder recursively).
add_files() {
  local from=$1 name=$2 max=$3
  [ -d "$from" ] || return 0
  (cd "$from" && find . -name "$name" -size -$((max + 1))c -print0 |
    tar --null -T - -cf -) | tar -xf - -C "$out"
}

case $target in
  loader)
    # Every model of the ONNX backend test suite.
    add_files "$data" model.onnx 131072
    echo 131072 ;;
  model_run | model_hybrid)
    # The backend test suite's small models (one operator each, a few
    # real networks' blocks) and the bundled models of a normal build.
    add_files "$data" model.onnx 65536
    add_files "${MB_FUZZ_MODELS:-build/models}" "*.onnx" 65536
    echo 65536 ;;
  config)
    # Configs as test_config.c writes them, one per key and one with all;
    # the keys themselves (from config.c's table) as the fuzzer's words.
    printf '%s\n' '{"batch_size": 8, "n_samples": 3, "device": "auto",
 "allow_device_override": true, "isolate": false, "fail_fast": true,
 "threads": 4, "warmup": 2, "warmup_time": 0.25, "min_iterations": 7,
 "min_time": 1.5, "max_time": 9, "timeout": 60, "seed": 12345678901,
 "conversions": ["ORT_CPU", 1, "ort_cpu_no_opt"], "baseline": "REFERENCE",
 "shapes": {"x": [1, 3, 224, 224], "ids": [2, 128]},
 "input_ranges": {"ids": [0, 30000], "*": [-2, 2]}, "inputs": "data/in",
 "rtol": 0.01, "atol": 0, "log_dir": "logs", "log_level": "debug"}' >"$out/all.json"
    printf '{"conversions": ["XNNPACK", "ONEDNN", 40], "baseline": 40}' >"$out/conv.json"
    printf '{"shapes": {"x": [1, -1]}, "batch_size": 0}' >"$out/bad.json"
    printf '{"seed": 18446744073709551615, "rtol": 1e308}' >"$out/big.json"
    printf '{"timeout": "NAME=3"}' >"$out/str.json"
    sed -n 's/^ *{"\([a-z_]*\)", KEY_.*/"\1"/p' "$here/../src/bench/config.c" >"$out.dict"
    echo 4096 ;;
  model_files)
    # torch.save and torch.jit.save files as the regression seeds hold
    # them (zip and bare pickle), and the manifests the tests write.
    cp "$here/regressions/model_files/"* "$out/"
    echo 65536 ;;
  tensor_pb)
    # The backend test suite's input and output files: every element type,
    # sequences and optionals.
    add_files "$data" "*.pb" 16384
    echo 16384 ;;
  npy)
    # One file per dtype the reader knows, format 1.0 to 3.0, and shapes
    # from a scalar to rank 4, written as NumPy writes them.
    byte() { printf "\\$(printf %03o "$1")"; }
    npy() { # npy NAME VERSION DESCR SHAPE DATA_BYTES
      local dict="{'descr': '$3', 'fortran_order': False, 'shape': $4, }"
      local pre=10 len
      [ "$2" = 1 ] || pre=12
      # The header (with its newline) pads the preamble to 64 bytes.
      len=$((${#dict} + 1 + (64 - (pre + ${#dict} + 1) % 64) % 64))
      {
        printf '\223NUMPY'
        byte "$2"
        byte 0
        byte $((len % 256))
        byte $((len / 256))
        [ "$2" = 1 ] || { byte 0; byte 0; }
        printf '%-*s\n' $((len - 1)) "$dict"
        printf '%*s' "$5" '' | tr ' ' '\001'
      } >"$out/$1"
    }
    npy f4.npy 1 '<f4' '(2, 3)' 24
    npy f8.npy 1 '<f8' '(3,)' 24
    npy f2.npy 2 '<f2' '(1, 2, 2)' 8
    npy i8.npy 1 '<i8' '(4,)' 32
    npy i4.npy 3 '<i4' '(2, 1, 1, 2)' 16
    npy u1.npy 1 '|u1' '(5,)' 5
    npy b1.npy 1 '|b1' '(2, 2)' 4
    npy scalar.npy 1 '<f4' '()' 4
    npy empty.npy 1 '<f4' '(0, 3)' 0
    # .npz archives of them, stored and deflated, with the zip64 extra
    # fields numpy.savez writes (zipfile's force_zip64, as numpy calls it).
    /usr/bin/python3 - "$out" <<'PY'
import os, sys, zipfile
out = sys.argv[1]
for name, method in (("stored.npz", zipfile.ZIP_STORED), ("deflated.npz", zipfile.ZIP_DEFLATED)):
    with zipfile.ZipFile(os.path.join(out, name), "w", method) as z:
        for member, src in (("x.npy", "f4.npy"), ("arr_1.npy", "i8.npy")):
            with z.open(member, "w", force_zip64=True) as f, open(os.path.join(out, src), "rb") as g:
                f.write(g.read())
PY
    echo 4096 ;;
  build_state | compare_json)
    # What the tool writes: one bench run (the normal build's CLI) leaves a
    # JSON report and a state.json per conversion in its build cache.
    cli=${MB_FUZZ_CLI:-build/bin/modelbench}
    model=${MB_FUZZ_MODELS:-build/models}/mlp.onnx
    [ -x "$cli" ] && [ -f "$model" ] || {
      echo "make_corpus.sh: $target needs the normal build's $cli and $model (make build)" >&2
      exit 2
    }
    tmp=$(mktemp -d)
    MODELBENCH_LOG=error "$cli" bench "$model" --no-record --cache-dir "$tmp/cache" \
      -c REFERENCE,ORT_CPU,FP16+REFERENCE,XNNPACK,ONEDNN,INT8_STATIC+XNNPACK \
      --warmup 1 --warmup-time 0 --min-iterations 5 --min-time 0 \
      --json "$tmp/report.json" >/dev/null 2>&1 || true
    if [ "$target" = build_state ]; then
      add_files "$tmp/cache" state.json 65536
      # Artifact names a hostile cache writer would try (issue 27): through
      # the target's "link" symlink, "..", absolute, empty components.
      n=0
      for name in link/canary link ../outside/canary sub/../../outside/canary \
        /etc/hostname ./link/canary 'a//b' 'link/' sub/link/canary; do
        n=$((n + 1))
        printf '{"format": 1, "id": "m/b", "status": "failed", "error": "x",
  "key": {"model_sha256": "00", "conversion": "C"},
  "artifacts": [{"name": "%s", "bytes": 1}]}\n' "$name" >"$out/hostile-$n.json"
      done
    else
      cp "$tmp/report.json" "$out/" 2>/dev/null || true
    fi
    rm -rf "$tmp"
    [ -n "$(ls -A "$out")" ] || { echo "make_corpus.sh: the bench run wrote no $target seeds" >&2; exit 2; }
    echo 65536 ;;
  *)
    echo "make_corpus.sh: no seeds for target '$target'" >&2
    exit 2 ;;
esac
