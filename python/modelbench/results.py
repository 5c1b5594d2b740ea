"""Results of a Python-front run: the C engine's JSON report, per conversion,
with alma's keys added, and their display (``display_all_results``, which is
also what ``print(results)`` and ``print(result)`` show)."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterator, List, Optional

from .errors import Error

log = logging.getLogger("modelbench")

#: JSON statuses that are failures of the conversion itself.
FAILED = ("error", "timeout", "crashed")


class ConversionError(Error, RuntimeError):
    """A conversion failed while fail_on_error is set."""

    def __init__(self, conversion: str, error: str, traceback: Optional[str]) -> None:
        self.conversion = conversion
        self.error = error
        self.traceback = traceback
        text = f"conversion {conversion} failed: {error}"
        if traceback:
            text += "\n" + traceback.rstrip()
        super().__init__(text)


class Result(dict):
    """One conversion's result: every key of its JSON result (``latency_ms``,
    ``accuracy``, ``peak_rss_mb``, ``segments``, ``cache_hit``...) plus alma's
    (``device``, ``total_elapsed_time``, ``total_inf_time``, ``total_samples``,
    ``batch_size``, ``throughput``, ``status``, ``error``, ``traceback``).

    Nested keys also read with dots: ``r["latency_ms.median"]``,
    ``r["accuracy.cosine"]``. ``status`` is alma's ("success" or "error");
    ``bench_status`` keeps the engine's (ok, error, timeout, crashed,
    unavailable, skipped, built).
    """

    def __str__(self) -> str:
        """What display_all_results shows of this result (against "the
        reference": a lone result does not know the report's)."""
        return "\n".join(_result_lines(str(self.get("conversion")), self, None, True, True))

    __repr__ = __str__

    def get(self, key: Any, default: Any = None) -> Any:
        """``r.get(key)`` reads what ``r[key]`` reads (dotted keys too), or
        default."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: Any) -> bool:
        try:
            self[key]
            return True
        except KeyError:
            return False

    def __missing__(self, key: str) -> Any:
        if isinstance(key, str) and "." in key:
            value: Any = self
            for part in key.split("."):
                if not isinstance(value, dict) or part not in value:
                    raise KeyError(key)
                value = value[part]
            return value
        raise KeyError(key)


class Results(dict):
    """Results keyed by the conversion names given (alma's mode for an alma
    id), in that order; ``report`` is the whole JSON report (model, machine,
    config, reference), ``json_path`` its file and ``recommendation`` what to
    deploy: {"fastest_accurate", "fastest_exact", "lowest_memory",
    "most_portable", "default", "headroom", "summary"}, conversions by the
    names given. Each result's ``recommended`` says whether it is the
    fastest accurate one."""

    report: Dict[str, Any]
    json_path: Optional[str]
    recommendation: Dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.report = {}
        self.json_path = None
        self.recommendation = {}

    def __str__(self) -> str:
        """What display_all_results prints, as one text."""
        return "\n".join(_display_lines(self, True, True))

    __repr__ = __str__


class SweepResults(dict):
    """The :class:`Results` of each point of a sweep, keyed by the point
    ("batch=4 threads=2"), in run order (``benchmark_sweep``)."""

    def __str__(self) -> str:
        """Each point's results as display_all_results prints them, under
        the point."""
        return "\n".join(f"Sweep point {_term(point)}:\n{results}" for point, results in self.items())

    __repr__ = __str__


def _alma_fields(r: Dict[str, Any]) -> Dict[str, Any]:
    ok = r.get("status") == "ok"
    batch = r.get("batch_size") or 0
    trace = r.get("backtrace")
    if not ok and not trace and r.get("log"):
        trace = _log_tail(r["log"])
    return {
        "device": r.get("device"),
        "total_elapsed_time": r.get("elapsed_seconds"),
        "total_inf_time": r.get("inference_seconds"),
        "total_samples": (r.get("iterations") or 0) * batch,
        "batch_size": batch,
        "throughput": r.get("throughput_sps"),
        "bench_status": r.get("status"),
        "status": "success" if ok else "error",
        "error": r.get("error"),
        "traceback": trace,
    }


def _log_tail(path: str, lines: int = 30) -> Optional[str]:
    try:
        with open(path, errors="replace") as f:
            text = f.read().splitlines()
    except OSError:
        return None
    return "\n".join(text[-lines:]) if text else None


def from_report(report: Dict[str, Any], json_path: Optional[str]) -> Results:
    """Results of one model's JSON report."""
    results = Results()
    results.report = report
    results.json_path = json_path
    rec = dict(report.get("recommendation") or {})
    results.recommendation = rec
    for r in report.get("results", []):
        entry = Result(r)
        entry.update(_alma_fields(r))
        entry["recommended"] = r["conversion"] == rec.get("fastest_accurate")
        results[r["conversion"]] = entry
    return results


def unavailable_result(name: str, reason: str, device: str) -> Result:
    """The result of a conversion modelbench does not run (an alma option it
    lacks): alma's status "error" with the reason; bench_status
    "unavailable", as the engine reports a runtime missing here."""
    return Result({
        "conversion": name, "device": device, "status": "error",
        "bench_status": "unavailable", "error": reason, "traceback": None,
        "total_elapsed_time": None, "total_inf_time": None, "total_samples": 0,
        "batch_size": 0, "throughput": None, "recommended": False,
    })


def rename_recommendation(results: "Results", names: Dict[str, str]) -> None:
    """The recommendation's conversions under the names given (names maps the
    registry's name to the user's)."""
    for key, value in list(results.recommendation.items()):
        if isinstance(value, str) and value in names:
            results.recommendation[key] = names[value]


def failures(results: Dict[str, Dict[str, Any]]) -> List[str]:
    """Names of the conversions that failed (not unavailable or skipped)."""
    return [n for n, r in results.items() if r.get("bench_status") in FAILED]


def _term(value: Any, keep_newlines: bool = False) -> str:
    """value as text safe to print to a terminal: characters that are not
    printable (control characters, which can move the cursor or retitle the
    window, line separators and the bidirectional controls that reorder
    what is shown) escaped as \\xNN or \\uNNNN, as the CLI shows them.
    Names, errors and tracebacks come from models and their code."""
    out = []
    for c in str(value):
        if c.isprintable() or (keep_newlines and c == "\n"):
            out.append(c)
        else:
            code = ord(c)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
    return "".join(out)


def _fmt(value: Any, spec: str, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"


def _result_lines(name: str, r: Dict[str, Any], reference: Optional[str], include_errors: bool,
                  include_traceback_for_errors: bool) -> Iterator[str]:
    """The lines display_all_results shows of one conversion's result."""
    yield f"{_term(name)} results:"
    if r.get("status") == "success":
        yield f"Device: {_term(r.get('device'))}"
        yield f"Total elapsed time: {_fmt(r.get('total_elapsed_time'), '.4f')} seconds"
        yield ("Total inference time (model only): "
               f"{_fmt(r.get('total_inf_time'), '.4f')} seconds")
        yield f"Total samples: {r.get('total_samples')} - Batch size: {r.get('batch_size')}"
        yield f"Throughput: {_fmt(r.get('throughput'), '.2f')} samples/second"
        lat = r.get("latency_ms") or {}
        yield (f"Latency: median {_fmt(lat.get('median'), '.4f')} ms, "
               f"p90 {_fmt(lat.get('p90'), '.4f')} ms, p99 {_fmt(lat.get('p99'), '.4f')} ms, "
               f"cv {_fmt(lat.get('cv'), '.1%')}")
        ci = r.get("speedup_ci")
        yield (f"Speed-up vs baseline: {_fmt(r.get('speedup_vs_baseline'), '.2f', 'x')}"
               + (f" [95% CI {ci[0]:.2f}-{ci[1]:.2f}]" if ci else ""))
        acc = r.get("accuracy")
        if acc:
            top1 = acc.get("top1_agreement")
            yield (f"Accuracy vs {_term(reference or 'reference')}: cosine {_fmt(acc.get('cosine'), '.6f')}, "
                   f"max abs err {_fmt(acc.get('max_abs_err'), '.3g')}"
                   + (f", top-1 agreement {top1:.2%}" if top1 is not None else "")
                   + (" (inaccurate)" if r.get("inaccurate") else ""))
        if r.get("task_accuracy") is not None:
            yield (f"Task accuracy (top-1 vs labels): {r['task_accuracy']:.2%} "
                   f"of {r.get('task_accuracy_rows')} samples")
        yield f"Peak memory: {_fmt(r.get('peak_rss_mb'), '.1f', ' MiB')}"
        gpu = r.get("gpu")
        if gpu:
            yield from _gpu_lines(gpu)
        for w in r.get("warnings") or []:
            yield f"Warning: {_term(w)}"
    else:
        yield (f"Benchmarking failed ({_term(r.get('bench_status'))})"
               + (f", error: {_term(r.get('error'))}" if include_errors else ""))
        if include_traceback_for_errors and r.get("traceback"):
            yield _term(r["traceback"], keep_newlines=True)


def _gpu_lines(gpu: Dict[str, Any]) -> Iterator[str]:
    """A GPU result's lines: which GPU, its device time beside the copies,
    host latency, peak memory and what NVML saw of the device."""
    info = gpu.get("info") or {}
    stat = lambda key: (gpu.get(key) or {}).get("median")  # noqa: E731
    cc = info.get("compute_capability")
    yield (f"GPU: {_term(info.get('name'))}" + (f" (sm_{cc})" if cc else "")
           + f", CUDA {_term(info.get('cuda_runtime'))}, driver {_term(info.get('driver'))}")
    yield (f"GPU compute (CUDA events): median {_fmt(stat('compute_ms'), '.4f')} ms; "
           f"copies: H2D {_fmt(stat('h2d_ms'), '.4f')} ms, D2H {_fmt(stat('d2h_ms'), '.4f')} ms; "
           f"host latency {_fmt(gpu.get('host_latency_ms'), '.4f')} ms")
    state = gpu.get("state") or {}
    yield (f"GPU memory peak: {_fmt(gpu.get('memory_peak_mb'), '.1f', ' MiB')}; "
           + (f"SM clock {_fmt(state.get('sm_clock_mhz_min'), '.0f')}-"
              f"{_fmt(state.get('sm_clock_mhz_max'), '.0f')} MHz, "
              f"{_fmt(state.get('temperature_c_max'), '.0f')} C, "
              f"{_fmt(state.get('power_w_mean'), '.0f')} W"
              + (f", throttled: {_term(state['throttle'])}" if state.get("throttle") else "")
              if "samples" in state else
              f"device state not sampled ({_term(state.get('unavailable'))})"))


def _display_lines(all_results: Dict[str, Dict[str, Any]], include_errors: bool,
                   include_traceback_for_errors: bool) -> Iterator[str]:
    """What display_all_results hands its display_function, call by call."""
    yield "\n\nAll results:"
    reference = (getattr(all_results, "report", None) or {}).get("reference")
    for name, r in all_results.items():
        yield from _result_lines(name, r, reference, include_errors,
                                 include_traceback_for_errors)
        yield "\n"
    summary = (getattr(all_results, "recommendation", None) or {}).get("summary")
    if summary:
        yield f"Recommendation: {_term(summary)}"


def display_all_results(
    all_results: Dict[str, Dict[str, Any]],
    display_function: Callable[[str], Any] = print,
    include_errors: bool = True,
    include_traceback_for_errors: bool = True,
) -> None:
    """Prints every conversion's results as alma does, with modelbench's
    latency percentiles, speed-up, accuracy against the reference and task
    accuracy; failures with their error (and traceback). ``print(results)``
    prints the same."""
    for line in _display_lines(all_results, include_errors, include_traceback_for_errors):
        display_function(line)
