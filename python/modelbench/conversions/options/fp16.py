"""FP16+EAGER: the module and its floating-point inputs in float16 (a GPU's
half precision; alma's FP16+EAGER)."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy, half_inputs

CONVERSION = Conversion(
    id=76,
    name="FP16+EAGER",
    precision="fp16",
    tier=2,
    device="cuda",
    devices=("cuda",),
    description=(
        "model.half() with float16 inputs (a half model, not autocast: every "
        "weight and activation in fp16), eager; float32 outputs for the check"
    ),
    alma="FP16+EAGER",
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """A half copy of the model; floating inputs are halved once per sample."""
    return Converted(fn=eval_copy(model).half(), prepare_inputs=half_inputs)
