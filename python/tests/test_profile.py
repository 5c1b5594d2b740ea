"""Function profiles: segments vs uncaptured Python, warm-up calls discarded,
predictions per conversion from the engine's benchmark, validation."""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn

import modelbench

FAST = {"min_time": 0.0, "warmup": 1, "warmup_time": 0.0, "min_iterations": 5,
        "record": False, "threads": 1}

#: Long enough that the Python around the loop (hooks, argmax, an add: a
#: fraction of a millisecond) and a preemption on a loaded machine stay
#: well inside the 20% the uncaptured time is checked to.
BUSY_MS = 20.0
busy_seconds = []


def busy_loop(ms: float) -> None:
    """A known amount of pure Python work."""
    started = time.perf_counter()
    end = started + ms / 1e3
    n = 0
    while time.perf_counter() < end:
        n += 1
    busy_seconds.append(time.perf_counter() - started)


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).eval()


def test_uncaptured_python_and_prediction(cache_dir):
    model = small_model()
    head = nn.Linear(4, 2).eval()
    calls = []

    @modelbench.profile(conversions=["EAGER", "JIT_TRACE"])
    def infer(x):
        calls.append(1)
        busy_loop(BUSY_MS)
        with torch.no_grad():
            y = model(x)
            y = head(y) + head(y)  # a second module, called twice
        return y.argmax(1)

    lines = []
    busy_seconds.clear()
    x = torch.randn(4, 32)
    with modelbench.profile_session(config=FAST, warmup_calls=3, display=lines.append) as s:
        for _ in range(13):
            assert infer(x).shape == (4,)  # the function runs unchanged
        assert len(calls) == 13
    report = s.last_report
    table = report.function("infer")
    assert table.calls == 10 and table.discarded == 3
    # The uncaptured time is the busy loop's (and a little more Python).
    busy_ms = statistics.median(busy_seconds[3:]) * 1e3
    assert abs(table.uncaptured_ms - busy_ms) <= 0.2 * busy_ms, (table.uncaptured_ms, busy_ms)
    segs = {seg["label"]: seg for seg in table.segments}
    assert segs["Sequential"]["calls_per_call"] == 1
    assert segs["Linear"]["calls_per_call"] == 2
    eager = table.row("EAGER")
    assert eager.predicted_ms is not None and eager.speedup == 1
    assert abs(eager.predicted_ms - (eager.uncaptured_ms + sum(eager.segment_ms.values()))) < 1e-9
    assert eager.predicted_ms > busy_ms
    assert table.row("JIT_TRACE").predicted_ms is not None
    text = "\n".join(lines)
    assert "modelbench profile: " in text and "uncaptured Python" in text
    assert "predicted ms" in text


def test_validate_jit(cache_dir):
    model = small_model()

    outputs = []

    @modelbench.profile(conversions=["EAGER", "JIT_TRACE", "ORT_CPU"], validate=True)
    def infer(x):
        busy_loop(1.0)
        y = model(x).softmax(1)
        outputs.append(y)
        return y

    x = torch.randn(2, 32)
    lines = []
    with modelbench.profile_session(config=FAST, display=lines.append, validate_calls=5) as s:
        for _ in range(6):
            infer(x)
    table = s.last_report.function("infer")
    # JIT_TRACE by torch, ORT_CPU by the C library in this process.
    for name in ("EAGER", "JIT_TRACE", "ORT_CPU"):
        row = table.row(name)
        assert row.measured_ms is not None and row.measured_ms > 0.5, row
        assert row.error_pct is not None
        assert abs(row.error_pct - (row.predicted_ms - row.measured_ms) / row.measured_ms * 100) < 1e-9
    # The function ran on the converted forms' outputs: the same softmax.
    assert len(outputs) > 6 and all(torch.allclose(o, outputs[0], atol=1e-5) for o in outputs)


def test_validate_onnx_runner(cache_dir):
    """An ONNX conversion in place of a module returning a tuple: the
    function gets the same structure and values; each batch size is a
    segment of its own, so even a hybrid engine prepared for one shape
    (XNNPACK) validates: each shape runs its own."""
    from modelbench import _lib
    from modelbench._tensors import unflatten
    from modelbench.runner import Runner

    torch.manual_seed(0)

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 3)
            self.b = nn.Linear(8, 2)

        def forward(self, x):
            return self.a(x), {"b": self.b(x)}

    model = TwoHeads().eval()
    seen = []

    @modelbench.profile(conversions=["EAGER", "ORT_CPU", "XNNPACK"], validate=True)
    def infer(x):
        a, rest = model(x)
        seen.append((a, rest["b"]))
        return a.sum() + rest["b"].sum()

    batches = [torch.randn(2, 8), torch.randn(3, 8)]
    with modelbench.profile_session(config=FAST, display=lambda line: None, warmup_calls=1,
                                    validate_calls=2) as s:
        for i in range(4):
            infer(batches[i % 2])
    table = s.last_report.function("infer")
    assert table.row("ORT_CPU").measured_ms is not None
    a, b = seen[-1]  # the last validation call ran ORT_CPU or XNNPACK on one batch
    with torch.no_grad():
        want = model(batches[0] if a.shape[0] == 2 else batches[1])
    assert torch.allclose(a, want[0], atol=1e-5) and torch.allclose(b, want[1]["b"], atol=1e-5)
    xnn = table.row("XNNPACK")
    if _lib.conversion_info(_lib.conversion_find("XNNPACK"))["available"]:
        assert xnn.predicted_ms is not None, xnn
        assert xnn.measured_ms is not None and not xnn.note, xnn
    assert [seg["signature"] for seg in table.segments] == ["x: float32[2, 8]", "x: float32[3, 8]"]

    # The runner itself: a wrong number of inputs names both counts.
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    torch.onnx.export(nn.Linear(4, 2), (torch.randn(1, 4),), path)
    runner = Runner(path, "ORT_CPU", [torch.randn(1, 4)], 1)
    (y,) = runner([torch.ones(1, 4)])
    assert y.shape == (1, 2)
    try:
        runner([torch.ones(1, 4), torch.ones(1, 4)])
    except ValueError as e:
        assert "2 inputs given, the model takes 1" in str(e)
    else:
        raise AssertionError("two inputs accepted")
    assert unflatten((y, [y]), [y, y])[1][0] is y
    try:
        Runner(path, "EAGER", [torch.randn(1, 4)], 1)
    except RuntimeError as e:
        assert "EAGER" in str(e) and "ONNX" in str(e)
    else:
        raise AssertionError("EAGER accepted by a runner")


def test_predictions_per_input_shape(cache_dir):
    """A function whose module sees several batch sizes: one segment per
    shape, each benchmarked on its own inputs; each call is predicted from
    the segments it used, the function by the median over its calls, and
    the calls are reported by shape group. Past max_shapes, calls are
    counted and not predicted."""
    model = small_model()

    @modelbench.profile(conversions=["EAGER", "ORT_CPU"], warmup_calls=0)
    def infer(x):
        with torch.no_grad():
            return model(x)

    batches = [1, 8, 32, 8, 1, 32, 8]
    with modelbench.profile_session(config=FAST, display=lambda line: None) as s:
        for b in batches:
            infer(torch.randn(b, 32))
    table = s.last_report.function("infer")
    assert [seg["signature"] for seg in table.segments] == [
        "input: float32[1, 32]", "input: float32[8, 32]", "input: float32[32, 32]"]
    assert len({seg["sha256"] for seg in table.segments}) == 3
    assert [seg["calls_per_call"] for seg in table.segments] == [2 / 7, 3 / 7, 2 / 7]
    groups = {g["segments"][0]: g for g in table.shapes}
    assert [g["calls"] for g in table.shapes] == [2, 3, 2]
    assert table.unpredicted_calls == 0
    for name in ("EAGER", "ORT_CPU"):
        row = table.row(name)
        assert row.predicted_ms is not None and not row.note, row
        for seg, g in zip(table.segments, table.shapes):
            # A group's prediction: its calls' uncaptured time plus its
            # shape's median, once per call.
            median = row.segment_ms[seg["label"]] / seg["calls_per_call"]
            assert g["predicted_ms"][name] > median, (g, median)
            assert g["measured_ms"] > 0
    assert "Sequential#1(input: float32[8, 32])" in groups

    lines = []
    with modelbench.profile_session(config=FAST, display=lines.append, max_shapes=2) as s:
        for b in batches:
            infer(torch.randn(b, 32))
    table = s.last_report.function("infer")
    assert len(table.segments) == 2 and table.unpredicted_calls == 2
    assert table.row("EAGER").predicted_ms is not None
    assert any("2 of 7 calls gave a module an input shape past max_shapes" in line
               for line in lines), lines
    try:
        modelbench.profile_session(max_shapes=0)
    except ValueError as e:
        assert "max_shapes" in str(e)
    else:
        raise AssertionError("max_shapes=0 accepted")


def test_a_module_with_constant_arguments_is_predicted(cache_dir):
    """A keyword constant (softmax's dim here) is bound: the segment is
    benchmarked and the function predicted and validated."""
    model = small_model()

    class Head(nn.Module):
        def forward(self, x, *, dim=1, temperature=1.0):
            return (x / temperature).softmax(dim)

    head = Head()

    @modelbench.profile(conversions=["EAGER", "ORT_CPU"], warmup_calls=1, validate=True)
    def infer(x):
        with torch.no_grad():
            return head(model(x), dim=1, temperature=2.0)

    with modelbench.profile_session(config=FAST, display=lambda line: None,
                                    validate_calls=2) as s:
        for _ in range(3):
            want = infer(torch.randn(2, 32))
    table = s.last_report.function("infer")
    head_seg = next(seg for seg in table.segments if seg["label"] == "Head")
    assert head_seg["why_not"] == "" and head_seg["sha256"], head_seg
    assert "temperature: 2.0" in head_seg["signature"], head_seg
    for name in ("EAGER", "ORT_CPU"):
        row = table.row(name)
        assert row.predicted_ms is not None and row.measured_ms is not None, row
    assert want.shape == (2, 4)


def test_decorator_outside_a_session_and_report(cache_dir):
    model = small_model()

    @modelbench.profile(conversions=["EAGER"], warmup_calls=1)
    def infer(x):
        return model(x)

    for _ in range(3):
        infer(torch.randn(1, 32))
    lines = []
    modelbench.profiling._session().display = lines.append
    report = modelbench.report()
    assert report.function("infer").calls == 2
    assert any("modelbench profile: " in line for line in lines)
    # Reported once: the records are cleared.
    assert modelbench.report().functions == []
