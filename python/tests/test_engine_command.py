"""The engine's command line (modelbench._engine): one table of BenchmarkConfig
fields and bench options, and the argv built from it. No engine runs here:
the argv is compared with what the front passed before the table existed
(written out by hand below), option by option."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from typing import List, Tuple

import pytest

from modelbench import BenchmarkConfig, ConfigError, ConfigTypeError, _engine
from modelbench.data import Inputs


def _options(argv: List[str]) -> Tuple[List[str], List[Tuple[str, ...]]]:
    """The command and its positionals, and the options as (flag, value...)
    groups sorted by flag (stable: a repeated flag keeps its order). Order
    between different options means nothing to bench's getopt parser."""
    head: List[str] = []
    i = 0
    while i < len(argv) and not argv[i].startswith("-"):
        head.append(argv[i])
        i += 1
    groups: List[Tuple[str, ...]] = []
    while i < len(argv):
        group = [argv[i]]
        i += 1
        while i < len(argv) and not (argv[i].startswith("--") or argv[i] == "-c"):
            group.append(argv[i])
            i += 1
        groups.append(tuple(group))
    return head, sorted(groups, key=lambda g: g[0])


def _argv(cfg: BenchmarkConfig, **run) -> List[str]:
    run.setdefault("labels", {})
    models = run.pop("models", ["m.onnx"])
    names = run.pop("names", ["REFERENCE"])
    return _engine.bench_argv(cfg, models, names, **run)


# What api._bench_argv gave for these before CONFIG_FLAGS (same inputs).
DEFAULTS = [
    "modelbench", "bench", "m.onnx", "-c", "REFERENCE", "--threads", "1", "--warmup", "5",
    "--warmup-time", "0.5", "--min-iterations", "64", "--min-time", "0.0", "--max-time", "30.0",
    "--timeout", "300.0", "--seed", "0", "--rtol", "0.001", "--atol", "0.0001",
    "--max-error", "0.001", "--device", "cpu", "--log-level", "warn", "--json", "r.json",
    "--allow-device-override", "--fail-fast"]

EVERYTHING = [
    "modelbench", "bench", "m.json", "-c", "EAGER,ORT_CPU", "--threads", "4", "--warmup", "5",
    "--warmup-time", "0.25", "--min-iterations", "20", "--min-time", "1.5", "--max-time", "30.0",
    "--timeout", "300.0", "--seed", "3", "--rtol", "0.01", "--atol", "0.0001",
    "--max-error", "0.001", "--device", "cpu", "--log-level", "info", "--json", "o.json",
    "--baseline", "EAGER", "--no-isolate", "--n-samples", "4", "--batch-size", "2",
    "--input-range", "x=0:1.5", "--input-range", "y=-1:2", "--calibration-samples", "8",
    "--int8-weights", "mixed", "--html", "r.html", "--csv", "r.csv", "--markdown", "r.md",
    "--cache-dir", "/c", "--log-dir", "/l", "--no-cache", "--no-record",
    "--label", "model=net", "--label", "team=a"]

FILES = [
    "modelbench", "bench", "m.json", "-c", "EAGER", "--threads", "1", "--warmup", "5",
    "--warmup-time", "0.5", "--min-iterations", "7", "--min-time", "2.0", "--max-time", "30.0",
    "--timeout", "300.0", "--seed", "0", "--rtol", "0.001", "--atol", "0.0001",
    "--max-error", "0.001", "--device", "cuda", "--log-level", "warn", "--json", "o.json",
    "--baseline", "EAGER", "--allow-device-override", "--fail-fast", "--n-samples", "5",
    "--inputs", "/d", "--labels", "/d/labels.npy", "--int8-weights", "8", "--label", "model=net"]


def test_defaults_give_the_argv_of_before():
    argv = _argv(BenchmarkConfig(), json_path="r.json", device="cpu")
    assert _options(argv) == _options(DEFAULTS)


def test_every_option_gives_the_argv_of_before():
    cfg = BenchmarkConfig(
        threads=4, min_time=1.5, warmup_time=0.25, html="r.html", csv="r.csv", markdown="r.md",
        cache_dir="/c", log_dir="/l", cache=False, record=False, fail_on_error=False,
        allow_device_override=False, calibration_samples=8, int8_weights="mixed",
        labels={"team": "a"}, log_level="info", rtol=0.01, seed=3)
    inputs = Inputs([], (), n_batches=4, batch_size=2, ranges=[("x", 0.0, 1.5), ("y", -1.0, 2.0)])
    argv = _argv(cfg, models=["m.json"], names=["EAGER", "ORT_CPU"], inputs=inputs,
                 json_path="o.json", labels={"model": "net", "team": "a"}, device="cpu",
                 in_process=True)
    assert _options(argv) == _options(EVERYTHING)


def test_input_files_give_the_argv_of_before():
    cfg = BenchmarkConfig(min_iterations=7, batch_size=3, n_samples=10, int8_weights=8)
    inputs = Inputs([], (), n_batches=5, batch_size=2, folder="/d", labels="/d/labels.npy")
    argv = _argv(cfg, models=["m.json"], names=["EAGER"], inputs=inputs, json_path="o.json",
                 labels={"model": "net"}, device="cuda")
    assert _options(argv) == _options(FILES)


def test_ci_target_and_realistic_phases_are_bench_options():
    argv = _argv(BenchmarkConfig(ci_target="2%", fresh_inputs=True, cold_cache=True),
                 json_path="r.json", device="cpu")
    assert argv[argv.index("--ci-target") + 1] == "2%"
    assert "--fresh-inputs" in argv and "--cold-cache" in argv
    for bad in ("2", 0.0, "x%", 1.5):
        with pytest.raises(ConfigError, match="ci_target"):
            BenchmarkConfig(ci_target=bad)


def test_several_models_and_the_load_command():
    argv = _argv(BenchmarkConfig(), models=["a.json", "b.json"], json_path="r.json",
                 device="cpu", command="load")
    assert argv[:6] == ["modelbench", "load", "a.json", "b.json", "-c", "REFERENCE"]


def test_the_timed_run_is_almas_unless_iterations_or_time_are_set():
    by_samples = _argv(BenchmarkConfig(batch_size=4, n_samples=10), json_path="r.json",
                       device="cpu")
    assert by_samples[by_samples.index("--min-iterations") + 1] == "3"  # ceil(10 / 4)
    assert by_samples[by_samples.index("--min-time") + 1] == "0.0"
    by_time = _argv(BenchmarkConfig(min_time=0.5), json_path="r.json", device="cpu")
    assert by_time[by_time.index("--min-iterations") + 1] == "20"
    assert by_time[by_time.index("--min-time") + 1] == "0.5"


def test_every_config_field_is_in_the_table_or_said_to_be_pythons():
    fields = {f.name for f in dataclasses.fields(BenchmarkConfig)}
    in_table = [row.key for row in _engine.CONFIG_FLAGS]
    assert len(in_table) == len(set(in_table)), in_table
    assert set(in_table) | set(_engine.PYTHON_ONLY) == fields
    assert not set(in_table) & set(_engine.PYTHON_ONLY)


def test_cold_and_price_reach_the_engine():
    argv = _argv(BenchmarkConfig(cold=True, price_per_core_hour=0.05), json_path="r.json",
                 device="cpu")
    assert "--cold" in argv
    assert argv[argv.index("--price-per-core-hour") + 1] == "0.05"
    plain = _argv(BenchmarkConfig(), json_path="r.json", device="cpu")
    assert "--cold" not in plain and "--price-per-core-hour" not in plain
    with pytest.raises(ConfigError, match="price_per_core_hour"):
        BenchmarkConfig(price_per_core_hour=0)


def test_every_flag_of_the_table_is_one_of_bench():
    text = subprocess.run(_engine.command("bench", "--help"), capture_output=True, text=True,
                          env=_engine.environment(worker=False)).stdout
    options = set(re.findall(r"(--[a-z][a-z0-9-]+)", text))
    assert options, text
    missing = {row.flag for row in _engine.CONFIG_FLAGS} - options
    assert not missing, missing


@pytest.mark.parametrize("call, error, match", [
    (lambda: _engine.executor_argv(None, {"partition": "a"}), ConfigError, "without an executor"),
    (lambda: _engine.executor_argv("slurm", {"partiton": "a"}), ConfigError, "did you mean"),
    (lambda: _engine.executor_argv("slurm", {"sbatch_args": "x"}), ConfigTypeError, "list of str"),
    (lambda: _engine.load_argv("bogus"), ConfigError, "expected one of"),
    (lambda: _engine.load_argv({"scenario": "server", "qps": "1"}), ConfigTypeError, "'qps'"),
    (lambda: _engine.sweep_argv({"batches": [1]}), ConfigError, "unknown sweep key 'batches'"),
    (lambda: _engine.sweep_argv([1]), ConfigTypeError, "non-empty dict"),
])
def test_serving_and_executor_errors_name_the_key(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_serving_and_executor_argv():
    assert _engine.executor_argv("slurm", {"time_limit": "10:00", "sbatch_args": ["--qos=x"]}) == [
        "--executor", "slurm", "--time-limit", "10:00", "--sbatch-arg=--qos=x"]
    assert _engine.load_argv({"scenario": "server", "qps": 40, "find_peak": True}) == [
        "--scenario", "server", "--qps", "40", "--find-peak"]
    assert _engine.sweep_argv({"batch": [1, 4], "dim:seq": [16]}) == [
        "--sweep", "batch=1,4", "--sweep", "dim:seq=16"]


def test_environment_marks_workers_only():
    worker = _engine.environment(worker=True)
    assert worker[_engine.WORKER_ENV] == "1"
    assert "MODELBENCH_TASK_COMMAND" in worker
    script = _engine.environment(worker=False)
    assert _engine.WORKER_ENV not in script
    assert _engine.command("bench")[:3] == [sys.executable, "-m", "modelbench"]
