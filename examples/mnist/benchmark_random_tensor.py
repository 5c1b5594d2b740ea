#!/usr/bin/env python3
"""Benchmarks the trained digits CNN on random 1x28x28 tensors: speed and
agreement with EAGER, no labels.

    /usr/bin/python3 benchmark_random_tensor.py [--model-path model/mnist.pt]
        [--conversions ...] [--batch-size 1]
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from benchmark_with_dataloader import DEFAULT_CONVERSIONS, load_model
from model import HERE
from modelbench import benchmark_model, display_all_results, parse_benchmark_args, setup_logging


def main() -> None:
    logger = logging.getLogger("modelbench")
    args, device = parse_benchmark_args(logger)
    setup_logging(level=args.log_level)
    model_path = Path(args.model_path or HERE / "model" / "mnist.pt")
    if not model_path.exists():
        raise SystemExit(f"{model_path} is missing: run train.py first")
    config = args.config
    config.fail_on_error = False
    results = benchmark_model(load_model(model_path), config,
                              args.conversions_given or DEFAULT_CONVERSIONS,
                              data=torch.randn(1, 28, 28))
    display_all_results(results)


if __name__ == "__main__":
    main()
