"""EXPORT+AOT_INDUCTOR: the module exported, compiled ahead of time by
AOTInductor into a package, and the package run from C (the aoti runtime,
libtorch's AOTIModelPackageLoader) with no Python in the timed loop; the
package kept in the build cache; on PyTorch 1.x, unavailable and why."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import zipfile

import pytest
import torch
from torch import nn

import modelbench
from modelbench import benchmark_model

HAS_AOTI = hasattr(getattr(torch, "_inductor", None), "aoti_compile_and_package") \
    if int(torch.__version__.split(".")[0]) >= 2 else False


def mlp() -> nn.Module:
    """Two linear layers around a GELU: quick for AOTInductor to compile, and
    with an elementwise op that its generated (vectorised) code computes."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).eval()


def aoti_row() -> dict:
    return next(c for c in modelbench.list_conversions() if c["name"] == "EXPORT+AOT_INDUCTOR")


def cli() -> str:
    """The modelbench program beside the library under test, or "" ."""
    lib = os.environ.get("MODELBENCH_LIBRARY", "")
    path = os.path.join(os.path.dirname(os.path.dirname(lib)), "bin", "modelbench")
    return path if lib and os.access(path, os.X_OK) else ""


@pytest.mark.skipif(not HAS_AOTI, reason="AOTInductor packages need PyTorch 2.6")
def test_aot_inductor_package_runs_from_c(fast, cache_dir, tmp_path):
    row = aoti_row()
    if not row["available"]:
        if os.environ.get("MB_WITH_TORCH2") == "1":
            pytest.fail(f"EXPORT+AOT_INDUCTOR unavailable: {row['reason']}")
        pytest.skip(f"EXPORT+AOT_INDUCTOR unavailable: {row['reason']}")
    x = torch.randn(16)
    names = ["EAGER", "EXPORT+AOT_INDUCTOR"]
    first = benchmark_model(mlp(), fast, names, data=x)
    r = first["EXPORT+AOT_INDUCTOR"]
    assert r["status"] == "success", (r["error"], r["traceback"])
    assert r["runtime"] == "aoti" and r["runtime_version"] == torch.__version__.split("+")[0]
    assert r["accuracy.max_abs_err"] < 1e-5 and r["accuracy.cosine"] > 0.99999, r["accuracy"]
    # Compiling the package was the build: its seconds, never timed as
    # inference; the package lands in the build cache.
    assert r["cache_hit"] is False and r["build_ms"] > 100, r
    packages = glob.glob(str(cache_dir / "**" / "model.pt2"), recursive=True)
    assert len(packages) == 1, packages
    # Inductor's code was compiled for this CPU's vector instructions (a
    # Debian libtorch beside the wheel made it fall back to scalar code).
    if torch.cpu._is_avx2_supported():
        with zipfile.ZipFile(packages[0]) as z:
            meta = [json.loads(z.read(n)) for n in z.namelist()
                    if n.endswith("wrapper_metadata.json")]
        assert meta and meta[0]["AOTI_CPU_ISA"] != "INVALID_VEC_ISA", meta
        # Compiled for the device it ran on: the CPU here.
        assert meta[0].get("AOTI_DEVICE_KEY", "cpu") == "cpu", meta
    assert {"device": "cpu", "here": True} in row["devices"], row

    again = benchmark_model(mlp(), fast, names, data=x)
    r2 = again["EXPORT+AOT_INDUCTOR"]
    assert r2["status"] == "success", (r2["error"], r2["traceback"])
    assert r2["cache_hit"] is True and r2["build_ms"] == 0, r2

    # The same package from the command line: a C program, no Python.
    program = cli()
    if not program:
        return
    manifest = tmp_path / "aoti.json"
    manifest.write_text(json.dumps({
        "modelbench_model": 1, "name": "mlp",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 16]}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [2, 4]}],
        "formats": {"aoti": {"path": packages[0]}},
    }))
    report = tmp_path / "cli.json"
    proc = subprocess.run([program, "bench", str(manifest), "-c", "EXPORT+AOT_INDUCTOR",
                           "--min-iterations", "3", "--warmup", "1", "--min-time", "0",
                           "--json", str(report)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(report.read_text())["results"][0]
    assert result["status"] == "ok" and result["runtime"] == "aoti", result


@pytest.mark.skipif(not HAS_AOTI, reason="AOTInductor packages need PyTorch 2.6")
def test_cuda_package_needs_a_gpu(tmp_path):
    """A package for CUDA is compiled only where this PyTorch sees a GPU;
    elsewhere the export says why (and the engine never places
    EXPORT+AOT_INDUCTOR on CUDA there: its devices' "here")."""
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the device check compiles for it")
    from modelbench.model import compile_aoti, trace_module

    with pytest.raises(RuntimeError, match="an export for cuda needs a GPU"):
        compile_aoti(mlp(), (torch.randn(2, 16),), str(tmp_path / "m.pt2"), device="cuda")
    assert not (tmp_path / "m.pt2").exists()
    # TORCHSCRIPT's trace likewise (a trace keeps its ops' devices).
    with pytest.raises(RuntimeError, match="an export for cuda needs a GPU"):
        trace_module(mlp(), (torch.randn(2, 16),), str(tmp_path / "m.pt"), device="cuda")
    assert {"device": "cuda", "here": False} in aoti_row()["devices"]


def test_isa_check_links_the_running_torch():
    """Inductor's CPU check builds against this torch, not a libtorch that
    happens to sit in Python's library folder (Debian's libtorch-dev)."""
    from modelbench import inductor

    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    assert inductor.foreign_libtorch(lib, lib) == []
    assert inductor.foreign_libtorch(None, lib) == []
    # Debian's torch/lib links to the files in /usr/lib: the same libtorch.
    debian = "/usr/lib/x86_64-linux-gnu"
    if glob.glob(os.path.join(debian, "libtorch_cpu.so*")):
        ours = os.path.realpath(os.path.join(lib, "libtorch_cpu.so")) == \
            os.path.realpath(os.path.join(debian, "libtorch_cpu.so"))
        assert bool(inductor.foreign_libtorch(debian, lib)) != ours


@pytest.mark.skipif(HAS_AOTI, reason="PyTorch before 2.6 only")
def test_aot_inductor_says_why_not(fast):
    row = aoti_row()
    assert not row["available"]
    assert "another PyTorch" in row["reason"] or "built without" in row["reason"], row
    results = benchmark_model(mlp(), dict(fast, fail_on_error=False),
                              ["EAGER", "EXPORT+AOT_INDUCTOR"], data=torch.randn(16))
    assert results["EAGER"]["status"] == "success"
    r = results["EXPORT+AOT_INDUCTOR"]
    assert r["status"] == "error", r
    assert "AOTInductor packages need PyTorch 2.6" in r["error"] or \
        "another PyTorch" in r["error"], r["error"]
