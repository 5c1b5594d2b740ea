"""modelbench.tune: the fastest configuration within an accuracy budget.

A thin front over the C engine's ``modelbench tune`` (src/bench/tune.c holds
the search: successive halving over conversions x threads, per-node
sensitivity and mixed precision for int8): a module is exported to ONNX as
``benchmark_model`` exports it for its ONNX conversions, data is written as
bench's input folders, the engine runs in a ``python3 -m modelbench tune``
process (``_engine.run``) with ``--json``, and its search log
(docs/json-schema.md, "The tune log") comes back as a :class:`TuneResult`.
Nothing of the search is done here.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import logging
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _engine, conversions as conv_table
from .config import BenchmarkConfig
from .errors import ConfigError, ConfigTypeError, EngineError

log = logging.getLogger("modelbench")

#: The CLI's exit status when no configuration meets the budget: an answer,
#: not a failure (``found`` is False and ``summary`` says why).
EXIT_NONE_MEETS = 3
#: The CLI's limit on thread counts to try (src/cli/tune.c).
MAX_THREAD_COUNTS = 16


@dataclass
class TuneStep:
    """One step of the search, as the search log writes it (docs/json-schema.md,
    "The tune log"): a measurement (phase "uniform" or "mixed") or an estimate
    on the reference interpreter ("sensitivity", "mixed-estimate").

    Attributes:
        index: its position in :attr:`TuneResult.steps`.
        phase: "uniform", "sensitivity", "mixed-estimate" or "mixed".
        round: the successive-halving round of a uniform step (0 otherwise).
        conversion, threads, batch_size: the configuration.
        kept_float: the nodes left in float32 (``bench --keep-float`` runs the
            same configuration); [] when none.
        int8_flops_share: int8 conversions: the share of the model's FLOPs in
            int8 (0..1); None otherwise.
        estimated: the accuracy is an estimate (no latency).
        status: the measurement's status ("ok", "error", "unavailable", ...).
        error_message: a failed measurement's error.
        error: the largest 1 - cosine over the outputs; cosine: the smallest
            cosine (None when unknown).
        task_accuracy: measured with labels: the top-1 accuracy (0..1).
        accurate: error <= max_error; with max_accuracy_drop, measured steps:
            at most that far below the baseline's task accuracy.
        median_ms, slo_latency_ms: latencies (None for estimates, without an SLO).
        per_sample_ms: median_ms / batch_size, what candidates of different
            batch sizes are ranked by.
        min_seconds: the timed phase the measurement asked for.
        at_seconds: when it finished, in seconds from the start of the search.
        samples: estimates: the evaluation samples they ran on (the
            sensitivity ranking's first 2); None for measurements.
        dropped: why the configuration went no further (None: it did not drop out).
    """

    index: int
    phase: str
    conversion: str
    threads: int
    batch_size: int = 1
    round: int = 0
    kept_float: List[str] = field(default_factory=list)
    int8_flops_share: Optional[float] = None
    estimated: bool = False
    status: str = "ok"
    error_message: Optional[str] = None
    error: Optional[float] = None
    cosine: Optional[float] = None
    task_accuracy: Optional[float] = None
    accurate: bool = False
    median_ms: Optional[float] = None
    per_sample_ms: Optional[float] = None
    slo_latency_ms: Optional[float] = None
    min_seconds: Optional[float] = None
    at_seconds: Optional[float] = None
    samples: Optional[int] = None
    dropped: Optional[str] = None

    @classmethod
    def from_json(cls, step: Mapping[str, Any]) -> "TuneStep":
        """A step of the search log; fields a newer engine adds are left out."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in step.items() if k in known}
        values["kept_float"] = list(values.get("kept_float") or [])
        return cls(**values)

    def describe(self) -> str:
        """'INT8_STATIC+ORT_CPU x1 keeping sensitive_matmul': the configuration."""
        kept = f" keeping {', '.join(self.kept_float)}" if self.kept_float else ""
        batch = f" batch {self.batch_size}" if self.batch_size > 1 else ""
        return f"{self.conversion} x{self.threads}{batch}{kept}"


@dataclass
class TuneResult:
    """What :func:`tune` found: the search log of ``modelbench tune --json``.

    Attributes:
        found: some configuration met max_error (and the SLO).
        summary: the engine's one-line answer: the winner, or "no configuration
            meets --max-error E: the closest is X (...)" and why.
        max_error: the budget searched for (1 - cosine).
        output_path: where the winner's model was written (``output_path``
            of :func:`tune`), None when not written.
        max_accuracy_drop: the budget as task accuracy (a share), or None;
            baseline, baseline_task_accuracy: the fp32 candidate whose top-1
            accuracy it is measured from (None until measured).
        wall_seconds: the whole search.
        budget_exhausted: budget_seconds ran out; the best so far is reported.
        winner: the fastest accurate configuration, None when none is.
        closest: the measured step with the smallest error.
        fastest_uniform: the fastest accurate configuration without per-node
            precision (what a user without tune would deploy), or None.
        steps: every step, in order (:class:`TuneStep`).
        log_path: the search log written (None when tune was given none and
            the temporary one is gone).
        model_path: the ONNX model searched (the export of a module).
        log: the search log as parsed, fields a newer engine adds included.
    """

    found: bool
    summary: str
    max_error: float
    wall_seconds: float
    budget_exhausted: bool
    winner: Optional[TuneStep]
    closest: Optional[TuneStep]
    fastest_uniform: Optional[TuneStep]
    steps: List[TuneStep]
    log_path: Optional[str]
    model_path: str
    output_path: Optional[str] = None
    max_accuracy_drop: Optional[float] = None
    baseline: Optional[str] = None
    baseline_task_accuracy: Optional[float] = None
    log: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_log(cls, data: Mapping[str, Any], log_path: Optional[str]) -> "TuneResult":
        """The result of a search log (a dict of its JSON)."""
        steps = [TuneStep.from_json(s) for s in data.get("steps", [])]

        def at(key: str) -> Optional[TuneStep]:
            index = data.get(key)
            return steps[index] if isinstance(index, int) and 0 <= index < len(steps) else None

        return cls(
            found=bool(data.get("found")),
            summary=str(data.get("summary") or ""),
            max_error=float(data.get("max_error") or 0.0),
            wall_seconds=float(data.get("wall_seconds") or 0.0),
            budget_exhausted=bool(data.get("budget_exhausted")),
            winner=at("winner"),
            closest=at("closest"),
            fastest_uniform=at("fastest_uniform"),
            steps=steps,
            log_path=log_path,
            model_path=str(data.get("model_path") or ""),
            output_path=data.get("output_path"),
            max_accuracy_drop=data.get("max_accuracy_drop"),
            baseline=data.get("baseline"),
            baseline_task_accuracy=data.get("baseline_task_accuracy"),
            log=dict(data),
        )

    @property
    def speedup(self) -> Optional[float]:
        """The winner's speed over the fastest accurate uniform option (2.0:
        twice as fast); None without both."""
        w, u = self.winner, self.fastest_uniform
        if w is None or u is None or not w.median_ms or u.median_ms is None:
            return None
        return u.median_ms / w.median_ms

    def __str__(self) -> str:
        """The measured steps as a short table, then the answer (the
        per-node estimates are many: ``steps`` and the log have them)."""
        head = f"{'step':>4}  {'phase':<14} {'conversion':<26} {'thr':>3} {'kept':>4} " \
               f"{'median_ms':>10} {'cosine':>10} {'int8':>6}  outcome"
        lines = [head]
        estimates = 0
        for s in self.steps:
            if s.phase == "sensitivity":
                estimates += 1
                continue
            median = f"{s.median_ms:.3f}" if s.median_ms is not None else "-"
            cosine = f"{s.cosine:.6f}" if s.cosine is not None else "-"
            share = (f"{s.int8_flops_share * 100:.1f}%" if s.int8_flops_share is not None
                     else "-")
            again = next((t.round for t in self.steps[s.index + 1:]
                          if s.phase == t.phase == "uniform" and t.threads == s.threads
                          and t.conversion == s.conversion), None)
            outcome = ("WINNER" if self.winner is not None and s.index == self.winner.index
                       else f"measured again in round {again}" if again is not None
                       else s.dropped or (s.status if s.status != "ok" else
                                          "accurate" if s.accurate else "inaccurate"))
            lines.append(f"{s.index:>4}  {s.phase:<14} {s.conversion:<26} {s.threads:>3} "
                         f"{len(s.kept_float):>4} {median:>10} {cosine:>10} {share:>6}  "
                         f"{outcome}")
        if estimates:
            lines.append(f"({estimates} per-node sensitivity estimates: see .steps)")
        if self.winner is not None and self.winner.kept_float:
            lines.append(f"kept in float ({len(self.winner.kept_float)}): "
                         + ", ".join(self.winner.kept_float))
        lines.append(self.summary)
        ran_out = " (the budget ran out)" if self.budget_exhausted else ""
        lines.append(f"search wall time: {self.wall_seconds:.1f} s{ran_out}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------

#: tune's arguments and ``modelbench tune``'s options, in command-line order
#: (the data's options come from the model: ``_model_argv``). A message of
#: the engine that names an option is raised naming the argument.
TUNE_FLAGS = (
    ("max_error", "--max-error", _engine._value),
    ("log_path", "--json", _engine._value),
    ("conversions", "-c", _engine._optional),
    ("threads", "--threads", _engine._optional),
    ("batch_sizes", "--batch-size", _engine._optional),
    ("budget_seconds", "--budget", _engine._optional),
    ("round_seconds", "--round-time", _engine._optional),
    ("slo", "--slo", _engine._optional),
    ("seed", "--seed", _engine._optional),
    ("calibration_samples", "--calibration-samples", _engine._optional),
    ("calibration_method", "--calibration-method", _engine._optional),
    ("int8_weights", "--int8-weights", _engine._optional),
    ("cache_dir", "--cache-dir", _engine._optional),
    ("cache", "--no-cache", _engine._when_false),
    ("record", "--no-record", _engine._when_false),
    ("html_path", "--html", _engine._optional),
    ("output_path", "--output", _engine._optional),
    ("labels", "--labels", _engine._optional),
    ("max_accuracy_drop", "--max-accuracy-drop", _engine._optional),
)


def _renamed(e: Exception) -> Exception:
    """A BenchmarkConfig error about one of tune's arguments, naming it as
    tune's: "tune argument 'max_error' ..."."""
    return type(e)(str(e).replace("config key", "tune argument", 1))


def _config(values: Mapping[str, Any]) -> BenchmarkConfig:
    """The arguments tune shares with BenchmarkConfig, checked by it (same
    types, ranges and messages); those not given keep its defaults."""
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return BenchmarkConfig(**given)
    except (ConfigError, ConfigTypeError) as e:
        raise _renamed(e) from None


def _seconds(key: str, value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigTypeError(f"tune argument {key!r} must be a number of seconds, got "
                              f"{type(value).__name__} {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"tune argument {key!r} must be a finite number of seconds > 0, "
                          f"got {value!r}")
    return float(value)


#: The largest batch size tune tries (MB_TUNE_MAX_BATCH).
MAX_BATCH = 4096


def _counts(key: str, value: Union[int, Sequence[int], None], most: int) -> Optional[List[int]]:
    """threads or batch_size: one value or a list to try (the CLI's
    --threads LIST, --batch-size LIST), each in 1..most."""
    if value is None:
        return None
    counts = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(counts, (str, bytes)) or not isinstance(counts, Sequence) or not counts:
        raise ConfigTypeError(f"tune argument {key!r} must be an int or a non-empty list of "
                              f"ints, got {type(value).__name__} {value!r}")
    if len(counts) > MAX_THREAD_COUNTS:
        raise ConfigError(f"tune argument {key!r} takes up to {MAX_THREAD_COUNTS} values, "
                          f"got {len(counts)}")
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int):
            raise ConfigTypeError(f"tune argument {key!r} holds ints, got "
                                  f"{type(n).__name__} {n!r}")
        if not 1 <= n <= most:
            raise ConfigError(f"tune argument {key!r} holds values in 1..{most}, got {n}")
    return list(counts)


def _threads(value: Union[int, Sequence[int], None]) -> Optional[List[int]]:
    """threads: one count or a list to try (the CLI's --threads LIST)."""
    return _counts("threads", value, 1024)


def _conversions(value: Union[str, Sequence[str], None]) -> Optional[List[str]]:
    """The candidates' registry names (aliases and alma's names resolved); an
    unknown name is a ConfigError with the closest known one. tune searches
    the engine's ONNX conversions: another format is refused, naming it."""
    if value is None:
        return None
    entries = [value] if isinstance(value, (str, int)) else list(value)
    if not entries:
        raise ConfigError("tune argument 'conversions' is empty: name at least one "
                          "(modelbench list), or leave it out for the default candidates")
    try:
        names = conv_table.resolve(entries)
    except (ConfigError, ConfigTypeError) as e:
        raise type(e)(f"tune argument 'conversions': {e}") from None
    rows = {str(r["name"]): r for r in conv_table.list_conversions()}
    for name in names:
        if rows[name]["format"] != "onnx":
            raise ConfigError(
                f"tune argument 'conversions': {name} runs the {rows[name]['format']} form; "
                "tune searches the engine's ONNX conversions (a module is exported to ONNX)")
    return names


class _OnnxSignature:
    """What ``data.from_loader`` asks of a model, for an ONNX file: its
    inputs' names (``bound_input_names``) and a forward() taking that many
    arguments (so that an (inputs, labels) batch splits as for a module)."""

    def __init__(self, path: str) -> None:
        import onnx

        graph = onnx.load(path, load_external_data=False).graph
        weights = {t.name for t in graph.initializer}
        self.bound_input_names = [i.name for i in graph.input if i.name not in weights]

        def forward(*args: Any) -> None:  # never called
            return None

        forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(f"input_{i}", inspect.Parameter.POSITIONAL_ONLY)
             for i in range(len(self.bound_input_names))])
        self.forward = forward


def _write_batches(model: Any, loader: Any, key: str, folder: str, *,
                   max_rows: Optional[int] = None, max_batches: Optional[int] = None) -> Any:
    """Writes whole batches of an iterable, up to max_rows rows or
    max_batches batches, as bench's input folder (``data.from_loader``);
    returns its Inputs."""
    from .data import from_loader

    if isinstance(loader, (str, bytes)) or not hasattr(loader, "__iter__"):
        raise ConfigTypeError(f"tune argument {key!r} must be an iterable of batches (a "
                              f"DataLoader, a list of tensors), got {type(loader).__name__}")
    items = iter(loader)
    first = next(items, None)
    if first is None:
        raise ConfigError(f"tune argument {key!r} yielded no batches")
    rows = 1
    try:
        from .data import _split_batch

        inputs, _ = _split_batch(model, first)
        rows = int(inputs[0].shape[0]) if inputs[0].dim() > 0 else 1
    except (ConfigError, ConfigTypeError) as e:
        raise type(e)(f"tune argument {key!r}: {e}") from None
    try:
        limit = max_rows if max_rows is not None else rows * (max_batches or 1)
        return from_loader(model, itertools.chain([first], items), limit, folder)
    except (ConfigError, ConfigTypeError) as e:
        raise type(e)(f"tune argument {key!r}: {str(e).replace('data_loader', 'it')}") from None


# ---------------------------------------------------------------------------
# tune
# ---------------------------------------------------------------------------


def _labels_file(labels: Any, run_dir: str) -> Optional[str]:
    """An .npy path of the labels: a path as given (it must exist), or
    integers (a sequence, array or tensor) saved in run_dir."""
    if labels is None:
        return None
    if isinstance(labels, (str, os.PathLike)):
        path = os.fspath(labels)
        if not os.path.isfile(path):
            raise ConfigError(f"tune argument 'labels': no file {path!r}")
        return path
    import numpy as np

    if hasattr(labels, "detach"):  # a torch tensor
        labels = labels.detach().cpu().numpy()
    try:
        array = np.asarray(labels)
    except Exception as e:  # noqa: BLE001 - whatever the object raises
        raise ConfigTypeError(f"tune argument 'labels' must be a path or integers: {e}") from None
    if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
        raise ConfigTypeError("tune argument 'labels' must be a path or a 1-D sequence of "
                              f"integers, got dtype {array.dtype} shape {array.shape}")
    path = os.path.join(run_dir, "labels.npy")
    np.save(path, array.astype(np.int64))
    return path


def tune(
    model: Any,
    max_error: float,
    *,
    data: Any = None,
    data_loader: Optional[Iterable[Any]] = None,
    calibration_data: Optional[Iterable[Any]] = None,
    conversions: Union[str, Sequence[str], None] = None,
    threads: Union[int, Sequence[int], None] = None,
    budget_seconds: Optional[float] = None,
    slo: Optional[str] = None,
    batch_size: Union[int, Sequence[int], None] = None,
    n_samples: Optional[int] = None,
    calibration_samples: Optional[int] = None,
    calibration_method: Optional[str] = None,
    int8_weights: Optional[Union[int, str]] = None,
    seed: Optional[int] = None,
    round_seconds: Optional[float] = None,
    record: bool = True,
    log_path: Optional[Union[str, "os.PathLike[str]"]] = None,
    cache: bool = True,
    cache_dir: Optional[str] = None,
    opset: Optional[int] = None,
    html_path: Optional[Union[str, "os.PathLike[str]"]] = None,
    output_path: Optional[Union[str, "os.PathLike[str]"]] = None,
    labels: Any = None,
    max_accuracy_drop: Optional[float] = None,
) -> TuneResult:
    """Finds the fastest configuration whose outputs stay within `max_error`
    of the reference (``modelbench tune``): conversions x threads (x batch
    sizes) by
    successive halving, and for int8 conversions that are inaccurate but
    faster, mixed precision (the most sensitive Conv/MatMul/Gemm nodes kept
    in float until the budget holds).

    Args:
        model: an ``.onnx`` file, or what :func:`benchmark_model` takes for a
            PyTorch model (an ``nn.Module``, a factory, a TorchScript file...),
            exported to ONNX as benchmark_model exports it (dynamic batch,
            kept in the build cache under the module's hash).
        max_error: the accuracy budget: 1 - cosine on every output against
            the reference interpreter (1e-3 is bench's default).
        data: one sample without the batch dimension (a tensor or a tuple of
            tensors): a module's export example; the engine generates seeded
            inputs of that shape.
        data_loader: evaluation batches instead (an iterable of tensors,
            tuples, or (inputs, labels): labels are not used), up to
            n_samples rows, written as bench's input files (``--inputs``).
        calibration_data: the int8 calibration batches (as data_loader), up
            to calibration_samples batches (``--calibration-inputs``); None:
            bench's calibration (the evaluation data, else generated).
        conversions: the candidates (names as benchmark_model takes them);
            None: the engine's default (the ONNX CPU conversions of the default
            set and tier 2).
        threads: a thread count or a list of counts to try (default 1).
        budget_seconds: stop after this long with the best so far.
        slo: a latency objective, "p99=20ms": slower configurations lose.
        batch_size: the size of a dynamic first dimension (default 1), or a
            list of sizes to try: candidates are then ranked by time per
            sample (median / batch), the SLO holding for a batch's latency.
        n_samples: evaluation samples (rows; default: one batch).
        calibration_samples, calibration_method ("minmax", "percentile"),
        int8_weights (7, 8, "mixed"): as in bench.
        seed: the seed of generated inputs (default 0).
        round_seconds: the timed phase of the first round (default 0.25;
            each later round doubles it).
        record: store the winner's run in the results database
            (``modelbench history --label tune=winner``).
        log_path: keep the search log there (JSON, docs/json-schema.md);
            None: a temporary one, read and removed.
        cache, cache_dir: the build cache and results folder, as in
            BenchmarkConfig.
        opset: the ONNX opset of a module's export (None: the exporter's).
        html_path: also write the search as a page there (``--html``: the
            accuracy-vs-latency front with the winner).
        output_path: write the winner's model there (``--output``: what
            ``convert`` writes for it, the configuration in its metadata;
            ``modelbench bench`` on it runs that configuration again); a
            model that cannot be written raises EngineError after the search.
        labels: integer class labels, one per evaluation row: an ``.npy``
            path, or a sequence / array / tensor of ints (written as one).
        max_accuracy_drop: the budget as task accuracy instead (a share:
            0.005 for 0.5 points) against ``labels``: at most that far below
            the top-1 accuracy of the fp32 candidate closest to the
            reference; max_error then only steers the per-node search.

    Returns:
        A :class:`TuneResult`; ``print(result)`` prints a short table. A
        budget nothing meets is an answer, not an exception: ``found`` is
        False and ``summary`` names the closest configuration.

    Raises:
        ConfigError / ConfigTypeError: a bad argument (max_error <= 0, an
            unknown conversion...), naming it, or a command line the engine
            refused (with its message).
        EngineError: the engine failed (an unreadable model, a failed
            export...), with its message.
    """
    batch_sizes = _counts("batch_size", batch_size, MAX_BATCH)
    cfg = _config({"max_error": max_error,
                   "batch_size": batch_sizes[0] if batch_sizes else None,
                   "n_samples": n_samples, "calibration_samples": calibration_samples,
                   "int8_weights": int8_weights, "seed": seed, "cache": cache,
                   "cache_dir": cache_dir, "opset": opset, "record": record})
    thread_counts = _threads(threads)
    budget = _seconds("budget_seconds", budget_seconds)
    round_time = _seconds("round_seconds", round_seconds)
    names = _conversions(conversions)
    for key, value in (("slo", slo), ("calibration_method", calibration_method)):
        if value is not None and not isinstance(value, str):
            raise ConfigTypeError(f"tune argument {key!r} must be str, got "
                                  f"{type(value).__name__} {value!r}")
    if data is not None and data_loader is not None:
        raise ConfigError("give tune data or data_loader, not both")
    if max_accuracy_drop is not None:
        if isinstance(max_accuracy_drop, bool) or not isinstance(max_accuracy_drop,
                                                                 (int, float)):
            raise ConfigTypeError("tune argument 'max_accuracy_drop' must be a number, got "
                                  f"{type(max_accuracy_drop).__name__} {max_accuracy_drop!r}")
        if not (0 < max_accuracy_drop < 1):
            raise ConfigError("tune argument 'max_accuracy_drop' must be a share in (0, 1) "
                              f"(0.005 for 0.5 points), got {max_accuracy_drop!r}")
        if labels is None:
            raise ConfigError("tune argument 'max_accuracy_drop' needs 'labels' (one class "
                              "per evaluation row)")

    run_dir = tempfile.mkdtemp(prefix="modelbench-tune-")
    try:
        model_path, argv = _model_argv(model, cfg, data, data_loader, calibration_data,
                                       batch_size is not None, n_samples is not None, run_dir)
        json_path = os.fspath(log_path) if log_path is not None else os.path.join(
            run_dir, "tune.json")
        labels_path = _labels_file(labels, run_dir)
        values = {"max_error": repr(cfg.max_error), "log_path": json_path,
                  "conversions": ",".join(names) if names else None,
                  "threads": (",".join(str(n) for n in thread_counts) if thread_counts
                              else None),
                  # Several sizes: after the model's own --batch-size (the
                  # first), which the list replaces.
                  "batch_sizes": (",".join(str(n) for n in batch_sizes)
                                  if batch_sizes and len(batch_sizes) > 1 else None),
                  "budget_seconds": budget, "round_seconds": round_time, "slo": slo,
                  "seed": cfg.seed if seed is not None else None,
                  "calibration_samples": calibration_samples,
                  "calibration_method": calibration_method,
                  "int8_weights": int8_weights, "cache_dir": cfg.cache_dir,
                  "cache": cfg.cache, "record": cfg.record,
                  "html_path": os.fspath(html_path) if html_path is not None else None,
                  "output_path": (os.fspath(output_path) if output_path is not None
                                  else None),
                  "labels": labels_path,
                  "max_accuracy_drop": (repr(float(max_accuracy_drop))
                                        if max_accuracy_drop is not None else None)}
        argv += [token for key, flag, form in TUNE_FLAGS
                 for token in form(flag, values[key])]
        if os.path.exists(json_path):
            os.remove(json_path)  # a log left by an earlier run is not this one's
        output: List[str] = []
        rc = _engine.run(["modelbench", "tune", model_path, *argv], in_process=False,
                         lines=output)
        if rc == 2:
            message = _engine_message(output)
            # The engine names its option; the caller knows the argument.
            key = next((k for k, flag, _ in TUNE_FLAGS if flag + " " in message
                        or flag + ":" in message), None)
            named = f"tune argument {key!r}: " if key else ""
            raise ConfigError(f"{named}modelbench tune refused the run: {message}")
        if rc not in (0, EXIT_NONE_MEETS) or not os.path.isfile(json_path):
            raise EngineError(f"modelbench tune failed (exit status {rc}): "
                              f"{_engine_message(output)}")
        with open(json_path) as f:
            result = TuneResult.from_log(json.load(f), os.path.abspath(json_path)
                                         if log_path is not None else None)
        if rc == EXIT_NONE_MEETS and result.found:
            raise EngineError(f"modelbench tune exited with status {rc} but its log says "
                              "a configuration was found")
        return result
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _engine_message(output: List[str]) -> str:
    """The engine's error lines ("modelbench tune: ...", "modelbench: ...");
    its last line when it printed none of those."""
    errors = [line for line in output if line.startswith("modelbench")]
    if errors:
        return "; ".join(errors)
    return output[-1] if output else "(no message)"


def _model_argv(model: Any, cfg: BenchmarkConfig, data: Any, data_loader: Any,
                calibration_data: Any, batch_given: bool, samples_given: bool,
                run_dir: str) -> "tuple[str, List[str]]":
    """The ONNX file tune searches (a module's export) and the options that
    say its data: --inputs or --batch-size/--n-samples, --calibration-inputs."""
    from .data import from_sample

    argv: List[str] = []
    onnx_file = isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".onnx")
    if onnx_file:
        # A missing or broken file is the engine's to report (EngineError).
        path = os.path.abspath(os.fspath(model))
        if data is not None:
            raise ConfigError("tune argument 'data' describes a module's inputs: an ONNX "
                              "file declares its own (give data_loader for real inputs)")
        signature: Any = _OnnxSignature(path) if (
            data_loader is not None or calibration_data is not None) else None
    else:
        from .data import signature_text
        from .model import describe_outputs, export_onnx, load_source, module_sha256

        source = load_source(model, cfg.seed)
        signature = source.module
        if data is None and data_loader is None:
            raise ConfigError("give tune data (one sample without the batch dimension) or a "
                              "data_loader: a PyTorch module does not declare its input "
                              "shapes")
    inputs = None
    if data_loader is not None:
        # n_samples counts rows, as in benchmark_model: whole batches up to it.
        inputs = _write_batches(signature, data_loader, "data_loader",
                                os.path.join(run_dir, "inputs"), max_rows=cfg.n_samples)
        argv += ["--inputs", inputs.folder]
    elif data is not None:
        inputs = from_sample(signature, data, cfg.batch_size, cfg.n_samples)
        if inputs.ranges:
            # bench takes them as --input-range; tune has no such option yet.
            log.warning("tune generates integer inputs in its default range, not the "
                        "sample's (%s): give a data_loader for token ids or indices",
                        ", ".join(name for name, _, _ in inputs.ranges))
    if not onnx_file:
        outputs = describe_outputs(source.module, inputs)
        sha = module_sha256(source, signature_text(inputs.specs))
        entry = export_onnx(source, sha, inputs, outputs, run_dir, cfg.opset, cfg.cache,
                            cfg.cache_dir)
        if "error" in entry:
            raise EngineError(entry["error"])
        path = entry["path"]
    if inputs is not None and inputs.folder is None:
        argv += ["--batch-size", str(inputs.batch_size)]
        if samples_given:
            argv += ["--n-samples", str(inputs.n_batches)]
    elif inputs is None:
        if batch_given:
            argv += ["--batch-size", str(cfg.batch_size)]
        if samples_given:
            argv += ["--n-samples", str(max(1, -(-cfg.n_samples // cfg.batch_size)))]
    if calibration_data is not None:
        calibration = _write_batches(signature, calibration_data, "calibration_data",
                                     os.path.join(run_dir, "calibration"),
                                     max_batches=cfg.calibration_samples or 100)
        argv += ["--calibration-inputs", calibration.folder]
    return path, argv
