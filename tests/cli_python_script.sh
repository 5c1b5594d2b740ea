#!/usr/bin/env bash
# `modelbench script` and function profiles (python/tests/test_script.py,
# test_script_examples.py, test_profile.py): the Python front's pytest suite
# runner (cli_python_front.sh, same skips) on those files only, so that they
# run beside the rest of the suite and each part fits its timeout.
MB_PYTEST_PART=script exec bash "$(dirname "$0")/cli_python_front.sh"
