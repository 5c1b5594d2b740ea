"""COMPILE_INDUCTOR_REDUCE_OVERHEAD: torch.compile, Inductor's reduce-overhead."""

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=72,
    name="COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    torch="2.0",
    description=(
        "torch.compile(backend='inductor', mode='reduce-overhead'): CUDA "
        "graphs on a GPU; on a CPU the default mode's kernels"
    ),
    alma="COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles in reduce-overhead mode."""
    return compiled(model, ctx, mode="reduce-overhead")


save = save_cache
load = loader(convert)
