"""parse_benchmark_args: alma's command-line flags for benchmark scripts, plus
modelbench's."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import List, Optional, Tuple

from .config import BenchmarkConfig


def _conversion_list(text: str) -> List[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected names or ids, comma-separated")
    return items


def _ipdb_hook() -> None:
    """--ipdb: a post-mortem debugger on an uncaught exception (ipdb when
    installed, else pdb)."""

    def hook(kind, value, tb):
        import traceback

        traceback.print_exception(kind, value, tb)
        try:
            import ipdb as debugger  # type: ignore[import-not-found]
        except ImportError:
            import pdb as debugger
        debugger.post_mortem(tb)

    sys.excepthook = hook


def build_parser(description: str = "Benchmark a PyTorch model with modelbench") -> argparse.ArgumentParser:
    """The parser parse_benchmark_args uses; add your own flags to it."""
    p = argparse.ArgumentParser(description=description)
    a = p.add_argument
    a("--conversions", type=_conversion_list, default=None,
      help="conversion names or ids, comma-separated (see `python3 -m modelbench list`); "
           "alma's names are accepted")
    a("--batch-size", type=int, default=1, metavar="N", help="samples per inference (default 1)")
    a("--n-samples", "--n_samples", type=int, default=64, dest="n_samples", metavar="N",
      help="samples to benchmark on, across batches (default 64)")
    a("--device", default="cpu", choices=["cpu", "cuda", "auto"], help="device (default cpu)")
    a("--model-path", default=None, help="a saved model (.pt TorchScript or module, .onnx)")
    a("--data-dir", default=None, help="a folder of data for the script's data loader")
    a("--ipdb", action="store_true", help="start a post-mortem debugger on an exception")
    a("--fail-on-error", dest="fail_on_error", action="store_true", default=True,
      help="stop at the first failed conversion (default)")
    a("--no-fail-on-error", dest="fail_on_error", action="store_false",
      help="record failures with their traceback and go on")
    a("--no-multiprocessing", dest="multiprocessing", action="store_false", default=True,
      help="run every conversion in this process")
    a("--threads", type=int, default=1, help="intra-op threads (default 1)")
    a("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    a("--min-time", type=float, default=2.0, help="minimum timed seconds (default 2)")
    a("--max-time", type=float, default=30.0, help="cap of the timed phase (default 30)")
    a("--min-iterations", type=int, default=20, help="minimum timed iterations (default 20)")
    a("--timeout", type=float, default=300.0, help="seconds per conversion (default 300)")
    a("--seed", type=int, default=0, help="seed of generated data (default 0)")
    a("--json", default=None, help="write the JSON report here")
    a("--html", default=None, help="write the HTML report here")
    a("--no-record", dest="record", action="store_false", default=True,
      help="do not store the run in the results database")
    a("--no-cache", dest="cache", action="store_false", default=True,
      help="neither read nor write the build cache")
    a("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
      help="logging level (default INFO; DEBUG shows the runtimes' logs)")
    return p


def parse_benchmark_args(
    logger: Optional[logging.Logger] = None, argv: Optional[List[str]] = None
) -> Tuple[argparse.Namespace, str]:
    """Parses alma's flags (--conversions, --batch-size, --n-samples, --device,
    --model-path, --data-dir, --ipdb, --fail-on-error) and modelbench's.

    Returns (args, device), as alma does; ``args.config`` is the
    :class:`BenchmarkConfig` the flags describe.
    """
    args = build_parser().parse_args(argv)
    if args.ipdb:
        _ipdb_hook()
    args.config = BenchmarkConfig(
        batch_size=args.batch_size,
        n_samples=args.n_samples,
        device=args.device,
        fail_on_error=args.fail_on_error,
        multiprocessing=args.multiprocessing,
        threads=args.threads,
        warmup=args.warmup,
        min_time=args.min_time,
        max_time=args.max_time,
        min_iterations=args.min_iterations,
        timeout=args.timeout,
        seed=args.seed,
        json=args.json,
        html=args.html,
        record=args.record,
        cache=args.cache,
    )
    if logger is not None:
        logger.info("conversions: %s", ", ".join(args.conversions or ["(default)"]))
    return args, args.device
