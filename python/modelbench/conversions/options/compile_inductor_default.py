"""COMPILE_INDUCTOR_DEFAULT: torch.compile with Inductor's default mode."""

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=70,
    name="COMPILE_INDUCTOR_DEFAULT",
    torch="2.0",
    description=(
        "torch.compile(backend='inductor', mode='default'), compiled in the "
        "build on sample 0 (C++/OpenMP kernels on a CPU)"
    ),
    alma="COMPILE_INDUCTOR_DEFAULT",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles the module; the build's calls compile it."""
    return compiled(model, ctx, mode="default")


# The build cache keeps Inductor's caches: a later run compiles from them.
save = save_cache
load = loader(convert)
