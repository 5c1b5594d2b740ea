"""EXPORT+COMPILE_INDUCTOR_DEFAULT: a torch.export program compiled by Inductor."""

from ..catalog import Conversion
from ._export import compiled_program, compiled_program_loader, save_compiled_program
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=81,
    name="EXPORT+COMPILE_INDUCTOR_DEFAULT",
    tier=3,
    torch="2.1",
    description=(
        "torch.export.export on sample 0's shapes, then torch.compile of "
        "the program's module by Inductor, default mode"
    ),
    alma="EXPORT+COMPILE_INDUCTOR_DEFAULT",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Exports, then compiles in the build (calls on sample 0)."""
    return compiled_program(model, ctx, mode="default")


# The build cache keeps the program and Inductor's caches.
save = save_compiled_program
load = compiled_program_loader(mode="default")
