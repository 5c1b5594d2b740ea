"""modelbench for PyTorch users: benchmark an nn.Module under PyTorch's own
conversions and every ONNX conversion of the C engine, in one report.

    from modelbench import benchmark_model, display_all_results
    results = benchmark_model(model, {"batch_size": 1}, ["EAGER", "ORT_CPU"], data=x[0])
    display_all_results(results)        # or print(results)

``modelbench.tune(model, max_error, data=x[0])`` finds the fastest
configuration within an accuracy budget (the engine's ``modelbench tune``,
mixed int8/float precision included) and returns a ``TuneResult``.

alma's import paths work too (``modelbench.benchmark.log``,
``modelbench.arguments.benchmark_args``, ``modelbench.utils.setup_logging``,
...): replace ``alma`` with ``modelbench`` (docs/pytorch.md).

The measurement, statistics, accuracy, reports, build cache and history are
libmodelbench's (found in build/lib beside this package, where `make install`
put it, or at $MODELBENCH_LIBRARY); `python3 -m modelbench` is the CLI with the
PyTorch conversions. torch is imported only where a model is handled.

Every exception the package raises for the caller is a ``modelbench.Error``
(a bad config value a ``ConfigError``, also a ValueError; docs/pytorch.md).
"""

from .api import benchmark_model, benchmark_sweep
from .arguments import parse_benchmark_args
from .config import BenchmarkConfig
from .conversions import ALIASES, PYTORCH_CONVERSIONS, list_conversions
from .errors import ConfigError, ConfigTypeError, EngineError, Error
from .logs import setup_logging
from .profiling import ProfileSession, profile, profile_session, report
from .results import ConversionError, Result, Results, SweepResults, display_all_results
from .tune import TuneResult, TuneStep, tune
from .utils import save_dict_to_json
from .utils.multiprocessing import lazyload

__version__ = "0.1.0"

__all__ = [
    "ALIASES",
    "BenchmarkConfig",
    "ConfigError",
    "ConfigTypeError",
    "ConversionError",
    "EngineError",
    "Error",
    "PYTORCH_CONVERSIONS",
    "ProfileSession",
    "Result",
    "Results",
    "SweepResults",
    "TuneResult",
    "TuneStep",
    "benchmark_model",
    "benchmark_sweep",
    "display_all_results",
    "lazyload",
    "list_conversions",
    "parse_benchmark_args",
    "profile",
    "profile_session",
    "report",
    "save_dict_to_json",
    "setup_logging",
    "tune",
]
