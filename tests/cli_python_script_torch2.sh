#!/usr/bin/env bash
# `modelbench script` and function profiles (cli_python_script.sh) on the
# current PyTorch from PyPI, in the project's virtual environment.
MB_PYTHON_TORCH=2 MB_PYTEST_PART=script exec bash "$(dirname "$0")/cli_python_front.sh"
