"""EXPORT+AI8WI8_FLOAT_QUANTIZED: PT2E int8 run as quantise/dequantise in float."""

from ..catalog import Conversion
from ._pt2e import program, quantized_program, save  # noqa: F401 - save: the program
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=91,
    name="EXPORT+AI8WI8_FLOAT_QUANTIZED",
    precision="int8",
    torch="2.5",
    packages=("torchao",),
    description=(
        "the PT2E int8 program of EXPORT+AI8WI8_STATIC_QUANTIZED run as it is: "
        "quantise/dequantise nodes around float kernels (int8's accuracy, "
        "not its speed)"
    ),
    alma="EXPORT+AI8WI8_FLOAT_QUANTIZED",
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Quantises; the program's module runs without compilation."""
    quantized = quantized_program(model, ctx, CONVERSION.name)
    return Converted(fn=quantized.module(), keep=quantized)


def load(folder: str, ctx: ConvertContext) -> Converted:  # noqa: ARG001
    """The kept quantised program, as a module."""
    quantized = program(folder)
    return Converted(fn=quantized.module(), keep=quantized)
