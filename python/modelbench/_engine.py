"""The engine command: what the Python front asks ``modelbench bench`` (or
``load``) to do, as its command line, and running it.

``CONFIG_FLAGS`` is the one table of BenchmarkConfig fields and the bench
options they become; ``bench_argv`` builds the command line from it and from
what one run adds (its models, conversions, device, inputs, report file).
``benchmark_model``, function profiles (``profiling``) and ``modelbench
script`` all start the engine through ``run`` or ``command``.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import os
import shlex
import subprocess
import sys
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Union

from . import _lib
from .config import BenchmarkConfig
from .errors import ConfigError, ConfigTypeError

log = logging.getLogger("modelbench")

#: Set in the engine processes benchmark_model starts: their PyTorch workers
#: may still size torch's inter-op pool (host.prepare_session).
WORKER_ENV = "MODELBENCH_WORKER"


# ---------------------------------------------------------------------------
# BenchmarkConfig -> bench's options
# ---------------------------------------------------------------------------


def _value(flag: str, value: Any) -> List[str]:
    # str of a float keeps every digit (it is repr since Python 3.2).
    return [flag, str(value)]


def _optional(flag: str, value: Any) -> List[str]:
    return [] if value is None or value == "" else [flag, str(value)]


def _when_true(flag: str, value: Any) -> List[str]:
    return [flag] if value else []


def _when_false(flag: str, value: Any) -> List[str]:
    return [] if value else [flag]


def _pairs(flag: str, value: Mapping[str, str]) -> List[str]:
    return [t for key, v in value.items() for t in (flag, f"{key}={v}")]


class Flag(NamedTuple):
    """One BenchmarkConfig field as bench's option ``flag``, written by
    ``form(flag, value)`` (no tokens: the option is left out)."""

    key: str
    flag: str
    form: Callable[[str, Any], List[str]]


#: Every BenchmarkConfig field the engine sees, in command-line order. The
#: value written is the config's own except where a run decides it
#: (``_run_values``: the timed iterations, the resolved device, the report
#: file, the inputs' batches...).
CONFIG_FLAGS = (
    Flag("threads", "--threads", _value),
    Flag("warmup", "--warmup", _value),
    Flag("warmup_time", "--warmup-time", _value),
    Flag("min_iterations", "--min-iterations", _value),
    Flag("min_time", "--min-time", _value),
    Flag("max_time", "--max-time", _value),
    Flag("ci_target", "--ci-target", _optional),
    Flag("fresh_inputs", "--fresh-inputs", _when_true),
    Flag("cold_cache", "--cold-cache", _when_true),
    Flag("timeout", "--timeout", _value),
    Flag("seed", "--seed", _value),
    Flag("rtol", "--rtol", _value),
    Flag("atol", "--atol", _value),
    Flag("max_error", "--max-error", _value),
    Flag("device", "--device", _value),
    Flag("log_level", "--log-level", _value),
    Flag("json", "--json", _value),
    Flag("allow_device_override", "--allow-device-override", _when_true),
    Flag("fail_on_error", "--fail-fast", _when_true),
    Flag("multiprocessing", "--no-isolate", _when_false),
    Flag("n_samples", "--n-samples", _optional),
    Flag("batch_size", "--batch-size", _optional),
    Flag("calibration_samples", "--calibration-samples", _optional),
    Flag("int8_weights", "--int8-weights", _optional),
    Flag("html", "--html", _optional),
    Flag("csv", "--csv", _optional),
    Flag("markdown", "--markdown", _optional),
    Flag("cache_dir", "--cache-dir", _optional),
    Flag("log_dir", "--log-dir", _optional),
    Flag("cache", "--no-cache", _when_false),
    Flag("record", "--no-record", _when_false),
    Flag("labels", "--label", _pairs),
    Flag("trust_code", "--trust-code", _when_true),
    Flag("cold", "--cold", _when_true),
    Flag("price_per_core_hour", "--price-per-core-hour", _optional),
)

#: BenchmarkConfig fields the engine never sees: the front acts on them
#: itself (device choice, export, the run folder, loading, tiers;
#: allow_pickle is trust_code's old name, folded into it).
PYTHON_ONLY = ("allow_cuda", "allow_mps", "non_blocking", "opset", "keep_run_dir",
               "allow_pickle", "tier")


def timed_iterations(cfg: BenchmarkConfig, inputs: Any) -> int:
    """Timed inferences: alma's n_samples samples (ceil(n_samples / batch))
    unless min_iterations or min_time is set (then at least min_iterations,
    default 20)."""
    if not cfg.timed_by_samples:
        return cfg.min_iterations if cfg.min_iterations is not None else 20
    batch = inputs.batch_size if inputs is not None else cfg.batch_size
    return max(1, -(-cfg.n_samples // max(batch, 1)))


def _run_values(cfg: BenchmarkConfig, inputs: Any, json_path: str, labels: Mapping[str, str],
                device: str, in_process: bool, own_code: bool) -> Dict[str, Any]:
    """The value of each CONFIG_FLAGS key for one run."""
    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    values.update(
        min_iterations=timed_iterations(cfg, inputs),
        min_time=(0.0 if cfg.timed_by_samples else
                  (cfg.min_time if cfg.min_time is not None else 2.0)),
        device=device,
        log_level="debug" if log.isEnabledFor(logging.DEBUG) else cfg.log_level,
        json=json_path,
        multiprocessing=not in_process,
        labels=dict(labels),
        # The engine counts batches; the inputs say how many there are, and
        # their batch size unless they are files (whose batches say it).
        n_samples=inputs.n_batches if inputs is not None else None,
        batch_size=(inputs.batch_size if inputs is not None and not inputs.folder
                    else None),
        trust_code=cfg.trust_code or own_code,
    )
    return values


def bench_argv(cfg: BenchmarkConfig, models: Sequence[str], conversions: Sequence[str], *,
               json_path: str, device: str, labels: Mapping[str, str],
               inputs: Any = None, in_process: bool = False,
               command: str = "bench", own_code: bool = False) -> List[str]:
    """``modelbench bench`` (or ``load``) for `cfg` on `models`.

    Args:
        cfg: the run's settings; each field becomes its CONFIG_FLAGS option.
        models: model files or manifests (several: one report each).
        conversions: the registry's names, in order; EAGER among them is the
            baseline.
        json_path: the report file to write.
        device: the engine's --device (already resolved: cpu or cuda).
        labels: the run's history labels (they replace cfg.labels).
        inputs: a ``data.Inputs`` (generated batches or files), or None for
            the engine's own inputs.
        in_process: run the conversions in the engine's process (--no-isolate).
        command: "bench", or "load" for a load scenario.
        own_code: the models' pytorch forms are the caller's own code, which
            this front pickled from its in-memory objects into a folder of its
            own: the engine is told to trust them (--trust-code), as it is
            whenever cfg.trust_code is set.

    Returns:
        The argv, "modelbench" first, as ``_lib.cli_main`` takes it.
    """
    values = _run_values(cfg, inputs, json_path, labels, device, in_process, own_code)
    argv = ["modelbench", command, *models, "-c", ",".join(conversions)]
    for row in CONFIG_FLAGS:
        argv += row.form(row.flag, values[row.key])
    if "EAGER" in conversions:
        argv += ["--baseline", "EAGER"]
    if inputs is not None and inputs.folder:
        argv += ["--inputs", inputs.folder]
        if inputs.labels:
            argv += ["--labels", inputs.labels]
    elif inputs is not None:
        for name, lo, hi in inputs.ranges:
            argv += ["--input-range", f"{name}={lo:g}:{hi:g}"]
    return argv


# ---------------------------------------------------------------------------
# Executors, load scenarios and sweeps
# ---------------------------------------------------------------------------

#: executor_options of benchmark_model: bench's options of the same names
#: (docs/executors.md).
EXECUTOR_OPTIONS = ("split", "partition", "time_limit", "mem", "cpus_per_task",
                    "account", "sbatch_args", "retries", "run_dir", "ssh_config",
                    "remote_modelbench")

#: The load settings ``scenario=`` takes as a dict, by ``modelbench load``'s
#: long options; the value's type and how it is written.
LOAD_KEYS = {
    "scenario": str,
    "qps": float,
    "concurrency": int,
    "slo": str,
    "find_peak": bool,
    "min_duration": float,
    "min_queries": int,
    "qps_tolerance": float,
}
SCENARIOS = ("single-stream", "server", "offline")
SWEEP_KEYS = ("batch", "threads", "concurrency", "qps")


def _unknown(kind: str, key: Any, known: Sequence[str]) -> ConfigError:
    close = difflib.get_close_matches(str(key), list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(f"unknown {kind} key {key!r}{hint}; known: {', '.join(known)}")


def executor_argv(executor: Optional[str], options: Optional[Mapping[str, Any]]) -> List[str]:
    """bench's --executor flags; ConfigError/ConfigTypeError naming a bad one."""
    if executor is None:
        if options:
            raise ConfigError("executor_options were given without an executor")
        return []
    if not isinstance(executor, str) or not (
            executor == "slurm" or (executor.startswith("ssh:") and len(executor) > 4)):
        raise ConfigError(f"executor must be 'slurm' or 'ssh:HOST[,HOST...]', got {executor!r}")
    argv = ["--executor", executor]
    for key, value in (options or {}).items():
        if key not in EXECUTOR_OPTIONS:
            close = difflib.get_close_matches(str(key), EXECUTOR_OPTIONS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown executor option {key!r}{hint}")
        if key == "sbatch_args":
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigTypeError("executor option 'sbatch_args' must be a list of str, "
                                      f"got {value!r}")
            argv += [f"--sbatch-arg={v}" for v in value]
        else:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv


def load_argv(scenario: Union[str, Mapping[str, Any], None]) -> List[str]:
    """``modelbench load``'s options for scenario= (a name, or a dict of
    LOAD_KEYS); [] for bench's timed loop (None)."""
    if scenario is None:
        return []
    settings = {"scenario": scenario} if isinstance(scenario, str) else scenario
    if not isinstance(settings, Mapping):
        raise ConfigTypeError("scenario must be a name (single-stream, server, offline) or a "
                              f"dict of {', '.join(LOAD_KEYS)}, got {type(scenario).__name__}")
    argv: List[str] = []
    for key, value in settings.items():
        if key not in LOAD_KEYS:
            raise _unknown("scenario", key, list(LOAD_KEYS))
        want = LOAD_KEYS[key]
        numbers = {float: (int, float), int: (int,)}.get(want)
        if numbers is not None:
            ok = isinstance(value, numbers) and not isinstance(value, bool)
        else:
            ok = isinstance(value, want)
        if not ok:
            raise ConfigTypeError(f"scenario key {key!r} must be {want.__name__}, got "
                                  f"{type(value).__name__} {value!r}")
        if key == "find_peak":
            argv += ["--find-peak"] if value else []
        else:
            argv += ["--" + key.replace("_", "-"), value if isinstance(value, str) else repr(value)]
    name = settings.get("scenario")
    if name not in SCENARIOS:
        raise ConfigError(f"scenario {name!r}: expected one of {', '.join(SCENARIOS)}")
    return argv


def sweep_argv(sweep: Optional[Mapping[str, Sequence[Any]]]) -> List[str]:
    """``--sweep KEY=V1,V2`` per axis of sweep= ({"batch": [1, 4],
    "dim:seq": [16, 64]}); [] for none."""
    if sweep is None:
        return []
    if not isinstance(sweep, Mapping) or not sweep:
        raise ConfigTypeError("sweep must be a non-empty dict of setting -> values, e.g. "
                              "{'batch': [1, 4], 'dim:seq': [16, 64]}")
    argv: List[str] = []
    for key, values in sweep.items():
        if not isinstance(key, str) or not (key in SWEEP_KEYS or
                                            (key.startswith("dim:") and len(key) > 4)):
            raise _unknown("sweep", key, list(SWEEP_KEYS) + ["dim:NAME"])
        if (isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                           for v in values)):
            raise ConfigError(f"sweep key {key!r} takes a non-empty list of numbers > 0, "
                              f"got {values!r}")
        argv += ["--sweep", f"{key}=" + ",".join(f"{v:g}" for v in values)]
    return argv


# ---------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------


def command(*args: str) -> List[str]:
    """The front's CLI (``python3 -m modelbench``, this interpreter) with
    `args`: the C CLI with the PyTorch host runtime."""
    return [sys.executable, "-m", "modelbench", *args]


def environment(worker: bool) -> Dict[str, str]:
    """This process's environment with this package on PYTHONPATH, for a
    child that runs the front. `worker`: an engine run of benchmark_model
    (WORKER_ENV set; the tasks of a run on Slurm start this front, not the
    bare CLI, so that they have the PyTorch host runtime); else a child of
    ``modelbench script``, which is no worker (WORKER_ENV removed)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    if worker:
        env[WORKER_ENV] = "1"
        env.setdefault("MODELBENCH_TASK_COMMAND", " ".join(command()))
    else:
        env.pop(WORKER_ENV, None)
    return env


def run(argv: List[str], in_process: bool, lines: Optional[List[str]] = None) -> int:
    """Runs `argv` (from bench_argv) in a fresh ``python3 -m modelbench``
    process, or in this one (in_process), its output going to the
    "modelbench" logger (and, in a fresh process, each line also appended
    to `lines` when given: ``tune`` raises with the engine's message);
    returns the engine's exit status (2: it refused the command line)."""
    log.debug("engine: %s", shlex.join(argv[1:]))  # pasting it is safe
    if in_process:
        from . import host

        host.install()
        return _lib.cli_main(argv)
    proc = subprocess.Popen(
        command(*argv[1:]),
        env=environment(worker=True),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line:
            log.info("%s", line)
            if lines is not None:
                lines.append(line)
    return proc.wait()
