"""ctypes bindings of libmodelbench: the few C entry points the Python front uses.

The C library does the work (measurement, statistics, accuracy, reports, the
build cache, the results database); this module only finds the library, mirrors
the public structs it exchanges with Python and declares the prototypes.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int64,
    c_size_t,
    c_uint,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import List, Optional

from .errors import ConfigError, Error

MB_MAX_RANK = 8
MB_ERROR_MESSAGE_SIZE = 512

# mb_status values (include/modelbench.h, MB_STATUS_LIST order).
STATUS_OK = 0
STATUS_INVALID_ARGUMENT = 1
STATUS_UNSUPPORTED = 4
STATUS_SHAPE = 5
STATUS_OUT_OF_MEMORY = 7
STATUS_NOT_FOUND = 9
STATUS_UNAVAILABLE = 10
STATUS_INTERNAL = 12


class MbTensor(Structure):
    """Mirror of ``mb_tensor``."""

    _fields_ = [
        ("dtype", c_int),
        ("rank", c_int),
        ("dims", c_int64 * MB_MAX_RANK),
        ("numel", c_int64),
        ("nbytes", c_size_t),
        ("data", c_void_p),
        ("capacity", c_size_t),
        ("name", c_char_p),
    ]


class MbError(Structure):
    """Mirror of ``mb_error``."""

    _fields_ = [("status", c_int), ("message", c_char * MB_ERROR_MESSAGE_SIZE)]


class MbHostPrepareArgs(Structure):
    """Mirror of ``mb_host_prepare_args``."""

    _fields_ = [
        ("conversion", c_char_p),
        ("model_path", c_char_p),
        ("threads", c_int),
        ("precision", c_int),
        ("device", c_int),
        ("verbose", c_int),
        ("seed", c_uint64),
        ("n_inputs", c_int),
        ("n_outputs", c_int),
        ("example_inputs", c_void_p),
        ("n_calibration", c_int),
        ("calibration", c_void_p),
        ("build_dir", c_char_p),
        ("build_hit", c_int),
        ("trust_code", c_int),
    ]


PROBE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p)
PREPARE_FN = CFUNCTYPE(
    c_int, c_void_p, POINTER(MbHostPrepareArgs), POINTER(c_void_p), POINTER(MbError)
)
RUN_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, POINTER(MbError))
FETCH_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_int, c_void_p, POINTER(MbError))
RELEASE_FN = CFUNCTYPE(None, c_void_p, c_void_p)
SUPPORTS_FN = CFUNCTYPE(c_int, c_void_p, c_char_p, c_void_p)
RECOMPILES_FN = CFUNCTYPE(c_int, c_void_p, c_void_p)


class MbHostGpu(Structure):
    """Mirror of ``mb_host_gpu``."""

    _fields_ = [
        ("index", c_int),
        ("name", c_char * 96),
        ("cuda_runtime", c_char * 16),
        ("compute_capability", c_char * 8),
        ("memory_peak_mb", c_double),
    ]


DEVICES_FN = CFUNCTYPE(c_uint, c_void_p, c_void_p)
GPU_DESCRIBE_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(MbHostGpu))
GPU_COMPUTE_MS_FN = CFUNCTYPE(c_double, c_void_p, c_void_p)
GPU_COPIES_FN = CFUNCTYPE(
    c_int, c_void_p, c_void_p, c_void_p, c_int, POINTER(c_double), POINTER(c_double),
    POINTER(c_double), POINTER(MbError)
)


class MbHostRuntime(Structure):
    """Mirror of ``mb_host_runtime``."""

    _fields_ = [
        ("user", c_void_p),
        ("probe", PROBE_FN),
        ("prepare", PREPARE_FN),
        ("run", RUN_FN),
        ("fetch_outputs", FETCH_FN),
        ("release", RELEASE_FN),
        ("supports", SUPPORTS_FN),
        ("recompiles", RECOMPILES_FN),
        ("devices", DEVICES_FN),
        ("gpu_describe", GPU_DESCRIBE_FN),
        ("gpu_compute_ms", GPU_COMPUTE_MS_FN),
        ("gpu_copies", GPU_COPIES_FN),
    ]


class MbConversionInfo(Structure):
    """Mirror of ``mb_conversion_info``."""

    _fields_ = [
        ("id", c_int),
        ("name", c_char_p),
        ("runtime", c_char_p),
        ("device", c_int),
        ("precision", c_int),
        ("description", c_char_p),
        ("in_default_set", c_int),
        ("tier", c_int),
        ("available", c_int),
        ("reason", c_char * 256),
        ("format", c_int),
        ("int8_weights", c_int),
        ("devices", c_uint),
        ("devices_here", c_uint),
        ("devices_reason", c_char * 256),
    ]


class MbHostBuildKey(Structure):
    """Mirror of ``mb_host_build_key``."""

    _fields_ = [
        ("model_name", c_char_p),
        ("model_sha256", c_char_p),
        ("inputs", c_char_p),
        ("artifact", c_char_p),
        ("options", c_char_p),
        ("tool", c_char_p),
        ("tool_version", c_char_p),
        ("source_script", c_char_p),
        ("source_hash", c_char_p),
    ]


def _candidates() -> List[Path]:
    """Where libmodelbench may be, most specific first."""
    found: List[Path] = []
    env = os.environ.get("MODELBENCH_LIBRARY")
    if env:
        found.append(Path(env))
    here = Path(__file__).resolve().parent
    # The source tree: python/modelbench -> <root>/build/lib.
    found.append(here.parent.parent / "build" / "lib" / "libmodelbench.so")
    try:  # written by `make install`
        from ._paths import LIBDIR  # type: ignore[import-not-found]

        found.append(Path(LIBDIR) / "libmodelbench.so")
    except ImportError:
        pass
    for libdir in ("/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu"):
        found.append(Path(libdir) / "libmodelbench.so")
    return found


class LibraryNotFound(Error, ImportError):
    """libmodelbench.so could not be found or loaded."""


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if path.exists():
            try:
                return ctypes.CDLL(str(path))
            except OSError as e:
                tried.append(f"{path} ({e})")
        else:
            tried.append(str(path))
    raise LibraryNotFound(
        "modelbench: cannot find libmodelbench.so; build it with `make` (the package "
        "looks in build/lib beside python/), install it with `make install`, or set "
        "MODELBENCH_LIBRARY to its path. Tried: " + ", ".join(tried)
    )


def _package_library(package: str, folder: str, pattern: str) -> Optional[str]:
    """The first file matching `pattern` in `folder` of the Python package
    `package` this Python would import, found without importing it; None
    without the package or the file."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    where = Path(spec.origin).parent / folder
    found = sorted(where.glob(pattern)) if where.is_dir() else []
    return str(found[0]) if found else None


# The C library's libtorch adapter (TORCHSCRIPT) stays unloaded, with its
# reason, when this front's torch is another build: two libtorch builds in one
# process (or in a worker forked after a probe) abort. The one this front's
# torch uses is in its torch/lib (a PyPI wheel's own copy; Debian's
# python3-torch has a link there to the system libtorch, the one the
# TORCHSCRIPT module links). Inherited by the engine process the front
# starts.
_torch_lib = _package_library("torch", "lib", "libtorch_cpu.so*")
if _torch_lib:
    os.environ["MODELBENCH_HOST_TORCH_LIB"] = _torch_lib

# One OpenVINO per process: where this Python has the openvino package
# (COMPILE_OPENVINO uses it), the C library's OpenVINO adapter loads the
# package's copy. Two copies of one release cannot both load (their
# libraries share names): the first would win, and openvino.torch, finding
# no PyTorch frontend beside the C API's copy (fetch-openvino.sh takes only
# the ONNX and IR ones), would fall back to Inductor without a word.
# MODELBENCH_OPENVINO_LIB set by the user wins. Inherited by the engine's
# processes.
_ov_lib = None if os.environ.get("MODELBENCH_OPENVINO_LIB") else _package_library(
    "openvino", "libs", "libopenvino_c.so.*")
if _ov_lib:
    os.environ["MODELBENCH_OPENVINO_LIB"] = _ov_lib

lib = _load()


def _declare(name: str, restype, *argtypes) -> None:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_declare("mb_struct_size", c_size_t, c_char_p)
_declare("mb_status_string", c_char_p, c_int)
_declare("mb_tensor_create", c_int, c_int, c_int, POINTER(c_int64), POINTER(c_void_p), c_void_p)
_declare("mb_tensor_free", None, c_void_p)
_declare("mb_conversion_count", c_int)
_declare("mb_conversion_find", c_int, c_char_p, POINTER(c_int), POINTER(MbError))
_declare("mb_conversion_get", c_int, c_int, POINTER(MbConversionInfo), POINTER(MbError))
_declare("mb_precision_name", c_char_p, c_int)
_declare("mb_device_name", c_char_p, c_int)
_declare("mb_int8_weights_name", c_char_p, c_int)
_declare("mb_model_format_name", c_char_p, c_int)
_declare("mb_host_runtime_set", c_int, c_char_p, POINTER(MbHostRuntime), POINTER(MbError))
_declare("mb_host_set_error_detail", None, c_char_p)
_declare("mb_host_build_open", c_int, c_char_p, POINTER(MbHostBuildKey), c_int,
         POINTER(c_void_p), POINTER(MbError))
_declare("mb_host_build_hit", c_int, c_void_p)
_declare("mb_host_build_folder", c_char_p, c_void_p)
_declare("mb_host_build_id", c_char_p, c_void_p)
_declare("mb_host_build_finish", c_int, c_void_p, c_char_p, c_char_p, c_double,
         POINTER(MbError))
_declare("mb_host_build_close", None, c_void_p)
_declare("mb_cli_main", c_int, c_int, POINTER(c_char_p))
_declare("mb_model_file_formats", c_int, c_char_p, POINTER(c_uint), POINTER(MbError))
_declare("mb_runner_create", c_int, c_char_p, c_char_p, c_int, c_int, c_void_p,
         POINTER(c_void_p), POINTER(MbError))
_declare("mb_runner_output_count", c_int, c_void_p)
_declare("mb_runner_run", c_int, c_void_p, c_int, c_void_p, c_int, c_void_p, POINTER(MbError))
_declare("mb_runner_free", None, c_void_p)

# The mirrors above must match the library actually loaded.
for _struct, _mirror in (
    ("mb_tensor", MbTensor),
    ("mb_error", MbError),
    ("mb_host_prepare_args", MbHostPrepareArgs),
    ("mb_host_runtime", MbHostRuntime),
    ("mb_host_build_key", MbHostBuildKey),
    ("mb_conversion_info", MbConversionInfo),
    ("mb_host_gpu", MbHostGpu),
):
    _size = lib.mb_struct_size(_struct.encode())
    if _size != ctypes.sizeof(_mirror):
        raise LibraryNotFound(
            f"modelbench: {_struct} is {_size} bytes in the loaded libmodelbench but "
            f"{ctypes.sizeof(_mirror)} in the Python package: they come from different "
            "versions; rebuild or reinstall both"
        )


def error_message(err: MbError) -> str:
    """The message of a failed call, or its status text when empty."""
    text = err.message.decode("utf-8", "replace")
    return text or lib.mb_status_string(err.status).decode()


def conversion_find(name_or_id: str) -> int:
    """The registry index of a conversion name or id; ConfigError (a
    ValueError) with the registry's message (and its suggestions) when
    unknown."""
    err = MbError()
    index = c_int()
    if lib.mb_conversion_find(name_or_id.encode(), ctypes.byref(index), ctypes.byref(err)):
        raise ConfigError(error_message(err))
    return index.value


def conversion_info(index: int) -> dict:
    """Row `index` of the registry, as ``modelbench list --json`` shows it."""
    info = MbConversionInfo()
    err = MbError()
    if lib.mb_conversion_get(index, ctypes.byref(info), ctypes.byref(err)):
        raise ConfigError(error_message(err))
    return {
        "id": info.id,
        "name": info.name.decode(),
        "runtime": info.runtime.decode(),
        "format": lib.mb_model_format_name(info.format).decode(),
        "device": lib.mb_device_name(info.device).decode(),
        "precision": lib.mb_precision_name(info.precision).decode(),
        "description": info.description.decode(),
        "default": bool(info.in_default_set),
        "tier": info.tier,
        "available": bool(info.available),
        "reason": info.reason.decode("utf-8", "replace"),
        "int8_weights": lib.mb_int8_weights_name(info.int8_weights).decode()
        if info.int8_weights else None,
        # The devices it can run on, and whether each is usable here.
        "devices": [{"device": lib.mb_device_name(d).decode(),
                     "here": bool(info.devices_here >> d & 1)}
                    for d in range(32) if info.devices >> d & 1],
        "devices_reason": info.devices_reason.decode("utf-8", "replace") or None,
    }


def cli_main(argv: List[str]) -> int:
    """Runs the modelbench CLI in this process (``mb_cli_main``)."""
    args = (c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    return int(lib.mb_cli_main(len(argv), args))
