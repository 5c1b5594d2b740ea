"""FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD: a half model compiled by Inductor in
reduce-overhead mode (CUDA graphs over Inductor's kernels)."""

import dataclasses

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted, eval_copy, half_inputs

CONVERSION = Conversion(
    id=79,
    name="FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    precision="fp16",
    torch="2.0",
    tier=2,
    device="cuda",
    devices=("cuda",),
    description=(
        "model.half() with float16 inputs, then torch.compile(mode='reduce-overhead'): "
        "Inductor's fused kernels replayed as CUDA graphs (a GPU only)"
    ),
    alma="FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD",
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Halves the model and compiles it on halved example inputs."""
    half = dataclasses.replace(ctx, example_inputs=half_inputs(ctx.example_inputs))
    converted = compiled(eval_copy(model).half(), half, mode="reduce-overhead")
    converted.prepare_inputs = half_inputs
    return converted


save = save_cache
load = loader(convert)
