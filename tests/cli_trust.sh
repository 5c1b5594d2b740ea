#!/usr/bin/env bash
# Code runs only when the user says so (issue 27, finding 1), the CLI side:
# a model manifest whose pytorch form is a hostile pickle (with sys_path
# entries), a manifest naming a script, and a pickled .pt given to the CLI
# run nothing without --trust-code and say so naming it; with the flag they
# load as before. Each hostile pickle creates a marker file when unpickled,
# so "nothing ran" is checked, not assumed. TorchScript stays data. The
# Python side (benchmark_model, the worker's loader) is
# python/tests/test_trust.py.
#
# Writing the files needs /usr/bin/python3 with torch (skipped without it
# unless MB_WITH_TORCH=1); the runs through the Python front are skipped
# in sanitizer builds (Debian's python3 cannot load an ASan library).
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"
cli=$MB_CLI
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"
export MODELBENCH_CACHE_DIR=$tmp/cache

if ! "$python" -c 'import torch' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
    fail "MB_WITH_TORCH=1 but $python cannot import torch"
  else
    echo "SKIP: $python lacks torch"
  fi
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

# The files: hostile.pt (torch.save of an object whose unpickling creates
# $tmp/ran-pt), legacy.pt (the same in torch.save's pre-zip format), a
# manifest whose pytorch form is such a pickle (creates $tmp/ran-manifest)
# with sys_path, one whose spec names a script (evil.py creates
# $tmp/ran-script), a TorchScript file and a pickled nn.Linear.
"$python" - "$tmp" <<'EOF' || fail "writing the test files"
import json, os, sys
import torch

tmp = sys.argv[1]


class Hostile:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


torch.save(Hostile(os.path.join(tmp, "ran-pt")), os.path.join(tmp, "hostile.pt"))
torch.save(Hostile(os.path.join(tmp, "ran-pt")), os.path.join(tmp, "legacy.pt"),
           _use_new_zipfile_serialization=False)
torch.save(torch.nn.Linear(4, 2), os.path.join(tmp, "linear.pt"))
torch.jit.script(torch.nn.Linear(4, 2)).save(os.path.join(tmp, "linear.ts.pt"))


def manifest(name, spec):
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "module.json"), "w") as f:
        json.dump(spec, f)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"modelbench_model": 1, "name": name,
                   "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 4]}],
                   "outputs": [{"name": "y", "dtype": "float32", "shape": [1, 2]}],
                   "formats": {"pytorch": {"path": "module.json"}},
                   "reference": "EAGER"}, f)
    return folder


folder = manifest("pickled", {"kind": "module", "file": "module.pt", "sys_path": ["."]})
torch.save(Hostile(os.path.join(tmp, "ran-manifest")), os.path.join(folder, "module.pt"))
folder = manifest("script", {"kind": "torchscript", "file": "m.ts.pt", "main": "evil.py",
                             "sys_path": []})
torch.jit.script(torch.nn.Linear(4, 2)).save(os.path.join(folder, "m.ts.pt"))
with open(os.path.join(folder, "evil.py"), "w") as f:
    f.write(f"open({os.path.join(tmp, 'ran-script')!r}, 'w').close()\n")
folder = manifest("scripted", {"kind": "torchscript", "file": "m.ts.pt"})
torch.jit.script(torch.nn.Linear(4, 2)).save(os.path.join(folder, "m.ts.pt"))
EOF

quick=(--warmup 1 --warmup-time 0 --min-iterations 3 --min-time 0 --no-record)

# no_marker NAME WHAT: $tmp/NAME must not exist (nothing ran).
no_marker() {
  checks=$((checks + 1))
  [ ! -e "$tmp/$1" ] || fail "$2: the model's code ran without --trust-code"
}

# ---- 1. the C CLI: a pickled .pt is refused, naming the flag ----
for pt in hostile legacy; do
  run 1 bench "$tmp/$pt.pt" --shape x=1,4 "${quick[@]}" &&
    expect_in "$tmp/err" "--trust-code" "bench $pt.pt names the flag" &&
    expect_in "$tmp/err" "pickled PyTorch model" "bench $pt.pt says why"
  no_marker ran-pt "bench $pt.pt"
done
# A TorchScript .pt is still TorchScript (data): no word of pickles.
run 2 bench "$tmp/linear.ts.pt" "${quick[@]}" &&
  expect_in "$tmp/err" "is a TorchScript model" "a TorchScript .pt"
checks=$((checks + 1))
if grep -q "pickled" "$tmp/err"; then fail "a TorchScript .pt taken for a pickle"; fi

if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "SKIP (sanitizer build): the runs through the Python front"
  echo "$checks checks, $failures failures"
  [ "$failures" -eq 0 ]
  exit
fi

# front ARGS...: python3 -m modelbench bench ARGS (the PyTorch host runtime
# installed), output in $tmp/out and $tmp/err; returns its exit status.
front() {
  PYTHONPATH=$MB_SOURCE_DIR/python \
    MODELBENCH_LIBRARY=$MB_BUILD_DIR/lib/libmodelbench.so \
    "$python" -m modelbench bench "$@" "${quick[@]}" >"$tmp/out" 2>"$tmp/err"
}

# front_expect CODE WHAT ARGS...: front ARGS exits CODE.
front_expect() {
  local code=$1 what=$2
  shift 2
  checks=$((checks + 1))
  front "$@"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then
    fail "$what: exit $rc, expected $code"
    show "$tmp/err" "$tmp/out"
    return 1
  fi
}

# error_has REPORT NEEDLE WHAT: every result of REPORT failed naming NEEDLE.
error_has() {
  py "$3" '
import json, sys
results = json.load(open(sys.argv[1]))["results"]
assert results and all(sys.argv[2] in (r.get("error") or "") for r in results), results
' "$1" "$2"
}

# ---- 2. a manifest whose pytorch form is a hostile pickle ----
front_expect 1 "a pickled manifest without the flag" \
  "$tmp/pickled/manifest.json" -c EAGER --json "$tmp/pickled.json" &&
  error_has "$tmp/pickled.json" "--trust-code" "the manifest's error names --trust-code"
no_marker ran-manifest "bench MANIFEST (pickle)"
# With the flag it loads as before: its code runs (it holds no module, so
# EAGER then fails).
front "$tmp/pickled/manifest.json" -c EAGER --trust-code
checks=$((checks + 1))
[ -e "$tmp/ran-manifest" ] || fail "bench MANIFEST --trust-code did not load the pickle"

# ---- 3. a spec naming a script: refused, flag or not ----
for flag in "" --trust-code; do
  front_expect 1 "a spec naming a script $flag" "$tmp/script/manifest.json" -c EAGER \
    --json "$tmp/script.json" $flag &&
    error_has "$tmp/script.json" "unknown key 'main'" "the spec's script key named"
done
no_marker ran-script "bench MANIFEST (main script)"

# ---- 4. a pickled .pt through the front ----
front_expect 1 "a pickled .pt without the flag" "$tmp/hostile.pt" --shape x=1,4 -c EAGER &&
  expect_in "$tmp/err" "--trust-code" "the front's bench X.pt names the flag"
no_marker ran-pt "python3 -m modelbench bench X.pt"
front "$tmp/hostile.pt" --shape x=1,4 -c EAGER --trust-code
checks=$((checks + 1))
[ -e "$tmp/ran-pt" ] || fail "bench X.pt --trust-code did not load the pickle"
# A real pickled module runs under EAGER with the flag.
front_expect 0 "a trusted pickled nn.Linear" "$tmp/linear.pt" --shape x=1,4 -c EAGER \
  --trust-code --json "$tmp/linear.json" &&
  py "the trusted .pt's EAGER ran" '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["status"] for x in r["results"]] == ["ok"], r["results"]
' "$tmp/linear.json"

# ---- 5. TorchScript stays data: no flag needed ----
front_expect 0 "a TorchScript pytorch form without the flag" \
  "$tmp/scripted/manifest.json" -c EAGER --json "$tmp/scripted.json"

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
