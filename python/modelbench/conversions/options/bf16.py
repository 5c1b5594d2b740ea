"""BF16+EAGER: eager under autocast to bfloat16 on the run's device."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy

CONVERSION = Conversion(
    id=65,
    name="BF16+EAGER",
    precision="bf16",
    tier=2,
    description=(
        "eager under torch.autocast(device, torch.bfloat16) (autocast: the "
        "weights stay fp32, ops that autocast lists run in bf16), float32 outputs"
    ),
    alma="BF16+EAGER",
    devices=("cpu", "cuda"),
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Each call runs under torch.autocast(ctx.device, torch.bfloat16);
    outputs are returned in float32 for the accuracy check."""
    device = ctx.device

    def autocast():
        return torch.autocast(device, dtype=torch.bfloat16)

    return Converted(fn=eval_copy(model), call_context=autocast)
