"""BF16+EAGER: eager under CPU autocast to bfloat16."""

import torch

from .base import ConvertContext, Converted, eval_copy


def _autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Each call runs under torch.autocast('cpu', torch.bfloat16); outputs are
    returned in float32 for the accuracy check."""
    return Converted(fn=eval_copy(model), call_context=_autocast)
