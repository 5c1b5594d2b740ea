"""The "pytorch" host runtime: PyTorch conversions run by the C engine.

``install()`` hands the C library (``mb_host_runtime_set``) five callbacks. A
benchmark worker (a child process the engine forks per conversion) then calls
``prepare`` (load the module named by the manifest's pytorch spec, convert it
with the option of ``modelbench.conversions``), ``run`` inside the engine's
timed loop, ``fetch_outputs`` for the accuracy check and ``release``. Timing,
statistics, accuracy and reports stay in C.

torch is imported only inside a worker's ``prepare``: the engine process that
forks the workers never runs a PyTorch operator, so the forked children start
with a clean OpenMP state (GNU OpenMP does not survive fork() after use).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import itertools
import json
import logging
import os
import pickle
import sys
import traceback
from ctypes import c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import _lib
from ._tensors import batch_view, flatten_outputs, import_torch, new_mb_tensor, plain_output
from .errors import ConfigError, EngineError

if TYPE_CHECKING:  # torch is imported where a worker needs it, not here
    import torch

log = logging.getLogger("modelbench.host")

#: Models handed over in this process (multiprocessing=False): spec "live".
_live_models: Dict[str, Any] = {}
_sessions: Dict[int, "Session"] = {}
_ids = itertools.count(1)
_installed: Optional[_lib.MbHostRuntime] = None
_interop_set = False


def _mark_interop_set() -> None:
    global _interop_set
    _interop_set = True


# ---------------------------------------------------------------------------
# Loading the module a manifest's pytorch spec names
# ---------------------------------------------------------------------------


def _load_own_pickle(torch: Any, file: Optional[str]) -> Any:
    """torch.load of a module pickled by this front (PyTorch 2.6 and later
    load weights only unless told otherwise; 1.13 has no such default)."""
    try:
        return torch.load(file, map_location="cpu", weights_only=False)
    except TypeError:  # a PyTorch without weights_only
        return torch.load(file, map_location="cpu")


#: The keys of a pytorch spec (model.write_pytorch_spec writes them); any
#: other (a "main" script to run, say) is refused, not ignored.
SPEC_KEYS = ("kind", "file", "sys_path", "seed", "id")
#: The kinds whose file is a pickle: loading it runs code the file names.
CODE_KINDS = ("module", "factory")
#: What the user says to let a model's code run, for the messages.
TRUST_FLAG = "--trust-code (benchmark_model: config key trust_code=True)"


class UntrustedCode(ConfigError):
    """A model file or manifest would run code, and the user did not say
    to trust it (bench's --trust-code, config key trust_code)."""


def _is_pickle_file(path: str) -> bool:
    """A torch.save file (a zip, or a bare pickle) rather than a JSON spec:
    what `bench MODEL.pt --trust-code` hands over for a pickled module."""
    with open(path, "rb") as f:
        head = f.read(2)
    return head == b"PK" or (len(head) == 2 and head[0] == 0x80)


def _refuse(what: str) -> UntrustedCode:
    return UntrustedCode(
        f"{what}, which runs code when loaded: give {TRUST_FLAG} if you trust it "
        "(modelbench runs a model's code only when told to); better, save the model "
        "with torch.jit.save or export it to ONNX")


def load_model(spec_path: str, trust_code: bool = False) -> "torch.nn.Module":
    """The module (or TorchScript module) a pytorch spec file names.

    A spec of kind module or factory is a pickle, and sys_path entries choose
    what its classes import: both are code, loaded only with `trust_code`
    (UntrustedCode otherwise, before anything is unpickled or sys.path
    changes). TorchScript and a live module (this process's own) need none.
    `spec_path` may also be a torch.save file itself (bench MODEL.pt
    --trust-code), which is code too.
    """
    torch = import_torch()
    if _is_pickle_file(spec_path):
        if not trust_code:
            raise _refuse(f"{spec_path} is a pickled PyTorch model (torch.save)")
        model = _load_own_pickle(torch, spec_path)
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"{spec_path} holds a {type(model).__name__}, not an nn.Module")
        return model
    with open(spec_path) as f:
        spec = json.load(f)
    if not isinstance(spec, dict):
        raise ValueError(f"{spec_path}: a pytorch spec is a JSON object")
    unknown = [k for k in spec if k not in SPEC_KEYS]
    if unknown:
        raise ValueError(f"{spec_path}: unknown key {unknown[0]!r} in the pytorch spec "
                         f"(known: {', '.join(SPEC_KEYS)})")
    kind = spec.get("kind")
    sys_path = spec.get("sys_path") or []
    if not trust_code and kind in CODE_KINDS:
        raise _refuse(f"{spec_path}: the model's pytorch form is a pickled {kind}")
    if not trust_code and sys_path and kind != "live":
        raise _refuse(f"{spec_path}: the model's pytorch form adds sys_path entries "
                      "(folders whose code it imports)")
    if kind != "live":
        for entry in reversed(sys_path):
            if entry not in sys.path:
                sys.path.insert(0, entry)
    folder = os.path.dirname(os.path.abspath(spec_path))
    file = os.path.join(folder, spec["file"]) if spec.get("file") else None
    if kind == "live":
        if spec["id"] not in _live_models:
            raise RuntimeError(
                "the model was handed over in another process (multiprocessing=False "
                "runs everything in the calling process)"
            )
        return _live_models[spec["id"]]
    if kind == "module":
        # Trusted: the front wrote it from the user's own in-memory object
        # (and passes --trust-code), or the user said to trust the file.
        return _load_own_pickle(torch, file)
    if kind == "factory":
        with open(file, "rb") as f:
            factory = pickle.load(f)
        torch.manual_seed(int(spec.get("seed", 0)))
        model = factory()
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"the model factory returned a {type(model).__name__}, not an nn.Module"
            )
        return model
    if kind == "torchscript":
        return torch.jit.load(file, map_location="cpu")
    raise ValueError(f"{spec_path}: unknown kind {kind!r}")


# ---------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------


#: The C library's mb_device values (MB_DEVICE_LIST).
DEVICE_CPU, DEVICE_CUDA = 0, 1


class GpuClock:
    """A session's device side on CUDA: each call between two CUDA events
    on the current stream and a synchronisation, the inputs kept on the
    device, and the copies timed apart (bench's gpu result)."""

    def __init__(self, device: "torch.device") -> None:
        torch = import_torch()
        self.torch = torch
        self.device = device
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.timed = False

    def to_device(self, args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        """A sample's inputs copied to the device (once per sample)."""
        return tuple(a.to(self.device) if hasattr(a, "to") else a for a in args)

    def call(self, fn: Any, args: Tuple[Any, ...]) -> Any:
        """fn(*args) between the events; returns when the device is done."""
        self.start.record()
        out = fn(*args)
        self.end.record()
        self.torch.cuda.synchronize(self.device)
        self.timed = True
        return out

    def compute_ms(self) -> float:
        """The device time of the last call, in ms; -1 before any."""
        return float(self.start.elapsed_time(self.end)) if self.timed else -1.0

    def copies(self, host_inputs: Tuple[Any, ...], outputs: List[Any], n: int
               ) -> Tuple[List[float], List[float], float, float]:
        """n timed copies of the inputs to the device (from pinned host memory,
        as a serving loop that pins its buffers does) and of the outputs back
        into pinned buffers; the MB of one copy each way."""
        torch = self.torch
        src = [t.contiguous().pin_memory() for t in host_inputs if isinstance(t, torch.Tensor)]
        dst = [torch.empty_like(t, device=self.device) for t in src]
        outs = [t for t in outputs if isinstance(t, torch.Tensor) and t.is_cuda]
        back = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in outs]
        h2d, d2h = [], []
        for _ in range(n):
            self.start.record()
            for d, h in zip(dst, src):
                d.copy_(h, non_blocking=True)
            self.end.record()
            self.end.synchronize()
            h2d.append(float(self.start.elapsed_time(self.end)))
            self.start.record()
            for h, d in zip(back, outs):
                h.copy_(d, non_blocking=True)
            self.end.record()
            self.end.synchronize()
            d2h.append(float(self.start.elapsed_time(self.end)))
        mib = float(1 << 20)
        return (h2d, d2h, sum(t.numel() * t.element_size() for t in src) / mib,
                sum(t.numel() * t.element_size() for t in back) / mib)

    def describe(self) -> Dict[str, Any]:
        """Which device, the CUDA this PyTorch was built with, the peak memory
        this process allocated on it (MiB)."""
        torch = self.torch
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return {
            "index": index,
            "name": torch.cuda.get_device_name(index),
            "cuda_runtime": torch.version.cuda or "",
            "compute_capability": f"{major}.{minor}",
            "memory_peak_mb": torch.cuda.max_memory_allocated(index) / float(1 << 20),
        }


class Session:
    """One prepared conversion: the callable, its per-sample inputs and the
    last outputs."""

    def __init__(self, converted: Any, n_inputs: int, n_outputs: int,
                 gpu: Optional[GpuClock] = None) -> None:
        torch = import_torch()
        self.gpu = gpu
        self.fn = converted.fn
        self.prepare_inputs = converted.prepare_inputs
        self.call_context = converted.call_context
        self.recompiles = converted.recompiles
        self.n_inputs = n_inputs
        self.n_outputs = n_outputs
        self.inputs: Dict[int, Tuple[Any, ...]] = {}
        self.last: Any = None
        # Inference mode for the session's whole life, entered once, as an
        # inference loop would (`with torch.inference_mode(): for ...`).
        self.guard = torch.inference_mode()
        self.guard.__enter__()
        # Inference mode is per thread: a load run (modelbench load) calls run()
        # from threads of its own, each of which enters it once, kept here.
        self.thread_guards: List[Any] = []
        self.inference_mode_enabled = torch.is_inference_mode_enabled

    def run(self, address: int) -> None:
        """One inference on the sample whose inputs are at `address` (the
        engine passes each sample at the same address every time)."""
        if not self.inference_mode_enabled():
            guard = import_torch().inference_mode()
            guard.__enter__()
            self.thread_guards.append(guard)
        args = self.inputs.get(address)
        if args is None:
            args = batch_view(address, self.n_inputs)
            if self.gpu is not None:
                args = self.gpu.to_device(args)
            if self.prepare_inputs is not None:
                args = self.prepare_inputs(args)
            self.inputs[address] = args
        if self.gpu is not None:
            if self.call_context is None:
                self.last = self.gpu.call(self.fn, args)
            else:
                with self.call_context():
                    self.last = self.gpu.call(self.fn, args)
        elif self.call_context is None:
            self.last = self.fn(*args)
        else:
            with self.call_context():
                self.last = self.fn(*args)

    def fetch(self, n_outputs: int, outputs_address: int) -> None:
        """Copies the last outputs into new mb_tensors in the C array."""
        flat = flatten_outputs(self.last)
        if len(flat) != n_outputs:
            raise ValueError(
                f"the module returned {len(flat)} tensors but the model declares "
                f"{n_outputs} outputs"
            )
        slots = (c_void_p * n_outputs).from_address(outputs_address)
        for i, t in enumerate(flat):
            t = plain_output(t)
            out = new_mb_tensor(t)
            if out is None:
                raise MemoryError(f"cannot allocate output {i} ({tuple(t.shape)})")
            slots[i] = out

    def gpu_copies(self, address: int, n: int) -> Tuple[List[float], List[float], float, float]:
        """The copies of the sample at `address` and of the last outputs,
        timed n times each way (GpuClock.copies)."""
        if self.gpu is None:
            raise RuntimeError("the session runs on the CPU: it has no copies to time")
        return self.gpu.copies(batch_view(address, self.n_inputs), flatten_outputs(self.last), n)

    def close(self) -> None:
        """Leaves inference mode and drops the converted module."""
        self.guard.__exit__(None, None, None)
        self.inputs.clear()
        self.fn = self.last = None


def prepare_session(args: _lib.MbHostPrepareArgs) -> Session:
    """Loads and converts the model for one conversion (the worker's load
    phase: its time is the result's load_ms)."""
    torch = import_torch()
    from .conversions import option as conversion_option
    from .conversions.options.base import ConvertContext

    conversion = args.conversion.decode()
    option = conversion_option(conversion)
    gpu = None
    if args.device == DEVICE_CUDA:
        # The engine placed the conversion on the GPU: CUDA's device 0 of
        # those visible (CUDA_VISIBLE_DEVICES picks which).
        if not torch.cuda.is_available():
            raise RuntimeError(
                "the conversion was placed on cuda but torch.cuda.is_available() is False "
                f"(PyTorch {torch.__version__}, built with CUDA {torch.version.cuda})")
        gpu = GpuClock(torch.device("cuda", 0))
        torch.cuda.set_device(gpu.device)
    torch.set_num_threads(max(args.threads, 1))
    if os.environ.get("MODELBENCH_WORKER") and not _interop_set:
        # A worker forked by the engine: no parallel work has run yet, so
        # the inter-op pool can still be sized (torch aborts the process if
        # it is set after that, as in a user's process).
        torch.set_num_interop_threads(1)
        _mark_interop_set()
    torch.manual_seed(args.seed)
    example = batch_view(args.example_inputs, args.n_inputs)
    calibration = []
    if args.n_calibration > 0:
        batches = (c_void_p * args.n_calibration).from_address(args.calibration)
        calibration = [batch_view(b, args.n_inputs) for b in batches]
    model_path = args.model_path.decode()
    trust = bool(args.trust_code)

    def load() -> Any:
        model = load_model(model_path, trust)
        # On a GPU the module moves there before it is converted, so that
        # tracing, export and compilation see the device it will run on.
        return model.to(gpu.device) if gpu is not None else model

    if gpu is not None:
        example = gpu.to_device(example)
        calibration = [gpu.to_device(b) for b in calibration]
    ctx = ConvertContext(
        example_inputs=example,
        calibration=calibration,
        threads=args.threads,
        seed=args.seed,
        log=log,
        load_model=load,
        device=str(gpu.device.type) if gpu is not None else "cpu",
    )
    # The build cache: an option that can keep what it builds (save/load)
    # loads it on a hit and saves it on a miss; the others convert.
    build_dir = (args.build_dir or b"").decode()
    # A cached build that is a pickle (int8 eager modules) is code too:
    # without trust it is converted again rather than loaded.
    loads_code = getattr(getattr(option, "load", None), "runs_code", False)
    if build_dir and args.build_hit and hasattr(option, "load") and (trust or not loads_code):
        try:
            return Session(option.load(build_dir, ctx), args.n_inputs, args.n_outputs, gpu)
        except Exception as e:  # noqa: BLE001 - a bad artifact is built again
            log.warning("%s: cannot load the cached build (%s: %s); converting again",
                        conversion, type(e).__name__, e)
    converted = option.convert(load(), ctx)
    if build_dir and not args.build_hit and hasattr(option, "save"):
        option.save(converted, build_dir)
    return Session(converted, args.n_inputs, args.n_outputs, gpu)


# ---------------------------------------------------------------------------
# The callbacks
# ---------------------------------------------------------------------------


def _fail(err_p, exc: BaseException, status: int = _lib.STATUS_INTERNAL) -> int:
    """Reports an exception to the engine: one line in err, the traceback as
    the result's detail."""
    line = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    err = err_p.contents
    err.status = status
    err.message = line.encode("utf-8", "replace")[: _lib.MB_ERROR_MESSAGE_SIZE - 1]
    detail = traceback.format_exc()
    _lib.lib.mb_host_set_error_detail(detail.encode("utf-8", "replace"))
    # The worker's log keeps it too.
    sys.stderr.write(detail)
    sys.stderr.flush()
    return status


def _probe(user, version, reason) -> int:
    try:
        text = importlib.metadata.version("torch")
        ctypes.memmove(version, text.encode()[:255] + b"\0", min(len(text), 255) + 1)
        return 1
    except Exception:  # noqa: BLE001 - any failure means "not usable"
        why = b"PyTorch is not installed (apt install python3-torch)"
        ctypes.memmove(reason, why + b"\0", len(why) + 1)
        return 0


def _supports(user, conversion, reason) -> int:
    try:
        from .conversions import entry

        found = entry(conversion.decode())
        why = None
        if found is not None:
            from .conversions.catalog import unavailable_reason

            why = unavailable_reason(found.conversion, importlib.metadata.version("torch"))
    except Exception as exc:  # noqa: BLE001 - a broken check must say why
        why = f"cannot tell whether it runs here: {type(exc).__name__}: {exc}"
    if why is None:
        return 1
    text = why.encode("utf-8", "replace")[:255]
    ctypes.memmove(reason, text + b"\0", len(text) + 1)
    return 0


def _prepare(user, args_p, session_out, err_p) -> int:
    try:
        session = prepare_session(args_p.contents)
        sid = next(_ids)
        _sessions[sid] = session
        session_out[0] = sid
        return _lib.STATUS_OK
    except BaseException as e:  # noqa: BLE001 - every failure is the conversion's
        return _fail(err_p, e, _lib.STATUS_UNSUPPORTED)


def _run(user, session, inputs, err_p) -> int:
    try:
        _sessions[session].run(inputs)
        return _lib.STATUS_OK
    except BaseException as e:  # noqa: BLE001
        return _fail(err_p, e)


def _fetch(user, session, n_outputs, outputs, err_p) -> int:
    try:
        _sessions[session].fetch(n_outputs, outputs)
        return _lib.STATUS_OK
    except BaseException as e:  # noqa: BLE001
        return _fail(err_p, e)


def _recompiles(user, session) -> int:
    s = _sessions.get(session)
    if s is None or s.recompiles is None:
        return -1
    try:
        return int(s.recompiles())
    except Exception:  # noqa: BLE001 - unknown, not a failure of the run
        traceback.print_exc()
        return -1


def _cuda_built() -> Optional[str]:
    """The CUDA this PyTorch was built with ("13.0"), None for a CPU-only
    build, read from torch/version.py without importing torch (nor touching
    a device: the engine forks after asking)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        try:
            with open(os.path.join(folder, "version.py"), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition("=")
            if name.split(":")[0].strip() == "cuda":
                value = value.strip().strip("'\"")
                return None if value in ("", "None") else value
    return None


_devices_cache: Optional[Tuple[int, str]] = None


def _devices(user, reason) -> int:
    global _devices_cache
    try:
        if _devices_cache is None:
            cuda = _cuda_built()
            if cuda:
                _devices_cache = ((1 << DEVICE_CPU) | (1 << DEVICE_CUDA), "")
            else:
                version = importlib.metadata.version("torch")
                _devices_cache = (1 << DEVICE_CPU,
                                  f"this PyTorch ({version}) is built without CUDA")
        mask, why = _devices_cache
    except Exception as exc:  # noqa: BLE001 - a broken check must say why
        mask, why = 1 << DEVICE_CPU, f"cannot tell whether PyTorch has CUDA: {exc}"
    text = why.encode("utf-8", "replace")[:255]
    ctypes.memmove(reason, text + b"\0", len(text) + 1)
    return mask


def _gpu_describe(user, session, out) -> int:
    s = _sessions.get(session)
    if s is None or s.gpu is None:
        return 0
    try:
        d = s.gpu.describe()
        g = out.contents
        g.index = int(d["index"])
        g.name = d["name"].encode("utf-8", "replace")[:95]
        g.cuda_runtime = d["cuda_runtime"].encode()[:15]
        g.compute_capability = d["compute_capability"].encode()[:7]
        g.memory_peak_mb = float(d["memory_peak_mb"])
        return 1
    except Exception:  # noqa: BLE001 - the result then lacks its GPU side
        traceback.print_exc()
        return 0


def _gpu_compute_ms(user, session) -> float:
    s = _sessions.get(session)
    if s is None or s.gpu is None:
        return -1.0
    try:
        return s.gpu.compute_ms()
    except Exception:  # noqa: BLE001 - unknown, not a failure of the run
        return -1.0


def _gpu_copies(user, session, inputs, n, h2d, d2h, mb, err_p) -> int:
    try:
        up, down, mb_up, mb_down = _sessions[session].gpu_copies(inputs, n)
        for i in range(n):
            h2d[i] = up[i]
            d2h[i] = down[i]
        mb[0] = mb_up
        mb[1] = mb_down
        return _lib.STATUS_OK
    except BaseException as e:  # noqa: BLE001
        return _fail(err_p, e)


def _release(user, session) -> None:
    s = _sessions.pop(session, None)
    if s is not None:
        try:
            s.close()
        except BaseException:  # noqa: BLE001 - nothing left to report to
            traceback.print_exc()


def install() -> None:
    """Installs the pytorch host runtime in this process (idempotent)."""
    global _installed
    if _installed is not None:
        return
    rt = _lib.MbHostRuntime(
        None,
        _lib.PROBE_FN(_probe),
        _lib.PREPARE_FN(_prepare),
        _lib.RUN_FN(_run),
        _lib.FETCH_FN(_fetch),
        _lib.RELEASE_FN(_release),
        _lib.SUPPORTS_FN(_supports),
        _lib.RECOMPILES_FN(_recompiles),
        _lib.DEVICES_FN(_devices),
        _lib.GPU_DESCRIBE_FN(_gpu_describe),
        _lib.GPU_COMPUTE_MS_FN(_gpu_compute_ms),
        _lib.GPU_COPIES_FN(_gpu_copies),
    )
    err = _lib.MbError()
    if _lib.lib.mb_host_runtime_set(b"pytorch", ctypes.byref(rt), ctypes.byref(err)):
        raise EngineError(_lib.error_message(err))
    _installed = rt  # the callbacks must outlive every call from C
    from .conversions import check_library

    check_library()


#: The commands whose workers run PyTorch conversions (forked from this
#: process): bench and load, and profile's per-node runs.
_FORKING_COMMANDS = ("bench", "load")


def preload(command: List[str]) -> None:
    """Imports torch before a command that forks the engine's workers, so
    that each worker inherits it instead of importing it again (about a
    second per PyTorch conversion, which load_ms would count). Importing
    runs no operator: no OpenMP region has run when the workers are
    forked, which is what fork-safety needs (docs/pytorch.md)."""
    if command and command[0] in _FORKING_COMMANDS and os.environ.get(
            "MODELBENCH_NO_TORCH_PRELOAD") != "1":
        try:
            import_torch()
        except ImportError:
            pass  # the PyTorch conversions say why they are unavailable


def hand_over(key: str, model: Any) -> None:
    """Keeps a live model for a run in this process (multiprocessing=False)."""
    _live_models[key] = model


def take_back(key: str) -> None:
    """Forgets a live model handed over with hand_over."""
    _live_models.pop(key, None)
