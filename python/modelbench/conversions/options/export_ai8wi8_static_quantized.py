"""EXPORT+AI8WI8_STATIC_QUANTIZED: PT2E static int8, lowered by Inductor."""

import os

from ..catalog import Conversion
from ._compile import CACHE_FILE, compiled, load_cache, save_cache
from ._pt2e import program, quantized_program
from ._pt2e import save as save_quantized
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


def convert(model, ctx: ConvertContext) -> Converted:
    """Quantises, then compiles the quantised program in the build."""
    quantized = quantized_program(model, ctx, CONVERSION.name)
    converted = compiled(quantized.module(), ctx, mode="default", eval_mode=False, freezing=True)
    converted.keep = quantized
    return converted


def save(converted: Converted, folder: str) -> None:
    """Keeps the quantised program (and Inductor's caches, if any)."""
    save_quantized(converted, folder)
    save_cache(converted, folder)


def load(folder: str, ctx: ConvertContext) -> Converted:
    """The kept quantised program, compiled again (from the kept caches
    where Inductor made any: it does not cache frozen graphs)."""
    if os.path.exists(os.path.join(folder, CACHE_FILE)):
        load_cache(folder)
    quantized = program(folder)
    converted = compiled(quantized.module(), ctx, mode="default", eval_mode=False, freezing=True)
    converted.keep = quantized
    return converted
