"""INT8_STATIC+EAGER: FX graph mode post-training static quantisation,
calibrated on the same data as the engine's INT8_STATIC conversions."""

import torch
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

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
