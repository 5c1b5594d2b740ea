"""The PyTorch conversions, read from their files: one file per conversion.

Each file of ``options/`` (except ``base.py``) is one conversion. It says
what it is in a module-level ``CONVERSION = Conversion(...)`` whose
arguments are literals, and what it does in ``convert(model, ctx)``::

    CONVERSION = Conversion(
        id=61,
        name="JIT_TRACE",
        description="torch.jit.trace on the first sample",
    )

The rows are read from the source (``ast``), without importing the option,
so neither the engine process nor the build needs torch to list them. The
C registry's PyTorch rows are generated from them when libmodelbench is
built (``python3 catalog.py --c-rows OUT OPTIONS_DIR``, run by CMake), so a
new file is a new row of ``modelbench list`` after ``make build``.

Only the standard library is used here: the build runs this file with
whatever python3 it finds.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import dataclass, fields
from typing import Dict, List, Optional, Sequence, Tuple

try:
    from ..errors import Error as _PackageError
except ImportError:  # run as a script by the build: no package around it

    class _PackageError(Exception):  # type: ignore[no-redef]
        """modelbench.Error's stand-in outside the package."""

#: The names of the C library's MB_DEVICE_LIST and MB_PRECISION_LIST
#: (tests/test_conversions_catalog.py checks them against libmodelbench).
DEVICES = ("cpu", "cuda", "auto")
PRECISIONS = ("fp32", "fp16", "bf16", "int8")

#: Ids the registry keeps for PyTorch conversions (src/conversions/registry.c).
ID_RANGES = ((60, 99), (200, 399))

_VERSION = re.compile(r"\d+(\.\d+)*\Z")
_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:[_+][A-Z0-9]+)*\Z")
_OPTIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "options")
_NOT_OPTIONS = {"__init__.py", "base.py"}


class CatalogError(_PackageError, ValueError):
    """A conversion file whose CONVERSION is missing or wrong; the message
    names the file and the key at fault."""


@dataclass(frozen=True)
class Conversion:
    """What a PyTorch conversion is, as ``modelbench list`` shows it.

    ``id`` is stable and never reused (ID_RANGES); ``name`` is alma's
    UPPER_CASE name; ``precision`` and ``device`` are names of the C
    library's lists; ``tier`` 1 is the quick check, 2 the core deployment
    options, 3 everything else; ``default`` puts the conversion in the
    default set of a PyTorch model (EAGER, the baseline, only); ``alma``
    is alma's name of the same technique, which the Python front accepts
    for it (checked against alma's list in alma.py). ``torch`` is the
    oldest PyTorch that has what it uses ("2.0"), ``packages`` the Python
    packages it imports besides torch (import names): where either is
    missing, ``modelbench list`` shows the conversion unavailable and why.
    ``devices`` are the devices it can run on (``device`` among them): the
    run's device picks one (``--device cuda``; ``auto`` takes the GPU where
    the conversion can use it).
    """

    id: int
    name: str
    description: str
    precision: str = "fp32"
    device: str = "cpu"
    tier: int = 3
    default: bool = False
    alma: str = ""
    torch: str = ""
    packages: Tuple[str, ...] = ()
    devices: Tuple[str, ...] = ("cpu",)

    def __post_init__(self) -> None:
        problem = _check(self)
        if problem:
            raise CatalogError(f"conversion {self.name!r}: {problem}")


@dataclass(frozen=True)
class Entry:
    """One conversion file: its row and the module (``options.<module>``)."""

    conversion: Conversion
    module: str
    path: str


def _check(c: Conversion) -> Optional[str]:
    if not isinstance(c.id, int) or isinstance(c.id, bool) or not any(
        lo <= c.id <= hi for lo, hi in ID_RANGES
    ):
        ranges = ", ".join(f"{lo}-{hi}" for lo, hi in ID_RANGES)
        return f"id {c.id!r} is not in the PyTorch ranges ({ranges})"
    if not isinstance(c.name, str) or not _NAME.match(c.name):
        return f"name {c.name!r} is not UPPER_CASE words joined by '_' or '+'"
    if not isinstance(c.description, str) or not c.description.strip():
        return "description is empty"
    if c.precision not in PRECISIONS:
        return f"precision {c.precision!r} is not one of {', '.join(PRECISIONS)}"
    if c.device not in DEVICES:
        return f"device {c.device!r} is not one of {', '.join(DEVICES)}"
    if (
        not isinstance(c.devices, tuple)
        or not c.devices
        or any(d not in DEVICES or d == "auto" for d in c.devices)
        or len(set(c.devices)) != len(c.devices)
    ):
        return f"devices {c.devices!r} is not a tuple of distinct devices among cpu, cuda"
    if c.device not in c.devices:
        return f"device {c.device!r} is not one of its devices {c.devices!r}"
    if c.tier not in (1, 2, 3) or isinstance(c.tier, bool):
        return f"tier {c.tier!r} is not 1, 2 or 3"
    if not isinstance(c.default, bool):
        return f"default {c.default!r} is not True or False"
    if not isinstance(c.alma, str):
        return f"alma {c.alma!r} is not a string"
    if not isinstance(c.torch, str) or (c.torch and not _VERSION.match(c.torch)):
        return f"torch {c.torch!r} is not a version such as \"2.0\""
    if not isinstance(c.packages, tuple) or not all(
        isinstance(p, str) and _PACKAGE.match(p) for p in c.packages
    ):
        return f"packages {c.packages!r} is not a tuple of import names"
    return None


def version_tuple(text: str) -> Tuple[int, ...]:
    """(2, 15, 0) of "2.15.0+cu132"; (1, 13, 0) of "1.13.0a0"."""
    parts = []
    for part in re.split(r"[.+]", text):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        parts.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(parts)


def installed(package: str) -> bool:
    """Can this Python import `package` (found without importing it)?"""
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def unavailable_reason(c: Conversion, torch_version: str) -> Optional[str]:
    """Why `c` cannot run with this PyTorch (`torch_version`) and these
    packages, or None when it can. Imports nothing (torch neither)."""
    needs = []
    if c.torch and version_tuple(torch_version) < version_tuple(c.torch):
        needs.append(f"PyTorch {c.torch} or later (this is {torch_version})")
    for package in c.packages:
        if not installed(package):
            needs.append(f"the Python package {package} (not installed)")
    # Whether a GPU is here is the engine's to say (NVML, per device: list's
    # devices), never torch.cuda's: it would initialise CUDA in the process
    # that forks the workers.
    return "needs " + " and ".join(needs) if needs else None


def read_file(path: str) -> Conversion:
    """The CONVERSION of one conversion file, read without importing it;
    CatalogError naming the file and the key at fault."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise CatalogError(f"{path}: {exc}") from None
    calls = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "CONVERSION" for t in node.targets)
    ]
    if len(calls) != 1:
        raise CatalogError(
            f"{path}: a conversion file assigns CONVERSION = Conversion(...) once "
            f"at module level (found {len(calls)})"
        )
    call = calls[0]
    if (
        not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Name)
        or call.func.id != "Conversion"
        or call.args
    ):
        raise CatalogError(f"{path}: CONVERSION must be Conversion(key=value, ...)")
    known = {f.name for f in fields(Conversion)}
    values: Dict[str, object] = {}
    for keyword in call.keywords:
        if keyword.arg not in known:
            raise CatalogError(
                f"{path}: Conversion has no key {keyword.arg!r} "
                f"(keys: {', '.join(sorted(known))})"
            )
        try:
            values[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise CatalogError(
                f"{path}: Conversion key {keyword.arg!r} must be a literal"
            ) from None
    missing = [k for k in ("id", "name", "description") if k not in values]
    if missing:
        raise CatalogError(f"{path}: Conversion needs {', '.join(missing)}")
    try:
        return Conversion(**values)  # type: ignore[arg-type]
    except CatalogError as exc:
        raise CatalogError(f"{path}: {exc}") from None


def read(folder: str = _OPTIONS_DIR) -> List[Entry]:
    """Every conversion file of `folder`, by id; CatalogError for a file
    without a valid CONVERSION or two files with one id or name."""
    entries: List[Entry] = []
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".py") or file in _NOT_OPTIONS or file.startswith("_"):
            continue
        path = os.path.join(folder, file)
        entries.append(Entry(read_file(path), file[:-3], path))
    for i, a in enumerate(entries):
        for b in entries[:i]:
            for key in ("id", "name"):
                if getattr(a.conversion, key) == getattr(b.conversion, key):
                    raise CatalogError(
                        f"{a.path} and {b.path} both have {key} "
                        f"{getattr(a.conversion, key)!r}"
                    )
    return sorted(entries, key=lambda e: e.conversion.id)


def _c_string(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\' or byte < 0x20 or byte >= 0x7F or ch == "?":
            out.append(f"\\{byte:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def c_rows(entries: Sequence[Entry]) -> str:
    """The C registry's rows of these conversions: designated initialisers
    of mb_conversion_def, included inside registry.c's table."""
    lines = [
        "/* Generated from the files of python/modelbench/conversions/options",
        " * by catalog.py when libmodelbench is built: edit those, not this. */",
    ]
    for e in entries:
        c = e.conversion
        lines += [
            f"    /* options/{e.module}.py */",
            "    {",
            f"        .id = {c.id},",
            f"        .name = {_c_string(c.name)},",
            '        .runtime = "pytorch",',
            f"        .device = MB_DEVICE_{c.device.upper()},",
            f"        .precision = MB_PRECISION_{c.precision.upper()},",
            "        .opt_level = MB_GRAPH_OPT_DISABLED,",
            f"        .in_default_set = {int(c.default)},",
            f"        .description = {_c_string(c.description)},",
            f"        .tier = {c.tier},",
            "        .format = MB_MODEL_FORMAT_PYTORCH,",
            "        .devices = "
            + " | ".join(f"(1u << MB_DEVICE_{d.upper()})" for d in c.devices)
            + ",",
            "    },",
        ]
    return "\n".join(lines) + "\n"


def _write_c_rows(out: str, folder: str) -> int:
    try:
        text = c_rows(read(folder))
    except CatalogError as exc:
        print(f"catalog.py: {exc}", file=sys.stderr)
        return 1
    tmp = f"{out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "--c-rows":
        print("usage: catalog.py --c-rows OUT.inc OPTIONS_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(_write_c_rows(sys.argv[2], sys.argv[3]))
