"""FAKE_QUANT+EAGER: the module with FX fake-quantisation (quantise-dequantise
in float), calibrated: int8's accuracy without int8 kernels."""

import torch
from torch.ao.quantization import (
    disable_observer,
    get_default_qat_qconfig_mapping,
)
from torch.ao.quantization.quantize_fx import prepare_qat_fx

from .base import ConvertContext, Converted, calibrate, quantized_engine


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """prepare_qat_fx, calibration of the observers in eval mode, observers off."""
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError(
            "FAKE_QUANT+EAGER needs an nn.Module that torch.fx can trace, "
            "not a TorchScript module"
        )
    if not ctx.calibration:
        raise ValueError("FAKE_QUANT+EAGER: no calibration data")
    engine = quantized_engine()
    prepared = prepare_qat_fx(
        model.train(), get_default_qat_qconfig_mapping(engine), ctx.example_inputs
    )
    prepared.eval()
    prepared.apply(torch.nn.intrinsic.qat.freeze_bn_stats)
    calibrate(prepared, ctx.calibration)
    prepared.apply(disable_observer)
    return Converted(fn=prepared)
