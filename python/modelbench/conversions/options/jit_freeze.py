"""JIT_FREEZE: traced, frozen (weights inlined) and optimised for inference."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy, load_script, save_script

CONVERSION = Conversion(
    id=63,
    name="JIT_FREEZE",
    tier=2,
    description=(
        "traced, torch.jit.freeze and torch.jit.optimize_for_inference "
        "(fused Conv+BN, oneDNN layouts)"
    ),
    devices=("cpu", "cuda"),
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """trace -> torch.jit.freeze -> torch.jit.optimize_for_inference (Conv+BN
    folding, oneDNN layouts where they pay off)."""
    with torch.no_grad():
        if isinstance(model, torch.jit.ScriptModule):
            scripted = model.eval()
        else:
            scripted = torch.jit.trace(eval_copy(model), ctx.example_inputs, check_trace=False, strict=False)
        frozen = torch.jit.freeze(scripted)
        optimized = torch.jit.optimize_for_inference(frozen)
    return Converted(fn=optimized)

# The build cache keeps the TorchScript module: a later run loads it.
save = save_script
load = load_script
