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

BUSY_MS = 5.0
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

    @modelbench.profile(conversions=["EAGER", "JIT_TRACE", "ORT_CPU"], validate=True)
    def infer(x):
        busy_loop(1.0)
        return model(x).softmax(1)

    x = torch.randn(2, 32)
    lines = []
    with modelbench.profile_session(config=FAST, display=lines.append, validate_calls=5) as s:
        for _ in range(6):
            infer(x)
    table = s.last_report.function("infer")
    for name in ("EAGER", "JIT_TRACE"):
        row = table.row(name)
        assert row.measured_ms is not None and row.measured_ms > 0.5, row
        assert row.error_pct is not None
        assert abs(row.error_pct - (row.predicted_ms - row.measured_ms) / row.measured_ms * 100) < 1e-9
    ort = table.row("ORT_CPU")
    assert ort.predicted_ms is not None and ort.measured_ms is None
    assert "not validated" in ort.note


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
