#!/usr/bin/env bash
# The Python front's suite (cli_python_front.sh) on the current PyTorch from
# PyPI, in the project's virtual environment (scripts/python-venv.sh).
MB_PYTHON_TORCH=2 exec bash "$(dirname "$0")/cli_python_front.sh"
