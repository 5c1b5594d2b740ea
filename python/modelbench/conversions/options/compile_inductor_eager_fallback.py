"""COMPILE_INDUCTOR_EAGER_FALLBACK: torch.compile that falls back to eager."""

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=73,
    name="COMPILE_INDUCTOR_EAGER_FALLBACK",
    torch="2.0",
    description=(
        "torch.compile(backend='inductor') with torch._dynamo.config."
        "suppress_errors: what cannot be compiled runs eagerly instead of "
        "failing"
    ),
    alma="COMPILE_INDUCTOR_EAGER_FALLBACK",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles what Dynamo and Inductor can; the rest runs eagerly."""
    return compiled(model, ctx, mode="default", eager_fallback=True)


save = save_cache
load = loader(convert)
