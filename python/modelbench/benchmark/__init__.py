"""alma's ``alma.benchmark``: the config and the display of results."""

from ..config import BenchmarkConfig
from .log import display_all_results, log_failure, log_results

__all__ = ["BenchmarkConfig", "display_all_results", "log_failure", "log_results"]
