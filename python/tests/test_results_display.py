"""Results, Result and SweepResults print what display_all_results prints,
and benchmark_sweep returns results by point (the engine's report faked: no
benchmark runs here)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from modelbench import (Result, Results, SweepResults, benchmark_model, benchmark_sweep,
                        display_all_results)
from modelbench.results import from_report

REPORT = {
    "reference": "EAGER",
    "recommendation": {"fastest_accurate": "ORT_CPU", "summary": "deploy ORT_CPU"},
    "results": [
        {"conversion": "EAGER", "status": "ok", "device": "cpu", "elapsed_seconds": 1.23456,
         "inference_seconds": 0.5, "iterations": 10, "batch_size": 2, "throughput_sps": 40.0,
         "latency_ms": {"median": 1.5, "p90": 2.0, "p99": 2.5, "cv": 0.05},
         "speedup_vs_baseline": 1.0,
         "accuracy": {"cosine": 1.0, "max_abs_err": 0.0, "top1_agreement": 1.0},
         "peak_rss_mb": 123.4, "warnings": ["machine busy"]},
        {"conversion": "ORT_CPU", "status": "ok", "device": "cpu", "elapsed_seconds": 1.0,
         "iterations": 10, "batch_size": 2, "latency_ms": {"median": 1.0},
         "accuracy": {"cosine": 0.99, "max_abs_err": 0.01}, "inaccurate": True},
        {"conversion": "JIT_TRACE", "status": "error", "error": "boom",
         "backtrace": "Traceback...\nValueError: boom"},
    ],
}


def test_print_results_is_display_all_results(capsys):
    results = from_report(REPORT, None)
    display_all_results(results)
    displayed = capsys.readouterr().out
    print(results)
    assert capsys.readouterr().out == displayed
    assert repr(results) == str(results)
    # What it shows, so the two cannot agree on nothing.
    text = str(results)
    assert "EAGER results:" in text and "Latency: median 1.5000 ms, p90 2.0000 ms" in text
    assert "Accuracy vs EAGER: cosine 0.990000, max abs err 0.01 (inaccurate)" in text
    assert "Benchmarking failed (error), error: boom" in text and "ValueError: boom" in text
    assert text.endswith("Recommendation: deploy ORT_CPU")


def test_print_result_is_its_part_of_the_display():
    results = from_report(REPORT, None)
    eager = results["EAGER"]
    assert isinstance(eager, Result)
    lines = str(eager).splitlines()
    assert lines[0] == "EAGER results:" and "Warning: machine busy" in lines
    # A lone result does not know the report's reference.
    assert any(line.startswith("Accuracy vs reference: cosine 1.000000") for line in lines)
    assert str(results["JIT_TRACE"]).splitlines()[:2] == [
        "JIT_TRACE results:", "Benchmarking failed (error), error: boom"]
    assert repr(eager) == str(eager)


def test_a_gpu_result_shows_its_device_side():
    gpu = {"info": {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                    "cuda_runtime": "13.0", "driver": "580.82.07"},
           "compute_ms": {"median": 1.25}, "h2d_ms": {"median": 0.05}, "d2h_ms": {"median": 0.01},
           "host_latency_ms": 1.31, "memory_peak_mb": 96.5,
           "state": {"samples": 20, "sm_clock_mhz_min": 1755, "sm_clock_mhz_max": 1980,
                     "temperature_c_max": 61, "power_w_mean": 310, "throttle": "sw_power_cap"}}
    report = dict(REPORT, results=[dict(REPORT["results"][0], device="cuda", gpu=gpu)])
    eager = from_report(report, None)["EAGER"]
    lines = str(eager).splitlines()
    assert "Device: cuda" in lines
    assert "GPU: NVIDIA H100 80GB HBM3 (sm_9.0), CUDA 13.0, driver 580.82.07" in lines
    assert ("GPU compute (CUDA events): median 1.2500 ms; copies: H2D 0.0500 ms, "
            "D2H 0.0100 ms; host latency 1.3100 ms") in lines
    assert ("GPU memory peak: 96.5 MiB; SM clock 1755-1980 MHz, 61 C, 310 W, "
            "throttled: sw_power_cap") in lines
    assert eager["gpu.compute_ms.median"] == 1.25
    # Not sampled: says why; a CPU result has no GPU lines.
    gpu["state"] = {"unavailable": "no NVIDIA driver"}
    assert "device state not sampled (no NVIDIA driver)" in str(from_report(report, None)["EAGER"])
    assert "GPU" not in str(from_report(REPORT, None)["EAGER"])


def test_text_from_models_is_escaped_for_the_terminal():
    """Names, errors, warnings and tracebacks come from models and their
    code: escape sequences, line separators and bidirectional controls in
    them are shown escaped, as the CLI shows them; a traceback keeps its
    lines."""
    report = json.loads(json.dumps(REPORT))
    report["results"][0]["warnings"] = ["busy\x1b]0;owned\x07"]
    report["results"][2]["error"] = "boom\x1b[2J\u202eevil"
    report["results"][2]["backtrace"] = "Traceback...\n\x9b31mValueError: boom"
    report["recommendation"]["summary"] = "deploy\u2028ORT_CPU"
    text = str(from_report(report, None))
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "\u202e" not in text and "\u2028" not in text
    assert "Warning: busy\\x1b]0;owned\\x07" in text
    assert "error: boom\\x1b[2J\\u202eevil" in text
    assert "Traceback...\n\\u009b31mValueError: boom" in text
    assert text.endswith("Recommendation: deploy\\u2028ORT_CPU")


def test_sweep_results_print_each_point():
    sweep = SweepResults()
    sweep["batch=1"] = from_report(dict(REPORT, sweep_point="batch=1"), None)
    sweep["batch=4"] = Results()
    text = str(sweep)
    assert text.startswith("Sweep point batch=1:\n")
    assert "\nSweep point batch=4:\n" in text and text.count("All results:") == 2


def _fake_engine(points, seen):
    """An engine run that writes a report per point where --json says."""

    def run(argv, in_process):
        seen.append(argv)
        path = argv[argv.index("--json") + 1]
        reports = [{"sweep_point": p, "model": {}, "recommendation": {},
                    "results": [dict(REPORT["results"][0], conversion="EAGER")]}
                   for p in points]
        with open(path, "w") as f:
            json.dump({"reports": reports}, f)
        return 0

    return run


def test_benchmark_sweep_returns_results_by_point(monkeypatch, cache_dir):
    from modelbench import api

    seen = []
    monkeypatch.setattr(api._engine, "run", _fake_engine(["threads=1", "threads=2"], seen))
    with warnings.catch_warnings():
        # benchmark_sweep is not the deprecated way.
        warnings.filterwarnings("error", ".*benchmark_sweep", DeprecationWarning)
        by_point = benchmark_sweep(torch.nn.Linear(3, 2), {"record": False},
                                   {"threads": [1, 2]}, ["EAGER"], data=torch.ones(3))
    assert isinstance(by_point, SweepResults)
    assert list(by_point) == ["threads=1", "threads=2"]
    assert all(isinstance(r, Results) and list(r) == ["EAGER"] for r in by_point.values())
    argv = seen[0]
    assert argv[1] == "bench" and argv[argv.index("--sweep") + 1] == "threads=1,2"


def test_benchmark_model_with_a_sweep_still_works_and_warns(monkeypatch, cache_dir):
    from modelbench import api

    monkeypatch.setattr(api._engine, "run", _fake_engine(["threads=1"], []))
    with pytest.warns(DeprecationWarning, match="benchmark_sweep"):
        by_point = benchmark_model(torch.nn.Linear(3, 2), {"record": False}, ["EAGER"],
                                   data=torch.ones(3), sweep={"threads": [1]})
    assert list(by_point) == ["threads=1"] and list(by_point["threads=1"]) == ["EAGER"]


def test_benchmark_model_without_a_sweep_returns_results(monkeypatch, cache_dir):
    from modelbench import api

    monkeypatch.setattr(api._engine, "run", _fake_engine([""], []))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*benchmark_sweep", DeprecationWarning)
        results = benchmark_model(torch.nn.Linear(3, 2), {"record": False}, ["EAGER"],
                                  data=torch.ones(3))
    assert type(results) is Results and list(results) == ["EAGER"]
