"""benchmark_model: alma's API over modelbench's C engine.

One call benchmarks a PyTorch model under PyTorch's own conversions (EAGER,
JIT_*, BF16+EAGER, PyTorch int8) and every ONNX conversion of the C engine
(ORT_CPU, ONEDNN, XNNPACK, their int8 and bf16 variants) through one
``modelbench bench`` run on the model's manifest: the same measurement,
statistics, accuracy (against EAGER), reports, build cache and history as a
CLI run. With multiprocessing (the default) that run happens in a fresh
``python3 -m modelbench`` process that forks one worker per conversion.
``benchmark_sweep`` runs the same at every point of a sweep. The engine's
command line is built and run by ``_engine``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import uuid
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _engine, conversions as conv_table
from .config import BenchmarkConfig
from .errors import ConfigError, ConfigTypeError
from .results import (ConversionError, Results, SweepResults, failures, from_report,
                      rename_recommendation, unavailable_result)

log = logging.getLogger("modelbench")


def default_conversions(formats: Sequence[str], tier: Optional[int] = None) -> List[str]:
    """What runs when no conversions are named: as in alma, every one available
    here for the model's formats; with a tier, those of modelbench's tiers up
    to it (1: quick check, 2: core deployment options, 3: all)."""
    rows = conv_table.list_conversions()
    return [str(r["name"]) for r in rows
            if r["available"] and r["format"] in formats
            and (tier is None or int(r["tier"]) <= tier)]


def _keyed(chosen: List["conv_table.Selected"], by_point: Dict[str, Results],
           device: str) -> SweepResults:
    """The engine's results, per sweep point ("" without a sweep), keyed by
    the names the user gave (alma's mode for an alma id), in the user's
    order, with a result saying why for each alma option modelbench does not
    run."""
    out = SweepResults()
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
    return out


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


def _resolve_device(cfg: BenchmarkConfig) -> str:
    """The engine's --device for the config's device: None and "auto" pick as
    alma does (cuda when allowed and present, then mps, then cpu), and with
    a GPU leave each conversion to the engine ("auto": the GPU for those that
    can run there, the CPU for the rest); a device missing here falls back to
    the CPU with allow_device_override."""
    import torch

    want = cfg.device or "auto"
    base = want.split(":")[0]
    mps = getattr(getattr(torch.backends, "mps", None), "is_available", lambda: False)()
    if base == "auto":
        if cfg.allow_cuda and torch.cuda.is_available():
            return "auto"
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
            raise ConfigError(
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
) -> Results:
    """Benchmarks `model` under each conversion and returns the results by name.

    Args:
        model: an ``nn.Module`` (sent to the workers by value, wherever its
            class is defined); a zero-argument factory returning one (called
            once, seeded) or alma's ``lazyload`` object; the path of a
            TorchScript ``.pt`` file, of a pickled-module ``.pt`` file (with
            config key ``trust_code``: loading it runs its code) or of an
            ``.onnx`` file.
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
        sweep: deprecated, use :func:`benchmark_sweep` (the same run, always
            returning results by point); given, this returns what
            benchmark_sweep does and warns (DeprecationWarning).

    Returns:
        :class:`Results`, a dict keyed by the conversion names given (alma's
        mode for an alma id) whose values hold every key of the JSON report's
        result plus alma's; ``results.recommendation`` says what to deploy.
        ``print(results)`` prints what :func:`display_all_results` does.

    Raises:
        ConfigError (a ValueError) / ConfigTypeError (a TypeError): a bad
            config key or value, an unknown conversion, unusable data, naming
            the culprit; or the engine refused the run.
        ConversionError: fail_on_error is set and a conversion failed.
        Every one is a :class:`modelbench.Error`.
    """
    if sweep is not None:
        warnings.warn("benchmark_model(..., sweep=...) is deprecated: call "
                      "modelbench.benchmark_sweep(model, config, sweep, ...), which returns "
                      "the results by sweep point", DeprecationWarning, stacklevel=2)
        return _benchmark(model, config, conversions, data, data_loader, executor,  # type: ignore[return-value]
                          executor_options, scenario, sweep)
    by_point = _benchmark(model, config, conversions, data, data_loader, executor,
                          executor_options, scenario, None)
    return next(iter(by_point.values()))


def benchmark_sweep(
    model: Any,
    config: Union[BenchmarkConfig, Mapping[str, Any], None],
    sweep: Mapping[str, Sequence[Any]],
    conversions: Optional[Sequence[Union[str, int]]] = None,
    data: Any = None,
    data_loader: Any = None,
    scenario: Union[str, Mapping[str, Any], None] = None,
) -> SweepResults:
    """Benchmarks `model` at every point of the product of `sweep`'s settings.

    Args:
        model, config, conversions, data, data_loader, scenario: as for
            :func:`benchmark_model`.
        sweep: the settings and their values: {"batch": [1, 4], "threads":
            [1, 2], "dim:seq": [16, 64]} (with a scenario also "concurrency"
            and "qps"). A sweep runs on this machine (no executor).

    Returns:
        :class:`SweepResults`: a dict keyed by the point ("batch=4 threads=2"),
        in run order, of :class:`Results` (each with its own report and
        recommendation).

    Raises:
        As :func:`benchmark_model`; a sweep that is not a non-empty dict of
        known settings to numbers > 0 is a ConfigError / ConfigTypeError.
    """
    if sweep is None:
        raise ConfigTypeError("benchmark_sweep needs a sweep: a non-empty dict of setting -> "
                              "values, e.g. {'batch': [1, 4], 'dim:seq': [16, 64]}")
    return _benchmark(model, config, conversions, data, data_loader, None, None,
                      scenario, sweep)


def _benchmark(
    model: Any,
    config: Union[BenchmarkConfig, Mapping[str, Any], None],
    conversions: Optional[Sequence[Union[str, int]]],
    data: Any,
    data_loader: Any,
    executor: Optional[str],
    executor_options: Optional[Mapping[str, Any]],
    scenario: Union[str, Mapping[str, Any], None],
    sweep: Optional[Mapping[str, Sequence[Any]]],
) -> SweepResults:
    """benchmark_model and benchmark_sweep: the results by sweep point, ""
    the only one without a sweep."""
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
    serving = _engine.load_argv(scenario) + _engine.sweep_argv(sweep)
    if data is not None and data_loader is not None:
        raise ConfigError("give data or data_loader, not both")
    source = load_source(model, cfg.seed, cfg.trust_code)
    formats_here = ["onnx"] if source.kind == "onnx" else ["pytorch", "onnx"]
    if conversions is not None and cfg.tier is not None:
        raise ConfigError("give conversions or config key 'tier', not both")
    if isinstance(conversions, (str, int)) or hasattr(conversions, "mode"):
        conversions = [conversions]
    chosen = (conv_table.select(conversions) if conversions is not None else
              [conv_table.Selected(n, n) for n in default_conversions(
                  formats_here + ["torchscript"], cfg.tier)])
    if not chosen:
        raise ConfigError("conversions is empty: name at least one (modelbench list)")
    names = [c.name for c in chosen if c.name]
    device = _resolve_device(cfg)
    executor_argv = _engine.executor_argv(executor, executor_options)
    if executor_argv and serving:
        raise ConfigError("executor runs plain benchmarks: scenario and sweep run on this "
                          "machine (leave out executor)")
    if executor_argv and not cfg.multiprocessing:
        raise ConfigError("executor needs multiprocessing=True: the model travels to "
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
            raise ConfigError(
                "give data (one sample without the batch dimension) or a data_loader: "
                "a PyTorch module does not declare its input shapes"
            )
        if not names:  # every one asked for is an alma option modelbench lacks
            return _keyed(chosen, {"": from_report({"results": []}, cfg.json)}, device)
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
            # EXPORT+AOT_INDUCTOR's package is compiled, and TORCHSCRIPT's
            # trace made, on the device the engine will place them on: CUDA
            # when asked for (or auto) and usable here, else the CPU.
            def placed(name: str) -> str:
                here = [d["device"] for d in rows.get(name, {}).get("devices", []) if d["here"]]
                return "cuda" if device in ("cuda", "auto") and "cuda" in here else "cpu"

            formats.update(export_forms(source, sha, inputs, outputs, run_dir, wanted,
                                        cfg.opset, cfg.cache, cfg.cache_dir, isolated,
                                        cfg.timeout, placed("EXPORT+AOT_INDUCTOR"),
                                        placed("TORCHSCRIPT")))
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
        argv = _engine.bench_argv(
            cfg, [model_path], names, json_path=json_path, device=device, labels=labels,
            inputs=inputs, in_process=not cfg.multiprocessing,
            command="load" if scenario is not None else "bench",
            # The pytorch form this front wrote from the caller's object.
            own_code=source.kind != "onnx") + executor_argv + serving
        rc = _engine.run(argv, in_process=not cfg.multiprocessing)
        if rc == 2 or not os.path.exists(json_path):
            raise ConfigError(
                f"modelbench bench refused the run (exit status {rc}); its messages are "
                "above in the log"
            )
        with open(json_path) as f:
            report = json.load(f)
        reports = report["reports"] if "reports" in report else [report]
        by_point = {str(rep.get("sweep_point") or ""): from_report(rep, cfg.json)
                    for rep in reports}
        keyed = _keyed(chosen, by_point, device)
        for results in keyed.values():
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
