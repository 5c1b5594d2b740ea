"""Inductor's C++ builds, made to link the PyTorch that runs them.

Inductor (torch.compile's default backend, AOTInductor, PT2E int8) compiles
C++ and links it with ``-ltorch -ltorch_cpu`` after ``-L`` of the Python
library folder (sysconfig's ``LIBDIR``) and only then of torch's own
``lib``. With Debian's python3 that folder is ``/usr/lib/x86_64-linux-gnu``,
and where Debian's ``libtorch-dev`` is installed beside a PyTorch from PyPI
(modelbench's own test machines have both) the linker takes Debian's
libtorch 1.13. Two things then go wrong, silently:

- Inductor's check of the CPU's vector instructions (a small library built
  and loaded once per ISA) fails to load, so every kernel it generates is
  scalar (``AOTI_CPU_ISA=INVALID_VEC_ISA``): LayerNorm, GELU and Softmax on
  a 1x2048x1024 tensor under torch.compile took 57 ms instead of 5-9 ms on
  an AVX-512 Xeon (convolution- and GEMM-bound models, which Inductor hands
  to oneDNN, barely change);
- an AOTInductor package's library is linked against no libtorch at all
  and cannot be loaded (``undefined symbol: aoti_torch_dtype_float32``).

``prepare()`` drops that folder from Inductor's link paths when it holds a
libtorch that is not the running torch's (Inductor's builds on Linux link no
libpython: the interpreter provides it), and, unless the user chose one with
``TORCHINDUCTOR_CACHE_DIR``, points Inductor's cache at modelbench's cache
folder, away from libraries a build without the fix left in
``/tmp/torchinductor_$USER`` (Inductor reuses its ISA check's library by
name). Call it before anything compiles; it is idempotent.
"""

from __future__ import annotations

import glob
import logging
import os
import sys
import sysconfig
from typing import List, Optional

log = logging.getLogger("modelbench")

_prepared = False


def foreign_libtorch(libdir: Optional[str], torch_lib: str) -> List[str]:
    """The libtorch files in `libdir` that are not the running torch's (in
    `torch_lib`): what the linker would take before torch's own."""
    if not libdir or not os.path.isdir(libdir):
        return []
    mine = {os.path.realpath(p) for p in glob.glob(os.path.join(torch_lib, "libtorch*.so*"))}
    return sorted(
        path for path in glob.glob(os.path.join(libdir, "libtorch*.so"))
        if os.path.realpath(path) not in mine
    )


def cache_folder() -> str:
    """Inductor's cache under modelbench's cache folder
    ($MODELBENCH_CACHE_DIR or ~/.cache/modelbench), one per torch version."""
    import torch

    from .api import shared_run_parent

    version = torch.__version__.split("+")[0]
    return os.path.join(shared_run_parent(None, "inductor"), f"torch-{version}")


def prepare() -> None:
    """Makes Inductor's C++ builds in this process link the running torch
    (see the module's docstring). Does nothing on a PyTorch without
    Inductor."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    import importlib.util

    import torch

    if importlib.util.find_spec("torch._inductor") is None:  # PyTorch 1.x
        return
    # Before Inductor is imported: importing it fixes its cache folder.
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_folder()
    try:
        import torch._inductor.cpp_builder as builder
    except ImportError:
        return
    if not sys.platform.startswith("linux"):
        return
    python_args = getattr(builder, "_get_python_related_args", None)
    libdir = sysconfig.get_config_var("LIBDIR")
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    foreign = foreign_libtorch(libdir, torch_lib)
    if python_args is None or not foreign:
        return

    def without_libdir():
        includes, lib_dirs = python_args()
        return includes, [d for d in lib_dirs if d != libdir]

    builder._get_python_related_args = without_libdir
    log.info("Inductor: %s left out of its link paths (it holds %s, not torch %s's)",
             libdir, os.path.basename(foreign[0]), torch.__version__)
