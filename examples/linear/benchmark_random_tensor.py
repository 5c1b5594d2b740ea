#!/usr/bin/env python3
"""Benchmark a Linear + ReLU model on random tensors: the smallest use of
modelbench's Python front (alma's `benchmark_random_tensor.py`).

    PYTHONPATH=../../python /usr/bin/python3 benchmark_random_tensor.py \
        --conversions EAGER,JIT_TRACE,ORT_CPU,ONEDNN --batch-size 64 --n-samples 512
"""

import logging

import torch
from torch import nn

from modelbench import benchmark_model, display_all_results, parse_benchmark_args, setup_logging


class LinearReLU(nn.Module):
    """Two Linear layers with a ReLU between them."""

    def __init__(self, features: int = 256, hidden: int = 512, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> None:
    logger = logging.getLogger("modelbench")
    args, device = parse_benchmark_args(logger)
    setup_logging(level=args.log_level)
    torch.manual_seed(0)
    model = LinearReLU().eval()
    conversions = args.conversions_given or ["EAGER", "JIT_TRACE", "JIT_FREEZE", "INT8_DYNAMIC+EAGER",
                                       "ORT_CPU", "INT8_DYNAMIC+ORT_CPU", "ONEDNN", "XNNPACK"]
    config = args.config
    config.fail_on_error = False  # show every conversion, failed or not
    results = benchmark_model(model, config, conversions, data=torch.randn(256))
    display_all_results(results, include_traceback_for_errors=True)


if __name__ == "__main__":
    main()
