"""Turning `data` and `data_loader` into what the C engine reads.

A single sample (`data`) describes the inputs: the engine generates seeded
batches of that shape and dtype itself, the same bytes for every conversion. A
data loader's batches are written once as .npy files (one folder per batch, one
file per input, as ``modelbench bench --inputs`` reads them) with the labels,
when it yields (inputs, labels), in one labels.npy.
"""

from __future__ import annotations

import inspect
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from .errors import ConfigError, ConfigTypeError

log = logging.getLogger("modelbench")


@dataclass
class InputSpec:
    """One argument of forward(): its name, dtype and shape with the batch
    dimension first (None when the batch size is not part of it)."""

    name: str
    dtype: Any  # torch.dtype
    shape: Tuple[int, ...]
    batched: bool = True


@dataclass
class Inputs:
    """What the engine runs on: the signature, one example batch (for the
    signature run, tracing and export) and, for real data, where it was written."""

    specs: List[InputSpec]
    example: Tuple[Any, ...]
    n_batches: int
    batch_size: int
    folder: Optional[str] = None
    labels: Optional[str] = None
    ranges: List[Tuple[str, float, float]] = field(default_factory=list)


def _script_params(model: Any) -> Optional[List[str]]:
    """forward()'s parameter names of a TorchScript module, from its schema
    (inspect cannot read a ScriptMethod's signature); None otherwise."""
    schema = getattr(getattr(model, "forward", None), "schema", None)
    arguments = getattr(schema, "arguments", None)
    if arguments is None:
        return None
    return [a.name for a in arguments if a.name != "self"]


def forward_arity(model: Any) -> Optional[int]:
    """Positional parameters of model's forward (None when unknown)."""
    scripted = _script_params(model)
    if scripted is not None:
        return len(scripted)
    fn = getattr(model, "forward", model)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(
        1
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    )


def input_names(model: Any, n: int) -> List[str]:
    """forward()'s parameter names for n inputs, input_0... when unknown."""
    bound = getattr(model, "bound_input_names", None)  # modelbench.bound
    if bound is not None and len(bound) >= n and len(set(bound[:n])) == n:
        return list(bound[:n])
    fn = getattr(model, "forward", model)
    scripted = _script_params(model)
    try:
        if scripted is not None:
            raise ValueError("a TorchScript module")
        names = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
        ]
    except (TypeError, ValueError):
        names = scripted or []
    if len(names) < n or len(set(names[:n])) < n:
        return [f"input_{i}" for i in range(n)]
    return names[:n]


def _as_tensors(value: Any, what: str) -> Tuple[Any, ...]:
    import torch

    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)) and value and all(
        isinstance(v, torch.Tensor) for v in value
    ):
        return tuple(value)
    raise ConfigTypeError(
        f"{what} must be a tensor or a tuple of tensors, got {type(value).__name__}"
    )


def from_sample(model: Any, data: Any, batch_size: int, n_samples: int) -> Inputs:
    """Inputs described by one sample without the batch dimension."""
    import torch

    tensors = _as_tensors(data, "data")
    names = input_names(model, len(tensors))
    specs, example, ranges = [], [], []
    for name, t in zip(names, tensors):
        t = t.detach().cpu()
        specs.append(InputSpec(name, t.dtype, (batch_size,) + tuple(t.shape)))
        example.append(t.unsqueeze(0).expand((batch_size,) + tuple(t.shape)).contiguous())
        if not (t.is_floating_point() or t.dtype == torch.bool) and t.numel():
            # Integer inputs (token ids, indices) keep the sample's range, so
            # that generated values stay valid for embeddings.
            ranges.append((name, float(t.min()), float(t.max())))
    n_batches = max(1, -(-n_samples // batch_size))
    return Inputs(specs, tuple(example), n_batches, batch_size, ranges=ranges)


def _split_batch(model: Any, batch: Any) -> Tuple[Tuple[Any, ...], Optional[Any]]:
    """(inputs, labels) of one loader item: a tensor, a tuple of input tensors,
    or (inputs, labels) when forward takes fewer arguments than the tuple."""
    import torch

    if isinstance(batch, dict):
        raise ConfigTypeError(
            "data_loader yields dicts; modelbench takes tensors, tuples of tensors "
            "or (inputs, labels)"
        )
    if isinstance(batch, torch.Tensor):
        return (batch,), None
    if not isinstance(batch, (tuple, list)) or not batch:
        raise ConfigTypeError(
            f"data_loader yields {type(batch).__name__}; expected tensors, tuples of "
            "tensors or (inputs, labels)"
        )
    arity = forward_arity(model)
    if len(batch) == 2 and arity is not None and arity < 2:
        inputs, labels = batch
        return _as_tensors(inputs, "a data_loader's inputs"), labels
    return _as_tensors(batch, "a data_loader item"), None


def from_loader(model: Any, loader: Iterable[Any], n_samples: int, folder: str) -> Inputs:
    """Writes whole batches of the loader, up to n_samples rows, under folder."""
    import numpy as np
    import torch

    batches: List[Tuple[Any, ...]] = []
    labels: List[Any] = []
    rows = 0
    batch_size = None
    for item in loader:
        inputs, label = _split_batch(model, item)
        n = int(inputs[0].shape[0]) if inputs[0].dim() > 0 else 1
        if batch_size is None:
            batch_size = n
        if n != batch_size:
            log.info("data_loader: a batch of %d rows after batches of %d is left out", n, batch_size)
            break
        if rows + n > n_samples and batches:
            break
        batches.append(tuple(t.detach().cpu().contiguous() for t in inputs))
        if label is not None:
            labels.append(torch.as_tensor(label).detach().cpu().reshape(-1))
        elif labels:
            raise ConfigError("data_loader: some batches have labels and others do not")
        rows += n
        if rows >= n_samples:
            break
    if not batches:
        raise ConfigError("data_loader yielded no batches")
    if labels and len(labels) != len(batches):
        raise ConfigError("data_loader: some batches have labels and others do not")
    names = input_names(model, len(batches[0]))
    specs = [InputSpec(name, t.dtype, tuple(t.shape)) for name, t in zip(names, batches[0])]
    os.makedirs(folder, exist_ok=True)
    for i, batch in enumerate(batches):
        sample = os.path.join(folder, f"sample_{i:05d}")
        os.makedirs(sample, exist_ok=True)
        for name, t in zip(names, batch):
            if t.dtype == torch.bfloat16:
                raise ConfigTypeError(f"input {name!r} is bfloat16, which .npy cannot hold")
            np.save(os.path.join(sample, f"{name}.npy"), t.numpy())
    labels_path = None
    if labels:
        all_labels = torch.cat(labels)
        if all_labels.is_floating_point():
            raise ConfigTypeError("data_loader labels must be integer classes")
        # Beside the sample folders, not among them (a .npy there would read
        # as an input).
        labels_path = os.path.join(os.path.dirname(os.path.abspath(folder)), "labels.npy")
        np.save(labels_path, all_labels.to(torch.int64).numpy())
    if rows < n_samples:
        log.info("data_loader gave %d samples (n_samples %d)", rows, n_samples)
    return Inputs(
        specs, batches[0], len(batches), batch_size or 1, folder=folder, labels=labels_path
    )


def signature_text(specs: Sequence[InputSpec], batch: str = "batch") -> str:
    """'x:float32[batch,3,224,224]': the input signature in cache keys."""
    parts = []
    for s in specs:
        dims = [batch if i == 0 and s.batched else str(d) for i, d in enumerate(s.shape)]
        parts.append(f"{s.name}:{str(s.dtype).replace('torch.', '')}[{','.join(dims)}]")
    return ";".join(parts)
