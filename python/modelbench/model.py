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
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _lib
from .data import Inputs, InputSpec, signature_text
from .errors import ConfigError, ConfigTypeError

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
    # A model a script ran: the script and the model hash shown for it
    # (its cached exports are filed under them).
    script: Optional[str] = None
    model_hash: Optional[str] = None


def _is_torchscript_file(path: str) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:
        return any(n.endswith("/constants.pkl") or "/code/" in n for n in z.namelist())


def load_source(model: Any, seed: int = 0, trust_code: bool = False) -> ModelSource:
    """Classifies the `model` argument; TypeError/ValueError name what is wrong.

    A factory is called once, after ``torch.manual_seed(seed)`` (the caller's
    random state is left as it was). A ``.pt`` file that holds a pickled module
    (not TorchScript, not weights) is loaded only with trust_code: unpickling
    a file runs code from it.
    """
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
        loaded = _load_model_file(torch, path, trust_code)
        if isinstance(loaded, torch.nn.Module):
            return ModelSource("module", module=loaded, path=os.path.abspath(path), name=name)
        raise ConfigTypeError(
            f"{path} holds a {type(loaded).__name__} (a state_dict?), not a model: build "
            "the module, load_state_dict() it and pass the module (or a factory)"
        )
    if callable(getattr(model, "load", None)) and callable(getattr(model, "is_loaded", None)):
        model = model.load()  # alma's lazyload: built once, here
    if isinstance(model, torch.jit.ScriptModule):
        return ModelSource("torchscript", module=model, name=_class_name(model))
    if isinstance(model, torch.nn.Module):
        return ModelSource("module", module=model, name=type(model).__name__,
                           description=_where(type(model)))
    if callable(model):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            built = model()
        if not isinstance(built, torch.nn.Module):
            raise ConfigTypeError(
                f"the model factory {getattr(model, '__qualname__', model)!r} returned a "
                f"{type(built).__name__}, not an nn.Module"
            )
        return ModelSource("factory", module=built, factory=model,
                           name=type(built).__name__, description=_where(type(built)))
    raise ConfigTypeError(
        "model must be an nn.Module, a zero-argument factory returning one, or the "
        f"path of a .pt or .onnx file; got {type(model).__name__}"
    )


def _load_model_file(torch: Any, path: str, trust_code: bool) -> Any:
    """torch.load of a model file someone handed over: weights only (no code
    runs), unless trust_code says the file is trusted."""
    if trust_code:
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except TypeError:  # a PyTorch without weights_only
            return torch.load(path, map_location="cpu")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise ConfigError(
            f"{path} is a pickled model: loading it runs code from the file, which "
            "modelbench does not do unless told to. If you trust the file, set config "
            "key 'trust_code' to True (bench: --trust-code); better, save a TorchScript "
            "(torch.jit.save) or "
            f"a state_dict. ({str(e).splitlines()[0][:120]})"
        ) from e


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


def module_sha256(source: ModelSource, signature: str, weights: bool = True) -> str:
    """A hash of the module's code, architecture, weights and input signature:
    the same model in two scripts hashes the same. weights=False leaves the
    weights' values out (their names, dtypes and shapes stay): the model
    hash that ``modelbench script`` shows and selects, the same over runs of
    an unseeded script; build keys use the content hash (weights=True)."""
    import torch

    h = hashlib.sha256(b"modelbench-module-1\0" if weights else b"modelbench-model-1\0")
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
                             if weights and t.qscheme() in (torch.per_tensor_affine,) else b"q")
                    t = t.int_repr()
                t = t.contiguous()
                h.update(f"{t.dtype}{tuple(t.shape)}".encode())
                if t.numel() and weights:
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

    from ._tensors import flatten_outputs, output_names, plain_output

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


def _unimportable_modules(source: ModelSource) -> List[str]:
    """Modules holding the model's classes (or its factory) that a worker
    could not import by name: __main__ (a script, a notebook, the REPL,
    ``python -c``, standard input) and modules loaded from a path that is
    not on sys.path. Their code travels with the model (by value)."""
    import importlib.util

    names = {type(m).__module__ for m in source.module.modules()}
    if source.factory is not None:
        names.add(getattr(source.factory, "__module__", None) or "__main__")
    out = []
    for name in sorted(n for n in names if n):
        if name == "__main__" or name.startswith("__mp_main__"):
            out.append(name)
            continue
        module = sys.modules.get(name)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        here = getattr(module, "__file__", None)
        if spec is None or (here and spec.origin and
                            os.path.realpath(spec.origin) != os.path.realpath(here)):
            out.append(name)
    return out


def _dump_by_value(obj: Any, path: str, save: Callable[[Any, str, Any], None],
                   modules: List[str]) -> None:
    """Pickles obj with cloudpickle into path, the code of `modules` by value
    (cloudpickle does __main__'s itself)."""
    cloudpickle = _by_value_pickle()
    registered = []
    try:
        for name in modules:
            module = sys.modules.get(name)
            if module is not None and name != "__main__":
                try:
                    cloudpickle.register_pickle_by_value(module)
                    registered.append(module)
                except (ValueError, AttributeError):
                    pass
        save(obj, path, cloudpickle)
    finally:
        for module in registered:
            cloudpickle.unregister_pickle_by_value(module)


def write_pytorch_spec(source: ModelSource, folder: str, live_key: Optional[str],
                       seed: int = 0) -> str:
    """Writes what a worker needs to rebuild the model; returns the spec's path.

    An in-memory module is the user's own object: it travels by value
    (cloudpickle), built once here, so that every worker (and the isolated
    export) sees the same weights, wherever its classes were defined (a file,
    a script without a ``__main__`` guard, a notebook cell, the REPL,
    ``python -c``, standard input, a closure, a lambda in forward). Only when
    the built module cannot be pickled does a factory travel instead, called
    in each worker after ``torch.manual_seed(seed)``, as it was here.
    """
    import torch

    # sys_path (this process's, to import the pickled classes by name) goes
    # only with a pickle: the worker refuses it without --trust-code.
    spec: Dict[str, Any] = {}
    if live_key is not None:
        spec.update(kind="live", id=live_key)
    elif source.kind == "torchscript":
        file = os.path.join(folder, "module.ts.pt")
        torch.jit.save(source.module, file)
        spec.update(kind="torchscript", file=os.path.basename(file))
    else:
        modules = _unimportable_modules(source)
        spec["sys_path"] = [p for p in sys.path if p]
        file = os.path.join(folder, "module.pt")
        try:
            _dump_by_value(source.module, file,
                           lambda obj, path, pm: torch.save(obj, path, pickle_module=pm),
                           modules)
            spec.update(kind="module", file="module.pt")
        except Exception as first:  # noqa: BLE001 - pickling raises many kinds
            if source.factory is None:
                raise ConfigError(
                    f"cannot send the module to the worker processes ({type(first).__name__}: "
                    f"{first}): pass a zero-argument factory that builds it, or set "
                    "multiprocessing=False"
                ) from first

            def save_factory(obj: Any, path: str, pm: Any) -> None:
                with open(path, "wb") as f:
                    pm.dump(obj, f)

            try:
                _dump_by_value(source.factory, os.path.join(folder, "factory.pkl"),
                               save_factory, modules)
            except Exception as e:  # noqa: BLE001
                raise ConfigError(
                    f"cannot send the module ({first}) nor its factory ({e}) to the worker "
                    "processes: set multiprocessing=False"
                ) from e
            log.info("the module cannot be pickled (%s): each worker builds it with the "
                     "factory, seeded with %d", first, seed)
            spec.update(kind="factory", file="factory.pkl", seed=seed)
    path = os.path.join(folder, "module.json")
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
    return path


def _by_value_pickle() -> Any:
    """cloudpickle, which pickles the code of classes and functions by value."""
    try:
        import cloudpickle  # type: ignore[import-not-found]
    except ImportError as e:
        raise ImportError(
            "in-memory modules are sent to the worker processes with cloudpickle: "
            "apt install python3-cloudpickle (or pip install cloudpickle)"
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


def _export_tries(opset: Optional[int], dynamo: bool = False) -> List[Dict[str, Any]]:
    """torch.onnx.export's settings to try in order: the TorchScript-based
    exporter (the graphs the engine is tested with) at the highest opset up to
    17, then 13; on a PyTorch whose default is the dynamo exporter (2.9 and
    later), that one last, at its own opset (18). With `dynamo`, the dynamo
    exporter only (ONNX+DYNAMO_EXPORT's form), at `opset` or its own."""
    import inspect

    import torch

    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if dynamo:
        if not has_dynamo:
            raise RuntimeError(
                "torch.onnx.export(dynamo=True) needs PyTorch 2.5 or newer "
                f"(this is {torch.__version__})")
        return [dict(dynamo=True, **({"opset_version": opset} if opset else {}))]
    versions = [opset] if opset else sorted({min(_max_opset(), 17), 13}, reverse=True)
    tries: List[Dict[str, Any]] = [
        dict(opset_version=v, **({"dynamo": False} if has_dynamo else {})) for v in versions
    ]
    if has_dynamo and not opset:
        tries.append({"dynamo": True})
    return tries


def _mark_exporter(path: str, settings: Dict[str, Any], opset: int) -> None:
    """Writes which exporter made the ONNX file at path into its metadata
    ("modelbench.exporter"): the engine reports it with each conversion of
    that form (the result's `exporter`), cache hits included."""
    import onnx
    import torch

    model = onnx.load(path, load_external_data=False)
    kind = "dynamo" if settings.get("dynamo") else "TorchScript-based"
    words = (f"torch {torch.__version__.split('+')[0]} torch.onnx.export ({kind}), "
             f"opset {opset}")
    for prop in model.metadata_props:
        if prop.key == "modelbench.exporter":
            prop.value = words
            break
    else:
        model.metadata_props.add(key="modelbench.exporter", value=words)
    onnx.save(model, path)


def export_module(module: Any, example: Any, names: List[str], out_names: List[str],
                  batched: List[str], path: str, opset: Optional[int],
                  dynamo: bool = False) -> int:
    """torch.onnx.export of module with a dynamic batch on the `batched`
    inputs and outputs; returns the opset used. Each of _export_tries is
    tried in turn; the first error is raised when all fail. The file records
    which exporter made it (_mark_exporter)."""
    import torch

    dynamic = {name: {0: "batch"} for name in batched}
    first_error: Optional[BaseException] = None
    for settings in _export_tries(opset, dynamo):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                module.eval()
                with torch.no_grad():
                    torch.onnx.export(module, tuple(example), path, input_names=names,
                                      output_names=out_names, dynamic_axes=dynamic,
                                      do_constant_folding=True, **settings)
            for w in caught:
                log.debug("torch.onnx.export: %s", w.message)
            import onnx

            used = int(next((o.version for o in onnx.load(path, load_external_data=False)
                             .opset_import if o.domain in ("", "ai.onnx")), 0))
            _mark_exporter(path, settings, used)
            return used
        except Exception as e:  # noqa: BLE001 - the exporter raises many kinds
            log.debug("torch.onnx.export %s failed: %s", settings, e)
            first_error = first_error or e
    assert first_error is not None
    raise first_error


def on_device(module: Any, example: Any, device: str) -> Tuple[Any, Any]:
    """A copy of the module and the example on `device` ("cuda"); the
    caller's module stays where it is. RuntimeError where this PyTorch sees
    no GPU."""
    import copy

    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(f"an export for {device} needs a GPU that this PyTorch "
                           f"({torch.__version__}) can use")
    return (copy.deepcopy(module).to(device),
            tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in example))


def trace_module(module: Any, example: Any, path: str, device: str = "cpu") -> None:
    """The module as TorchScript (traced on example unless it is already
    scripted), saved at path; traced on `device` ("cuda": a trace keeps the
    devices its ops were given, so one that will run on the GPU is traced
    there)."""
    import torch

    if device != "cpu":
        module, example = on_device(module, example, device)
    if not isinstance(module, torch.jit.ScriptModule):
        with torch.no_grad():
            module = torch.jit.trace(module.eval(), tuple(example), check_trace=False,
                                     strict=False)
    torch.jit.save(module, path)


def compile_aoti(module: Any, example: Any, path: str, device: str = "cpu") -> None:
    """The module exported with torch.export on `example` (eval mode, no
    gradients) and compiled ahead of time by AOTInductor into the package
    `path` (a .pt2 file that C++ loads with AOTIModelPackageLoader), for
    `device` ("cpu" or "cuda": module and example moved there first; the
    package runs only on the device it was compiled for).
    RuntimeError on a PyTorch without AOTInductor packages (before 2.6) or
    without the device, TypeError for a TorchScript module."""
    import torch

    from . import inductor

    if not hasattr(getattr(torch, "_inductor", None), "aoti_compile_and_package"):
        raise RuntimeError(f"AOTInductor packages need PyTorch 2.6 or newer; this is "
                           f"{torch.__version__}")
    if isinstance(module, torch.jit.ScriptModule):
        raise TypeError("torch.export needs an nn.Module, not a TorchScript module")
    inductor.prepare()
    if device != "cpu":
        module, example = on_device(module, example, device)
    with torch.no_grad():
        program = torch.export.export(module.eval(), tuple(example))
        torch._inductor.aoti_compile_and_package(program, package_path=path)


def cpu_fingerprint() -> str:
    """What code compiled with -march=native depends on: a short hash of
    this CPU's model and feature flags (/proc/cpuinfo), "" where unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            wanted = [line for line in f if line.startswith(("model name", "flags"))]
    except OSError:
        return ""
    return hashlib.sha256("".join(sorted(set(wanted))).encode()).hexdigest()[:12]


def _isolated(what: str, spec_path: str, example: Any, args: Dict[str, Any],
              path: str, timeout: float) -> Dict[str, Any]:
    """Runs an export (what: "onnx", "torchscript" or "aoti") in a fresh Python
    process that loads the module from its worker spec, so that an exporter
    that crashes, hangs or runs out of memory fails this export only, not the
    caller. Returns the child's answer; raises RuntimeError with why."""
    import subprocess

    import torch

    folder = os.path.dirname(path)
    job = os.path.join(folder, f"export-{what}.json")
    answer = job + ".out"
    torch.save(tuple(t.contiguous() for t in example), job + ".inputs.pt")
    with open(job, "w") as f:
        json.dump(dict(args, what=what, spec=spec_path, inputs=job + ".inputs.pt",
                       path=path, answer=answer), f)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([sys.executable, "-m", "modelbench.export_worker", job],
                              env=env, capture_output=True, text=True, errors="replace",
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout:g} s") from None
    for line in (proc.stderr or "").splitlines()[-40:]:
        log.debug("export: %s", line)
    if os.path.isfile(answer):
        with open(answer) as f:
            result = json.load(f)
        if "error" in result:
            raise RuntimeError(result["error"])
        return result
    if proc.returncode < 0:
        import signal

        try:
            sig = signal.Signals(-proc.returncode).name
        except ValueError:
            sig = f"signal {-proc.returncode}"
        raise RuntimeError(f"the exporter crashed ({sig})")
    tail = (proc.stderr or "").strip().splitlines()
    raise RuntimeError(f"the export process exited with status {proc.returncode}"
                       + (f": {tail[-1]}" if tail else ""))


def export_onnx(source: ModelSource, sha256: str, inputs: Inputs, outputs: Outputs,
                folder: str, opset: Optional[int], cache: bool,
                cache_dir: Optional[str], spec_path: Optional[str] = None,
                timeout: float = 600.0, dynamo: bool = False) -> Dict[str, str]:
    """The manifest's "onnx" entry: {"path": ...} or {"error": why}, the
    export kept in the build cache under the module's hash. With spec_path
    (the module's worker spec) the exporter runs in a process of its own.
    With `dynamo`, the "onnx_dynamo" entry: the dynamo exporter's form."""
    if source.kind == "onnx":
        if dynamo:
            return {"error": "an ONNX file was given: there is no module to export "
                             "with the dynamo exporter"}
        return {"path": source.path or ""}
    used: List[int] = []
    names = [s.name for s in inputs.specs]
    out_names = [s.name for s in outputs.specs]
    batched = [s.name for s in inputs.specs + outputs.specs if s.batched]

    def make(path: str) -> None:
        if spec_path is None:
            used.append(export_module(source.module, inputs.example, names, out_names,
                                      batched, path, opset, dynamo))
            return
        answer = _isolated("onnx", spec_path, inputs.example,
                           {"names": names, "out_names": out_names, "batched": batched,
                            "opset": opset, "dynamo": dynamo}, path, timeout)
        used.append(int(answer.get("opset", 0)))

    entry = _host_build(source, sha256, inputs, folder,
                        "ONNX_DYNAMO_EXPORT" if dynamo else "ONNX_EXPORT",
                        f"opset={opset or 'auto'};dynamic_batch=1;constant_folding=1",
                        "model.onnx", make,
                        "torch.onnx.export(dynamo=True)" if dynamo else "torch.onnx.export",
                        cache, cache_dir)
    if used:
        log.info("ONNX export: opset %d", used[0])
    return entry


def export_torchscript(source: ModelSource, sha256: str, inputs: Inputs, folder: str,
                       cache: bool, cache_dir: Optional[str],
                       spec_path: Optional[str] = None,
                       timeout: float = 600.0, device: str = "cpu") -> Dict[str, str]:
    """The manifest's "torchscript" entry for the C++ runtime (TORCHSCRIPT):
    the file given, or the module traced on the example batch on `device`
    and saved, kept in the build cache like the ONNX export (in a process of
    its own with spec_path)."""
    if source.kind == "torchscript" and source.path:
        return {"path": source.path}
    make = _maker("torchscript", trace_module, source, inputs, spec_path, timeout,
                  device=device)
    return _host_build(source, sha256, inputs, folder, "TORCHSCRIPT_EXPORT",
                       "trace=1" + (f";device={device}" if device != "cpu" else ""),
                       "model.pt", make, "torch.jit.trace", cache, cache_dir)


def _maker(what: str, here: Callable[..., None], source: ModelSource,
           inputs: Inputs, spec_path: Optional[str],
           timeout: float, **args: Any) -> Callable[[str], None]:
    """make(path) for _host_build: here(module, example, path, **args) in
    this process, or export `what` (the job carrying args) in a process of
    its own with spec_path."""

    def make(path: str) -> None:
        if spec_path is None:
            here(source.module, inputs.example, path, **args)
        else:
            _isolated(what, spec_path, inputs.example, args, path, timeout)

    return make


def gpu_fingerprint() -> str:
    """The GPUs' models as the NVIDIA driver names them
    (/proc/driver/nvidia/gpus/*/information), "" where unknown: what a CUDA
    package's kernels are compiled for. Reads files: CUDA is not
    initialised (the engine forks its workers after this)."""
    import glob

    models = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info) as f:
                models += [line.split(":", 1)[1].strip() for line in f
                           if line.startswith("Model:")]
        except OSError:
            pass
    return ",".join(models)


def export_aoti(source: ModelSource, sha256: str, inputs: Inputs, folder: str,
                cache: bool, cache_dir: Optional[str],
                spec_path: Optional[str] = None,
                timeout: float = 600.0, device: str = "cpu") -> Dict[str, Any]:
    """The manifest's "aoti" entry for EXPORT+AOT_INDUCTOR: the module's
    AOTInductor package (compile_aoti on the example batch) for `device`
    ("cpu" or "cuda"), kept in the build cache under the module's hash and
    this CPU (the package's code is compiled for it), and for CUDA the
    device and its GPU model; made in a process of its own with
    spec_path."""
    make = _maker("aoti", compile_aoti, source, inputs, spec_path, timeout, device=device)
    options = f"package=1;cpu={cpu_fingerprint()}"
    if device != "cpu":
        options += f";device={device};gpu={gpu_fingerprint()}"
    return _host_build(source, sha256, inputs, folder, "AOT_INDUCTOR", options,
                       "model.pt2", make, "torch._inductor.aoti_compile_and_package",
                       cache, cache_dir)


def export_forms(source: ModelSource, sha256: str, inputs: Inputs, outputs: Outputs,
                 folder: str, wanted: Any, opset: Optional[int], cache: bool,
                 cache_dir: Optional[str], spec_path: Optional[str] = None,
                 timeout: float = 600.0, aoti_device: str = "cpu",
                 torchscript_device: str = "cpu") -> Dict[str, Dict[str, Any]]:
    """The manifest's entries of the forms in `wanted` that the C runtimes
    run ("onnx", "onnx_dynamo", "torchscript", "aoti"), made from the module
    (in processes of their own with spec_path); the "pytorch" form is the
    caller's. aoti_device, torchscript_device: the device the AOTInductor
    package is compiled for and the module traced on (where
    EXPORT+AOT_INDUCTOR and TORCHSCRIPT will run)."""
    makers: Dict[str, Callable[[], Dict[str, Any]]] = {
        "onnx": lambda: export_onnx(source, sha256, inputs, outputs, folder, opset, cache,
                                    cache_dir, spec_path, timeout),
        "onnx_dynamo": lambda: export_onnx(source, sha256, inputs, outputs, folder, opset,
                                           cache, cache_dir, spec_path, timeout,
                                           dynamo=True),
        "torchscript": lambda: export_torchscript(source, sha256, inputs, folder, cache,
                                                  cache_dir, spec_path, timeout,
                                                  torchscript_device),
        "aoti": lambda: export_aoti(source, sha256, inputs, folder, cache, cache_dir,
                                    spec_path, timeout, aoti_device),
    }
    return {form: make() for form, make in makers.items() if form in wanted}


def _host_build(source: ModelSource, sha256: str, inputs: Inputs, folder: str,
                artifact: str, options: str, file_name: str,
                make: Callable[[str], Any], what: str, cache: bool,
                cache_dir: Optional[str]) -> Dict[str, str]:
    """Makes an artifact of the module with make(path), kept in the build
    cache under the module's hash; {"path": ..., "build_ms": ...,
    "cache_hit": ...} or {"error": why}. build_ms is 0 on a cache hit and
    cache_hit is absent without the cache."""
    import torch

    build = ctypes.c_void_p()
    if cache:
        key = _lib.MbHostBuildKey(
            source.name.encode(), sha256.encode(), signature_text(inputs.specs).encode(),
            artifact.encode(), options.encode(), b"torch", torch.__version__.encode(),
            source.script.encode() if source.script else None,
            source.model_hash.encode() if source.script and source.model_hash else None,
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
                return {"path": path, "build_ms": 0.0, "cache_hit": True}
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
            return {"path": path, "build_ms": ms, "cache_hit": False}
        return {"path": path, "build_ms": ms}
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


def make_self_contained(manifest_path: str) -> None:
    """Makes a manifest's folder the whole model, as the SSH executor copies
    it to another machine: the files it names outside that folder (the ONNX
    and TorchScript exports kept in the build cache, with any external data
    beside them: ``model.onnx.data``) are copied into ``formats/``, and every
    path is named relatively to the folder."""
    import shutil

    folder = os.path.dirname(os.path.abspath(manifest_path))
    with open(manifest_path) as f:
        manifest = json.load(f)
    changed = False
    for name, entry in (manifest.get("formats") or {}).items():
        path = entry.get("path") if isinstance(entry, dict) else None
        if not path or not os.path.isabs(path):
            continue
        if os.path.commonpath([folder, path]) == folder:  # its own: named relatively
            entry["path"] = os.path.relpath(path, folder)
            changed = True
            continue
        into = os.path.join(folder, "formats", name)
        os.makedirs(into, exist_ok=True)
        base = os.path.basename(path)
        for sibling in os.listdir(os.path.dirname(path)):
            if sibling == base or sibling.startswith(base + "."):
                shutil.copy2(os.path.join(os.path.dirname(path), sibling),
                             os.path.join(into, sibling))
        entry["path"] = os.path.join("formats", name, base)
        changed = True
    if changed:
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
