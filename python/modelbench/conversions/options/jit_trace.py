"""JIT_TRACE: torch.jit.trace on the first sample."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy, load_script, save_script

CONVERSION = Conversion(
    id=61,
    name="JIT_TRACE",
    description="torch.jit.trace on the first sample",
    alma="JIT_TRACE",
    devices=("cpu", "cuda"),
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Traces the module with sample 0's inputs."""
    with torch.no_grad():
        traced = torch.jit.trace(eval_copy(model), ctx.example_inputs, check_trace=False, strict=False)
    return Converted(fn=traced)

# The build cache keeps the TorchScript module: a later run loads it.
save = save_script
load = load_script
