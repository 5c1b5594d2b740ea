"""JIT_ONEDNN_FUSION: traced, frozen TorchScript with oneDNN Graph fusion."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy, load_script, save_script

CONVERSION = Conversion(
    id=69,
    name="JIT_ONEDNN_FUSION",
    description=(
        "traced and frozen, with torch.jit.enable_onednn_fusion: oneDNN Graph "
        "compiles fused partitions (Conv/MatMul with their post-ops)"
    ),
)

#: Calls that let the profiling executor specialise the graph and hand its
#: partitions to oneDNN Graph, so that the timed calls run the fused code.
_COMPILE_CALLS = 2


def _fused(module: torch.jit.ScriptModule, ctx: ConvertContext) -> Converted:
    torch.jit.enable_onednn_fusion(True)  # a per-process switch: this worker's
    with torch.no_grad():
        for _ in range(_COMPILE_CALLS):
            module(*ctx.example_inputs)
    return Converted(fn=module)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """trace -> torch.jit.freeze, then the calls that compile the fused
    partitions (in the build, not in the timed loop)."""
    torch.jit.enable_onednn_fusion(True)
    with torch.no_grad():
        if isinstance(model, torch.jit.ScriptModule):
            scripted = model.eval()
        else:
            scripted = torch.jit.trace(
                eval_copy(model), ctx.example_inputs, check_trace=False, strict=False
            )
        frozen = torch.jit.freeze(scripted)
    return _fused(frozen, ctx)


# The build cache keeps the frozen module; a load compiles its partitions again.
save = save_script


def load(folder: str, ctx: ConvertContext) -> Converted:
    """The frozen module save_script kept, with the fusion switched on."""
    return _fused(load_script(folder, ctx).fn, ctx)
