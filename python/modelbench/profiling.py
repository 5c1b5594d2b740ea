"""Function profiles: what a whole inference function would cost under each
conversion, and how much of it is Python that no conversion accelerates.

    import modelbench

    @modelbench.profile(conversions=["EAGER", "JIT_FREEZE", "ORT_CPU"], validate=True)
    def classify(image):
        x = preprocess(image)          # Python: uncaptured
        logits = model(x)              # a captured segment
        return postprocess(logits)     # Python: uncaptured

    with modelbench.profile_session():
        for image in images:
            classify(image)
    # the table is printed when the session ends (or at modelbench.report())

octoml-profile's view on Debian's PyTorch 1.13, which has no TorchDynamo:
segments are captured at the ``nn.Module.__call__`` boundary
(``modelbench.capture``): each call of a module that no other module call
encloses is a segment, everything else inside the function is uncaptured
Python. Per call the decorated function records its total time and each
segment's time; the first ``warmup_calls`` calls (lazy initialisation,
allocator warm-up) are discarded, as octoml-profile discards compilation
runs. At the report, every captured module is benchmarked on the inputs of
its first call under each conversion by one ``python3 -m modelbench bench``
run (same manifests, export cache, reports and history as
``benchmark_model``), and the prediction of one call under conversion C is

    uncaptured time + sum over modules of (calls per function call x C's median)

``validate=True`` runs the function again with each module replaced by its
converted form, for the conversions that run in this process (the PyTorch
ones: EAGER, JIT_*, CHANNELS_LAST, BF16+EAGER, INT8_*+EAGER), and prints the
measured time against the prediction.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import capture

log = logging.getLogger("modelbench")

DEFAULT_WARMUP_CALLS = 2
DEFAULT_VALIDATE_CALLS = 10


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------


@dataclass
class Segment:
    """One captured module of a function."""

    module: Any
    name: str
    location: str
    tensors: Optional[Tuple[Any, ...]] = None  # inputs of its first call
    why_not: str = ""  # why it cannot be benchmarked
    sha256: str = ""
    onnx_path: str = ""  # its ONNX export, while the report runs
    calls: List[int] = field(default_factory=list)  # per kept function call
    seconds: List[float] = field(default_factory=list)


@dataclass
class FunctionRecord:
    """Everything measured for one decorated function."""

    fn: Callable[..., Any]
    name: str
    where: str
    conversions: Optional[List[str]]
    warmup_calls: int
    validate: bool
    calls_seen: int = 0
    totals: List[float] = field(default_factory=list)  # seconds per kept call
    segments: Dict[int, Segment] = field(default_factory=dict)
    last_call: Optional[Tuple[Tuple[Any, ...], Dict[str, Any]]] = None


class _CallListener(capture.Listener):
    """Times the top-level module calls of one function call; with
    `substitutes` runs converted forms instead of the modules."""

    max_depth = 0

    def __init__(self, record: FunctionRecord,
                 substitutes: Optional[Dict[int, Callable[..., Any]]] = None) -> None:
        self.record = record
        self.substitutes = substitutes
        self.seconds: Dict[int, float] = {}
        self.counts: Dict[int, int] = {}
        self.overhead = 0.0  # time spent capturing inputs, not the function's

    def on_call(self, module, args, kwargs, depth, call):
        key = id(module)
        if self.substitutes is not None:
            substitute = self.substitutes.get(key)
            if substitute is not None:
                return substitute(args, kwargs, call)
            return call()
        segment = self.record.segments.get(key)
        if segment is None:
            t = time.perf_counter()
            where = capture.tracked_site(module) or f"called at {capture.call_site()}"
            segment = Segment(module, type(module).__name__, where)
            try:
                segment.tensors = capture.positional_tensors(module, args, kwargs)
            except capture.NotBenchmarkable as e:
                segment.why_not = str(e)
            self.record.segments[key] = segment
            self.overhead += time.perf_counter() - t
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - started
            self.counts[key] = self.counts.get(key, 0) + 1


class ProfileSession:
    """Collects the calls of decorated functions; :meth:`report` benchmarks
    their modules and prints the tables. Use as a context manager
    (:func:`profile_session`), which reports when the block ends."""

    def __init__(self, conversions: Optional[Sequence[Union[str, int]]] = None,
                 config: Any = None, warmup_calls: int = DEFAULT_WARMUP_CALLS,
                 validate: bool = False, validate_calls: int = DEFAULT_VALIDATE_CALLS,
                 display: Callable[[str], Any] = print) -> None:
        if warmup_calls < 0:
            raise ValueError(f"warmup_calls must be >= 0, got {warmup_calls}")
        self.conversions = list(conversions) if conversions is not None else None
        self.config = config
        self.warmup_calls = warmup_calls
        self.validate = validate
        self.validate_calls = validate_calls
        self.display = display
        self.functions: Dict[Any, FunctionRecord] = {}
        self.last_report: Optional[ProfileReport] = None
        self._previous: Optional[ProfileSession] = None

    # -- recording --

    def call(self, fn: Callable[..., Any], args: Tuple[Any, ...], kwargs: Dict[str, Any],
             options: Dict[str, Any]) -> Any:
        """Runs fn(*args, **kwargs), recording it."""
        record = self.functions.get(fn)
        if record is None:
            where = _where(fn)
            warmup = options.get("warmup_calls")
            record = FunctionRecord(
                fn, getattr(fn, "__qualname__", repr(fn)), where,
                options.get("conversions") or self.conversions,
                self.warmup_calls if warmup is None else warmup,
                bool(options.get("validate") or self.validate),
            )
            self.functions[fn] = record
        listener = _CallListener(record)
        started = time.perf_counter()
        with capture.listening(listener):
            result = fn(*args, **kwargs)
        total = time.perf_counter() - started - listener.overhead
        record.calls_seen += 1
        if record.calls_seen > record.warmup_calls:
            n_kept = len(record.totals)
            record.totals.append(total)
            for key, segment in record.segments.items():
                segment.calls += [0] * (n_kept - len(segment.calls))
                segment.seconds += [0.0] * (n_kept - len(segment.seconds))
                segment.calls.append(listener.counts.get(key, 0))
                segment.seconds.append(listener.seconds.get(key, 0.0))
            record.last_call = (args, kwargs)
        return result

    def __enter__(self) -> "ProfileSession":
        global _active
        self._previous, _active = _active, self
        return self

    def __exit__(self, *exc: Any) -> None:
        global _active
        _active = self._previous
        if exc[0] is None and self.functions:
            self.report()

    # -- reporting --

    def report(self) -> "ProfileReport":
        """Benchmarks the captured modules, predicts each function under each
        conversion (and validates where asked), prints the tables and
        returns them. The session's records are then cleared."""
        records = [r for r in self.functions.values() if r.totals]
        for r in self.functions.values():
            if not r.totals:
                log.warning("profile: %s ran %d time(s), all discarded as warm-up "
                            "(warmup_calls=%d): nothing to report", r.name, r.calls_seen,
                            r.warmup_calls)
        self.functions = {}
        report = ProfileReport([])
        if not records:
            return report
        # The modules' manifests and exports live here until the validation
        # has run the ONNX conversions.
        run_dir = tempfile.mkdtemp(prefix="modelbench-profile-")
        try:
            bench = _benchmark(records, self.conversions, self.config, run_dir)
            for record in records:
                names = _names(record.conversions or self.conversions)
                table = _function_table(record, names, bench)
                if record.validate:
                    _validate(record, table, self.validate_calls, bench.threads)
                report.functions.append(table)
                for line in table.lines():
                    self.display(line)
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
        self.last_report = report
        return report


@dataclass
class ProfileReport:
    """The tables of one report, one per function."""

    functions: List["FunctionTable"]

    def function(self, name: str) -> "FunctionTable":
        for f in self.functions:
            if f.name == name or f.name.endswith("." + name):
                return f
        raise KeyError(name)


_active: Optional[ProfileSession] = None
_default: Optional[ProfileSession] = None


def _session() -> ProfileSession:
    global _default
    if _active is not None:
        return _active
    if _default is None:
        _default = ProfileSession()
    return _default


def profile(fn: Optional[Callable[..., Any]] = None, *,
            conversions: Optional[Sequence[Union[str, int]]] = None,
            warmup_calls: Optional[int] = None, validate: bool = False) -> Any:
    """Decorator: the function runs unchanged while its calls are recorded
    (total time, time in each captured module call, uncaptured Python).

    Args:
        conversions: predict under these (names, ids, alma aliases); default:
            the session's, else EAGER and the default ONNX set.
        warmup_calls: first calls discarded (default: the session's, 2).
        validate: run the function again with the modules converted (the
            PyTorch conversions through torch, the ONNX ones through the C
            library's in-process runner; TORCHSCRIPT is predicted only) and
            print measured against predicted.

    The table is printed when the enclosing :func:`profile_session` ends,
    or by :func:`report` for calls made outside a session.
    """
    options = {"conversions": list(conversions) if conversions is not None else None,
               "warmup_calls": warmup_calls, "validate": validate}
    if options["conversions"]:
        _names(options["conversions"])  # unknown names fail here, not at the report

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _session().call(f, args, kwargs, options)

        return wrapper

    return decorate(fn) if fn is not None else decorate


def profile_session(conversions: Optional[Sequence[Union[str, int]]] = None,
                    config: Any = None, warmup_calls: int = DEFAULT_WARMUP_CALLS,
                    validate: bool = False, validate_calls: int = DEFAULT_VALIDATE_CALLS,
                    display: Callable[[str], Any] = print) -> ProfileSession:
    """``with profile_session(...):`` records the decorated functions called in
    the block and prints their tables when it ends.

    Args:
        conversions: as in :func:`profile` (a decorator's own list wins).
        config: a BenchmarkConfig or dict for the benchmark of the modules
            (``min_time``, ``threads``, ``html``, ``labels``, ...); threads
            default to torch's in this process, fail_on_error to False.
        warmup_calls: first calls of each function discarded (default 2).
        validate: validate every function (see :func:`profile`).
        validate_calls: calls timed per conversion when validating.
        display: where the table lines go (print).
    """
    return ProfileSession(conversions, config, warmup_calls, validate, validate_calls, display)


def report() -> "ProfileReport":
    """Reports the decorated functions called outside any session."""
    return _session().report() if _active is None else _active.report()


# ---------------------------------------------------------------------------
# Benchmarking the segments
# ---------------------------------------------------------------------------


def _where(fn: Callable[..., Any]) -> str:
    try:
        file = inspect.getsourcefile(fn) or ""
        line = inspect.getsourcelines(fn)[1]
        return f"{capture.short_path(file)}:{line}"
    except (OSError, TypeError):
        return getattr(fn, "__module__", "?")


def _names(conversions: Optional[Sequence[Union[str, int]]]) -> List[str]:
    from . import conversions as conv_table
    from .api import default_conversions

    if conversions is None:
        return default_conversions(["pytorch", "onnx"])
    return conv_table.resolve(conversions)


def _config(config: Any) -> Any:
    import torch

    from .config import BenchmarkConfig

    if isinstance(config, BenchmarkConfig):
        return config
    values: Dict[str, Any] = dict(config or {})
    values.setdefault("threads", torch.get_num_threads())
    values.setdefault("fail_on_error", False)
    return BenchmarkConfig.from_any(values)


@dataclass
class _Bench:
    """Median latency (ms) per module hash and conversion, or why not."""

    median_ms: Dict[Tuple[str, str], float] = field(default_factory=dict)
    errors: Dict[Tuple[str, str], str] = field(default_factory=dict)
    threads: int = 1  # the benchmark's, for the validation


def _benchmark(records: List[FunctionRecord], conversions: Any, config: Any,
               run_dir: str) -> _Bench:
    """One bench run over the manifests of every captured module (written
    under run_dir); each segment learns its hash and ONNX export."""
    from .api import _bench_argv, _run_engine

    cfg = _config(config)
    names: List[str] = []
    for record in records:
        for name in _names(record.conversions or conversions):
            if name not in names:
                names.append(name)
    formats = capture.wanted_formats(names, None)
    bench = _Bench(threads=max(int(cfg.threads or 1), 1))
    manifests: Dict[str, str] = {}
    for record in records:
        script = record.where.rsplit(":", 1)[0]
        for segment in record.segments.values():
            if segment.tensors is None:
                continue
            try:
                segment.sha256 = capture.model_hash(segment.module, segment.tensors)
                if segment.sha256 in manifests:
                    segment.onnx_path = _onnx_path(manifests[segment.sha256])
                    continue
                origin = capture.ModelOrigin(
                    os.path.abspath(script) if os.path.exists(script) else script,
                    segment.location.split(" at ", 1)[-1], {"function": record.name})
                manifests[segment.sha256] = capture.write_model(
                    os.path.join(run_dir, f"{segment.name}-{segment.sha256[:12]}"),
                    segment.module, segment.tensors, segment.sha256, origin, formats,
                    cfg.opset, cfg.cache, cfg.cache_dir)
                segment.onnx_path = _onnx_path(manifests[segment.sha256])
            except Exception as e:  # noqa: BLE001 - one module's failure spares the rest
                segment.why_not = f"{type(e).__name__}: {e}".splitlines()[0]
    if not manifests:
        return bench
    paths = list(manifests.values())
    json_path = cfg.json or os.path.join(run_dir, "report.json")
    argv = _bench_argv(cfg, paths[0], names, None, json_path, cfg.labels, "cpu",
                       in_process=False)
    argv[3:3] = paths[1:]
    rc = _run_engine(argv, in_process=False)
    if not os.path.exists(json_path):
        raise RuntimeError(f"modelbench bench wrote no report (exit status {rc}); its "
                           "messages are in the 'modelbench' log (setup_logging())")
    with open(json_path) as f:
        data = json.load(f)
    for rep in data.get("reports", [data]):
        sha = rep["model"]["sha256"]
        for r in rep["results"]:
            key = (sha, r["conversion"])
            median = (r.get("latency_ms") or {}).get("median")
            if r["status"] == "ok" and median is not None:
                bench.median_ms[key] = float(median)
            else:
                bench.errors[key] = f"{r['status']}: {r.get('error') or ''}".rstrip(": ")
    return bench


def _onnx_path(manifest: str) -> str:
    """The ONNX export a manifest names, or "" (its export failed)."""
    with open(manifest) as f:
        entry = json.load(f).get("formats", {}).get("onnx", {})
    path = entry.get("path") or ""
    return os.path.join(os.path.dirname(manifest), path) if path else ""


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


@dataclass
class Row:
    """One conversion of one function."""

    conversion: str
    segment_ms: Dict[str, Optional[float]]  # per segment label: calls x median
    uncaptured_ms: float
    predicted_ms: Optional[float]
    speedup: Optional[float] = None
    measured_ms: Optional[float] = None
    error_pct: Optional[float] = None
    note: str = ""


@dataclass
class FunctionTable:
    """The profile of one function: what was measured and the prediction
    per conversion."""

    name: str
    where: str
    calls: int
    discarded: int
    total_ms: float
    uncaptured_ms: float
    segments: List[Dict[str, Any]]
    rows: List[Row]

    def row(self, conversion: str) -> Row:
        for r in self.rows:
            if r.conversion == conversion:
                return r
        raise KeyError(conversion)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "function": self.name, "where": self.where, "calls": self.calls,
            "discarded": self.discarded, "total_ms": self.total_ms,
            "uncaptured_ms": self.uncaptured_ms, "segments": self.segments,
            "rows": [r.__dict__ for r in self.rows],
        }

    def lines(self) -> List[str]:
        captured = self.total_ms - self.uncaptured_ms
        share = self.uncaptured_ms / self.total_ms if self.total_ms > 0 else 0.0
        out = [
            "",
            f"modelbench profile: {self.name} ({self.where}), {self.calls} calls measured "
            f"(first {self.discarded} discarded)",
            f"  measured per call: {self.total_ms:.3f} ms = segments {captured:.3f} ms + "
            f"uncaptured Python {self.uncaptured_ms:.3f} ms ({share:.0%})",
        ]
        for s in self.segments:
            out.append(f"  segment {s['label']}: {s['calls_per_call']:g} call(s) per function call, "
                       f"{s['mean_ms']:.3f} ms per function call here; {s['location']}"
                       + (f"; not benchmarked: {s['why_not']}" if s["why_not"] else ""))
        labels = [s["label"] for s in self.segments]
        head = ["conversion"] + [f"{label} ms" for label in labels] + [
            "uncaptured ms", "predicted ms", "speed-up", "measured ms", "error"]
        cells = [head]
        for r in self.rows:
            cells.append(
                [r.conversion]
                + [_ms(r.segment_ms.get(label)) for label in labels]
                + [_ms(r.uncaptured_ms), _ms(r.predicted_ms),
                   f"{r.speedup:.2f}x" if r.speedup else "-", _ms(r.measured_ms),
                   f"{r.error_pct:+.1f}%" if r.error_pct is not None else "-"])
        widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
        out.append("")
        for i, row in enumerate(cells):
            out.append("  " + "  ".join(c.ljust(widths[k]) if k == 0 else c.rjust(widths[k])
                                        for k, c in enumerate(row)))
        notes = [f"  {r.conversion}: {r.note}" for r in self.rows if r.note]
        if notes:
            out += [""] + notes
        return out


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.3f}"


def _function_table(record: FunctionRecord, names: List[str], bench: _Bench) -> FunctionTable:
    n = len(record.totals)
    captured = [sum(s.seconds[i] if i < len(s.seconds) else 0.0
                    for s in record.segments.values()) for i in range(n)]
    uncaptured_ms = statistics.median(t - c for t, c in zip(record.totals, captured)) * 1e3
    total_ms = statistics.median(record.totals) * 1e3
    segments = []
    labels: Dict[int, str] = {}
    for key, s in record.segments.items():
        calls = [c for c in s.calls] + [0] * (n - len(s.calls))
        label = s.name if s.name not in labels.values() else f"{s.name}#{len(labels)}"
        labels[key] = label
        segments.append({
            "label": label, "class": capture.class_name(s.module), "location": s.location,
            "sha256": s.sha256 or None, "calls_per_call": sum(calls) / n,
            "mean_ms": sum(s.seconds) / n * 1e3, "why_not": s.why_not,
        })
    rows = []
    eager_pred: Optional[float] = None
    for name in names:
        seg_ms: Dict[str, Optional[float]] = {}
        predicted: Optional[float] = uncaptured_ms
        notes = []
        for key, s in record.segments.items():
            per_call = segments[list(record.segments).index(key)]["calls_per_call"]
            median = bench.median_ms.get((s.sha256, name)) if s.sha256 else None
            if median is None:
                seg_ms[labels[key]] = None
                predicted = None
                why = bench.errors.get((s.sha256, name)) or s.why_not or "not benchmarked"
                notes.append(f"{labels[key]}: {why}")
            else:
                seg_ms[labels[key]] = per_call * median
                if predicted is not None:
                    predicted += per_call * median
        rows.append(Row(name, seg_ms, uncaptured_ms, predicted, note="; ".join(notes)))
        if name == "EAGER":
            eager_pred = predicted
    base = eager_pred if eager_pred else (rows[0].predicted_ms if rows else None)
    for r in rows:
        if base and r.predicted_ms:
            r.speedup = base / r.predicted_ms
    return FunctionTable(record.name, record.where, n, record.warmup_calls, total_ms,
                         uncaptured_ms, segments, rows)


# ---------------------------------------------------------------------------
# Validation: the function again, with converted modules
# ---------------------------------------------------------------------------


def _converted(segment: Segment, conversion: str, threads: int) -> Callable[..., Any]:
    """The module converted by the PyTorch option, as a substitute for the
    capture: (args, kwargs, call) -> outputs."""
    import torch

    from .conversions import option
    from .conversions.options.base import ConvertContext

    module = copy.deepcopy(segment.module)
    ctx = ConvertContext(example_inputs=segment.tensors, calibration=[segment.tensors],
                         threads=threads, log=log)
    with capture.paused():
        converted = option(conversion).convert(module, ctx)

    def run(args: Tuple[Any, ...], kwargs: Dict[str, Any], call: Callable[[], Any]) -> Any:
        inputs = capture.positional_tensors(segment.module, args, kwargs) if kwargs else args
        if converted.prepare_inputs is not None:
            inputs = converted.prepare_inputs(tuple(inputs))
        with torch.no_grad():
            if converted.call_context is None:
                return converted.fn(*inputs)
            with converted.call_context():
                return converted.fn(*inputs)

    return run


def _onnx_converted(segment: Segment, conversion: str, threads: int) -> Callable[..., Any]:
    """The module's ONNX export run by an ONNX conversion in this process
    (mb_runner), its outputs in the structure the module returns."""
    import torch

    from .runner import Runner, unflatten

    if not segment.onnx_path:
        raise RuntimeError(f"{segment.name} has no ONNX export")
    runner = Runner(segment.onnx_path, conversion, segment.tensors or (), threads)
    with capture.paused(), torch.no_grad():
        template = segment.module(*(segment.tensors or ()))

    def run(args: Tuple[Any, ...], kwargs: Dict[str, Any], call: Callable[[], Any]) -> Any:
        inputs = capture.positional_tensors(segment.module, args, kwargs) if kwargs else args
        return unflatten(template, runner(inputs))

    return run


def _validate(record: FunctionRecord, table: FunctionTable, calls: int,
              threads: int) -> None:
    """Measures the function with each conversion's form of its modules in
    their place (the PyTorch options as torch runs them, the ONNX ones
    through mb_runner on the export) and sets measured_ms and error_pct."""
    import torch

    from . import conversions as conv_table
    from .conversions import PYTORCH_CONVERSIONS

    if record.last_call is None:
        return
    args, kwargs = record.last_call
    formats = {r["name"]: r["format"] for r in conv_table.list_conversions()}
    for row in table.rows:
        if row.conversion in PYTORCH_CONVERSIONS:
            make = _converted
            threads_here = torch.get_num_threads()
        elif formats.get(row.conversion) == "onnx":
            make = _onnx_converted
            threads_here = threads
        else:
            row.note = (row.note + "; " if row.note else "") + (
                f"not validated: {row.conversion} runs only in the engine's workers")
            continue
        segments = [(k, s) for k, s in record.segments.items() if s.tensors is not None]
        try:
            substitutes = {k: make(s, row.conversion, threads_here) for k, s in segments}
        except Exception as e:  # noqa: BLE001 - a conversion that fails here is reported
            row.note = (row.note + "; " if row.note else "") + (
                f"not validated: {type(e).__name__}: {e}".splitlines()[0])
            continue
        totals = []
        try:
            for i in range(record.warmup_calls + calls):
                listener = _CallListener(record, substitutes)
                started = time.perf_counter()
                with capture.listening(listener):
                    record.fn(*args, **kwargs)
                if i >= record.warmup_calls:
                    totals.append(time.perf_counter() - started)
        except Exception as e:  # noqa: BLE001 - the converted form failed on these calls
            row.note = (row.note + "; " if row.note else "") + (
                f"not validated: {type(e).__name__}: {e}".splitlines()[0])
            continue
        finally:
            substitutes.clear()  # ONNX runners release their sessions
        row.measured_ms = statistics.median(totals) * 1e3
        if row.predicted_ms is not None and row.measured_ms > 0:
            row.error_pct = (row.predicted_ms - row.measured_ms) / row.measured_ms * 100
