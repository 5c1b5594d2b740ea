"""EAGER: the module as written, in eval mode (the PyTorch baseline)."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy

CONVERSION = Conversion(
    id=60,
    name="EAGER",
    tier=1,
    default=True,
    description=(
        "the nn.Module as written, eval() under torch.inference_mode()"
    ),
    alma="EAGER",
    devices=("cpu", "cuda"),
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Returns the module itself; the engine calls it under inference_mode."""
    return Converted(fn=eval_copy(model))
