"""A module called with constant non-tensor arguments, as a model of tensors.

``model(x, mask, return_dict=False)`` or ``block(x, scale=0.5)``: the engine
feeds models tensors only, so such a call is benchmarked as the module with
its constants bound, ``BoundArguments(module, layout)(x, mask)``, the way an
export specialises them (``torch.onnx.export`` bakes constants in too). The
constants are part of the wrapper's ``repr``, so a call with other
constants is another model (another hash). Only plain constants are bound
(None, bools, numbers, strings and tuples or lists of them); a container of
tensors still makes the call unbenchmarkable.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import torch

#: How each argument of forward() is given: ("pos"|"kw"|"varkw", name,
#: None for a tensor input or ("const", value)).
Layout = List[Tuple[str, str, Any]]


def is_constant(value: Any) -> bool:
    """Whether a value can be bound into the model as a constant."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(is_constant(v) for v in value)
    return False


class BoundArguments(torch.nn.Module):
    """``module`` with its constant arguments bound: forward(*tensors)."""

    def __init__(self, module: torch.nn.Module, layout: Layout) -> None:
        super().__init__()
        self.inner = module
        self.layout = layout
        #: What input names and reports call the tensor inputs.
        self.bound_input_names = [name for _, name, const in layout if const is None]
        #: The class the reports name (the wrapped module's).
        self.model_name = type(module).__name__

    def forward(self, *tensors: torch.Tensor) -> Any:
        args: List[Any] = []
        kwargs = {}
        it = iter(tensors)
        for kind, name, const in self.layout:
            value = next(it) if const is None else const[1]
            if kind == "pos":
                args.append(value)
            else:
                kwargs[name] = value
        return self.inner(*args, **kwargs)

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={const[1]!r}" for _, name, const in self.layout
                         if const is not None)


def bind(module: torch.nn.Module, arguments: Sequence[Tuple[str, str, Any]],
         copy: bool = True) -> Tuple[torch.nn.Module, Tuple[torch.Tensor, ...]]:
    """(kind, name, value) per argument of the call, in forward()'s order:
    the module to benchmark and its tensor inputs (the module itself when
    every argument is a tensor; copies of the tensors unless not `copy`)."""
    layout: Layout = []
    tensors = []
    for kind, name, value in arguments:
        if isinstance(value, torch.Tensor):
            layout.append((kind, name, None))
            tensors.append(value.detach().cpu().clone() if copy else value)
        else:
            layout.append((kind, name, ("const", value)))
    if len(tensors) == len(layout) and all(kind == "pos" for kind, _, _ in layout):
        return module, tuple(tensors)
    return BoundArguments(module, layout), tuple(tensors)
