#!/usr/bin/env python3
"""Benchmarks the trained digits CNN on the held-out digits, with their
labels: every conversion reports its speed, its agreement with EAGER and its
real top-1 accuracy on the task.

    /usr/bin/python3 benchmark_with_dataloader.py [--model-path model/mnist.pt]
        [--data-dir data] [--conversions EAGER,ORT_CPU,...] [--batch-size 32]

--model-path takes train.py's weights (model/mnist.pt) or one of its int8
TorchScript files (model/mnist_ptq.pt, model/mnist_qat.pt).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from model import HERE, build_model, load_split
from modelbench import benchmark_model, display_all_results, parse_benchmark_args, setup_logging
from modelbench.arguments import build_parser

DEFAULT_CONVERSIONS = [
    "EAGER", "JIT_FREEZE", "BF16+EAGER", "INT8_STATIC+EAGER", "FAKE_QUANT+EAGER",
    "ORT_CPU", "INT8_STATIC+ORT_CPU", "ONEDNN", "BF16+ONEDNN", "INT8_STATIC+ONEDNN",
]


def load_model(path: Path):
    """train.py's weights into a fresh MnistCNN, or a TorchScript file as is."""
    try:
        return build_model(path)
    except (RuntimeError, KeyError, AttributeError, TypeError):
        return str(path)  # a TorchScript file: benchmark_model loads it


def main() -> None:
    logger = logging.getLogger("modelbench")
    args, device = parse_benchmark_args(logger)
    setup_logging(level=args.log_level)
    model_path = Path(args.model_path or HERE / "model" / "mnist.pt")
    data_dir = Path(args.data_dir or HERE / "data")
    if not model_path.exists():
        raise SystemExit(f"{model_path} is missing: run train.py first")
    test_set = load_split(data_dir, "test")
    loader = torch.utils.data.DataLoader(test_set, batch_size=args.batch_size)
    config = args.config
    # Every held-out digit unless --n-samples says otherwise.
    if args.n_samples == build_parser().get_default("n_samples"):
        config.n_samples = len(test_set)
    config.fail_on_error = False
    results = benchmark_model(load_model(model_path), config,
                              args.conversions_given or DEFAULT_CONVERSIONS, data_loader=loader)
    display_all_results(results)
    print("\nTop-1 on the held-out digits (task accuracy) per conversion:")
    for name, r in results.items():
        acc = r.get("task_accuracy")
        shown = f"{acc:.2%} of {r['task_accuracy_rows']}" if acc is not None else r.get("error")
        print(f"  {name:22s} {shown}")


if __name__ == "__main__":
    main()
