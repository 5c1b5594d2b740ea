#!/usr/bin/env bash
# Every conversion of an nn.Module against eager (python/tests/
# test_benchmark.py, test_compile.py, test_aoti.py, test_onnx_forms.py): the
# Python front's pytest suite runner (cli_python_front.sh, same skips) on
# those files only, so that they run beside the rest of the suite.
MB_PYTEST_PART=conversions exec bash "$(dirname "$0")/cli_python_front.sh"
