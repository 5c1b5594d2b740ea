#!/usr/bin/env bash
# Every conversion of an nn.Module against eager (cli_python_conversions.sh)
# on the current PyTorch from PyPI, in the project's virtual environment.
MB_PYTHON_TORCH=2 MB_PYTEST_PART=conversions exec bash "$(dirname "$0")/cli_python_front.sh"
