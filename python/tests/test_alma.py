"""alma's interface, exactly, on the PyTorch at hand (Debian's 1.13 and the
current 2.x): its import paths, config keys and value types, conversion
names and ids, parse_benchmark_args, helpers and result keys; and a model
reaching the workers wherever it was defined. The alma examples (its README,
its MNIST example, a tier integration) are written anew here, in our words,
making the same calls with only the import changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import modelbench
from modelbench.conversions import alma as alma_table

PYTHON_DIR = str(Path(__file__).resolve().parent.parent)
FAST = {"warmup": 1, "warmup_time": 0.0, "max_time": 5.0, "timeout": 120.0,
        "calibration_samples": 2, "record": False}


class Net(torch.nn.Module):
    """MNIST-sized: a convolution, a pool and a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4 * 14 * 14, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))


def test_alma_import_paths():
    from modelbench.arguments.benchmark_args import parse_benchmark_args
    from modelbench.benchmark import BenchmarkConfig
    from modelbench.benchmark.log import display_all_results, log_failure, log_results
    from modelbench.benchmark_model import benchmark_model
    from modelbench.conversions.conversion_options import MODEL_CONVERSION_OPTIONS
    from modelbench.utils import save_dict_to_json
    from modelbench.utils.load_model import load_model
    from modelbench.utils.multiprocessing.lazyload import lazyload
    from modelbench.utils.setup_logging import setup_logging

    assert benchmark_model is modelbench.api.benchmark_model
    assert callable(modelbench.benchmark_model)  # the module is callable too
    assert BenchmarkConfig is modelbench.BenchmarkConfig
    assert display_all_results is modelbench.display_all_results
    assert len(MODEL_CONVERSION_OPTIONS) == 72
    assert MODEL_CONVERSION_OPTIONS[0].mode == "EAGER"
    assert MODEL_CONVERSION_OPTIONS[32].mode == "TORCH_SCRIPT"
    for f in (parse_benchmark_args, log_failure, log_results, save_dict_to_json, load_model,
              lazyload, setup_logging):
        assert callable(f)


def test_alma_config_keys_and_types():
    from modelbench.benchmark import BenchmarkConfig

    assert BenchmarkConfig(device=torch.device("cpu")).device == "cpu"
    assert BenchmarkConfig(device=torch.device("cuda", 0)).device == "cuda:0"
    assert BenchmarkConfig(device="cuda:1").device == "cuda:1"
    assert BenchmarkConfig(device="mps").device == "mps"
    assert BenchmarkConfig().device is None  # alma picks
    cfg = BenchmarkConfig.from_any({"allow_cuda": False, "allow_mps": False, "tier": 2,
                                    "device": torch.device("cpu")})
    assert (cfg.allow_cuda, cfg.allow_mps, cfg.tier) == (False, False, 2)
    with pytest.raises(ValueError, match="'device'.*'cuda:x'"):
        BenchmarkConfig(device="cuda:x")
    with pytest.raises(ValueError, match="'tier' must be 1, 2 or 3"):
        BenchmarkConfig(tier=4)
    with pytest.raises(ValueError, match="did you mean 'allow_cuda'"):
        BenchmarkConfig.from_any({"allow_cud": True})


#: alma's torch 2.x options modelbench runs under alma's own names.
RUNS_ON_TORCH2 = [
    "COMPILE_INDUCTOR_DEFAULT", "COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE", "COMPILE_INDUCTOR_EAGER_FALLBACK",
    "EXPORT+EAGER", "EXPORT+COMPILE_INDUCTOR_DEFAULT", "EXPORT+COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    "EXPORT+COMPILE_INDUCTOR_MAX_AUTOTUNE", "EXPORT+COMPILE_INDUCTOR_DEFAULT_EAGER_FALLBACK",
    "EXPORT+AI8WI8_STATIC_QUANTIZED", "EXPORT+AI8WI8_FLOAT_QUANTIZED", "EXPORT+AOT_INDUCTOR",
    "COMPILE_OPENVINO",
]
#: alma's GPU options modelbench runs under alma's own names (on a CUDA GPU:
#: elsewhere `list` says why not, from the engine's device check).
RUNS_ON_GPU = ["COMPILE_CUDAGRAPHS", "FP16+EAGER", "FP16+COMPILE_CUDAGRAPHS",
               "FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD"]


def test_every_alma_id_and_name_means_what_it_means_in_alma():
    from modelbench.conversions import select

    chosen = select(list(range(72)))
    assert [c.key for c in chosen] == alma_table.ALMA_MODES
    runs = {c.key: c.name for c in chosen if c.name}
    assert runs == {"EAGER": "EAGER", "ONNX_CPU": "ORT_CPU", "JIT_TRACE": "JIT_TRACE",
                    "ONNX+DYNAMO_EXPORT": "ONNX+DYNAMO_EXPORT",
                    "TORCH_SCRIPT": "JIT_SCRIPT", "BF16+EAGER": "BF16+EAGER",
                    "NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED": "INT8_STATIC+EAGER",
                    "NATIVE_FAKE_QUANTIZED_AI8WI8_STATIC": "FAKE_QUANT+EAGER",
                    # PyTorch 2 (unavailable on 1.x, saying so: test_compile.py)
                    **{n: n for n in RUNS_ON_TORCH2 + RUNS_ON_GPU}}
    for c in chosen:
        if c.name is None:
            assert c.reason and c.key in c.reason, c
    gpu = next(c for c in chosen if c.key == "EXPORT+COMPILE_CUDAGRAPHS")
    if not torch.cuda.is_available():
        assert "a CUDA GPU (none here)" in gpu.reason
    # Names select the same as ids; modelbench's ids are written mb:N.
    assert [c.key for c in select(["TORCH_SCRIPT", "onnx_cpu", "mb:60", 10])] == [
        "TORCH_SCRIPT", "ONNX_CPU", "EAGER", "COMPILE_ONNXRT"]
    with pytest.raises(ValueError, match="alma's ids are 0-71.*mb:N"):
        select([72])
    with pytest.raises(ValueError, match="listed twice \\(as TORCH_SCRIPT\\)"):
        select(["TORCH_SCRIPT", "JIT_SCRIPT"])


def test_parse_benchmark_args_as_alma():
    from modelbench.arguments.benchmark_args import parse_benchmark_args

    args, conversions = parse_benchmark_args(argv=[])
    assert len(conversions) == 72 and conversions[0].mode == "EAGER"
    assert (args.batch_size, args.n_samples, args.model_path) == (64, 2048, None)
    args, conversions = parse_benchmark_args(
        argv=["--conversions", "10,2", "TORCH_SCRIPT", "--model-path", "m.pt", "--no-cuda",
              "--device", "cuda:0"])
    assert [c.mode for c in conversions] == ["COMPILE_ONNXRT", "ONNX_CPU", "TORCH_SCRIPT"]
    assert args.conversions == conversions and isinstance(args.model_path, Path)
    assert args.config.device == "cuda:0" and args.config.allow_cuda is False
    with pytest.raises(SystemExit):
        parse_benchmark_args(argv=["--conversions", "EAGRE"])


def test_alma_readme_call(cache_dir):
    """alma's README: a BenchmarkConfig with a torch.device, a data loader,
    conversions of which some modelbench lacks; results by those names."""
    from modelbench import benchmark_model
    from modelbench.benchmark import BenchmarkConfig
    from modelbench.benchmark.log import display_all_results

    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    torch.manual_seed(0)
    model = Net().eval()
    data = torch.utils.data.TensorDataset(torch.randn(16, 1, 28, 28))
    data_loader = torch.utils.data.DataLoader(data, batch_size=8)
    config = BenchmarkConfig(n_samples=16, batch_size=8, device=device, **FAST)
    # alma's README lists COMPILE_INDUCTOR_MAX_AUTOTUNE, which modelbench now
    # runs (test_compile.py); two options it does not run stand in for it.
    conversions = ["EAGER", "TORCH_SCRIPT", "COMPILE_TENSORRT", "COMPILE_OPENXLA"]
    results = benchmark_model(model, config, conversions, data_loader=data_loader)
    assert list(results) == conversions
    for name in ("EAGER", "TORCH_SCRIPT"):
        r = results[name]
        assert r["status"] == "success", r["error"]
        assert r["total_samples"] == 16 and r["iterations"] == 2  # n_samples bounds it
        assert r.get("latency_ms.median") == r["latency_ms.median"] > 0
        assert r.get("accuracy.cosine") == pytest.approx(1.0, abs=1e-6)
    for name in ("COMPILE_TENSORRT", "COMPILE_OPENXLA"):
        r = results[name]
        assert r["status"] == "error" and r["bench_status"] == "unavailable"
        assert "not a modelbench conversion yet" in r["error"]
    assert "torch_xla" in results["COMPILE_OPENXLA"]["error"]
    assert results.recommendation["fastest_accurate"] in ("EAGER", "TORCH_SCRIPT")
    assert "Deploy" in results.recommendation["summary"]
    lines: list = []
    display_all_results(results, display_function=lines.append)
    assert "COMPILE_OPENXLA results:" in lines and any("Recommendation" in x for x in lines)
    assert results.get("missing") is None and results["EAGER"].get("no.such") is None


def test_alma_mnist_example(tmp_path, cache_dir):
    """alma's MNIST example: weights saved by training, loaded with alma's
    load_model into the architecture, a (images, labels) data loader,
    conversions from the command line, results saved as JSON."""
    from modelbench.arguments.benchmark_args import parse_benchmark_args
    from modelbench.benchmark.log import display_all_results
    from modelbench.benchmark_model import benchmark_model
    from modelbench.utils.file_utils import save_dict_to_json
    from modelbench.utils.load_model import load_model
    from modelbench.utils.setup_logging import setup_logging

    setup_logging(log_file=None, level="ERROR")
    torch.manual_seed(1)
    torch.save(Net().state_dict(), tmp_path / "mnist.pt")
    args, conversions = parse_benchmark_args(argv=[
        "--model-path", str(tmp_path / "mnist.pt"), "--batch-size", "10", "--n-samples", "20",
        "--conversions", "0,2,26,31", "--data-dir", str(tmp_path)])
    model = load_model(args.model_path, "cpu", logger=None, modelArchitecture=Net)
    images = torch.rand(20, 1, 28, 28)
    labels = model(images).argmax(1)  # the float model is right on every row
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images, labels),
                                         batch_size=args.batch_size)
    config = {"n_samples": args.n_samples, "batch_size": args.batch_size,
              "multiprocessing": True, "fail_on_error": False, **FAST}
    results = benchmark_model(model, config, args.conversions, data_loader=loader)
    assert list(results) == ["EAGER", "ONNX_CPU", "NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED",
                             "JIT_TRACE"]
    for name, r in results.items():
        assert r["status"] == "success", (name, r["error"])
        assert r["total_samples"] == 20
        assert r["task_accuracy_rows"] == 20
    assert results["EAGER"]["task_accuracy"] == 1.0
    display_all_results(results, display_function=lambda s: None,
                        include_traceback_for_errors=True)
    save_dict_to_json(results, str(tmp_path / "result.json"))
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["ONNX_CPU"]["status"] == "success"
    # A TorchScript file given by path, with the same (images, labels) loader.
    torch.jit.save(torch.jit.trace(model, images[:1]), str(tmp_path / "mnist_ts.pt"))
    results = benchmark_model(str(tmp_path / "mnist_ts.pt"), config, ["EAGER"],
                              data_loader=loader)
    assert results["EAGER"]["status"] == "success", results["EAGER"]["error"]


def test_tier_integration(cache_dir):
    """An integration that picks conversions by tier and reads the ids back."""
    from modelbench import benchmark_model

    torch.manual_seed(0)
    results = benchmark_model(Net().eval(), {"tier": 1, "batch_size": 1, "n_samples": 2,
                                             **FAST}, data=torch.randn(1, 28, 28))
    tier1 = [r["name"] for r in modelbench.list_conversions()
             if r["tier"] == 1 and r["available"]]
    assert list(results) == tier1 and "EAGER" in tier1
    assert all(r["status"] == "success" for r in results.values())
    with pytest.raises(ValueError, match="not both"):
        benchmark_model(Net(), {"tier": 1}, ["EAGER"], data=torch.randn(1, 28, 28))
    with pytest.raises(ValueError, match="'device' is mps.*allow_device_override"):
        benchmark_model(Net(), {"device": "mps", "allow_device_override": False}, ["EAGER"],
                        data=torch.randn(1, 28, 28))


def test_list_conversions_agrees_with_the_cli():
    rows = {r["name"]: r for r in modelbench.list_conversions()}
    assert rows["EAGER"]["available"] and rows["JIT_TRACE"]["available"]


def test_lazyload_builds_once(cache_dir):
    from modelbench.utils.multiprocessing.lazyload import lazyload

    built = []

    @lazyload
    class Lazy(Net):
        def __init__(self) -> None:
            built.append(1)
            super().__init__()

    model = Lazy()
    assert not model.is_loaded() and built == []
    results = modelbench.benchmark_model(model, {"n_samples": 2, **FAST}, ["EAGER", 2],
                                         data=torch.randn(1, 28, 28))
    assert built == [1] and results["ONNX_CPU"]["status"] == "success"


def test_a_pickled_model_file_is_not_loaded_unless_allowed(tmp_path, cache_dir):
    torch.save(Net(), tmp_path / "whole.pt")
    with pytest.raises(ValueError, match="trust_code"):
        modelbench.benchmark_model(str(tmp_path / "whole.pt"), {"n_samples": 1, **FAST},
                                   ["EAGER"], data=torch.randn(1, 28, 28))
    results = modelbench.benchmark_model(str(tmp_path / "whole.pt"),
                                         {"n_samples": 1, "trust_code": True, **FAST},
                                         ["EAGER"], data=torch.randn(1, 28, 28))
    assert results["EAGER"]["status"] == "success"


# ---------------------------------------------------------------------------
# A new user's first call, wherever the model is defined
# ---------------------------------------------------------------------------

FIRST_CALL = textwrap.dedent('''
    import torch
    from modelbench import benchmark_model

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)
            self.act = lambda t: torch.relu(t) * SCALE   # a lambda in forward

        def forward(self, x):
            return self.act(self.fc(x))

    SCALE = 2.0
    results = benchmark_model(MODEL, CONFIG, ["EAGER", "JIT_TRACE", "ORT_CPU", "ONEDNN"],
                              data=torch.randn(8))
    for name, r in results.items():
        print("ROW", name, r["status"], r.get("accuracy.cosine"), r.get("error"))
''')


def _first_call(code: str, model: str, how: str, tmp_path: Path) -> str:
    config = repr(dict(FAST, n_samples=4, batch_size=2))
    text = code.replace("MODEL", model).replace("CONFIG", config)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    if how == "script":
        path = tmp_path / "first.py"
        path.write_text(text)
        cmd, stdin = [sys.executable, str(path)], None
    elif how == "stdin":
        cmd, stdin = [sys.executable, "-"], text
    elif how == "cell":  # a notebook runs cells with exec in __main__
        cmd, stdin = [sys.executable, "-c", f"exec({text!r})"], None
    else:
        raise AssertionError(how)
    proc = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("how,model", [
    ("script", "Tiny()"),          # a top-level script without a __main__ guard
    ("stdin", "Tiny()"),           # python3 - < script
    ("cell", "Tiny"),              # a notebook cell; an unseeded factory
])
def test_first_call_wherever_the_model_is_defined(how, model, tmp_path, cache_dir):
    out = _first_call(FIRST_CALL, model, how, tmp_path)
    rows = [line.split() for line in out.splitlines() if line.startswith("ROW")]
    assert [r[1] for r in rows] == ["EAGER", "JIT_TRACE", "ORT_CPU", "ONEDNN"], out
    for row in rows:
        assert row[2] == "success", out
        assert float(row[3]) == pytest.approx(1.0, abs=1e-6), out  # same weights everywhere


class CrashesOnExport(torch.autograd.Function):
    """Identity whose ONNX symbolic kills the exporting process."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def symbolic(g, x):
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


class ExportCrasher(torch.nn.Module):
    def forward(self, x):
        return CrashesOnExport.apply(x) + 1


def test_an_export_that_crashes_fails_its_rows_only(cache_dir):
    results = modelbench.benchmark_model(ExportCrasher(), {"n_samples": 2, "fail_on_error":
                                                           False, "cache": False, **FAST},
                                         ["EAGER", "ORT_CPU"], data=torch.randn(4))
    assert results["EAGER"]["status"] == "success"
    assert results["ORT_CPU"]["status"] == "error"
    assert "crashed" in results["ORT_CPU"]["error"] or "SIGSEGV" in results["ORT_CPU"]["error"]
    # fail_on_error names the conversion as it was given (alma's name).
    with pytest.raises(modelbench.ConversionError, match="conversion ONNX_CPU failed"):
        modelbench.benchmark_model(ExportCrasher(), {"n_samples": 2, "cache": False, **FAST},
                                   ["ONNX_CPU"], data=torch.randn(4))
