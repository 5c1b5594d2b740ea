"""benchmark_model: alma's API over modelbench's C engine.

One call benchmarks a PyTorch model under PyTorch's own conversions (EAGER,
JIT_*, BF16+EAGER, PyTorch int8) and every ONNX conversion of the C engine
(ORT_CPU, ONEDNN, XNNPACK, their int8 and bf16 variants) through one
``modelbench bench`` run on the model's manifest: the same measurement,
statistics, accuracy (against EAGER), reports, build cache and history as a
CLI run. With multiprocessing (the default) that run happens in a fresh
``python3 -m modelbench`` process that forks one worker per conversion.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _lib, conversions as conv_table
from .config import BenchmarkConfig
from .results import (ConversionError, Results, failures, from_report,
                      rename_recommendation, unavailable_result)

log = logging.getLogger("modelbench")

WORKER_ENV = "MODELBENCH_WORKER"


def default_conversions(formats: Sequence[str], tier: Optional[int] = None) -> List[str]:
    """What runs when no conversions are named: as in alma, every one available
    here for the model's formats; with a tier, those of modelbench's tiers up
    to it (1: quick check, 2: core deployment options, 3: all)."""
    rows = conv_table.list_conversions()
    return [str(r["name"]) for r in rows
            if r["available"] and r["format"] in formats
            and (tier is None or int(r["tier"]) <= tier)]


def _keyed(chosen: List["conv_table.Selected"], by_point: Dict[str, Results],
           device: str, sweep: bool) -> Union[Results, Dict[str, Results]]:
    """The engine's results keyed by the names the user gave (alma's mode for
    an alma id), in the user's order, with a result saying why for each alma
    option modelbench does not run."""
    out: Dict[str, Results] = {}
    for point, results in by_point.items():
        keyed = Results()
        keyed.report = results.report
        keyed.json_path = results.json_path
        keyed.recommendation = results.recommendation
        rename_recommendation(keyed, {c.name: c.key for c in chosen if c.name})
        for c in chosen:
            if c.name is None:
                keyed[c.key] = unavailable_result(c.key, c.reason or "", device)
            elif c.name in results:
                keyed[c.key] = results[c.name]
        out[point] = keyed
    return out if sweep else next(iter(out.values()))


def _package_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def _engine_env() -> Dict[str, str]:
    env = dict(os.environ)
    root = _package_root()
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    env[WORKER_ENV] = "1"
    # The tasks of a run on Slurm (executor=) start this front, not the bare
    # CLI, so that they have the PyTorch host runtime.
    env.setdefault("MODELBENCH_TASK_COMMAND", f"{sys.executable} -m modelbench")
    return env


# executor_options of benchmark_model: bench's options of the same names
# (docs/executors.md).
_EXECUTOR_OPTIONS = ("split", "partition", "time_limit", "mem", "cpus_per_task",
                     "account", "sbatch_args", "retries", "run_dir", "ssh_config",
                     "remote_modelbench")


def _executor_argv(executor: Optional[str],
                   options: Optional[Mapping[str, Any]]) -> List[str]:
    """bench's --executor flags; ValueError/TypeError naming a bad one."""
    if executor is None:
        if options:
            raise ValueError("executor_options were given without an executor")
        return []
    if not isinstance(executor, str) or not (
            executor == "slurm" or (executor.startswith("ssh:") and len(executor) > 4)):
        raise ValueError(f"executor must be 'slurm' or 'ssh:HOST[,HOST...]', got {executor!r}")
    argv = ["--executor", executor]
    for key, value in (options or {}).items():
        if key not in _EXECUTOR_OPTIONS:
            close = difflib.get_close_matches(str(key), _EXECUTOR_OPTIONS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown executor option {key!r}{hint}")
        if key == "sbatch_args":
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise TypeError("executor option 'sbatch_args' must be a list of str, "
                                f"got {value!r}")
            argv += [f"--sbatch-arg={v}" for v in value]
        else:
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv


def shared_run_parent(cache_dir: Optional[str], name: str) -> str:
    """Where a run for an executor keeps its manifests and inputs: the folder
    `name` of the cache folder (cache_dir, $MODELBENCH_CACHE_DIR or
    ~/.cache/modelbench), which Slurm's nodes must share anyway (a temporary
    folder of this machine is not theirs); created when missing."""
    base = (cache_dir or os.environ.get("MODELBENCH_CACHE_DIR")
            or os.path.join(os.path.expanduser("~"), ".cache", "modelbench"))
    parent = os.path.join(base, name)
    os.makedirs(parent, exist_ok=True)
    return parent


def _timed_iterations(cfg: BenchmarkConfig, inputs: Any) -> int:
    """Timed inferences: alma's n_samples samples (ceil(n_samples / batch))
    unless min_iterations or min_time is set (then at least min_iterations,
    default 20)."""
    if not cfg.timed_by_samples:
        return cfg.min_iterations if cfg.min_iterations is not None else 20
    batch = inputs.batch_size if inputs is not None else cfg.batch_size
    return max(1, -(-cfg.n_samples // max(batch, 1)))


def _bench_argv(cfg: BenchmarkConfig, model_path: str, names: List[str],
                inputs: Any, json_path: str, labels: Dict[str, str],
                device: str, in_process: bool) -> List[str]:
    argv = [
        "modelbench", "bench", model_path,
        "-c", ",".join(names),
        "--threads", str(cfg.threads),
        "--warmup", str(cfg.warmup),
        "--warmup-time", repr(cfg.warmup_time),
        "--min-iterations", str(_timed_iterations(cfg, inputs)),
        "--min-time", repr(0.0 if cfg.timed_by_samples else
                           (cfg.min_time if cfg.min_time is not None else 2.0)),
        "--max-time", repr(cfg.max_time),
        "--timeout", repr(cfg.timeout),
        "--seed", str(cfg.seed),
        "--rtol", repr(cfg.rtol),
        "--atol", repr(cfg.atol),
        "--max-error", repr(cfg.max_error),
        "--device", device,
        "--log-level", "debug" if log.isEnabledFor(logging.DEBUG) else cfg.log_level,
        "--json", json_path,
    ]
    if "EAGER" in names:
        argv += ["--baseline", "EAGER"]
    if cfg.allow_device_override:
        argv.append("--allow-device-override")
    if cfg.fail_on_error:
        argv.append("--fail-fast")
    if in_process:
        argv.append("--no-isolate")
    if inputs is not None:
        argv += ["--n-samples", str(inputs.n_batches)]
    if inputs is not None and inputs.folder:
        argv += ["--inputs", inputs.folder]
        if inputs.labels:
            argv += ["--labels", inputs.labels]
    elif inputs is not None:
        argv += ["--batch-size", str(inputs.batch_size)]
        for name, lo, hi in inputs.ranges:
            argv += ["--input-range", f"{name}={lo:g}:{hi:g}"]
    if cfg.calibration_samples:
        argv += ["--calibration-samples", str(cfg.calibration_samples)]
    if cfg.int8_weights is not None:
        argv += ["--int8-weights", str(cfg.int8_weights)]
    for flag, value in (("--html", cfg.html), ("--csv", cfg.csv),
                        ("--markdown", cfg.markdown), ("--cache-dir", cfg.cache_dir),
                        ("--log-dir", cfg.log_dir)):
        if value:
            argv += [flag, str(value)]
    if not cfg.cache:
        argv.append("--no-cache")
    if not cfg.record:
        argv.append("--no-record")
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    return argv


#: The load settings ``scenario=`` takes as a dict, by ``modelbench load``'s
#: long options; the value's type and how it is written.
_LOAD_KEYS = {
    "scenario": str,
    "qps": float,
    "concurrency": int,
    "slo": str,
    "find_peak": bool,
    "min_duration": float,
    "min_queries": int,
    "qps_tolerance": float,
}
_SCENARIOS = ("single-stream", "server", "offline")
_SWEEP_KEYS = ("batch", "threads", "concurrency", "qps")


def _unknown(kind: str, key: Any, known: Sequence[str]) -> ValueError:
    import difflib

    close = difflib.get_close_matches(str(key), list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(f"unknown {kind} key {key!r}{hint}; known: {', '.join(known)}")


def _load_argv(scenario: Union[str, Mapping[str, Any], None]) -> List[str]:
    """``modelbench load``'s options for scenario= (a name, or a dict of
    _LOAD_KEYS); [] for bench's timed loop (None)."""
    if scenario is None:
        return []
    settings = {"scenario": scenario} if isinstance(scenario, str) else scenario
    if not isinstance(settings, Mapping):
        raise TypeError("scenario must be a name (single-stream, server, offline) or a "
                        f"dict of {', '.join(_LOAD_KEYS)}, got {type(scenario).__name__}")
    argv: List[str] = []
    for key, value in settings.items():
        if key not in _LOAD_KEYS:
            raise _unknown("scenario", key, list(_LOAD_KEYS))
        want = _LOAD_KEYS[key]
        numbers = {float: (int, float), int: (int,)}.get(want)
        if numbers is not None:
            ok = isinstance(value, numbers) and not isinstance(value, bool)
        else:
            ok = isinstance(value, want)
        if not ok:
            raise TypeError(f"scenario key {key!r} must be {want.__name__}, got "
                            f"{type(value).__name__} {value!r}")
        if key == "find_peak":
            argv += ["--find-peak"] if value else []
        else:
            argv += ["--" + key.replace("_", "-"), value if isinstance(value, str) else repr(value)]
    name = settings.get("scenario")
    if name not in _SCENARIOS:
        raise ValueError(f"scenario {name!r}: expected one of {', '.join(_SCENARIOS)}")
    return argv


def _sweep_argv(sweep: Optional[Mapping[str, Sequence[Any]]]) -> List[str]:
    """``--sweep KEY=V1,V2`` per axis of sweep= ({"batch": [1, 4],
    "dim:seq": [16, 64]}); [] for none."""
    if sweep is None:
        return []
    if not isinstance(sweep, Mapping) or not sweep:
        raise TypeError("sweep must be a non-empty dict of setting -> values, e.g. "
                        "{'batch': [1, 4], 'dim:seq': [16, 64]}")
    argv: List[str] = []
    for key, values in sweep.items():
        if not isinstance(key, str) or not (key in _SWEEP_KEYS or
                                            (key.startswith("dim:") and len(key) > 4)):
            raise _unknown("sweep", key, list(_SWEEP_KEYS) + ["dim:NAME"])
        if (isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                           for v in values)):
            raise ValueError(f"sweep key {key!r} takes a non-empty list of numbers > 0, "
                             f"got {values!r}")
        argv += ["--sweep", f"{key}=" + ",".join(f"{v:g}" for v in values)]
    return argv


def _run_engine(argv: List[str], in_process: bool) -> int:
    """Runs `modelbench bench` in a fresh process (or this one), its output
    going to the "modelbench" logger."""
    log.debug("engine: %s", " ".join(argv[1:]))
    if in_process:
        from . import host

        host.install()
        return _lib.cli_main(argv)
    proc = subprocess.Popen(
        [sys.executable, "-m", "modelbench"] + argv[1:],
        env=_engine_env(),
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
    return proc.wait()


def _resolve_device(cfg: BenchmarkConfig) -> str:
    """The engine's --device for the config's device: None and "auto" pick as
    alma does (cuda when allowed and present, then mps, then cpu); a device
    missing here falls back to the CPU with allow_device_override."""
    import torch

    want = cfg.device or "auto"
    base = want.split(":")[0]
    mps = getattr(getattr(torch.backends, "mps", None), "is_available", lambda: False)()
    if base == "auto":
        if cfg.allow_cuda and torch.cuda.is_available():
            return "cuda"
        if cfg.allow_mps and mps:
            log.warning("device auto picked mps, which modelbench's conversions do not "
                        "run on: running on the CPU")
        return "cpu"
    present = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": mps}[base]
    if base == "cuda" and present and ":" in want:
        index = int(want.split(":")[1])
        if index >= torch.cuda.device_count():
            present = False
    if base != "cpu" and (not present or base == "mps"):
        if cfg.allow_device_override:
            log.warning("device %s requested but it is not usable by modelbench here: "
                        "running on the CPU (allow_device_override)", want)
            return "cpu"
        if base == "mps":
            raise ValueError(
                "config key 'device' is mps, which modelbench's conversions do not run "
                "on: set allow_device_override=True to run them on the CPU")
        log.warning("device %s requested but it is not usable by modelbench here, and "
                    "allow_device_override is off: every conversion fails", want)
        return "cuda"
    return base


def benchmark_model(
    model: Any,
    config: Union[BenchmarkConfig, Mapping[str, Any], None],
    conversions: Optional[Sequence[Union[str, int]]] = None,
    data: Any = None,
    data_loader: Any = None,
    executor: Optional[str] = None,
    executor_options: Optional[Mapping[str, Any]] = None,
    scenario: Union[str, Mapping[str, Any], None] = None,
    sweep: Optional[Mapping[str, Sequence[Any]]] = None,
) -> Union[Results, Dict[str, Results]]:
    """Benchmarks `model` under each conversion and returns the results by name.

    Args:
        model: an ``nn.Module`` (sent to the workers by value, wherever its
            class is defined); a zero-argument factory returning one (called
            once, seeded) or alma's ``lazyload`` object; the path of a
            TorchScript ``.pt`` file, of a pickled-module ``.pt`` file (with
            ``allow_pickle``) or of an ``.onnx`` file.
        config: a :class:`BenchmarkConfig`, a dict of its keys, or alma's own
            BenchmarkConfig.
        conversions: modelbench's and alma's names, alma's ids (0-71),
            ``"mb:N"`` for modelbench's ids, or alma ConversionOption objects,
            run in this order (an alma option modelbench lacks is a result with
            the reason); None: every conversion available here (config key
            ``tier``: those of modelbench's tiers up to it).
        data: one sample without the batch dimension (a tensor or a tuple of
            tensors, one per forward argument): seeded batches of its shape and
            dtype are generated, the same for every conversion.
        data_loader: any iterable of tensors, tuples of tensors, or
            (inputs, labels); with labels every conversion reports task_accuracy.
        executor: None (this machine), ``"slurm"`` (one Slurm task, its results
            merged back; the cache folder must be on storage the nodes share)
            or ``"ssh:HOST[,HOST...]"`` (docs/executors.md). Needs
            multiprocessing.
        executor_options: bench's executor options by name: partition,
            time_limit, mem, cpus_per_task, account, sbatch_args (a list),
            retries, split, run_dir, ssh_config, remote_modelbench.
        scenario: a load scenario instead of bench's timed loop (``modelbench
            load``): "single-stream", "server" or "offline", or a dict with
            "scenario" and any of "qps", "concurrency", "slo" ("p99=20ms"),
            "find_peak", "min_duration", "min_queries", "qps_tolerance". Each
            result then has a "load" entry (achieved QPS, validity, SLO...) and
            its latencies count from each query's scheduled arrival.
        sweep: run every point of these settings' product: {"batch": [1, 4],
            "threads": [1, 2], "dim:seq": [16, 64]} (with a scenario also
            "concurrency" and "qps").

    Returns:
        :class:`Results`, a dict keyed by the conversion names given (alma's
        mode for an alma id) whose values hold every key of the JSON report's
        result plus alma's; ``results.recommendation`` says what to deploy. With a sweep: a dict keyed by
        the point ("batch=4 threads=2") of such Results, in run order.

    Raises:
        ValueError / TypeError: a bad config key or value, an unknown conversion,
            unusable data, naming the culprit.
        ConversionError: fail_on_error is set and a conversion failed.
    """
    from .data import from_loader, from_sample
    from .model import (
        describe_outputs,
        export_forms,
        load_source,
        module_sha256,
        write_manifest,
        write_pytorch_spec,
    )

    cfg = BenchmarkConfig.from_any(config)
    serving = _load_argv(scenario) + _sweep_argv(sweep)
    if data is not None and data_loader is not None:
        raise ValueError("give data or data_loader, not both")
    source = load_source(model, cfg.seed, cfg.allow_pickle)
    formats_here = ["onnx"] if source.kind == "onnx" else ["pytorch", "onnx"]
    if conversions is not None and cfg.tier is not None:
        raise ValueError("give conversions or config key 'tier', not both")
    if isinstance(conversions, (str, int)) or hasattr(conversions, "mode"):
        conversions = [conversions]
    chosen = (conv_table.select(conversions) if conversions is not None else
              [conv_table.Selected(n, n) for n in default_conversions(
                  formats_here + ["torchscript"], cfg.tier)])
    if not chosen:
        raise ValueError("conversions is empty: name at least one (modelbench list)")
    names = [c.name for c in chosen if c.name]
    device = _resolve_device(cfg)
    executor_argv = _executor_argv(executor, executor_options)
    if executor_argv and serving:
        raise ValueError("executor runs plain benchmarks: scenario and sweep run on this "
                         "machine (leave out executor)")
    if executor_argv and not cfg.multiprocessing:
        raise ValueError("executor needs multiprocessing=True: the model travels to "
                         "the other machine as a file, not as this process's object")
    run_dir = tempfile.mkdtemp(prefix="modelbench-run-",
                               dir=shared_run_parent(cfg.cache_dir, "python-runs")
                               if executor_argv else None)
    live_key: Optional[str] = None
    try:
        inputs = None
        if data_loader is not None:
            inputs = from_loader(source.module, data_loader, cfg.n_samples,
                                 os.path.join(run_dir, "inputs"))
        elif data is not None:
            inputs = from_sample(source.module, data, cfg.batch_size, cfg.n_samples)
        elif source.kind != "onnx":
            raise ValueError(
                "give data (one sample without the batch dimension) or a data_loader: "
                "a PyTorch module does not declare its input shapes"
            )
        if not names:  # every one asked for is an alma option modelbench lacks
            return _keyed(chosen, {"": from_report({"results": []}, cfg.json)}, device,
                          sweep is not None)
        if source.kind == "onnx":
            model_path = source.path or ""
        else:
            from .data import signature_text

            rows = {str(r["name"]): r for r in conv_table.list_conversions()}
            wanted = {rows[n]["format"] for n in names}
            outputs = describe_outputs(source.module, inputs)
            sha = module_sha256(source, signature_text(inputs.specs))
            formats: Dict[str, Dict[str, str]] = {}
            if not cfg.multiprocessing:
                from . import host

                live_key = uuid.uuid4().hex
                host.hand_over(live_key, source.module)
            spec_path = write_pytorch_spec(source, run_dir, live_key, cfg.seed)
            formats["pytorch"] = {"path": spec_path}
            # The exporters run in a process of their own (a crash fails the
            # conversions that need the export), unless everything runs here.
            isolated = spec_path if cfg.multiprocessing else None
            formats.update(export_forms(source, sha, inputs, outputs, run_dir, wanted,
                                        cfg.opset, cfg.cache, cfg.cache_dir, isolated,
                                        cfg.timeout))
            model_path = write_manifest(run_dir, source, sha, inputs, outputs, formats,
                                        "EAGER")
            if executor is not None and executor.startswith("ssh:"):
                from .model import make_self_contained

                make_self_contained(model_path)  # its folder goes to the hosts
        json_path = cfg.json or os.path.join(run_dir, "report.json")
        # The history knows a PyTorch run by its model (the manifest is a
        # temporary file): labels the user gave win.
        labels = {"model": source.name, "framework": "pytorch" if source.kind != "onnx" else "onnx"}
        labels.update(cfg.labels)
        argv = _bench_argv(cfg, model_path, names, inputs, json_path, labels, device,
                           in_process=not cfg.multiprocessing) + executor_argv + serving
        if scenario is not None:
            argv[1] = "load"
        rc = _run_engine(argv, in_process=not cfg.multiprocessing)
        if rc == 2 or not os.path.exists(json_path):
            raise ValueError(
                f"modelbench bench refused the run (exit status {rc}); its messages are "
                "above in the log"
            )
        with open(json_path) as f:
            report = json.load(f)
        reports = report["reports"] if "reports" in report else [report]
        by_point = {str(rep.get("sweep_point") or ""): from_report(rep, cfg.json)
                    for rep in reports}
        keyed = _keyed(chosen, by_point, device, sweep is not None)
        for results in keyed.values() if sweep is not None else [keyed]:
            failed = failures(results)
            if cfg.fail_on_error and failed:
                r = results[failed[0]]
                raise ConversionError(failed[0], r.get("error") or "", r.get("traceback"))
        return keyed
    finally:
        if live_key is not None:
            from . import host

            host.take_back(live_key)
        if cfg.keep_run_dir:
            log.info("run folder kept: %s", run_dir)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
