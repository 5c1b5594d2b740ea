"""COMPILE_INDUCTOR_FREEZING: torch.compile with Inductor's freezing, the
CPU inference recipe."""

from ..catalog import Conversion
from ._compile import compiled
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=74,
    name="COMPILE_INDUCTOR_FREEZING",
    tier=2,
    torch="2.1",
    description=(
        "torch.compile(backend='inductor') with torch._inductor.config.freezing: "
        "weights folded as constants and prepacked for oneDNN (Conv/Linear), "
        "PyTorch's recipe for CPU inference"
    ),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles with freezing on (inference only: the module's weights are
    constants of the compiled graph)."""
    return compiled(model, ctx, mode="default", freezing=True)


# Nothing is kept in the build cache: Inductor bypasses its own caches for
# frozen graphs (the weights are in them), so every run compiles.
