"""alma's ``alma.benchmark.benchmark_config``: :class:`BenchmarkConfig`."""

from ..config import BenchmarkConfig

__all__ = ["BenchmarkConfig"]
