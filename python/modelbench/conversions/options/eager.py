"""EAGER: the module as written, in eval mode (the PyTorch baseline)."""

import torch

from .base import ConvertContext, Converted, eval_copy


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Returns the module itself; the engine calls it under inference_mode."""
    return Converted(fn=eval_copy(model))
