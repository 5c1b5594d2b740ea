"""Capturing the nn.Module calls of running Python code.

``modelbench script`` (discovering the models a script runs) and function
profiles (``modelbench.profile``) both watch module calls at the
``nn.Module.__call__`` boundary: Debian's PyTorch is 1.13, which has no
TorchDynamo to capture graphs inside a function, so a "captured segment" is
one call of a module that no other module call encloses (or, with a depth,
one nested that many calls down). While capturing:

- ``nn.Module.__call__`` is wrapped: a :class:`Listener` sees each call with
  its depth and runs it (or, for validation, runs something else);
- ``nn.Module.__init__`` is wrapped (``track_construction``) to note where
  each module was built: the innermost frame of the user's own code that is
  not the constructor of that module.

Then :func:`write_model` turns a captured module and the inputs of one of
its calls into a model manifest (docs/model-manifest.md) with the same
building blocks as ``benchmark_model``: the same hash, the same ONNX export
kept in the build cache, the inputs the call saw as the benchmark's data,
and where the model came from (script, location, labels).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sys
import sysconfig
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .errors import Error

_original_call: Optional[Callable[..., Any]] = None
_original_init: Optional[Callable[..., Any]] = None
_listener: Optional["Listener"] = None
_depth = 0
_built_at: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()
_library_cache: Dict[str, bool] = {}


class Listener:
    """What a capture does with each module call.

    ``max_depth``: calls nested deeper than this (0: only calls no other
    module call encloses) run untouched, at the cost of one Python call.
    """

    max_depth = 0

    def on_call(self, module: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                depth: int, call: Callable[[], Any]) -> Any:
        """Handles one call; ``call()`` runs the module as the caller asked."""
        return call()


def _patched_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    global _depth
    listener = _listener
    if listener is None or _depth > listener.max_depth:
        return _original_call(self, *args, **kwargs)  # type: ignore[misc]
    _depth += 1
    try:
        return listener.on_call(
            self, args, kwargs, _depth - 1,
            lambda: _original_call(self, *args, **kwargs),  # type: ignore[misc]
        )
    finally:
        _depth -= 1


def _patched_init(self: Any, *args: Any, **kwargs: Any) -> None:
    _original_init(self, *args, **kwargs)  # type: ignore[misc]
    try:
        _built_at[self] = _construction_site(self)
    except TypeError:  # not weak-referenceable
        pass


def _patch() -> None:
    global _original_call, _original_init
    import torch

    if _original_call is None:
        _original_call = torch.nn.Module.__call__
        torch.nn.Module.__call__ = _patched_call  # type: ignore[assignment]


@contextlib.contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Module calls go to `listener` inside the block (nested blocks stack)."""
    global _listener, _depth
    _patch()
    previous, previous_depth = _listener, _depth
    _listener, _depth = listener, 0
    try:
        yield
    finally:
        _listener, _depth = previous, previous_depth


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Module calls run untouched inside the block (our own hashing, export)."""
    global _listener
    previous = _listener
    _listener = None
    try:
        yield
    finally:
        _listener = previous


def track_construction() -> None:
    """From now on, note where each module is built (see :func:`built_at`)."""
    global _original_init
    import torch

    if _original_init is None:
        _original_init = torch.nn.Module.__init__
        torch.nn.Module.__init__ = _patched_init  # type: ignore[assignment]


# ---------------------------------------------------------------------------
# Where a module was built
# ---------------------------------------------------------------------------


def _library_dirs() -> List[str]:
    dirs = {os.path.dirname(os.path.abspath(__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    for path in sys.path:
        if path.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.abspath(path))
    return sorted(dirs)


def _is_library(filename: str) -> bool:
    """Frames of the standard library, installed packages and modelbench are
    not where the user built a model."""
    known = _library_cache.get(filename)
    if known is None:
        path = os.path.abspath(filename)
        known = filename.startswith("<") or any(
            path == d or path.startswith(d + os.sep) for d in _library_dirs()
        )
        _library_cache[filename] = known
    return known


def short_path(path: str) -> str:
    """`path` relative to the working directory when it is inside it."""
    path = os.path.abspath(path)
    cwd = os.getcwd()
    return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path


def _construction_site(module: Any) -> str:
    frame = sys._getframe(2)
    fallback = ""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__init__" and frame.f_locals.get("self") is module:
            pass  # the module's own constructors
        elif _is_library(code.co_filename):
            fallback = fallback or f"{short_path(code.co_filename)}:{frame.f_lineno}"
        else:
            return f"{short_path(code.co_filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return fallback


def call_site(skip: int = 2) -> str:
    """'file:line' of the innermost frame of the user's own code calling us."""
    frame = sys._getframe(skip)
    while frame is not None and _is_library(frame.f_code.co_filename):
        frame = frame.f_back
    return f"{short_path(frame.f_code.co_filename)}:{frame.f_lineno}" if frame else ""


def tracked_site(module: Any) -> str:
    """Where `module` was built ("built at file:line") when construction was
    tracked, else ""."""
    where = _built_at.get(module)
    return f"built at {where}" if where else ""


def built_at(module: Any) -> str:
    """Where `module` was built ("file:line"), else where its class is defined."""
    where = _built_at.get(module)
    if where:
        return where
    cls = type(module)
    try:
        file = inspect.getsourcefile(cls)
        line = inspect.getsourcelines(cls)[1]
        if file:
            return f"{short_path(file)}:{line}"
    except (OSError, TypeError):
        pass
    return f"{cls.__module__}.{cls.__qualname__}"


def class_name(module: Any) -> str:
    """The module's class: its qualname for classes of a script (__main__),
    else module.qualname."""
    cls = type(module)
    name = getattr(module, "original_name", None) if cls.__name__ == "RecursiveScriptModule" else None
    if name:
        return str(name)
    if cls.__module__ in ("__main__", "__mp_main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------------------
# A call's inputs
# ---------------------------------------------------------------------------


class NotBenchmarkable(Error, ValueError):
    """A module call whose inputs the engine cannot feed (a non-tensor
    argument, a keyword argument out of order)."""


def describe_value(value: Any) -> str:
    """'float32[1, 3, 224, 224]' for a tensor, the type name otherwise."""
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return f"{dtype}[{', '.join(str(d) for d in value.shape)}]"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(describe_value(v) for v in value[:4])
        more = ", ..." if len(value) > 4 else ""
        return f"{type(value).__name__}({inner}{more})"
    if isinstance(value, dict):
        return "dict(" + ", ".join(f"{k}: {describe_value(v)}" for k, v in list(value.items())[:4]) + ")"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return type(value).__name__


def call_signature(module: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> List[Dict[str, str]]:
    """The call's arguments by name: [{"name", "value"}] (value as
    :func:`describe_value` writes it)."""
    names = _parameter_names(module)
    out = []
    for i, a in enumerate(args):
        out.append({"name": names[i] if i < len(names) else f"input_{i}", "value": describe_value(a)})
    for k, v in kwargs.items():
        out.append({"name": k, "value": describe_value(v)})
    return out


def _parameter_names(module: Any) -> List[str]:
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def benchmarkable(module: Any, args: Sequence[Any], kwargs: Dict[str, Any],
                  copy: bool = True) -> Tuple[Any, Tuple[Any, ...]]:
    """(the module to benchmark, its tensor inputs) of one call: the module
    itself when every argument is a tensor, else the module with its plain
    constant arguments bound (modelbench.bound: ``return_dict=False``,
    ``scale=0.5``), so that the engine feeds it tensors only.
    NotBenchmarkable names an argument that is neither (a dict of tensors,
    an object) and a call without a tensor. The tensors are copies (the
    call may change them in place) unless not `copy`."""
    import torch

    from .bound import bind, is_constant

    arguments: List[Tuple[str, str, Any]] = []
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError, AttributeError) as e:
        if kwargs:
            raise NotBenchmarkable(f"its arguments do not bind to forward(): {e}") from e
        arguments = [("pos", f"input_{i}", a) for i, a in enumerate(args)]
    else:
        for name, value in bound.arguments.items():
            param = signature.parameters[name]
            if param.kind == param.VAR_POSITIONAL:
                arguments += [("pos", f"{name}_{i}", v) for i, v in enumerate(value)]
            elif param.kind == param.VAR_KEYWORD:
                arguments += [("kw", k, v) for k, v in value.items()]
            elif param.kind == param.KEYWORD_ONLY:
                arguments.append(("kw", name, value))
            else:
                arguments.append(("pos", name, value))
    for _, name, value in arguments:
        if not isinstance(value, torch.Tensor) and not is_constant(value):
            raise NotBenchmarkable(
                f"argument {name!r} is a {describe_value(value)}, neither a tensor nor a "
                "plain constant (modelbench feeds models tensors, with constants bound)"
            )
    if not any(isinstance(v, torch.Tensor) for _, _, v in arguments):
        raise NotBenchmarkable("it takes no tensor input")
    return bind(module, arguments, copy)


def shown_module(module: Any) -> Any:
    """The module a report names: the wrapped one of a BoundArguments."""
    return getattr(module, "inner", module) if hasattr(module, "bound_input_names") else module


def input_specs(module: Any, tensors: Sequence[Any]) -> List[Any]:
    """The engine's signature of a call's tensors (dim 0 the batch)."""
    from .data import InputSpec, input_names

    names = input_names(module, len(tensors))
    return [InputSpec(n, t.dtype, tuple(t.shape), t.dim() > 0) for n, t in zip(names, tensors)]


def model_hash(module: Any, tensors: Sequence[Any], weights: bool = False,
               batch: bool = False) -> str:
    """The hash of the module with these inputs: its classes' source, repr,
    parameters' names, dtypes and shapes and the input signature (the batch
    size aside unless `batch`), the same over runs whatever the seed; with
    weights, their values too (benchmark_model's content hash, which build
    keys use: an export with a dynamic batch serves every batch size).
    Discovery's model hash, the one a user selects, has the batch size: a
    module called at batch 1 and 8 is two models."""
    from .data import signature_text
    from .model import ModelSource, module_sha256

    with paused():
        source = ModelSource("module", module=module, name=type(module).__name__)
        signature = signature_text(input_specs(module, tensors))
        if batch:
            signature += " batch=" + ",".join(
                str(int(t.shape[0])) if getattr(t, "dim", lambda: 0)() > 0 else "-"
                for t in tensors)
        return module_sha256(source, signature, weights)


def parameter_stats(module: Any) -> Tuple[int, int]:
    """(parameters, bytes of parameters)."""
    count = size = 0
    for p in module.parameters():
        count += p.numel()
        size += p.numel() * p.element_size()
    return count, size


@contextlib.contextmanager
def _training_kept(module: Any) -> Iterator[None]:
    """Restores every submodule's train/eval mode (export and the output
    probe switch the module to eval)."""
    modes = [(m, m.training) for m in module.modules()]
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


# ---------------------------------------------------------------------------
# A captured module as a model manifest
# ---------------------------------------------------------------------------


@dataclass
class ModelOrigin:
    """Where a captured model came from, for the reports."""

    script: str = ""
    location: str = ""
    labels: Dict[str, str] = field(default_factory=dict)


def write_model(folder: str, module: Any, tensors: Sequence[Any], sha256: str,
                origin: ModelOrigin, formats_wanted: Sequence[str],
                opset: Optional[int] = None, cache: bool = True,
                cache_dir: Optional[str] = None) -> str:
    """Writes the manifest of `module` called with `tensors` into folder
    (the pickled module, the inputs as .npy, the ONNX export and the traced
    TorchScript file when their formats are wanted) and returns its path.
    Runs the module once more (in eval mode, its train/eval state restored)
    to learn its outputs."""
    from .data import from_loader
    from .model import (
        ModelSource,
        describe_outputs,
        export_forms,
        write_manifest,
        write_pytorch_spec,
    )

    os.makedirs(folder, exist_ok=True)
    source = ModelSource("module", module=module, name=type(shown_module(module)).__name__,
                         description=origin.location,
                         script=os.path.abspath(origin.script) if origin.script else None,
                         model_hash=sha256)
    rows = int(tensors[0].shape[0]) if tensors[0].dim() > 0 else 1
    with paused(), _training_kept(module):
        inputs = from_loader(module, [tuple(tensors)], rows, os.path.join(folder, "inputs"))
        for spec, t in zip(inputs.specs, tensors):
            spec.batched = t.dim() > 0
        outputs = describe_outputs(module, inputs)
        spec_path = write_pytorch_spec(source, folder, None)
        formats: Dict[str, Dict[str, str]] = {"pytorch": {"path": spec_path}}
        # The exports depend on the weights: their build keys use the content
        # hash, the manifest the model hash the user sees and selects.
        content = model_hash(module, tensors, weights=True)
        formats.update(export_forms(source, content, inputs, outputs, folder, formats_wanted,
                                    opset, cache, cache_dir, spec_path))
    path = write_manifest(folder, source, sha256, inputs, outputs, formats, "EAGER")
    with open(path) as f:
        manifest = json.load(f)
    manifest["inputs_dir"] = "inputs"
    # The model hash leaves the weights out; the PyTorch conversions' builds
    # are keyed by the content (docs/model-manifest.md).
    manifest["content_sha256"] = content
    # The history knows a PyTorch run by its model, as benchmark_model's
    # runs (the script's labels win).
    params, _ = parameter_stats(module)
    labels = {"model": source.name, "framework": "pytorch",
              "class": class_name(shown_module(module)),
              "parameters": str(params)}
    labels.update(origin.labels)
    manifest["source"] = {"script": origin.script, "location": origin.location,
                          "labels": labels}
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
    return path


def wanted_formats(conversions: Optional[Sequence[str]], tier: Optional[int]) -> List[str]:
    """The model formats (onnx, torchscript, pytorch) the conversions to run
    take: named ones, a tier's, or the default set's."""
    from . import conversions as conv_table

    rows = conv_table.list_conversions()
    if conversions:
        names = set(conv_table.resolve(conversions))
        chosen = [r for r in rows if r["name"] in names]
    elif tier:
        chosen = [r for r in rows if r["tier"] <= tier]
    else:
        chosen = [r for r in rows if r["default"]]
    return sorted({str(r["format"]) for r in chosen})
