"""COMPILE_INDUCTOR_MAX_AUTOTUNE: torch.compile, Inductor's max-autotune."""

import torch

from ..catalog import Conversion
from ._compile import compiled, loader, save_cache
from .base import ConvertContext, Converted

CONVERSION = Conversion(
    id=71,
    name="COMPILE_INDUCTOR_MAX_AUTOTUNE",
    torch="2.0",
    description=(
        "torch.compile(backend='inductor', mode='max-autotune'; "
        "'max-autotune-no-cudagraphs' off a GPU): kernels and GEMM "
        "templates chosen by timing them in the build"
    ),
    alma="COMPILE_INDUCTOR_MAX_AUTOTUNE",
    devices=("cpu", "cuda"),
)


def convert(model, ctx: ConvertContext) -> Converted:
    """Compiles with autotuning (a long build); CUDA graphs only on a GPU."""
    on_gpu = any(getattr(t, "is_cuda", False) for t in ctx.example_inputs)
    mode = "max-autotune" if on_gpu and torch.cuda.is_available() else "max-autotune-no-cudagraphs"
    return compiled(model, ctx, mode=mode)


save = save_cache
load = loader(convert)
