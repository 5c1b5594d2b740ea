"""BF16+EAGER: eager under CPU autocast to bfloat16."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy

CONVERSION = Conversion(
    id=65,
    name="BF16+EAGER",
    precision="bf16",
    tier=2,
    description=(
        "eager under torch.autocast('cpu', torch.bfloat16), float32 outputs"
    ),
    alma="BF16+EAGER",
)


def _autocast():
    return torch.autocast("cpu", dtype=torch.bfloat16)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Each call runs under torch.autocast('cpu', torch.bfloat16); outputs are
    returned in float32 for the accuracy check."""
    return Converted(fn=eval_copy(model), call_context=_autocast)
