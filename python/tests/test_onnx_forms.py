"""The ONNX forms of a PyTorch module: ORT_CPU on the TorchScript-based
export, ONNX+DYNAMO_EXPORT on the dynamo exporter's (PyTorch 2.x), each
result naming the exporter that made its file; OPENVINO on the same export
as ORT_CPU."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

import modelbench
from modelbench import benchmark_model

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def cnn() -> nn.Module:
    """A convolution, a pooling and a linear layer: what both exporters and
    every runtime take."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(8, 4)).eval()


@pytest.mark.skipif(not TORCH2, reason="the dynamo exporter needs PyTorch 2")
def test_dynamo_export_beside_the_torchscript_export(fast):
    x = torch.randn(3, 16, 16)
    names = ["EAGER", "ORT_CPU", "ONNX+DYNAMO_EXPORT"]
    first = benchmark_model(cnn(), fast, names, data=x)
    for name in names[1:]:
        r = first[name]
        assert r["status"] == "success", (name, r["error"], r["traceback"])
        assert r["accuracy.max_abs_err"] < 1e-4, (name, r["accuracy"])
        assert r["runtime"] == "onnxruntime", r
    # Each result says which exporter made the file it ran.
    assert "torch.onnx.export (TorchScript-based), opset" in first["ORT_CPU"]["exporter"]
    assert "torch.onnx.export (dynamo), opset" in first["ONNX+DYNAMO_EXPORT"]["exporter"]
    assert first["EAGER"]["exporter"] is None
    # Both forms are kept in the build cache: the second run finds the
    # dynamo export (its file still says which exporter made it) and ORT's
    # optimised model of it.
    again = benchmark_model(cnn(), fast, ["EAGER", "ONNX+DYNAMO_EXPORT"], data=x)
    r = again["ONNX+DYNAMO_EXPORT"]
    assert r["status"] == "success", (r["error"], r["traceback"])
    assert r["cache_hit"] is True and r["build_id"] == first["ONNX+DYNAMO_EXPORT"]["build_id"]
    assert r["exporter"] == first["ONNX+DYNAMO_EXPORT"]["exporter"]


@pytest.mark.skipif(TORCH2, reason="PyTorch 1.x only")
def test_dynamo_export_says_it_needs_pytorch_2(fast):
    results = benchmark_model(cnn(), dict(fast, fail_on_error=False),
                              ["EAGER", "ORT_CPU", "ONNX+DYNAMO_EXPORT"],
                              data=torch.randn(3, 16, 16))
    assert results["ORT_CPU"]["status"] == "success"
    r = results["ONNX+DYNAMO_EXPORT"]
    assert r["status"] == "error", r
    assert "torch.onnx.export(dynamo=True) needs PyTorch 2.5" in r["error"], r["error"]
    assert f"(this is {torch.__version__})" in r["error"], r["error"]


def test_openvino_runs_the_onnx_export(fast):
    rows = {r["name"]: r for r in modelbench.list_conversions()}
    if not rows["OPENVINO"]["available"]:
        if os.environ.get("MB_REQUIRE_OPENVINO") == "1":
            pytest.fail(f"OpenVINO is required: {rows['OPENVINO']['reason']}")
        pytest.skip(f"OpenVINO unavailable: {rows['OPENVINO']['reason']}")
    results = benchmark_model(cnn(), fast, ["EAGER", "OPENVINO"], data=torch.randn(3, 16, 16))
    r = results["OPENVINO"]
    assert r["status"] == "success", (r["error"], r["traceback"])
    assert r["runtime"] == "openvino" and r["accuracy.max_abs_err"] < 1e-4, r
    assert "(TorchScript-based)" in r["exporter"], r["exporter"]
