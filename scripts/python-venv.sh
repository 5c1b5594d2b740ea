#!/usr/bin/env bash
# The virtual environment with the current PyTorch from PyPI (the pins in
# python/requirements-torch2.txt), beside Debian's python3-torch 1.13: the
# Python suite runs on both. Made once per set of pins and reused:
#   ${MB_TORCH2_VENV:-~/.cache/modelbench/venv/torch2-<hash of the pins>}
# A half-made one (interrupted download) is made again. Non-interactive;
# never touches the system Python.
#   scripts/python-venv.sh          make it when missing; print nothing
#   scripts/python-venv.sh --path   print its python3 (made or not)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pins=$here/../python/requirements-torch2.txt
hash=$(sha256sum "$pins" | cut -c1-12)
venv=${MB_TORCH2_VENV:-${HOME}/.cache/modelbench/venv/torch2-$hash}
if [ "${1:-}" = --path ]; then
  echo "$venv/bin/python3"
  exit 0
fi
[ -f "$venv/.modelbench-complete" ] && exit 0

echo "modelbench: making $venv (PyTorch from PyPI: $(grep -E '^torch==' "$pins"))"
rm -rf "$venv"
# Environments of older pins (5 GB each) go; one given by MB_TORCH2_VENV is
# the user's to keep.
if [ -z "${MB_TORCH2_VENV:-}" ]; then
  for old in "$(dirname "$venv")"/torch2-*; do
    if [ "$old" != "$venv" ] && [ -d "$old" ]; then
      rm -rf "$old"
    fi
  done
fi
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
start=$(date +%s)
# Quiet, but a failure shows pip's own words.
if ! log=$("$venv/bin/python3" -m pip install --no-input --disable-pip-version-check \
    -r "$pins" 2>&1); then
  echo "$log" | tail -20 >&2
  echo "modelbench: pip could not install python/requirements-torch2.txt" >&2
  exit 1
fi
touch "$venv/.modelbench-complete"
echo "modelbench: $venv ready in $(( $(date +%s) - start )) s ($(du -sh "$venv" | cut -f1))"
