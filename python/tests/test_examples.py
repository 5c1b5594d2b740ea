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


def test_script_analysis_example(tmp_path, cache_dir):
    folder = tmp_path / "script_analysis"
    shutil.copytree(ROOT / "examples" / "script_analysis", folder)
    out = run(["-m", "modelbench", "script", "captioning_demo.py", "--analyze-only",
               "--max-depth", "1"], folder)
    assert "captioner (executed 3x)" in out and "classifier (executed 3x)" in out
    assert "captioner.encoder (executed 3x)" in out  # the wrapped module
    assert "Input:      ids: int64[2, 5]" in out
    out = run(["-m", "modelbench", "script", "captioning_demo.py", "-c", "EAGER,ORT_CPU"]
              + FAST, folder)
    assert "2 models benchmarked, 0 failed" in out, out


def test_profile_function_example(tmp_path, cache_dir):
    folder = tmp_path / "profile_function"
    shutil.copytree(ROOT / "examples" / "profile_function", folder)
    out = run(["profile_classify.py", "--calls", "4", "--min-time", "0",
               "--conversions", "EAGER,JIT_TRACE,ORT_CPU"], folder)
    assert "modelbench profile: classify" in out and "4 calls measured" in out, out
    rows = {line.split()[0]: line for line in out.splitlines()
            if line.strip().startswith(("EAGER ", "JIT_TRACE ", "ORT_CPU "))}
    assert set(rows) == {"EAGER", "JIT_TRACE", "ORT_CPU"}, out
    assert "%" in rows["JIT_TRACE"] and "not validated" in out  # JIT validated, ORT not
    assert "last result: [(" in out
