"""One ONNX conversion run in this process (``mb_runner``): what function
profiles put in place of a module to validate an ORT_CPU, ONEDNN, ...
prediction. The C library prepares and runs the conversion; this module
only hands torch tensors over and back."""

from __future__ import annotations

import ctypes
from ctypes import c_void_p
from typing import Any, List, Sequence

from . import _lib
from ._tensors import borrowed_mb_tensor, tensor_view
from .errors import ConfigError, EngineError


class Runner:
    """Conversion `conversion` of the ONNX model at `path`, prepared for the
    shapes of `example` (torch tensors in graph input order) with `threads`
    threads. ``runner(tensors)`` returns the outputs as torch tensors."""

    def __init__(self, path: str, conversion: str, example: Sequence[Any],
                 threads: int) -> None:
        self._handle = c_void_p()
        self._keep: List[Any] = []
        tensors = self._hand_over(example)
        err = _lib.MbError()
        if _lib.lib.mb_runner_create(path.encode(), conversion.encode(), threads,
                                     len(example), tensors, ctypes.byref(self._handle),
                                     ctypes.byref(err)):
            raise EngineError(f"{conversion} on {path}: {_lib.error_message(err)}")
        self.conversion = conversion
        self.n_inputs = len(example)
        self.n_outputs = int(_lib.lib.mb_runner_output_count(self._handle))

    def _hand_over(self, tensors: Sequence[Any]) -> Any:
        """An array of mb_tensor pointers over `tensors` (kept alive in
        self._keep until the next call)."""
        plain = [t.detach().contiguous() for t in tensors]
        structs = [borrowed_mb_tensor(t) for t in plain]
        self._keep = [plain, structs]
        return (c_void_p * max(len(structs), 1))(
            *[ctypes.addressof(s) for s in structs])

    def __call__(self, tensors: Sequence[Any]) -> List[Any]:
        """One inference on `tensors` (graph input order); the outputs are
        new torch tensors."""
        if len(tensors) != self.n_inputs:
            raise ConfigError(f"{self.conversion}: {len(tensors)} inputs given, the model "
                              f"takes {self.n_inputs}")
        inputs = self._hand_over(tensors)
        outputs = (c_void_p * max(self.n_outputs, 1))()
        err = _lib.MbError()
        if _lib.lib.mb_runner_run(self._handle, self.n_inputs, inputs, self.n_outputs,
                                  outputs, ctypes.byref(err)):
            raise EngineError(_lib.error_message(err))
        try:
            return [tensor_view(outputs[i]).clone() for i in range(self.n_outputs)]
        finally:
            for i in range(self.n_outputs):
                _lib.lib.mb_tensor_free(outputs[i])

    def close(self) -> None:
        """Releases the session (also done when the runner is collected)."""
        if self._handle:
            _lib.lib.mb_runner_free(self._handle)
            self._handle = c_void_p()

    def __del__(self) -> None:
        self.close()

