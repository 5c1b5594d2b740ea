"""The user's model as the C engine takes it: a model manifest.

``benchmark_model`` accepts an ``nn.Module``, a zero-argument factory, a
TorchScript or pickled-module ``.pt`` file, or an ``.onnx`` file. For a PyTorch
model this module writes the manifest (docs/model-manifest.md): the module's
spec for the "pytorch" host runtime, its ONNX export when an ONNX conversion
is asked for (exported once, kept in the build cache by a hash of the module's
code, weights and input signature), the signature and outputs, and EAGER as the
reference.
"""

from __future__ import annotations

import ctypes
import hashlib
import inspect
import json
import logging
import os
import pickle
import sys
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import _lib
from .data import Inputs, InputSpec, signature_text

log = logging.getLogger("modelbench")


@dataclass
class ModelSource:
    """What the user gave: kind is "module", "factory", "torchscript" or "onnx"."""

    kind: str
    module: Any = None  # the nn.Module (built once here for a factory)
    factory: Optional[Callable[[], Any]] = None
    path: Optional[str] = None  # the file given, if any
    name: str = "model"
    description: str = ""


def _is_torchscript_file(path: str) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any(n.endswith("/constants.pkl") or "/code/" in n for n in z.namelist())


def load_source(model: Any) -> ModelSource:
    """Classifies the `model` argument; TypeError/ValueError name what is wrong."""
    import torch

    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"model file {path!r} does not exist")
        name = os.path.splitext(os.path.basename(path))[0]
        if path.endswith(".onnx"):
            return ModelSource("onnx", path=os.path.abspath(path), name=name)
        if _is_torchscript_file(path):
            module = torch.jit.load(path, map_location="cpu")
            return ModelSource("torchscript", module=module, path=os.path.abspath(path), name=name)
        loaded = torch.load(path, map_location="cpu")
        if isinstance(loaded, torch.nn.Module):
            return ModelSource("module", module=loaded, path=os.path.abspath(path), name=name)
        raise TypeError(
            f"{path} holds a {type(loaded).__name__} (a state_dict?), not a model: build "
            "the module, load_state_dict() it and pass the module (or a factory)"
        )
    if isinstance(model, torch.jit.ScriptModule):
        return ModelSource("torchscript", module=model, name=_class_name(model))
    if isinstance(model, torch.nn.Module):
        return ModelSource("module", module=model, name=type(model).__name__,
                           description=_where(type(model)))
    if callable(model):
        built = model()
        if not isinstance(built, torch.nn.Module):
            raise TypeError(
                f"the model factory {getattr(model, '__qualname__', model)!r} returned a "
                f"{type(built).__name__}, not an nn.Module"
            )
        return ModelSource("factory", module=built, factory=model,
                           name=type(built).__name__, description=_where(type(built)))
    raise TypeError(
        "model must be an nn.Module, a zero-argument factory returning one, or the "
        f"path of a .pt or .onnx file; got {type(model).__name__}"
    )


def _class_name(module: Any) -> str:
    name = getattr(module, "original_name", None) or type(module).__name__
    return str(name)


def _where(cls: type) -> str:
    try:
        file = inspect.getsourcefile(cls)
        line = inspect.getsourcelines(cls)[1]
        return f"{cls.__qualname__} ({file}:{line})"
    except (OSError, TypeError):
        return f"{cls.__module__}.{cls.__qualname__}"


def module_sha256(source: ModelSource, signature: str) -> str:
    """A hash of the module's code, architecture, weights and input signature:
    the same model in two scripts hashes the same."""
    import torch

    h = hashlib.sha256(b"modelbench-module-1\0")
    if source.path and source.kind == "torchscript":
        with open(source.path, "rb") as f:
            h.update(f.read())
    else:
        module = source.module
        h.update(repr(module).encode())
        if isinstance(module, torch.jit.ScriptModule):
            h.update(str(getattr(module, "code", "")).encode())
        classes = sorted({type(m) for m in module.modules()},
                         key=lambda c: (c.__module__, c.__qualname__))
        for cls in classes:
            h.update(f"{cls.__module__}.{cls.__qualname__}".encode())
            try:
                h.update(inspect.getsource(cls).encode())
            except (OSError, TypeError):
                pass
        for key, value in module.state_dict().items():
            h.update(key.encode())
            if isinstance(value, torch.Tensor):
                t = value.detach().cpu()
                if t.is_quantized:
                    h.update(repr((t.q_scale(), t.q_zero_point())).encode()
                             if t.qscheme() in (torch.per_tensor_affine,) else b"q")
                    t = t.int_repr()
                t = t.contiguous()
                h.update(f"{t.dtype}{tuple(t.shape)}".encode())
                if t.numel():
                    h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
            else:
                h.update(repr(value).encode())
    h.update(signature.encode())
    return h.hexdigest()


@dataclass
class Outputs:
    """The module's outputs on the example batch: flattened names and specs."""

    specs: List[InputSpec] = field(default_factory=list)


def describe_outputs(module: Any, inputs: Inputs) -> Outputs:
    """Runs the module once on the example batch (in this process) to learn
    its outputs' names, dtypes and shapes."""
    import torch

    from .host import flatten_outputs, output_names, plain_output

    module.eval()
    with torch.inference_mode():
        value = module(*inputs.example)
    flat = flatten_outputs(value)
    names = output_names(value)
    specs = []
    for name, t in zip(names, flat):
        t = plain_output(t)
        batched = t.dim() > 0 and t.shape[0] == inputs.batch_size
        specs.append(InputSpec(name, t.dtype, tuple(t.shape), batched))
    return Outputs(specs)


def _spec_json(specs: List[InputSpec]) -> List[Dict[str, Any]]:
    return [
        {
            "name": s.name,
            "dtype": str(s.dtype).replace("torch.", ""),
            "shape": ["batch" if i == 0 and s.batched else d for i, d in enumerate(s.shape)],
        }
        for s in specs
    ]


def _main_script() -> Optional[str]:
    main = sys.modules.get("__main__")
    file = getattr(main, "__file__", None)
    return os.path.abspath(file) if file else None


def _uses_main(source: ModelSource) -> bool:
    """Does unpickling need the user's __main__ (classes defined in a script)?"""
    if source.factory is not None and getattr(source.factory, "__module__", "") == "__main__":
        return True
    return any(type(m).__module__ == "__main__" for m in source.module.modules())


def write_pytorch_spec(source: ModelSource, folder: str, live_key: Optional[str],
                       by_value: bool = False) -> str:
    """Writes what a worker needs to rebuild the model; returns the spec's path.

    by_value: pickle classes defined in __main__ with the module (cloudpickle),
    so that the worker does not run the script to import them (``modelbench
    script`` and function profiles capture modules of scripts that are not
    guarded by ``if __name__ == "__main__":``).
    """
    import torch

    spec: Dict[str, Any] = {"sys_path": [p for p in sys.path if p]}
    if live_key is not None:
        spec.update(kind="live", id=live_key)
    elif source.kind == "torchscript":
        file = os.path.join(folder, "module.ts.pt")
        torch.jit.save(source.module, file)
        spec.update(kind="torchscript", file=os.path.basename(file))
    else:
        pickle_module: Any = pickle
        if by_value:
            pickle_module = _by_value_pickle()
        elif _uses_main(source):
            main = _main_script()
            if main is None:
                raise ValueError(
                    "the model's classes are defined in an interactive session: worker "
                    "processes cannot import them. Define them in a module or script "
                    "file, or set multiprocessing=False"
                )
            spec["main"] = main

        def save_factory(path: str) -> None:
            with open(path, "wb") as f:
                pickle_module.dump(source.factory, f)

        # How each kind travels to the workers, and what to do when it cannot.
        how = {
            "factory": ("factory.pkl", save_factory,
                        "the model factory", "define it at module level (not a lambda or a "
                        "nested function)"),
            "module": ("module.pt",
                       lambda f: torch.save(source.module, f, pickle_module=pickle_module),
                       "the module", "define its classes at module level, pass a "
                       "zero-argument factory"),
        }
        name, save, what, advice = how[source.kind]
        file = os.path.join(folder, name)
        try:
            save(file)
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise ValueError(
                f"cannot send {what} to the worker processes ({e}): {advice}, or set "
                "multiprocessing=False"
            ) from e
        spec.update(kind=source.kind, file=name)
    path = os.path.join(folder, "module.json")
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return path


def _by_value_pickle() -> Any:
    """cloudpickle, which pickles __main__'s classes and functions by value."""
    try:
        import cloudpickle  # type: ignore[import-not-found]
    except ImportError as e:
        raise ImportError(
            "modules built by a script are sent to the worker processes with "
            "cloudpickle: apt install python3-cloudpickle"
        ) from e
    return cloudpickle


# ---------------------------------------------------------------------------
# ONNX export, kept in the build cache
# ---------------------------------------------------------------------------


def _max_opset() -> int:
    try:
        from torch.onnx import _constants

        return int(_constants.ONNX_MAX_OPSET)
    except (ImportError, AttributeError):
        return 13


def _export(source: ModelSource, inputs: Inputs, outputs: Outputs, path: str,
            opset: Optional[int]) -> int:
    """torch.onnx.export with a dynamic batch; returns the opset used. Tries
    the highest opset first, then 13, unless one is given."""
    import torch

    names = [s.name for s in inputs.specs]
    out_names = [s.name for s in outputs.specs]
    dynamic = {s.name: {0: "batch"} for s in inputs.specs if s.batched}
    dynamic.update({s.name: {0: "batch"} for s in outputs.specs if s.batched})
    tries = [opset] if opset else sorted({_max_opset(), 13}, reverse=True)
    first_error: Optional[BaseException] = None
    for version in tries:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                source.module.eval()
                with torch.no_grad():
                    torch.onnx.export(
                        source.module,
                        tuple(inputs.example),
                        path,
                        input_names=names,
                        output_names=out_names,
                        dynamic_axes=dynamic,
                        opset_version=version,
                        do_constant_folding=True,
                    )
            for w in caught:
                log.debug("torch.onnx.export: %s", w.message)
            return version
        except Exception as e:  # noqa: BLE001 - the exporter raises many kinds
            log.debug("torch.onnx.export at opset %s failed: %s", version, e)
            first_error = first_error or e
    assert first_error is not None
    raise first_error


def export_onnx(source: ModelSource, sha256: str, inputs: Inputs, outputs: Outputs,
                folder: str, opset: Optional[int], cache: bool,
                cache_dir: Optional[str]) -> Dict[str, str]:
    """The manifest's "onnx" entry: {"path": ...} or {"error": why}, the
    export kept in the build cache under the module's hash."""
    if source.kind == "onnx":
        return {"path": source.path or ""}
    used: List[int] = []

    def make(path: str) -> None:
        used.append(_export(source, inputs, outputs, path, opset))

    entry = _host_build(source, sha256, inputs, folder, "ONNX_EXPORT",
                        f"opset={opset or 'auto'};dynamic_batch=1;constant_folding=1",
                        "model.onnx", make, "torch.onnx.export", cache, cache_dir)
    if used:
        log.info("ONNX export: opset %d", used[0])
    return entry


def export_torchscript(source: ModelSource, sha256: str, inputs: Inputs, folder: str,
                       cache: bool, cache_dir: Optional[str]) -> Dict[str, str]:
    """The manifest's "torchscript" entry for the C++ runtime (TORCHSCRIPT):
    the file given, or the module traced on the example batch and saved,
    kept in the build cache like the ONNX export."""
    import torch

    if source.kind == "torchscript" and source.path:
        return {"path": source.path}

    def make(path: str) -> None:
        module = source.module
        if not isinstance(module, torch.jit.ScriptModule):
            with torch.no_grad():
                module = torch.jit.trace(module.eval(), tuple(inputs.example),
                                         check_trace=False, strict=False)
        torch.jit.save(module, path)

    return _host_build(source, sha256, inputs, folder, "TORCHSCRIPT_EXPORT",
                       "trace=1", "model.pt", make, "torch.jit.trace", cache, cache_dir)


def _host_build(source: ModelSource, sha256: str, inputs: Inputs, folder: str,
                artifact: str, options: str, file_name: str,
                make: Callable[[str], Any], what: str, cache: bool,
                cache_dir: Optional[str]) -> Dict[str, str]:
    """Makes an artifact of the module with make(path), kept in the build
    cache under the module's hash; {"path": ...} or {"error": why}."""
    import torch

    build = ctypes.c_void_p()
    if cache:
        key = _lib.MbHostBuildKey(
            source.name.encode(), sha256.encode(), signature_text(inputs.specs).encode(),
            artifact.encode(), options.encode(), b"torch", torch.__version__.encode(),
        )
        err = _lib.MbError()
        if _lib.lib.mb_host_build_open(
            cache_dir.encode() if cache_dir else None, ctypes.byref(key), 0,
            ctypes.byref(build), ctypes.byref(err),
        ):
            log.warning("build cache: %s (building without it)", _lib.error_message(err))
            build = ctypes.c_void_p()
    try:
        if build:
            path = os.path.join(_lib.lib.mb_host_build_folder(build).decode(), file_name)
            if _lib.lib.mb_host_build_hit(build) and os.path.isfile(path):
                log.info("%s: cache hit (%s)", artifact, _lib.lib.mb_host_build_id(build).decode())
                return {"path": path}
        else:
            path = os.path.join(folder, file_name)
        t0 = time.perf_counter()
        try:
            make(path)
        except Exception as e:  # noqa: BLE001 - the exporters raise many kinds
            why = f"{what} failed: {type(e).__name__}: {e}".splitlines()[0]
            log.warning("%s (the conversions that need it fail with it, the others run)", why)
            if build:
                _lib.lib.mb_host_build_finish(build, None, why.encode(),
                                              (time.perf_counter() - t0) * 1e3, None)
            return {"error": why}
        ms = (time.perf_counter() - t0) * 1e3
        log.info("%s: %.0f ms", artifact, ms)
        if build:
            err = _lib.MbError()
            if _lib.lib.mb_host_build_finish(build, file_name.encode(), None, ms,
                                             ctypes.byref(err)):
                log.warning("build cache: %s", _lib.error_message(err))
        return {"path": path}
    finally:
        if build:
            _lib.lib.mb_host_build_close(build)


def write_manifest(folder: str, source: ModelSource, sha256: str, inputs: Inputs,
                   outputs: Outputs, formats: Dict[str, Dict[str, str]],
                   reference: Optional[str]) -> str:
    """Writes manifest.json in folder; returns its path."""
    manifest: Dict[str, Any] = {
        "modelbench_model": 1,
        "name": source.name,
        "sha256": sha256,
        "description": source.description or source.path or source.name,
        "inputs": _spec_json(inputs.specs),
        "outputs": _spec_json(outputs.specs),
        "formats": formats,
    }
    if reference:
        manifest["reference"] = reference
    path = os.path.join(folder, "manifest.json")
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
    return path
