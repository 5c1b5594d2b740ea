"""INT8_DYNAMIC+EAGER: torch.quantization.quantize_dynamic (int8 weights,
activations quantised at run time) on Linear and recurrent layers."""

import torch

from ..catalog import Conversion
from .base import (
    ConvertContext,
    Converted,
    eval_copy,
    load_pickled,
    quantized_engine,
    save_pickled,
)
CONVERSION = Conversion(
    id=66,
    name="INT8_DYNAMIC+EAGER",
    precision="int8",
    description=(
        "torch.quantization.quantize_dynamic: Linear/LSTM/GRU weights int8, "
        "activations quantised at run time"
    ),
)


_LAYERS = {
    torch.nn.Linear,
    torch.nn.LSTM,
    torch.nn.GRU,
    torch.nn.LSTMCell,
    torch.nn.GRUCell,
    torch.nn.RNNCell,
}


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """Quantizes the module's Linear/LSTM/GRU layers; fails when it has none."""
    engine = quantized_engine()
    model = eval_copy(model)
    if not any(type(m) in _LAYERS for m in model.modules()):
        raise ValueError(
            "INT8_DYNAMIC+EAGER quantizes Linear, LSTM and GRU layers and this "
            "module has none (it would run unchanged)"
        )
    quantized = torch.quantization.quantize_dynamic(model, _LAYERS, dtype=torch.qint8)
    ctx.log.info("INT8_DYNAMIC+EAGER: quantized backend %s", engine)
    return Converted(fn=quantized)

# The build cache keeps the quantised module: a later run loads it.
save = save_pickled
load = load_pickled
