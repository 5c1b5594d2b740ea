"""FP16+COMPILE_CUDAGRAPHS: a half model compiled with the cudagraphs backend."""

import dataclasses

from ..catalog import Conversion
from ._compile import compiled
from .base import ConvertContext, Converted, eval_copy, half_inputs

CONVERSION = Conversion(
    id=78,
    name="FP16+COMPILE_CUDAGRAPHS",
    precision="fp16",
    torch="2.0",
    device="cuda",
    devices=("cuda",),
    description=(
        "model.half() with float16 inputs, then torch.compile(backend='cudagraphs') "
        "(a GPU only)"
    ),
    alma="FP16+COMPILE_CUDAGRAPHS",
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Halves the model and compiles it on halved example inputs."""
    half = dataclasses.replace(ctx, example_inputs=half_inputs(ctx.example_inputs))
    converted = compiled(eval_copy(model).half(), half, mode=None, backend="cudagraphs")
    converted.prepare_inputs = half_inputs
    return converted
