#!/usr/bin/env bash
# `modelbench script`: the C CLI hands over to the Python front
# (python3 -m modelbench script), with a clear error when Python is missing.
# The discovery and benchmark themselves are tested by pytest
# (python/tests/test_script.py).
#
# In sanitizer builds only the error paths run: Debian's python3 cannot
# load an ASan libmodelbench.
set -uo pipefail

: "${MB_CLI:?MB_CLI must name the modelbench binary}"
cli=$MB_CLI
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/shell_lib.sh
. "$(dirname "$0")/shell_lib.sh"

run 0 --help && expect_in "$tmp/out" "script" "modelbench --help lists script"

# No Python: exit 1 naming the interpreter and what to install.
MODELBENCH_PYTHON=$tmp/no-python run 1 script demo.py &&
  expect_in "$tmp/err" "$tmp/no-python" "missing python named" &&
  expect_in "$tmp/err" "apt install python3 python3-torch" "missing python: the fix"
MODELBENCH_PYTHON=$tmp/no-python run 1 script --help &&
  expect_in "$tmp/out" "Usage: modelbench script" "help without python"

if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "SKIP (sanitizer build): the hand-over to Python"
elif ! "$python" -c 'import torch, numpy' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
    fail "MB_WITH_TORCH=1 but $python cannot import torch and numpy"
  else
    echo "SKIP: $python lacks torch or numpy"
  fi
else
  export MODELBENCH_CACHE_DIR=$tmp/cache
  cat >"$tmp/demo.py" <<'PY'
# labels: kind::cli
import torch
model = torch.nn.Linear(4, 2)
for _ in range(2):
    model(torch.randn(3, 4))
PY
  run 0 script "$tmp/demo.py" --analyze-only &&
    expect_in "$tmp/out" "model (executed 2x)" "the tree names the model" &&
    expect_in "$tmp/out" "Input:      input: float32[3, 4]" "the input signature" &&
    expect_in "$tmp/out" "labels: kind::cli" "the labels"
  run 0 script --help && expect_in "$tmp/out" "--analyze-only" "Python's help"
  usage_error "did you mean" script "$tmp/demo.py" -c EAGR
  run 1 script "$tmp/missing.py" --analyze-only &&
    expect_in "$tmp/out" "no such file or folder" "a missing script"
fi

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
