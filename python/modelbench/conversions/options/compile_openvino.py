"""COMPILE_OPENVINO: torch.compile with OpenVINO's backend."""

from ..catalog import Conversion
from ._compile import compiled
from ._openvino import backend_options, no_fallback
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=75,
    name="COMPILE_OPENVINO",
    torch="2.1",
    packages=("openvino",),
    description=(
        "torch.compile(backend='openvino'): the graphs Dynamo captures run on "
        "OpenVINO's CPU plugin in fp32, compiled in the build on sample 0"
    ),
    alma="COMPILE_OPENVINO",
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles the module for OpenVINO; the build's calls compile it."""
    with no_fallback(CONVERSION.name):
        return compiled(model, ctx, mode=None, backend="openvino", options=backend_options(ctx))
