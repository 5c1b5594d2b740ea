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
(``modelbench.capture``): each module that no other module call encloses,
called with one input signature (shapes and dtypes, the batch size
included), is a segment; everything else inside the function is
uncaptured Python. A module called with several input shapes is one
segment per shape (up to ``max_shapes`` of them), each benchmarked on its
own inputs. Per call the decorated function records its total time and
each segment's time; the first ``warmup_calls`` calls (lazy
initialisation, allocator warm-up) are discarded, as octoml-profile
discards compilation runs. At the report, every segment is benchmarked
under each conversion by one ``python3 -m modelbench bench`` run (same
manifests, export cache, reports and history as ``benchmark_model``); the
prediction of function call i under conversion C is

    uncaptured time of call i + sum over segments of (its calls in call i x C's median)

and the function's prediction is the median over its calls, as its
measured time is; calls that differ in the shapes they give their modules
are also reported by group (``shapes`` of the table).

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
from .errors import ConfigError, EngineError

log = logging.getLogger("modelbench")

DEFAULT_WARMUP_CALLS = 2
DEFAULT_VALIDATE_CALLS = 10
DEFAULT_MAX_SHAPES = 8
#: Shape groups whose arguments validation keeps and replays, per function.
MAX_GROUPS_KEPT = 32

#: A segment: (id(module), the call's input signature).
SegmentKey = Tuple[int, Tuple[Tuple[str, str], ...]]


def _segment_key(module: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> SegmentKey:
    return (id(module), tuple((a["name"], a["value"])
                              for a in capture.call_signature(module, args, kwargs)))


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------


@dataclass
class Segment:
    """One captured module of a function."""

    module: Any
    name: str
    location: str
    signature: str = ""  # the input signature, "x: float32[2, 8]"
    tensors: Optional[Tuple[Any, ...]] = None  # inputs of its first call
    # What is benchmarked: the module, or it with its constant arguments
    # bound (modelbench.bound), fed `tensors`.
    bench_module: Any = None
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
    max_shapes: int = DEFAULT_MAX_SHAPES
    calls_seen: int = 0
    totals: List[float] = field(default_factory=list)  # seconds per kept call
    segments: Dict[SegmentKey, Segment] = field(default_factory=dict)
    shapes: Dict[int, int] = field(default_factory=dict)  # id(module) -> its segments
    # Per kept call: module calls with a signature past max_shapes (not
    # segments: no prediction for that call) and their seconds.
    overflow_calls: List[int] = field(default_factory=list)
    overflow_seconds: List[float] = field(default_factory=list)
    # The last kept call's arguments per shape group (the segments a call
    # used), which validation replays: at most MAX_GROUPS_KEPT groups.
    group_calls: Dict[Tuple[SegmentKey, ...], Tuple[Tuple[Any, ...], Dict[str, Any]]] = field(
        default_factory=dict)


class _CallListener(capture.Listener):
    """Times the top-level module calls of one function call; with
    `substitutes` runs converted forms instead of the modules."""

    max_depth = 0

    def __init__(self, record: FunctionRecord,
                 substitutes: Optional[Dict[SegmentKey, Callable[..., Any]]] = None) -> None:
        self.record = record
        self.substitutes = substitutes
        self.seconds: Dict[SegmentKey, float] = {}
        self.counts: Dict[SegmentKey, int] = {}
        self.overflow_calls = 0
        self.overflow_seconds = 0.0
        self.overhead = 0.0  # time spent capturing inputs, not the function's

    def on_call(self, module, args, kwargs, depth, call):
        t = time.perf_counter()
        key = _segment_key(module, args, kwargs)
        if self.substitutes is not None:
            substitute = self.substitutes.get(key)
            self.overhead += time.perf_counter() - t
            if substitute is not None:
                return substitute(args, kwargs, call)
            return call()
        segment = self.record.segments.get(key)
        if segment is None and self.record.shapes.get(key[0], 0) < self.record.max_shapes:
            where = capture.tracked_site(module) or f"called at {capture.call_site()}"
            signature = ", ".join(f"{n}: {v}" for n, v in key[1])
            segment = Segment(module, type(module).__name__, where, signature)
            try:
                segment.bench_module, segment.tensors = capture.benchmarkable(module, args, kwargs)
            except capture.NotBenchmarkable as e:
                segment.why_not = str(e)
            self.record.segments[key] = segment
            self.record.shapes[key[0]] = self.record.shapes.get(key[0], 0) + 1
        self.overhead += time.perf_counter() - t
        started = time.perf_counter()
        try:
            return call()
        finally:
            spent = time.perf_counter() - started
            if segment is None:  # a shape past max_shapes
                self.overflow_calls += 1
                self.overflow_seconds += spent
            else:
                self.seconds[key] = self.seconds.get(key, 0.0) + spent
                self.counts[key] = self.counts.get(key, 0) + 1


class ProfileSession:
    """Collects the calls of decorated functions; :meth:`report` benchmarks
    their modules and prints the tables. Use as a context manager
    (:func:`profile_session`), which reports when the block ends."""

    def __init__(self, conversions: Optional[Sequence[Union[str, int]]] = None,
                 config: Any = None, warmup_calls: int = DEFAULT_WARMUP_CALLS,
                 validate: bool = False, validate_calls: int = DEFAULT_VALIDATE_CALLS,
                 display: Callable[[str], Any] = print,
                 max_shapes: int = DEFAULT_MAX_SHAPES) -> None:
        if warmup_calls < 0:
            raise ConfigError(f"warmup_calls must be >= 0, got {warmup_calls}")
        if not isinstance(max_shapes, int) or max_shapes < 1:
            raise ConfigError(f"max_shapes must be an int >= 1, got {max_shapes!r}")
        self.max_shapes = max_shapes
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
                self.max_shapes,
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
            record.overflow_calls.append(listener.overflow_calls)
            record.overflow_seconds.append(listener.overflow_seconds)
            group = tuple(k for k in record.segments if listener.counts.get(k))
            if group in record.group_calls or len(record.group_calls) < MAX_GROUPS_KEPT:
                record.group_calls[group] = (args, kwargs)
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
                    display: Callable[[str], Any] = print,
                    max_shapes: int = DEFAULT_MAX_SHAPES) -> ProfileSession:
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
        max_shapes: input shapes of one module that become segments of their
            own (default 8); a call that gives a module another shape gets
            no prediction (the table says how many).
    """
    return ProfileSession(conversions, config, warmup_calls, validate, validate_calls, display,
                          max_shapes)


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
    from . import _engine

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
                segment.sha256 = capture.model_hash(segment.bench_module, segment.tensors,
                                                    batch=True)
                if segment.sha256 in manifests:
                    segment.onnx_path = _onnx_path(manifests[segment.sha256])
                    continue
                origin = capture.ModelOrigin(
                    os.path.abspath(script) if os.path.exists(script) else script,
                    segment.location.split(" at ", 1)[-1], {"function": record.name})
                manifests[segment.sha256] = capture.write_model(
                    os.path.join(run_dir, f"{segment.name}-{segment.sha256[:12]}"),
                    segment.bench_module, segment.tensors, segment.sha256, origin, formats,
                    cfg.opset, cfg.cache, cfg.cache_dir)
                segment.onnx_path = _onnx_path(manifests[segment.sha256])
            except Exception as e:  # noqa: BLE001 - one module's failure spares the rest
                segment.why_not = f"{type(e).__name__}: {e}".splitlines()[0]
    if not manifests:
        return bench
    paths = list(manifests.values())
    json_path = cfg.json or os.path.join(run_dir, "report.json")
    argv = _engine.bench_argv(cfg, paths, names, json_path=json_path, device="cpu",
                              labels=cfg.labels, own_code=True)  # manifests written here
    rc = _engine.run(argv, in_process=False)
    if not os.path.exists(json_path):
        raise EngineError(f"modelbench bench wrote no report (exit status {rc}); its "
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
    # The kept calls grouped by the shapes they gave their modules (the
    # segments each used), when they differ: {"segments", "calls",
    # "measured_ms", "predicted_ms": {conversion: ms or None}}.
    shapes: List[Dict[str, Any]] = field(default_factory=list)
    unpredicted_calls: int = 0  # calls that gave a module a shape past max_shapes

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
            "rows": [r.__dict__ for r in self.rows], "shapes": self.shapes,
            "unpredicted_calls": self.unpredicted_calls,
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
            out.append(f"  segment {s['label']} ({s['signature'] or 'no arguments'}): "
                       f"{s['calls_per_call']:g} call(s) per function call, "
                       f"{s['mean_ms']:.3f} ms per function call here; {s['location']}"
                       + (f"; not benchmarked: {s['why_not']}" if s["why_not"] else ""))
        if self.unpredicted_calls:
            out.append(f"  ! {self.unpredicted_calls} of {self.calls} calls gave a module an "
                       "input shape past max_shapes: no prediction for them (the predictions "
                       "are the other calls')")
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
        if self.shapes:
            out += ["", "  by input shapes (calls that gave their modules the same shapes):"]
            for g in self.shapes[:SHAPE_GROUPS_SHOWN]:
                predicted = ", ".join(f"{name} {_ms(ms)}" for name, ms in g["predicted_ms"].items())
                validated = ", ".join(f"{name} {_ms(ms)}"
                                      for name, ms in g.get("validated_ms", {}).items())
                out.append(f"    {' + '.join(g['segments']) or 'no segment'}: {g['calls']} call(s), "
                           f"measured {_ms(g['measured_ms'])} ms; predicted ms: {predicted}"
                           + (f"; validated ms: {validated}" if validated else ""))
            if len(self.shapes) > SHAPE_GROUPS_SHOWN:
                out.append(f"    ... {len(self.shapes) - SHAPE_GROUPS_SHOWN} more groups "
                           "(as_dict()['shapes'] has them all)")
        notes = [f"  {r.conversion}: {r.note}" for r in self.rows if r.note]
        if notes:
            out += [""] + notes
        return out


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.3f}"


#: Shape groups printed per function (all are in as_dict()).
SHAPE_GROUPS_SHOWN = 8


def _call_groups(record: FunctionRecord,
                 indices: Sequence[int]) -> Dict[Tuple[SegmentKey, ...], List[int]]:
    """The kept calls (of `indices`) grouped by the segments they used: calls
    that gave their modules the same shapes."""
    groups: Dict[Tuple[SegmentKey, ...], List[int]] = {}
    for i in indices:
        groups.setdefault(tuple(k for k, s in record.segments.items()
                                if i < len(s.calls) and s.calls[i]), []).append(i)
    return groups


def _function_table(record: FunctionRecord, names: List[str], bench: _Bench) -> FunctionTable:
    n = len(record.totals)
    keys = list(record.segments)
    calls = {k: s.calls + [0] * (n - len(s.calls)) for k, s in record.segments.items()}
    seconds = {k: s.seconds + [0.0] * (n - len(s.seconds)) for k, s in record.segments.items()}
    overflow = record.overflow_calls + [0] * (n - len(record.overflow_calls))
    overflow_s = record.overflow_seconds + [0.0] * (n - len(record.overflow_seconds))
    # Per call: what no segment covers (shapes past max_shapes were module
    # time all the same, not Python).
    uncaptured = [record.totals[i] - sum(seconds[k][i] for k in keys) - overflow_s[i]
                  for i in range(n)]
    uncaptured_ms = statistics.median(uncaptured) * 1e3
    total_ms = statistics.median(record.totals) * 1e3
    segments = []
    labels: Dict[SegmentKey, str] = {}
    for key, s in record.segments.items():
        label = s.name if s.name not in labels.values() else f"{s.name}#{len(labels)}"
        labels[key] = label
        segments.append({
            "label": label, "class": capture.class_name(s.module), "location": s.location,
            "signature": s.signature, "sha256": s.sha256 or None,
            "calls_per_call": sum(calls[key]) / n, "mean_ms": sum(s.seconds) / n * 1e3,
            "why_not": s.why_not,
        })
    predicted_calls = [i for i in range(n) if not overflow[i]]

    def predict(name: str, indices: List[int]) -> Tuple[Optional[float], Dict[SegmentKey, str]]:
        """The median over these calls of each call's prediction, or None
        (with why, per segment) when a segment they use has no median."""
        medians: Dict[SegmentKey, float] = {}
        missing: Dict[SegmentKey, str] = {}
        for key, s in record.segments.items():
            if not any(calls[key][i] for i in indices):
                continue
            median = bench.median_ms.get((s.sha256, name)) if s.sha256 else None
            if median is None:
                missing[key] = bench.errors.get((s.sha256, name)) or s.why_not or "not benchmarked"
            else:
                medians[key] = median
        if missing or not indices:
            return None, missing
        return statistics.median(uncaptured[i] * 1e3 + sum(calls[k][i] * m for k, m in medians.items())
                                 for i in indices), missing

    rows = []
    eager_pred: Optional[float] = None
    for name in names:
        seg_ms: Dict[str, Optional[float]] = {}
        for key, s in record.segments.items():
            median = bench.median_ms.get((s.sha256, name)) if s.sha256 else None
            per_call = sum(calls[key]) / n
            seg_ms[labels[key]] = None if median is None else per_call * median
        predicted, missing = predict(name, predicted_calls)
        notes = [f"{labels[k]}: {why}" for k, why in missing.items()]
        rows.append(Row(name, seg_ms, uncaptured_ms, predicted, note="; ".join(notes)))
        if name == "EAGER":
            eager_pred = predicted
    base = eager_pred if eager_pred else (rows[0].predicted_ms if rows else None)
    for r in rows:
        if base and r.predicted_ms:
            r.speedup = base / r.predicted_ms
    groups = _call_groups(record, predicted_calls)
    shapes = []
    if len(groups) > 1:
        for used, indices in groups.items():
            shapes.append({
                "segments": [f"{labels[k]}({record.segments[k].signature})" for k in used],
                "calls": len(indices),
                "measured_ms": statistics.median(record.totals[i] for i in indices) * 1e3,
                "predicted_ms": {name: predict(name, indices)[0] for name in names},
            })
    return FunctionTable(record.name, record.where, n, record.warmup_calls, total_ms,
                         uncaptured_ms, segments, rows, shapes, n - len(predicted_calls))


# ---------------------------------------------------------------------------
# Validation: the function again, with converted modules
# ---------------------------------------------------------------------------


def _converted(segment: Segment, conversion: str, threads: int) -> Callable[..., Any]:
    """The module converted by the PyTorch option, as a substitute for the
    capture: (args, kwargs, call) -> outputs."""
    import torch

    from .conversions import option
    from .conversions.options.base import ConvertContext

    module = copy.deepcopy(segment.bench_module)
    ctx = ConvertContext(example_inputs=segment.tensors, calibration=[segment.tensors],
                         threads=threads, log=log)
    with capture.paused():
        converted = option(conversion).convert(module, ctx)

    def run(args: Tuple[Any, ...], kwargs: Dict[str, Any], call: Callable[[], Any]) -> Any:
        inputs = capture.benchmarkable(segment.module, args, kwargs, copy=False)[1]
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

    from ._tensors import unflatten
    from .runner import Runner

    if not segment.onnx_path:
        raise RuntimeError(f"{segment.name} has no ONNX export")
    runner = Runner(segment.onnx_path, conversion, segment.tensors or (), threads)
    with capture.paused(), torch.no_grad():
        template = segment.bench_module(*(segment.tensors or ()))

    def run(args: Tuple[Any, ...], kwargs: Dict[str, Any], call: Callable[[], Any]) -> Any:
        inputs = capture.benchmarkable(segment.module, args, kwargs, copy=False)[1]
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

    if not record.group_calls:
        return
    # Each shape group's call is replayed; the function's measured time is
    # the median over its kept calls of their group's, as its prediction
    # is the median over them of theirs.
    n = len(record.totals)
    overflow = record.overflow_calls + [0] * (n - len(record.overflow_calls))
    groups = list(_call_groups(record, [i for i in range(n) if not overflow[i]]).items())
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
        per_call: List[float] = []  # each kept call: its group's median, ms
        try:
            for g, (group, indices) in enumerate(groups):
                if group not in record.group_calls:
                    continue  # past MAX_GROUPS_KEPT: not replayed
                args, kwargs = record.group_calls[group]
                totals = []
                for i in range(record.warmup_calls + calls):
                    listener = _CallListener(record, substitutes)
                    started = time.perf_counter()
                    with capture.listening(listener):
                        record.fn(*args, **kwargs)
                    if i >= record.warmup_calls:
                        totals.append(time.perf_counter() - started - listener.overhead)
                median = statistics.median(totals) * 1e3
                per_call += [median] * len(indices)
                if len(groups) > 1 and g < len(table.shapes):
                    table.shapes[g].setdefault("validated_ms", {})[row.conversion] = median
        except Exception as e:  # noqa: BLE001 - the converted form failed on these calls
            row.note = (row.note + "; " if row.note else "") + (
                f"not validated: {type(e).__name__}: {e}".splitlines()[0])
            continue
        finally:
            substitutes.clear()  # ONNX runners release their sessions
        if not per_call:
            continue
        row.measured_ms = statistics.median(per_call)
        if row.predicted_ms is not None and row.measured_ms > 0:
            row.error_pct = (row.predicted_ms - row.measured_ms) / row.measured_ms * 100
