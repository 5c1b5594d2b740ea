"""Command-line arguments of benchmark scripts (alma's ``alma.arguments``)."""

from .benchmark_args import build_parser, parse_benchmark_args

__all__ = ["build_parser", "parse_benchmark_args"]
