"""FAKE_QUANT+EAGER: the module with FX fake-quantisation (quantise-dequantise
in float), calibrated: int8's accuracy without int8 kernels."""

import torch
from torch.ao.quantization import (
    disable_observer,
    get_default_qat_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import prepare_qat_fx

from ..catalog import Conversion
from .base import ConvertContext, Converted, calibrate, quantized_engine, require_fx

CONVERSION = Conversion(
    id=68,
    name="FAKE_QUANT+EAGER",
    precision="int8",
    description=(
        "FX fake-quantised module (QDQ in float, calibrated): int8's "
        "accuracy without int8 kernels"
    ),
    alma="NATIVE_FAKE_QUANTIZED_AI8WI8_STATIC",
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """prepare_qat_fx, calibration of the observers in eval mode, observers off."""
    require_fx(model, ctx, "FAKE_QUANT+EAGER")
    engine = quantized_engine()
    prepared = prepare_qat_fx(
        model.train(), get_default_qat_qconfig_mapping(engine), ctx.example_inputs
    )
    prepared.eval()
    prepared.apply(torch.nn.intrinsic.qat.freeze_bn_stats)
    calibrate(prepared, ctx.calibration)
    prepared.apply(disable_observer)
    return Converted(fn=prepared)
