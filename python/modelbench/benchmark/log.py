"""alma's ``alma.benchmark.log``: printing results."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict

from ..results import display_all_results

__all__ = ["display_all_results", "log_failure", "log_results"]

_log = logging.getLogger("modelbench")


def log_results(results: Dict[str, Any], display_function: Callable[[str], Any] = _log.info
                ) -> None:
    """One successful result as alma prints it (device, times, samples,
    throughput), with modelbench's median latency."""
    display_all_results({"": results}, display_function=_without_header(display_function))


def log_failure(error_result: Dict[str, Any],
                display_function: Callable[[str], Any] = _log.info,
                include_errors: bool = True, include_traceback: bool = True) -> None:
    """One failed result: its error and, when asked, its traceback."""
    display_function("Benchmarking failed")
    if include_errors:
        display_function(f"Error: {error_result.get('error')}")
    if include_traceback and error_result.get("traceback"):
        display_function(str(error_result["traceback"]))


def _without_header(display: Callable[[str], Any]) -> Callable[[str], Any]:
    """display_all_results' lines for one result, less its headings."""

    def show(line: str) -> Any:
        if line in ("\n\nAll results:", " results:", "\n"):
            return None
        return display(line)

    return show
