"""JIT_SCRIPT: torch.jit.script of the module (control flow kept)."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy, load_script, save_script

CONVERSION = Conversion(
    id=62,
    name="JIT_SCRIPT",
    description="torch.jit.script of the module",
    alma="TORCH_SCRIPT",
    devices=("cpu", "cuda"),
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Scripts the module; fails like torch.jit.script on unscriptable code."""
    if isinstance(model, torch.jit.ScriptModule):
        return Converted(fn=model.eval())
    return Converted(fn=torch.jit.script(eval_copy(model)))

# The build cache keeps the TorchScript module: a later run loads it.
save = save_script
load = load_script
