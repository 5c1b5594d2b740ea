"""What a PyTorch conversion option is: one function from a module to a callable.

Each file of this folder is one option (alma's layout): ``convert(model, ctx)``
returns a :class:`Converted`. The C engine times ``Converted.fn(*inputs)``
through the host runtime (``modelbench.host``), so an option only converts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, List, Optional, Sequence, Tuple

import torch

InputBatch = Tuple[torch.Tensor, ...]


@dataclass
class ConvertContext:
    """What a conversion may use: sample 0 (for tracing) and calibration data."""

    example_inputs: InputBatch
    calibration: List[InputBatch] = field(default_factory=list)
    threads: int = 1
    seed: int = 0
    log: logging.Logger = logging.getLogger("modelbench.conversions")
    #: Loads the model (a load from the build cache that needs the module
    #: again, as a compiled conversion does); None where there is none.
    load_model: Optional[Callable[[], Any]] = None
    #: Where the conversion runs: "cpu", or "cuda" (the module and the
    #: example and calibration inputs are already there).
    device: str = "cpu"


@dataclass
class Converted:
    """A converted model: ``fn(*inputs)`` is the timed call.

    ``prepare_inputs`` turns the engine's inputs into what ``fn`` takes (once per
    sample, outside the timed call: e.g. channels-last copies); ``call_context``
    is entered around every call (autocast), as a deployment would;
    ``recompiles`` counts compilations after the build (torch.compile).
    """

    fn: Callable[..., Any]
    prepare_inputs: Optional[Callable[[InputBatch], InputBatch]] = None
    call_context: Optional[Callable[[], ContextManager[Any]]] = None
    #: How many times ``fn`` has compiled again since the build (a compiled
    #: conversion's guard failures and new shapes); None: never compiles.
    recompiles: Optional[Callable[[], int]] = None
    #: What ``save`` keeps when it is not ``fn`` (an exported program).
    keep: Any = None


def eval_copy(model: torch.nn.Module) -> torch.nn.Module:
    """The model in eval mode (modules are converted in their worker process,
    so changing the worker's copy is safe)."""
    return model.eval()


def half_inputs(inputs: InputBatch) -> InputBatch:
    """The floating-point inputs in float16 (integer inputs, token ids,
    stay as they are)."""
    return tuple(t.half() if t.is_floating_point() else t for t in inputs)


def calibrate(model: Callable[..., Any], batches: Sequence[InputBatch]) -> None:
    """Runs every calibration batch through the observed model."""
    with torch.no_grad():
        for batch in batches:
            model(*batch)


def quantized_engine() -> str:
    """The quantized backend this torch build has, x86's first."""
    engines = torch.backends.quantized.supported_engines
    for name in ("x86", "fbgemm", "onednn", "qnnpack"):
        if name in engines:
            torch.backends.quantized.engine = name
            return name
    raise RuntimeError(
        f"this PyTorch has no quantized CPU backend (supported: {engines})"
    )


def require_fx(model: torch.nn.Module, ctx: ConvertContext, name: str) -> None:
    """FX quantisation needs an nn.Module torch.fx can trace and calibration
    data; ValueError/TypeError naming the conversion otherwise."""
    if isinstance(model, torch.jit.ScriptModule):
        raise TypeError(
            f"{name} needs an nn.Module that torch.fx can trace, not a TorchScript module"
        )
    if not ctx.calibration:
        raise ValueError(f"{name}: no calibration data")


#: The file a TorchScript-producing option keeps in its build folder.
SCRIPT_FILE = "module.ts.pt"


def save_script(converted: Converted, folder: str) -> None:
    """Keeps a TorchScript module (what JIT_TRACE, JIT_SCRIPT and JIT_FREEZE
    build) in the build folder, for :func:`load_script`."""
    import os

    torch.jit.save(converted.fn, os.path.join(folder, SCRIPT_FILE))


def load_script(folder: str, ctx: ConvertContext) -> Converted:
    """The TorchScript module :func:`save_script` kept, on the run's device."""
    import os

    path = os.path.join(folder, SCRIPT_FILE)
    return Converted(fn=torch.jit.load(path, map_location=ctx.device).eval())


#: The file a quantising option keeps in its build folder.
PICKLE_FILE = "module.pt"


def save_pickled(converted: Converted, folder: str) -> None:
    """Keeps a quantised eager module (INT8_DYNAMIC+EAGER, INT8_STATIC+EAGER:
    an FX GraphModule) in the build folder with cloudpickle, the code of
    classes a worker cannot import by name with it, for
    :func:`load_pickled`."""
    import os

    import cloudpickle

    torch.save(converted.fn, os.path.join(folder, PICKLE_FILE), pickle_module=cloudpickle)


def load_pickled(folder: str, ctx: ConvertContext) -> Converted:  # noqa: ARG001
    """The module :func:`save_pickled` kept (the build cache is this user's
    own folder, written by this front), on the quantised backend it was
    built for."""
    import os

    quantized_engine()
    path = os.path.join(folder, PICKLE_FILE)
    try:
        module = torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:  # a PyTorch without weights_only
        module = torch.load(path, map_location="cpu")
    return Converted(fn=module.eval())


#: Loading it unpickles: code, loaded only when the user trusts the model
#: (host.prepare_session converts again otherwise).
load_pickled.runs_code = True  # type: ignore[attr-defined]
