"""benchmark_model end to end: PyTorch conversions and the engine's ONNX
conversions of an nn.Module in one run, measured by the C engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import modelbench
from modelbench import ConversionError, benchmark_model, benchmark_sweep, display_all_results
from models import Misbehaving, NotExportable, SmallCNN, TwoInputs, make_small_cnn

#: Every PyTorch conversion this PyTorch runs: one file each in
#: conversions/options, so a new file is tested here against EAGER.
PYTORCH = [
    r["name"] for r in modelbench.list_conversions() if r["runtime"] == "pytorch" and r["available"]
]
#: Tested in test_compile.py (on linear layers, which compile in seconds),
#: and not again here on convolutions, where each costs 7-15 s of C++
#: compilation: Inductor's modes but its default (they differ in
#: torch.compile options only; the default mode of each family stands for
#: them here), and torchao's quantize_, which quantises Linear layers only.
COVERED_IN_TEST_COMPILE = {
    "COMPILE_INDUCTOR_MAX_AUTOTUNE", "COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    "COMPILE_INDUCTOR_EAGER_FALLBACK", "EXPORT+COMPILE_INDUCTOR_MAX_AUTOTUNE",
    "EXPORT+COMPILE_INDUCTOR_REDUCE_OVERHEAD", "EXPORT+COMPILE_INDUCTOR_DEFAULT_EAGER_FALLBACK",
    "TORCHAO_AI8WI8_DYNAMIC",
}


def small_cnn() -> SmallCNN:
    torch.manual_seed(0)
    return SmallCNN().eval()


def test_every_pytorch_conversion_against_eager(fast):
    from test_compile import COMPILED, QUANTIZED

    assert COVERED_IN_TEST_COMPILE <= set(COMPILED + QUANTIZED)  # each of them
    names = [n for n in PYTORCH if n not in COVERED_IN_TEST_COMPILE]
    results = benchmark_model(small_cnn(), fast, names, data=torch.randn(3, 8, 8))
    assert list(results) == names
    report = results.report
    assert report["reference"] == "EAGER" and report["baseline"] == "EAGER"
    assert report["model"]["name"] == "SmallCNN"
    assert report["model"]["formats"] == ["pytorch"]
    for name, r in results.items():
        assert r["status"] == "success", (name, r["error"], r["traceback"])
        assert r["bench_status"] == "ok"
        assert r["latency_ms.median"] > 0 and r["iterations"] >= 3
        assert r["batch_size"] == 2 and r["total_samples"] == 2 * r["iterations"]
        assert r["throughput"] == r["throughput_sps"] > 0
        assert r["total_inf_time"] == r["inference_seconds"]
        assert r["accuracy.outputs"][0]["name"] == "output_0"
        exact = name in ("EAGER", "JIT_TRACE", "JIT_SCRIPT", "CHANNELS_LAST")
        if exact:
            assert r["accuracy.max_abs_err"] < 1e-5, (name, r["accuracy"])
        else:  # freezing folds BN; bf16 and int8 approximate
            assert r["accuracy.cosine"] > 0.99, (name, r["accuracy"])
        assert r["peak_rss_mb"] > 0
    assert results["EAGER"]["speedup_vs_baseline"] == 1


def test_onnx_conversions_of_a_module(fast):
    x = torch.randn(3, 8, 8)
    results = benchmark_model(small_cnn(), fast, ["EAGER", "ORT_CPU", "REFERENCE", "ONEDNN"], data=x)
    for name in ("EAGER", "ORT_CPU", "REFERENCE"):
        r = results[name]
        assert r["status"] == "success", (name, r["error"])
        assert r["accuracy.max_abs_err"] < 1e-4, (name, r["accuracy"])
    assert results["ORT_CPU"]["runtime"] == "onnxruntime"
    assert results.report["model"]["formats"] == ["onnx", "pytorch"]
    # The export is a build of the cache: a second run hits it.
    again = benchmark_model(small_cnn(), fast, ["EAGER", "ORT_CPU"], data=x)
    assert again["ORT_CPU"]["status"] == "success"
    assert again.report["model"]["sha256"] == results.report["model"]["sha256"]
    listing = subprocess.run(
        [sys.executable, "-m", "modelbench", "cache", "list", "--json"],
        check=True, capture_output=True, text=True, env=_env(),
    ).stdout
    exports = [b for b in json.loads(listing)["builds"] if "ONNX_EXPORT" in b["id"]]
    assert len(exports) == 1 and exports[0]["hits"] >= 1, exports


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def test_data_loader_with_labels_gives_task_accuracy(fast):
    torch.manual_seed(1)
    model = small_cnn()
    xs = torch.randn(6, 3, 8, 8)
    with torch.no_grad():
        truth = model(xs).argmax(1)
    labels = truth.clone()
    labels[0] = (labels[0] + 1) % 10  # one wrong label: 5 of 6 right
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(xs, labels), batch_size=2
    )
    cfg = dict(fast, n_samples=6)
    results = benchmark_model(model, cfg, ["EAGER", "ORT_CPU"], data_loader=loader)
    for name in ("EAGER", "ORT_CPU"):
        r = results[name]
        assert r["status"] == "success", r["error"]
        assert r["task_accuracy_rows"] == 6
        assert r["task_accuracy"] == pytest.approx(5 / 6)
    assert results.report["config"]["inputs"] is not None


def test_plain_tensor_loader_and_two_inputs(fast):
    ids = torch.randint(0, 50, (2, 5))
    scale = torch.ones(2, 1)
    loader = [(ids, scale), (ids.flip(0), scale * 2)]
    results = benchmark_model(TwoInputs().eval(), fast, ["EAGER", "JIT_TRACE", "ORT_CPU"], data_loader=loader)
    for name, r in results.items():
        assert r["status"] == "success", (name, r["error"], r["traceback"])
        names = [o["name"] for o in r["accuracy"]["outputs"]]
        assert names == ["logits", "hidden"], names
        assert r["task_accuracy"] is None
    inputs = results.report["model"]["inputs"]
    assert [(i["name"], i["dtype"]) for i in inputs] == [("ids", "int64"), ("scale", "float32")]


def test_sample_data_generates_int_inputs_in_range(fast):
    # Generated ids stay within the sample's range: the embedding of 50
    # rows would fail on larger ones.
    data = (torch.tensor([0, 3, 49, 7, 1]), torch.ones(1))
    results = benchmark_model(TwoInputs().eval(), fast, ["EAGER", "ORT_CPU"], data=data)
    assert all(r["status"] == "success" for r in results.values()), results


@pytest.mark.any_torch
def test_fail_on_error_raises_naming_the_conversion(fast):
    cfg = dict(fast, fail_on_error=True)
    with pytest.raises(ConversionError, match="BF16\\+EAGER failed: .*bf16 is not for me") as info:
        benchmark_model(Misbehaving("raise").eval(), cfg, ["EAGER", "BF16+EAGER"], data=torch.randn(4))
    assert info.value.conversion == "BF16+EAGER"
    assert "Traceback" in info.value.traceback


@pytest.mark.any_torch
def test_failures_recorded_and_the_others_measured(fast, capsys):
    cfg = dict(fast, fail_on_error=False)
    results = benchmark_model(Misbehaving("raise").eval(), cfg,
                              ["EAGER", "BF16+EAGER", "JIT_TRACE"], data=torch.randn(4))
    bad = results["BF16+EAGER"]
    assert bad["status"] == "error" and bad["bench_status"] == "error"
    assert "bf16 is not for me" in bad["error"]
    assert "Traceback (most recent call last)" in bad["traceback"]
    assert "models.py" in bad["traceback"]
    assert results["EAGER"]["status"] == results["JIT_TRACE"]["status"] == "success"
    display_all_results(results)
    out = capsys.readouterr().out
    assert "BF16+EAGER results:" in out and "bf16 is not for me" in out
    assert "Throughput:" in out and "Accuracy vs EAGER" in out


@pytest.mark.any_torch
def test_crash_and_hang_are_contained(fast):
    cfg = dict(fast, fail_on_error=False, timeout=20.0)
    crashed = benchmark_model(Misbehaving("crash").eval(), cfg, ["EAGER", "BF16+EAGER"], data=torch.randn(4))
    assert crashed["BF16+EAGER"]["bench_status"] == "crashed"
    assert "SIGSEGV" in crashed["BF16+EAGER"]["error"]
    assert crashed["EAGER"]["status"] == "success"
    hung = benchmark_model(Misbehaving("hang").eval(), cfg, ["BF16+EAGER", "EAGER"], data=torch.randn(4))
    assert hung["BF16+EAGER"]["bench_status"] == "timeout"
    assert "timed out after 20 s" in hung["BF16+EAGER"]["error"]
    assert hung["EAGER"]["status"] == "success"


def test_module_that_cannot_be_exported(fast):
    cfg = dict(fast, fail_on_error=False)
    results = benchmark_model(NotExportable().eval(), cfg, ["EAGER", "ORT_CPU"], data=torch.randn(4))
    assert results["EAGER"]["status"] == "success"
    ort = results["ORT_CPU"]
    assert ort["status"] == "error"
    assert "torch.onnx.export failed" in ort["error"]
    assert "aten::cummax" in ort["error"]


def test_multiprocessing_off(fast):
    cfg = dict(fast, multiprocessing=False)
    results = benchmark_model(small_cnn(), cfg, ["EAGER", "JIT_TRACE", "ORT_CPU"], data=torch.randn(3, 8, 8))
    assert all(r["status"] == "success" for r in results.values()), results
    assert results.report["config"]["isolate"] is False


def test_factory_torchscript_and_onnx_files(fast, tmp_path):
    x = torch.randn(3, 8, 8)
    by_factory = benchmark_model(make_small_cnn, fast, ["EAGER", "JIT_FREEZE"], data=x)
    assert all(r["status"] == "success" for r in by_factory.values())
    scripted = torch.jit.trace(small_cnn(), torch.randn(2, 3, 8, 8))
    pt = tmp_path / "cnn.pt"
    torch.jit.save(scripted, str(pt))
    by_file = benchmark_model(str(pt), fast, ["EAGER", "JIT_FREEZE", "ORT_CPU"], data=x)
    assert all(r["status"] == "success" for r in by_file.values()), by_file
    onnx = tmp_path / "cnn.onnx"
    torch.onnx.export(small_cnn(), torch.randn(2, 3, 8, 8), str(onnx), input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    by_onnx = benchmark_model(str(onnx), dict(fast, fail_on_error=False), ["ORT_CPU", "EAGER"], data=x)
    assert by_onnx["ORT_CPU"]["status"] == "success"
    assert by_onnx.report["reference"] == "interpreter"
    assert "needs a pytorch model" in by_onnx["EAGER"]["error"]


def test_torchscript_on_libtorch_from_python(fast, tmp_path):
    """TORCHSCRIPT runs the module's traced form in the C engine's libtorch
    runtime (no Python in the timed loop), compared with EAGER."""
    x = torch.randn(3, 8, 8)
    results = benchmark_model(small_cnn(), dict(fast, fail_on_error=False),
                              ["EAGER", "TORCHSCRIPT"], data=x)
    r = results["TORCHSCRIPT"]
    row = next(c for c in modelbench.list_conversions() if c["name"] == "TORCHSCRIPT")
    if "another PyTorch" in row["reason"]:
        # A PyTorch with its own libtorch (PyPI's): the C++ runtime, built on
        # Debian's, cannot share the process tree with it, and says so.
        assert r["bench_status"] == "unavailable", r
        assert "another PyTorch is in this process" in r["error"], r["error"]
        assert results["EAGER"]["status"] == "success"
        return
    if r["bench_status"] == "unavailable" and os.environ.get("MB_WITH_TORCH") != "1":
        pytest.skip(f"TORCHSCRIPT unavailable: {r['error']}")
    assert r["status"] == "success", r["error"]
    assert r["runtime"] == "libtorch"
    assert r["accuracy.max_abs_err"] < 1e-5, r["accuracy"]
    assert results.report["reference"] == "EAGER"
    assert "torchscript" in results.report["model"]["formats"]
    # A TorchScript file the user saved runs as it is.
    pt = tmp_path / "cnn.pt"
    torch.jit.save(torch.jit.trace(small_cnn(), torch.randn(2, 3, 8, 8)), str(pt))
    by_file = benchmark_model(str(pt), fast, ["TORCHSCRIPT", "EAGER"], data=x)
    assert by_file["TORCHSCRIPT"]["accuracy.max_abs_err"] < 1e-5, by_file["TORCHSCRIPT"]["accuracy"]


@pytest.mark.any_torch
def test_bad_arguments_fail_before_any_run(fast):
    with pytest.raises(ValueError, match="did you mean EAGER"):
        benchmark_model(small_cnn(), fast, ["EAGRE"], data=torch.randn(3, 8, 8))
    with pytest.raises(ValueError, match="give data"):
        benchmark_model(small_cnn(), fast, ["EAGER"])
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        benchmark_model(42, fast, ["EAGER"], data=torch.randn(3))
    with pytest.raises(ValueError, match="unknown config key 'n_sample'"):
        benchmark_model(small_cnn(), {"n_sample": 3}, ["EAGER"], data=torch.randn(3, 8, 8))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        benchmark_model("/nonexistent/model.pt", fast, ["EAGER"], data=torch.randn(3))


@pytest.mark.any_torch
def test_reports_and_history_like_a_cli_run(fast, tmp_path, cache_dir):
    cfg = dict(fast, json=str(tmp_path / "r.json"), html=str(tmp_path / "r.html"),
               record=True, labels={"branch": "test"})
    results = benchmark_model(small_cnn(), cfg, ["EAGER", "ORT_CPU"], data=torch.randn(3, 8, 8))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["schema_version"] == 1 and report["baseline"] == "EAGER"
    assert [r["conversion"] for r in report["results"]] == ["EAGER", "ORT_CPU"]
    assert set(report["results"][0]) <= set(results["EAGER"])
    html = (tmp_path / "r.html").read_text()
    assert "EAGER" in html and "accuracy against" in html
    history = subprocess.run(
        [sys.executable, "-m", "modelbench", "history", "--json"],
        check=True, capture_output=True, text=True, env=_env(),
    ).stdout
    runs = json.loads(history)["runs"]
    assert len(runs) == 1, runs
    assert runs[0]["labels"] == {"branch": "test", "model": "SmallCNN", "framework": "pytorch"}, runs


@pytest.mark.any_torch
def test_server_scenario_over_a_sweep(fast):
    """scenario= runs `modelbench load`, a sweep one report per point."""
    load = {"scenario": "server", "qps": 40, "slo": "p99=500ms", "min_duration": 0.2,
            "min_queries": 10}
    # EAGER alone: the engine's conversions are cli_load.sh's; this is about
    # the Python side and PyTorch served from the load's threads.
    by_point = benchmark_sweep(small_cnn(), fast, {"threads": [1, 2]}, ["EAGER"],
                               data=torch.randn(3, 8, 8), scenario=load)
    assert list(by_point) == ["threads=1", "threads=2"], list(by_point)
    for point, results in by_point.items():
        assert list(results) == ["EAGER"]
        assert results.report["sweep_point"] == point
        assert results.report["config"]["threads"] == int(point.split("=")[1])
        for name, r in results.items():
            assert r["bench_status"] == "ok", (name, r["error"])
            assert r["load"]["scenario"] == "server" and r["load"]["target_qps"] == 40
            assert r["load"]["queries"] >= 10 and isinstance(r["load"]["valid"], bool)
            assert r["load.slo.latency_ms"] == pytest.approx(r["latency_ms.p99"], rel=0.5)


@pytest.mark.any_torch
def test_bad_scenario_and_sweep_fail_before_any_run(fast):
    x = torch.randn(3, 8, 8)
    with pytest.raises(ValueError, match="scenario 'bogus': expected one of"):
        benchmark_model(small_cnn(), fast, ["EAGER"], data=x, scenario="bogus")
    with pytest.raises(ValueError, match="unknown scenario key 'qpss' \\(did you mean 'qps'"):
        benchmark_model(small_cnn(), fast, ["EAGER"], data=x,
                        scenario={"scenario": "server", "qpss": 10})
    with pytest.raises(TypeError, match="scenario key 'concurrency' must be int"):
        benchmark_model(small_cnn(), fast, ["EAGER"], data=x,
                        scenario={"scenario": "offline", "concurrency": 1.5})
    with pytest.raises(ValueError, match="unknown sweep key 'batches'"):
        benchmark_sweep(small_cnn(), fast, {"batches": [1, 2]}, ["EAGER"], data=x)
    with pytest.raises(ValueError, match="sweep key 'threads' takes a non-empty list"):
        benchmark_sweep(small_cnn(), fast, {"threads": []}, ["EAGER"], data=x)
    with pytest.raises(ValueError, match="executor runs plain benchmarks"):
        benchmark_model(small_cnn(), fast, ["EAGER"], data=x, scenario="server",
                        executor="slurm")


class IgnoresItsInput(torch.nn.Module):
    """Its ONNX export has no input (the exporters drop an unused one)."""

    def __init__(self) -> None:
        super().__init__()
        self.p = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return self.p * 2


def test_an_export_without_the_declared_inputs_fails_the_onnx_rows_only(fast):
    results = benchmark_model(IgnoresItsInput(), dict(fast, fail_on_error=False),
                              ["EAGER", "ORT_CPU"], data=torch.randn(4))
    assert results["EAGER"]["status"] == "success", results["EAGER"]["error"]
    assert results["ORT_CPU"]["status"] == "error"
    assert "declares 1 inputs but its ONNX model" in results["ORT_CPU"]["error"]
