"""What the PT2E int8 conversions share (not a conversion: files starting
with '_' are not read by the catalog).

PyTorch 2 export quantisation as torchao ships it (torchao.quantization.
pt2e; PyTorch's own torch.ao copy is gone from recent releases): the module
is exported, annotated by the x86 Inductor quantiser (uint8 activations per
tensor, int8 weights per channel, static), calibrated on the same batches as
every int8 conversion, and converted to a graph with quantise/dequantise
nodes. The converted graph is exported again, so that the build cache keeps
it as a program (``_export.PROGRAM_FILE``).
"""

from __future__ import annotations

from typing import Any

import torch

from ._export import exported, load_program, save_program
from .base import ConvertContext, Converted, calibrate


def quantized_program(model: Any, ctx: ConvertContext, name: str) -> "torch.export.ExportedProgram":
    """The module exported, quantised (x86 Inductor quantiser, static) and
    calibrated, as an exported program; ValueError without calibration."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    if not ctx.calibration:
        raise ValueError(f"{name}: no calibration data")
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    # Strict export gives each call of a reused module (torchvision's
    # ResNet blocks call one ReLU twice) its own partition; the default
    # non-strict export groups them, which the quantiser refuses ("Input
    # partition has more than one output node", pytorch/ao#4478).
    try:
        graph = exported(model, ctx, strict=True).module()
    except Exception as exc:  # noqa: BLE001 - Dynamo refuses some modules
        ctx.log.info("%s: strict export failed (%s); exporting non-strict", name, exc)
        graph = exported(model, ctx).module()
    prepared = prepare_pt2e(graph, quantizer)
    calibrate(prepared, ctx.calibration)
    converted = convert_pt2e(prepared)
    ctx.log.info("%s: calibrated on %d batches", name, len(ctx.calibration))
    with torch.no_grad():
        return torch.export.export(converted, tuple(ctx.example_inputs))


def save(converted: Converted, folder: str) -> None:
    """Keeps the quantised program."""
    save_program(converted.keep, folder)


def program(folder: str) -> "torch.export.ExportedProgram":
    """The quantised program save kept."""
    return load_program(folder)
