"""Shared fixtures: small modules, a fast config, a private cache folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

torch = pytest.importorskip("torch")


def pytest_configure(config: pytest.Config) -> None:
    """The any_torch marker: see its line below."""
    config.addinivalue_line(
        "markers",
        "any_torch: tests modelbench's own mechanics (the cache, hashes, labels, options, "
        "failures, reports), which go through the C engine alike on any PyTorch: make test "
        "runs it once, on Debian's PyTorch (tests/cli_python_front.sh)")


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    """Every run keeps its builds and history in a folder of its own."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MODELBENCH_CACHE_DIR", str(folder))
    return folder


@pytest.fixture()
def fast(cache_dir):
    """A config that measures briefly: behaviour, not timing, is tested."""
    return {
        "batch_size": 2,
        "n_samples": 4,
        "warmup": 1,
        "warmup_time": 0.0,
        "min_iterations": 3,
        "min_time": 0.0,
        "max_time": 5.0,
        "timeout": 120.0,
        "calibration_samples": 2,
        "record": False,
    }
