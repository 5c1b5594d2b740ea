"""CHANNELS_LAST: the module and its 4-d inputs in channels-last memory format."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, InputBatch, eval_copy

CONVERSION = Conversion(
    id=64,
    name="CHANNELS_LAST",
    description="module and 4-d inputs in torch.channels_last memory format",
    devices=("cpu", "cuda"),
)


def _to_channels_last(inputs: InputBatch) -> InputBatch:
    return tuple(
        t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
        for t in inputs
    )


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Moves parameters to channels-last; inputs are converted once per sample."""
    model = eval_copy(model).to(memory_format=torch.channels_last)
    return Converted(fn=model, prepare_inputs=_to_channels_last)
