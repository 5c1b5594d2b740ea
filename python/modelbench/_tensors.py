"""The tensor bridge: torch tensors to and from the C library's mb_tensor.

``dtype_code``/``torch_dtype`` map dtypes; ``tensor_view``/``batch_view``
read an mb_tensor's memory as torch tensors without a copy,
``borrowed_mb_tensor`` does the reverse and ``new_mb_tensor`` copies a torch
tensor into one the C side owns; ``flatten_outputs``/``output_names``/
``unflatten``/``plain_output`` turn a module's return value into the flat
list of tensors the engine compares, and back. The host runtime
(``host``), ``mb_runner`` (``runner``) and the manifest writer (``model``)
use them. torch is imported on first use, not here.
"""

from __future__ import annotations

import ctypes
from ctypes import c_char, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from . import _lib

if TYPE_CHECKING:
    import torch

#: mb_dtype codes (ONNX TensorProto.DataType) -> torch dtype names.
_DTYPE_NAMES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    16: "bfloat16",
}


def import_torch() -> Any:
    """torch, imported on first use (an engine process that forks workers
    must not have run a PyTorch operator; importing runs none)."""
    import torch

    return torch


def torch_dtype(code: int) -> "torch.dtype":
    """The torch dtype of an mb_dtype code."""
    name = _DTYPE_NAMES.get(code)
    if name is None:
        raise TypeError(f"mb_dtype {code} has no PyTorch equivalent here")
    return getattr(import_torch(), name)


def dtype_code(dtype: "torch.dtype") -> int:
    """The mb_dtype code of a torch dtype."""
    name = str(dtype).replace("torch.", "")
    for code, known in _DTYPE_NAMES.items():
        if known == name:
            return code
    raise TypeError(f"tensors of {dtype} cannot be handed to modelbench")


def tensor_view(address: int) -> "torch.Tensor":
    """A torch tensor sharing the memory of the mb_tensor at `address`."""
    torch = import_torch()
    t = _lib.MbTensor.from_address(address)
    dims = [t.dims[i] for i in range(t.rank)]
    dtype = torch_dtype(t.dtype)
    if t.nbytes == 0 or not t.data:
        return torch.empty(dims, dtype=dtype)
    buf = (c_char * t.nbytes).from_address(t.data)
    return torch.frombuffer(buf, dtype=dtype).reshape(dims)


def batch_view(address: int, n_inputs: int) -> Tuple[Any, ...]:
    """The inputs of one sample: `n_inputs` mb_tensor pointers at `address`."""
    if n_inputs == 0:
        return ()
    pointers = (c_void_p * n_inputs).from_address(address)
    return tuple(tensor_view(p) for p in pointers)


def flatten_outputs(value: Any) -> List[Any]:
    """A module's return value as a flat list of tensors: tuples and lists in
    order, dicts by key order. Anything else is a TypeError naming it."""
    torch = import_torch()
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten_outputs(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_outputs(item)]
    raise TypeError(
        f"the module returned a {type(value).__name__}; modelbench compares tensors "
        "(or tuples, lists and dicts of them)"
    )


def output_names(value: Any, prefix: str = "output") -> List[str]:
    """Names of the flattened outputs: dict keys where there are some, else
    output_0, output_1, ..."""
    names: List[str] = []

    def walk(v: Any, key: Optional[str]) -> None:
        torch = import_torch()
        if isinstance(v, torch.Tensor):
            names.append(key if key else f"{prefix}_{len(names)}")
        elif isinstance(v, (tuple, list)):
            for item in v:
                walk(item, None)
        elif isinstance(v, dict):
            for k, item in v.items():
                walk(item, str(k))

    walk(value, None)
    return names


def plain_output(t: "torch.Tensor") -> "torch.Tensor":
    """An output in a form the C library compares: quantized tensors
    dequantized, reduced-precision floats as float32, contiguous, on the CPU."""
    torch = import_torch()
    if t.is_quantized:
        t = t.dequantize()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.detach().cpu().contiguous()


def unflatten(template: Any, flat: Sequence[Any]) -> Any:
    """`flat` (tensors in flatten_outputs order) in the structure of
    `template`, a module's return value: tensors, tuples, lists, dicts."""
    torch = import_torch()
    if len(flat_template := flatten_outputs(template)) != len(flat):
        raise ValueError(f"the converted model returned {len(flat)} tensors, the module "
                         f"{len(flat_template)}")
    it = iter(flat)

    def build(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return next(it)
        if isinstance(v, (tuple, list)):
            return type(v)(build(x) for x in v)
        return {k: build(x) for k, x in v.items()}

    return build(template)


def borrowed_mb_tensor(t: "torch.Tensor") -> _lib.MbTensor:
    """An mb_tensor over a contiguous torch tensor's memory (capacity 0:
    the C side does not own it; `t` must outlive it)."""
    m = _lib.MbTensor()
    m.dtype = dtype_code(t.dtype)
    m.rank = t.dim()
    for i, d in enumerate(t.shape):
        m.dims[i] = int(d)
    m.numel = t.numel()
    m.nbytes = t.numel() * t.element_size()
    m.data = t.data_ptr() if m.nbytes else None
    m.capacity = 0
    m.name = None
    return m


def new_mb_tensor(t: "torch.Tensor") -> Optional[int]:
    """A new mb_tensor (the caller owns it: mb_tensor_free) holding a copy
    of `t`, a contiguous CPU tensor (plain_output's); None when it cannot
    be allocated."""
    dims = (c_int64 * max(t.dim(), 1))(*t.shape)
    out = c_void_p()
    if _lib.lib.mb_tensor_create(dtype_code(t.dtype), t.dim(), dims, ctypes.byref(out), None):
        return None
    nbytes = t.numel() * t.element_size()
    if nbytes:
        ctypes.memmove(_lib.MbTensor.from_address(out.value).data, t.data_ptr(), nbytes)
    return out.value
