"""COMPILE_CUDAGRAPHS: torch.compile with the cudagraphs backend."""

from ..catalog import Conversion
from ._compile import compiled
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=77,
    name="COMPILE_CUDAGRAPHS",
    torch="2.0",
    device="cuda",
    devices=("cuda",),
    description=(
        "torch.compile(backend='cudagraphs'): the captured graphs' own kernels "
        "replayed as CUDA graphs, no Inductor code generation (a GPU only)"
    ),
    alma="COMPILE_CUDAGRAPHS",
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles with the cudagraphs backend (nothing kept: it generates no
    code, so a later run captures again)."""
    return compiled(model, ctx, mode=None, backend="cudagraphs")
