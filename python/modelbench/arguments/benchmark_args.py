"""parse_benchmark_args: alma's command-line flags for benchmark scripts, plus
modelbench's (``alma.arguments.benchmark_args``'s place and behaviour)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

from ..config import BenchmarkConfig


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


#: Flags whose dest is the BenchmarkConfig key of the same name. These are
#: alma's script flags (their own defaults; --n-samples counts samples), not
#: bench's options, whose table is _engine.CONFIG_FLAGS.
_SAME_NAMES = ("batch_size", "n_samples", "fail_on_error", "multiprocessing", "threads",
               "warmup", "min_time", "max_time", "min_iterations", "timeout", "seed", "json",
               "html", "record", "cache")


def build_parser(description: str = "Benchmark a PyTorch model with modelbench") -> argparse.ArgumentParser:
    """The parser parse_benchmark_args uses (alma's flags, then modelbench's);
    add your own flags to it."""
    p = argparse.ArgumentParser(description=description)
    a = p.add_argument
    # alma's flags, with alma's defaults.
    a("--model-path", type=Path, default=None,
      help="a saved model (.pt TorchScript or weights, .onnx)")
    a("--data-dir", default=None, help="a folder of data for the script's data loader")
    a("--batch-size", type=int, default=64, metavar="N",
      help="samples per inference (default 64)")
    a("--n-samples", "--n_samples", type=int, default=2048, dest="n_samples", metavar="N",
      help="samples to benchmark on, across batches (default 2048)")
    a("--no-cuda", action="store_true", help="never pick CUDA for the device")
    a("--no-mps", action="store_true", help="never pick MPS for the device")
    a("--no-device-override", action="store_true",
      help="a device missing here fails the conversions instead of running on the CPU")
    a("--conversions", type=_conversion_list, nargs="+", default=None,
      help="conversion names or alma ids, comma- or space-separated (alma's 0-71; "
           "modelbench's own ids as mb:N, see `python3 -m modelbench list`); default: "
           "every alma option")
    a("--ipdb", action="store_true", help="start a post-mortem debugger on an exception")
    # modelbench's.
    a("--device", default=None,
      help="cpu, cuda, cuda:N, mps or auto (default: as alma picks, cuda when present)")
    a("--tier", type=int, default=None, choices=[1, 2, 3],
      help="with no --conversions, run modelbench's tier 1, 2 or 3 instead of alma's all")
    a("--fail-on-error", dest="fail_on_error", action="store_true", default=True,
      help="stop at the first failed conversion (default)")
    a("--no-fail-on-error", dest="fail_on_error", action="store_false",
      help="record failures with their traceback and go on")
    a("--no-multiprocessing", dest="multiprocessing", action="store_false", default=True,
      help="run every conversion in this process")
    a("--threads", type=int, default=1, help="intra-op threads (default 1)")
    a("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    a("--min-time", type=float, default=None,
      help="minimum timed seconds (default: time n-samples samples, as alma)")
    a("--max-time", type=float, default=30.0, help="cap of the timed phase (default 30)")
    a("--min-iterations", type=int, default=None,
      help="minimum timed iterations (default: as n-samples says)")
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
) -> Tuple[argparse.Namespace, List[Any]]:
    """Parses alma's flags (--model-path, --data-dir, --batch-size, --n-samples,
    --no-cuda, --no-mps, --no-device-override, --conversions, --ipdb) and
    modelbench's.

    Returns (args, conversions), as alma's does: the conversions chosen, as
    alma's ConversionOption-like objects (``.mode``), every alma option when
    none is named (``--tier`` picks modelbench's tiers instead); they are
    also ``args.conversions``. ``args.conversions_given`` is what the flag
    said (None when absent) and ``args.config`` the :class:`BenchmarkConfig`
    the flags describe. An unknown conversion exits with argparse's error.
    """
    from ..conversions import alma, select

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.ipdb:
        _ipdb_hook()
    given = [c for group in args.conversions or [] for c in group] or None
    args.conversions_given = given
    if given is None:
        chosen: List[Any] = ([] if args.tier is not None
                             else list(alma.MODEL_CONVERSION_OPTIONS.values()))
    else:
        try:
            chosen = [alma.AlmaOption(c.key) for c in select(given)]
        except (ValueError, TypeError) as e:
            parser.error(f"--conversions: {e}")
    args.conversions = chosen or None
    device = args.device
    if device is None and (args.no_cuda or args.no_mps):
        device = "auto"
    args.config = BenchmarkConfig(
        device=device,
        allow_cuda=not args.no_cuda,
        allow_mps=not args.no_mps,
        allow_device_override=not args.no_device_override,
        tier=args.tier if given is None else None,
        **{key: getattr(args, key) for key in _SAME_NAMES},
    )
    if logger is not None:
        logger.info("conversions: %s", ", ".join(
            c.mode for c in chosen) if chosen else f"modelbench's tier {args.tier}")
    return args, chosen
