"""EXPORT+AI8WI8_STATIC_QUANTIZED: PT2E static int8, lowered by Inductor."""

from ..catalog import Conversion
from ._compile import compiled
from ._pt2e import program, quantized_program, save  # noqa: F401 - save: the program
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=90,
    name="EXPORT+AI8WI8_STATIC_QUANTIZED",
    precision="int8",
    tier=2,
    torch="2.5",
    packages=("torchao",),
    description=(
        "PT2E static int8 (torchao's x86 Inductor quantiser: uint8 "
        "activations, int8 per-channel weights, calibrated on the same data "
        "as INT8_STATIC), compiled by Inductor with freezing into oneDNN "
        "int8 kernels"
    ),
    alma="EXPORT+AI8WI8_STATIC_QUANTIZED",
)


def _lowered(quantized, ctx: ConvertContext) -> Converted:
    """The quantised program compiled by Inductor with freezing (the int8
    convolutions and matmuls fused into oneDNN kernels)."""
    converted = compiled(quantized.module(), ctx, mode="default", eval_mode=False, freezing=True)
    converted.keep = quantized
    return converted


def convert(model, ctx: ConvertContext) -> Converted:
    """Quantises, then compiles the quantised program in the build."""
    return _lowered(quantized_program(model, ctx, CONVERSION.name), ctx)


def load(folder: str, ctx: ConvertContext) -> Converted:
    """The kept quantised program, compiled again: Inductor does not cache
    frozen graphs, so only the program is kept (save)."""
    return _lowered(program(folder), ctx)
