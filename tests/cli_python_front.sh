#!/usr/bin/env bash
# The Python front (python/modelbench): its pytest suite, run with Debian's
# /usr/bin/python3 against this build's libmodelbench.so. The suite covers
# alma's API, every PyTorch conversion, ONNX conversions of an nn.Module,
# data loaders and labels, failures, crashes and hangs, reports and history
# (python/tests/).
#
# Skipped in sanitizer builds: Debian's python is not built with ASan, so an
# ASan libmodelbench cannot be loaded into it. Without torch or pytest the
# test is skipped, unless MB_WITH_TORCH=1 (set by `make test`): then their
# absence is a failure.
set -uo pipefail

: "${MB_SOURCE_DIR:?MB_SOURCE_DIR must name the source tree}"
: "${MB_BUILD_DIR:?MB_BUILD_DIR must name the build tree}"
# MB_PYTHON_TORCH=2 (cli_python_*_torch2.sh): a part of the suite on the
# current PyTorch from PyPI, in the project's virtual environment
# (scripts/python-venv.sh; `make test` makes it, MB_WITH_TORCH2=1).
python=/usr/bin/python3

if [ "${MB_SANITIZE:-OFF}" = ON ]; then
  echo "SKIP: sanitizer build (Debian's python3 cannot load an ASan library)"
  exit 0
fi
if [ "${MB_PYTHON_TORCH:-1}" = 2 ]; then
  python=$("$MB_SOURCE_DIR/scripts/python-venv.sh" --path)
  if [ ! -x "$python" ]; then
    if [ "${MB_WITH_TORCH2:-0}" = 1 ]; then
      echo "FAIL: MB_WITH_TORCH2=1 but $python is missing: run scripts/python-venv.sh" >&2
      exit 1
    fi
    echo "SKIP: no PyTorch 2.x virtual environment (make test makes it)"
    exit 0
  fi
  "$python" -c 'import torch; print("PyTorch", torch.__version__)'
elif ! "$python" -c 'import torch, pytest, numpy' 2>/dev/null; then
  if [ "${MB_WITH_TORCH:-0}" = 1 ]; then
    echo "FAIL: MB_WITH_TORCH=1 but '$python -c \"import torch, pytest, numpy\"'" \
      "fails; install python3-torch python3-pytest python3-numpy" >&2
    exit 1
  fi
  echo "SKIP: /usr/bin/python3 lacks torch, pytest or numpy"
  exit 0
fi

export PYTHONPATH=$MB_SOURCE_DIR/python${PYTHONPATH:+:$PYTHONPATH}
export MODELBENCH_LIBRARY=$MB_BUILD_DIR/lib/libmodelbench.so
# Nothing from this run reaches the user's cache or history.
MODELBENCH_CACHE_DIR=$(mktemp -d)
export MODELBENCH_CACHE_DIR
trap 'rm -rf "$MODELBENCH_CACHE_DIR"' EXIT
cd "$MB_SOURCE_DIR/python" || exit 1
# The suite in three ctest entries of a few minutes each, so that ctest -j
# spreads them over the cores and each fits its timeout (MB_PYTEST_PART):
# `modelbench script` and function profiles (cli_python_script.sh), every
# conversion of an nn.Module and alma's API (cli_python_conversions.sh),
# and the rest (this script). The first two run on both PyTorch versions
# (_torch2.sh): what they test goes through PyTorch (tracing, exporting,
# compiling, hooks on modules), but for their any_torch tests. The rest (configs, errors, reports, the
# catalog, trust, tune, the examples) goes through the C engine the same way
# whatever PyTorch is installed, so it runs once, on Debian's PyTorch,
# which imports in half the time of PyPI's.
script_tests=(tests/test_script.py tests/test_script_examples.py tests/test_profile.py)
conversion_tests=(tests/test_benchmark.py tests/test_compile.py tests/test_aoti.py
  tests/test_onnx_forms.py tests/test_alma.py)
case ${MB_PYTEST_PART:-front} in
script) targets=("${script_tests[@]}") ;;
conversions) targets=("${conversion_tests[@]}") ;;
front)
  targets=(tests "${script_tests[@]/#/--ignore=}" "${conversion_tests[@]/#/--ignore=}")
  ;;
*)
  echo "FAIL: MB_PYTEST_PART=$MB_PYTEST_PART: script, conversions or front" >&2
  exit 1
  ;;
esac
# Tests marked any_torch (modelbench's own mechanics, python/tests/conftest.py)
# run on Debian's PyTorch only, as the front part does.
select=()
if [ "${MB_PYTHON_TORCH:-1}" = 2 ]; then
  select=(-m "not any_torch")
fi
# The slowest tests in the log: where the suite's minutes go.
PYTHONDONTWRITEBYTECODE=1 "$python" -m pytest -q -p no:cacheprovider --durations=15 \
  "${select[@]}" "${targets[@]}"
