"""INT8_STATIC+EAGER: FX graph mode post-training static quantisation,
calibrated on the same data as the engine's INT8_STATIC conversions."""

import torch
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

from ..catalog import Conversion
from .base import (
    ConvertContext,
    Converted,
    calibrate,
    eval_copy,
    load_pickled,
    quantized_engine,
    require_fx,
    save_pickled,
)

CONVERSION = Conversion(
    id=67,
    name="INT8_STATIC+EAGER",
    precision="int8",
    tier=2,
    description=(
        "FX post-training static quantisation (x86 backend), calibrated on "
        "the same data as INT8_STATIC"
    ),
    alma="NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED",
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """prepare_fx with the backend's default qconfig, calibration, convert_fx."""
    require_fx(model, ctx, "INT8_STATIC+EAGER")
    engine = quantized_engine()
    qconfig_mapping = get_default_qconfig_mapping(engine)
    prepared = prepare_fx(eval_copy(model), qconfig_mapping, ctx.example_inputs)
    calibrate(prepared, ctx.calibration)
    quantized = convert_fx(prepared)
    ctx.log.info(
        "INT8_STATIC+EAGER: %s backend, %d calibration batches",
        engine,
        len(ctx.calibration),
    )
    return Converted(fn=quantized)

# The build cache keeps the quantised module: a later run loads it.
save = save_pickled
load = load_pickled
