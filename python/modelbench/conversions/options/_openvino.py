"""What the torch.compile conversions on OpenVINO share (not a conversion:
files starting with '_' are not read by the catalog).

OpenVINO's torch.compile backend (``openvino.torch``, from the ``openvino``
package) converts the graphs Dynamo captures to OpenVINO models and runs them
on its CPU plugin. Its options here: fp32 as the inference precision (the
plugin would pick bf16 on CPUs with AMX or AVX-512 BF16, which is not what an
fp32 conversion means), the run's threads, and AOTAutograd's graph (without
it the backend's graphs fail Dynamo's guards on PyTorch 2.15: "Guard failed
on the same frame it was created ... name 'input0' is not defined").
OpenVINO compiles again in every process: nothing is kept in the build cache.

Where OpenVINO cannot run a graph, its backend falls back to PyTorch (native
execution, or Inductor) and only logs it at debug level: ``no_fallback``
turns that into the conversion's failure, so that a COMPILE_OPENVINO result
is OpenVINO's. (Nodes its partitioner leaves to PyTorch by design are not a
fallback.)
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Dict, Iterator, List

from .base import ConvertContext

#: The logger of OpenVINO's torch.compile backend (its modules' parent).
_BACKEND_LOGGER = "openvino.frontend.pytorch.torchdynamo"
#: What its fallbacks say.
_FALLBACK = ("Falling back", "Failed in OpenVINO")


def backend_options(ctx: ConvertContext) -> Dict[str, Any]:
    """torch.compile options for backend='openvino'; imports openvino.torch,
    which registers the backend."""
    import openvino.torch  # noqa: F401 - registers backend="openvino"

    return {
        "aot_autograd": True,
        "config": {
            "INFERENCE_PRECISION_HINT": "f32",
            "INFERENCE_NUM_THREADS": str(max(ctx.threads, 1)),
            "PERFORMANCE_HINT": "LATENCY",
        },
    }


class _Fallbacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(f in message for f in _FALLBACK):
            self.messages.append(message)


@contextlib.contextmanager
def no_fallback(name: str) -> Iterator[None]:
    """Fails (RuntimeError naming `name` and OpenVINO's reason) when the
    backend fell back to PyTorch inside the block (the build's compiling
    calls)."""
    logger = logging.getLogger(_BACKEND_LOGGER)
    handler = _Fallbacks()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    if handler.messages:
        raise RuntimeError(
            f"{name}: OpenVINO's torch.compile backend fell back to PyTorch: "
            + handler.messages[0].strip()
        )
