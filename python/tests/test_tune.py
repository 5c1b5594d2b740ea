"""modelbench.tune: the Python front of `modelbench tune` (tests/cli_tune.sh
tests the search itself on the same model).

sensitive_mlp.onnx (tools/gen_models.c, in the build's models folder) has
three quantisable nodes, one of which ("sensitive_matmul") int8 ruins: tune
must keep exactly that one in float. Only int8 candidates take part where an
outcome would depend on which is fastest; no timing is asserted.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import torch
from torch import nn

import modelbench
from modelbench import _engine
from modelbench import ConfigError, ConfigTypeError, EngineError, TuneResult, TuneStep
from modelbench.conversions import list_conversions

QUICK = {"round_seconds": 0.05, "calibration_samples": 32}


@pytest.fixture(scope="module")
def sensitive_mlp() -> str:
    """build/models/sensitive_mlp.onnx: $MB_TEST_MODELS (ctest sets it), else
    beside the library under test ($MODELBENCH_LIBRARY: build/lib/...)."""
    folder = os.environ.get("MB_TEST_MODELS")
    if not folder:
        lib = os.environ.get("MODELBENCH_LIBRARY", "")
        folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "models")
    path = os.path.join(folder, "sensitive_mlp.onnx")
    if not os.path.isfile(path):
        if os.environ.get("MB_TEST_MODELS"):
            pytest.fail(f"{path} is missing (MB_TEST_MODELS is set)")
        pytest.skip(f"{path} is missing: build the project (it makes build/models)")
    return path


@pytest.fixture(scope="module")
def int8_candidates() -> list:
    """INT8_STATIC on the reference interpreter and on every engine here."""
    available = {str(r["name"]) for r in list_conversions() if r["available"]}
    return ["INT8_STATIC+REFERENCE"] + [
        c for c in ("INT8_STATIC+ORT_CPU", "INT8_STATIC+ONEDNN", "INT8_STATIC+XNNPACK")
        if c in available]


def test_the_sensitive_node_is_kept_in_float(sensitive_mlp, int8_candidates, cache_dir,
                                             tmp_path):
    log_path = tmp_path / "tune.json"
    tuned = tmp_path / "model.tuned.onnx"
    result = modelbench.tune(sensitive_mlp, 1e-3, conversions=int8_candidates,
                             log_path=log_path, output_path=tuned, **QUICK)
    # The winner's model, with the configuration in its metadata.
    assert result.output_path == str(tuned) and tuned.is_file(), result.log
    assert b"modelbench.tune" in tuned.read_bytes()
    assert isinstance(result, TuneResult)
    assert result.found, result.summary
    w = result.winner
    assert isinstance(w, TuneStep) and w.phase == "mixed", w
    assert w.kept_float == ["sensitive_matmul"], w.kept_float
    assert w.accurate and w.error is not None and w.error <= 1e-3, w
    assert w.median_ms is not None and w.median_ms > 0, w
    assert w.int8_flops_share is not None and 0 < w.int8_flops_share < 1, w
    assert w.conversion in int8_candidates, w
    # No uniform int8 candidate was accurate, so there is no uniform option.
    assert result.fastest_uniform is None
    assert [s.index for s in result.steps] == list(range(len(result.steps)))
    assert result.steps[w.index] is w
    # The sensitivity ranks it first: alone in float it fixes the model.
    sens = {s.kept_float[0]: s.error for s in result.steps if s.phase == "sensitivity"}
    assert len(sens) == 3 and min(sens, key=sens.get) == "sensitive_matmul", sens
    assert result.max_error == 1e-3 and result.wall_seconds > 0
    # The log is kept where asked and is what the result says.
    assert result.log_path == str(log_path)
    with open(log_path) as f:
        log = json.load(f)
    assert log["kind"] == "tune" and log["winner"] == w.index
    assert result.log["summary"] == result.summary
    text = str(result)
    assert "WINNER" in text and "kept in float (1): sensitive_matmul" in text, text
    assert result.summary in text
    # The winner's run is in the history, as the CLI records it.
    out = subprocess.run(_engine.command("history", "--label", "tune=winner", "--json"),
                         env=_engine.environment(worker=False), capture_output=True,
                         text=True, check=True).stdout
    history = json.loads(out)
    runs = history["runs"] if isinstance(history, dict) else history
    assert len(runs) == 1, runs


def test_a_budget_nothing_meets_is_an_answer(sensitive_mlp, cache_dir):
    result = modelbench.tune(sensitive_mlp, 1e-12, conversions=["INT8_STATIC+REFERENCE"],
                             record=False, **QUICK)
    assert not result.found and result.winner is None
    assert result.summary.startswith(
        "no configuration meets --max-error 1e-12: the closest is INT8_STATIC+REFERENCE"), \
        result.summary
    assert result.closest is not None and result.closest.conversion == "INT8_STATIC+REFERENCE"
    assert result.log_path is None  # the temporary log is gone
    assert result.summary in str(result)


class SmallNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_a_module_under_a_generous_budget(cache_dir):
    torch.manual_seed(0)
    result = modelbench.tune(SmallNet(), 0.5, data=torch.randn(16),
                             conversions=["ORT_CPU", "INT8_STATIC+ORT_CPU"], threads=[1],
                             record=False, **QUICK)
    assert result.found, result.summary
    w = result.winner
    assert w is not None and w.conversion in ("ORT_CPU", "INT8_STATIC+ORT_CPU"), w
    assert w.accurate and w.kept_float == [] and w.threads == 1, w
    # The export is the one benchmark_model keeps in the build cache.
    assert "ONNX_EXPORT-" in result.model_path, result.model_path


def test_a_module_with_loaders(cache_dir):
    """Evaluation and calibration batches are written as bench's input
    folders; (inputs, labels) batches split as for benchmark_model."""
    torch.manual_seed(0)
    evaluation = [torch.randn(2, 16) for _ in range(3)]
    calibration = [(torch.randn(2, 16), torch.tensor([0, 1])) for _ in range(4)]
    result = modelbench.tune(SmallNet(), 0.5, data_loader=evaluation,
                             calibration_data=calibration, n_samples=6,
                             conversions="INT8_STATIC+ORT_CPU", record=False, **QUICK)
    assert result.found and result.winner.conversion == "INT8_STATIC+ORT_CPU", result.summary


def test_a_task_accuracy_budget_and_the_page(cache_dir, tmp_path):
    """labels + max_accuracy_drop: every measured step is judged by its drop
    from the fp32 baseline (labelled with the module's own classes, so the
    baseline is at or near 100%); html_path writes the search's page."""
    torch.manual_seed(0)
    net = SmallNet().eval()
    evaluation = [torch.randn(2, 16) for _ in range(4)]
    with torch.no_grad():
        labels = torch.cat([net(x).argmax(1) for x in evaluation])
    page = tmp_path / "tune.html"
    result = modelbench.tune(net, 1e-3, data_loader=evaluation, n_samples=8,
                             labels=labels, max_accuracy_drop=0.25,
                             conversions=["ORT_CPU", "INT8_STATIC+ORT_CPU"],
                             html_path=page, record=False, **QUICK)
    assert result.max_accuracy_drop == 0.25
    assert result.baseline == "ORT_CPU", result.log
    assert result.baseline_task_accuracy is not None and result.baseline_task_accuracy >= 0.75
    measured = [s for s in result.steps if s.median_ms is not None]
    assert measured
    for s in measured:
        assert s.task_accuracy is not None, s
        assert s.accurate == (result.baseline_task_accuracy - s.task_accuracy <= 0.25 + 1e-12), s
    assert result.found and result.winner.accurate, result.summary
    text = page.read_text()
    assert "<svg" in text and "top-1 task accuracy at most 25% below" in text


@pytest.mark.parametrize("kwargs, key", [
    ({"max_error": 0}, "'max_error' must be > 0"),
    ({"max_error": 1e-3, "max_accuracy_drop": 0.01}, "'max_accuracy_drop' needs 'labels'"),
    ({"max_error": 1e-3, "max_accuracy_drop": 1.5, "labels": [0]},
     "'max_accuracy_drop' must be a share in (0, 1)"),
    ({"max_error": 1e-3, "labels": "/nonexistent/labels.npy"}, "'labels': no file"),
    ({"max_error": -1e-3}, "'max_error' must be > 0"),
    ({"max_error": float("nan")}, "'max_error' must be a finite number"),
    ({"max_error": 1e-3, "conversions": ["INT8_STATC+ORT_CPU"]},
     "'conversions': unknown conversion 'INT8_STATC+ORT_CPU'; did you mean "
     "INT8_STATIC+ORT_CPU?"),
    ({"max_error": 1e-3, "conversions": ["EAGER"]}, "'conversions': EAGER runs the pytorch"),
    ({"max_error": 1e-3, "conversions": []}, "'conversions' is empty"),
    ({"max_error": 1e-3, "threads": [1, 0]}, "'threads' holds values in 1..1024, got 0"),
    ({"max_error": 1e-3, "threads": list(range(1, 18))}, "'threads' takes up to 16"),
    ({"max_error": 1e-3, "batch_size": [1, 5000]}, "'batch_size' holds values in 1..4096, "
                                                   "got 5000"),
    ({"max_error": 1e-3, "budget_seconds": 0}, "'budget_seconds' must be a finite"),
    ({"max_error": 1e-3, "round_seconds": float("inf")}, "'round_seconds' must be a finite"),
    ({"max_error": 1e-3, "calibration_samples": 0}, "'calibration_samples' must be >= 1"),
    ({"max_error": 1e-3, "int8_weights": 6}, "'int8_weights' must be 7, 8, 'mixed'"),
    ({"max_error": 1e-3, "data": torch.randn(4)}, "'data' describes a module's inputs"),
    # The engine refuses it: its message, naming the argument.
    ({"max_error": 1e-3, "slo": "p99"}, "tune argument 'slo': modelbench tune refused the "
                                        "run: modelbench tune: --slo: SLO 'p99'"),
    ({"max_error": 1e-3, "calibration_method": "median"},
     "tune argument 'calibration_method': modelbench tune refused the run"),
])
def test_bad_arguments_name_the_key(sensitive_mlp, cache_dir, kwargs, key):
    with pytest.raises(ConfigError) as caught:
        modelbench.tune(sensitive_mlp, record=False, **kwargs)
    assert key in str(caught.value), str(caught.value)


@pytest.mark.parametrize("kwargs, key", [
    ({"max_error": "1e-3"}, "tune argument 'max_error' must be float"),
    ({"max_error": 1e-3, "threads": "2"}, "tune argument 'threads' must be an int"),
    ({"max_error": 1e-3, "batch_size": [1, 2.0]}, "tune argument 'batch_size' holds ints"),
    ({"max_error": 1e-3, "slo": 20}, "tune argument 'slo' must be str"),
    ({"max_error": 1e-3, "labels": [0.5, 1.5]}, "tune argument 'labels' must be a path or a "
                                                "1-D sequence of integers"),
    ({"max_error": 1e-3, "max_accuracy_drop": "1%", "labels": [0]},
     "tune argument 'max_accuracy_drop' must be a number"),
])
def test_arguments_of_the_wrong_type_name_the_key(sensitive_mlp, cache_dir, kwargs, key):
    with pytest.raises(ConfigTypeError) as caught:
        modelbench.tune(sensitive_mlp, **kwargs)
    assert key in str(caught.value), str(caught.value)


def test_batch_sizes_are_searched(sensitive_mlp, cache_dir):
    """A list of batch sizes is a dimension of the search: both are tried,
    and the steps carry their batch size and time per sample."""
    result = modelbench.tune(sensitive_mlp, 1e-3, conversions=["REFERENCE"], batch_size=[1, 4],
                             record=False, **QUICK)
    first = [s for s in result.steps if s.phase == "uniform" and s.round == 0]
    assert sorted(s.batch_size for s in first) == [1, 4], first
    for s in first:
        assert s.per_sample_ms == pytest.approx(s.median_ms / s.batch_size)
    assert result.found and result.winner.batch_size in (1, 4)
    assert ("batch 4" in result.winner.describe()) == (result.winner.batch_size == 4)


def test_a_module_needs_data(cache_dir):
    with pytest.raises(ConfigError, match="give tune data"):
        modelbench.tune(SmallNet(), 1e-3)


def test_an_engine_failure_is_an_engine_error(tmp_path, cache_dir):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(EngineError) as caught:
        modelbench.tune(str(broken), 1e-3, record=False, **QUICK)
    message = str(caught.value)
    assert "modelbench tune failed (exit status 1)" in message
    assert "broken.onnx" in message, message


def test_the_cli_front_passes_tune_through(sensitive_mlp, cache_dir):
    """`python3 -m modelbench tune` is the C CLI's tune (with the PyTorch
    host runtime): a budget nothing meets exits 3 with the answer."""
    proc = subprocess.run(
        _engine.command("tune", sensitive_mlp, "--max-error", "1e-12", "-c",
                        "INT8_STATIC+REFERENCE", "--round-time", "0.05",
                        "--calibration-samples", "32", "--no-record"),
        env=_engine.environment(worker=False), capture_output=True, text=True)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no configuration meets --max-error 1e-12" in proc.stdout, proc.stdout
