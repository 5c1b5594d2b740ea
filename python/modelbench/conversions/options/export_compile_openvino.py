"""EXPORT+COMPILE_OPENVINO: a torch.export program compiled for OpenVINO."""

from ..catalog import Conversion
from ._export import compiled_program
from ._openvino import backend_options, no_fallback
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=85,
    name="EXPORT+COMPILE_OPENVINO",
    torch="2.1",
    packages=("openvino",),
    description=(
        "torch.export.export on sample 0's shapes, then torch.compile of the "
        "program's module with OpenVINO's backend (CPU plugin, fp32)"
    ),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Exports, then compiles for OpenVINO in the build (calls on sample 0)."""
    with no_fallback(CONVERSION.name):
        return compiled_program(model, ctx, mode=None, backend="openvino",
                                options=backend_options(ctx))
