"""The examples end to end at a small size, from a copy of their folders
(so that the data and models they write stay out of the source tree)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
FAST = ["--min-time", "0", "--min-iterations", "3", "--warmup", "1", "--no-record"]


def run(args, cwd, timeout=600):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python")
    proc = subprocess.run(
        [sys.executable] + args, cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_linear_example(tmp_path, cache_dir):
    folder = tmp_path / "linear"
    shutil.copytree(ROOT / "examples" / "linear", folder)
    out = run(["benchmark_random_tensor.py", "--conversions", "EAGER,JIT_TRACE,ORT_CPU",
               "--batch-size", "4", "--n-samples", "8"] + FAST, folder)
    for name in ("EAGER", "JIT_TRACE", "ORT_CPU"):
        assert f"{name} results:" in out
    assert out.count("Throughput:") == 3, out


def test_mnist_example(tmp_path, cache_dir):
    folder = tmp_path / "mnist"
    shutil.copytree(ROOT / "examples" / "mnist", folder,
                    ignore=shutil.ignore_patterns("*.npz", "model", "__pycache__"))
    subprocess.run(["bash", "data/setup-data.sh"], cwd=folder, check=True,
                   capture_output=True)
    assert (folder / "data" / "test.npz").exists()
    out = run(["train.py", "--epochs", "1", "--quantize"], folder)
    acc = float(re.search(r"test accuracy \(float\): ([\d.]+)%", out).group(1))
    assert acc > 50, out  # one epoch already learns the digits
    assert (folder / "model" / "mnist_ptq.pt").exists()

    out = run(["benchmark_with_dataloader.py", "--conversions",
               "EAGER,INT8_STATIC+EAGER,ORT_CPU", "--batch-size", "40"] + FAST, folder)
    tasks = dict(re.findall(r"^  (\S+)\s+([\d.]+)% of 360$", out, re.M))
    assert set(tasks) == {"EAGER", "INT8_STATIC+EAGER", "ORT_CPU"}, out
    assert abs(float(tasks["ORT_CPU"]) - float(tasks["EAGER"])) < 1.0, tasks

    out = run(["benchmark_random_tensor.py", "--model-path", "model/mnist_ptq.pt",
               "--conversions", "EAGER,JIT_FREEZE"] + FAST, folder)
    assert out.count("Throughput:") == 2, out
