"""TORCHAO_AI8WI8_DYNAMIC: torchao's int8 quantisation of Linear layers
(dynamic int8 activations, int8 weights), compiled by Inductor."""

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted, eval_copy

CONVERSION = Conversion(
    id=92,
    name="TORCHAO_AI8WI8_DYNAMIC",
    precision="int8",
    torch="2.5",
    packages=("torchao",),
    description=(
        "torchao.quantization.quantize_ with Int8DynamicActivationInt8WeightConfig "
        "(Linear layers: int8 per-channel weights, activations quantised per "
        "token at run time), then torch.compile by Inductor, compiled in the "
        "build; other layers stay fp32"
    ),
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Quantises a copy's Linear layers with torchao, then compiles it."""
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    model = eval_copy(model)
    quantize_(model, Int8DynamicActivationInt8WeightConfig())
    return compiled(model, ctx, mode="default")


# The build cache keeps Inductor's caches: a later run quantises again (no
# calibration: weights only) and compiles from them.
save = save_cache
load = loader(convert)
