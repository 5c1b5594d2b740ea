"""The PyTorch conversions the Python front runs, and the names it accepts.

A PyTorch conversion is one file of ``options/``: its ``CONVERSION`` row
(name, id, precision, tier, device, description) and its ``convert``
function (``catalog.py`` says how). The C registry's PyTorch rows are
generated from those files when libmodelbench is built, so ``modelbench
list`` and this front agree; this module maps each name to its file and
says which alma names are accepted as aliases.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Dict, Iterable, List, Optional, Union

from .. import _lib
from ..errors import ConfigError, ConfigTypeError, EngineError
from . import alma, catalog

#: C conversion name -> the option (a module of .options) that performs it:
#: one file per conversion, read without importing it (the engine process
#: that forks the workers need not load torch).
_ENTRIES = catalog.read()
PYTORCH_CONVERSIONS: Dict[str, str] = {e.conversion.name: e.module for e in _ENTRIES}


def entry(name: str) -> Optional[catalog.Entry]:
    """The file of PyTorch conversion `name`, or None."""
    for e in _ENTRIES:
        if e.conversion.name == name:
            return e
    return None


def check_library() -> None:
    """RuntimeError when the loaded libmodelbench's PyTorch rows are not
    the files of options/ (a file added or changed since it was built),
    naming the conversion and what differs."""
    rows = {}
    for index in range(_lib.lib.mb_conversion_count()):
        row = _lib.conversion_info(index)
        rows[row["id"]] = row
    built = {r["name"] for r in rows.values() if r["runtime"] == "pytorch"}
    problems = []
    for e in _ENTRIES:
        c = e.conversion
        row = rows.get(c.id)
        if row is None or row["name"] != c.name:
            problems.append(f"{c.name} (id {c.id}, options/{e.module}.py) is missing")
            continue
        built.discard(c.name)
        want = {"runtime": "pytorch", "precision": c.precision, "device": c.device,
                "tier": c.tier, "default": c.default, "description": c.description}
        for key, value in want.items():
            # A row unavailable here may be moved to tier 3 (emulated).
            if key == "tier" and row["tier"] >= value:
                continue
            if row[key] != value:
                problems.append(f"{c.name}'s {key} is {row[key]!r}, "
                                f"options/{e.module}.py says {value!r}")
    problems += [f"{name} has no file in options/" for name in sorted(built)]
    if problems:
        raise EngineError(
            f"{getattr(_lib.lib, '_name', 'libmodelbench')}: its PyTorch conversions do not match "
            f"python/modelbench/conversions/options ({'; '.join(problems)}); "
            "rebuild it (make build) after adding or changing a conversion file"
        )


def option(name: str) -> ModuleType:
    """The option module performing PyTorch conversion `name`."""
    if name not in PYTORCH_CONVERSIONS:
        raise ConfigError(
            f"the Python front does not implement {name} (its conversions are "
            f"the files of {os.path.dirname(catalog.__file__)}/options)"
        )
    return importlib.import_module(f"{__name__}.options.{PYTORCH_CONVERSIONS[name]}")


#: alma's names -> ours (the table in docs/pytorch.md): every alma option
#: modelbench runs (conversions.alma.RUNS_AS) and older alma spellings.
ALIASES: Dict[str, str] = {
    "ONNX+DYNAMIC_QUANTIZATION": "INT8_DYNAMIC+ORT_CPU",
    "ONNX+STATIC_QUANTIZATION": "INT8_STATIC+ORT_CPU",
    "EAGER_BF16": "BF16+EAGER",
}
ALIASES.update({k: v for k, v in alma.RUNS_AS.items() if k != v})


@dataclass
class Selected:
    """One entry of a conversions list: ``key`` is the name the user gave
    (alma's mode for an alma id), ``name`` the registry's conversion that runs
    it, or None with ``reason`` when modelbench has no such conversion."""

    key: str
    name: Optional[str]
    reason: Optional[str] = None


def _registry_name(text: str) -> str:
    index = _lib.conversion_find(text)
    return str(_lib.conversion_info(index)["name"])


def select_one(entry: Union[str, int, Any]) -> Selected:
    """What one entry of a conversions list means.

    Names are modelbench's (``modelbench list``) or alma's; an integer, or a
    string of digits, is alma's id (0-71); ``"mb:N"`` is modelbench's id N;
    an object with a ``mode`` (alma's ConversionOption) is that mode. An
    alma option modelbench does not run is a Selected without a name, with
    the reason. TypeError for a value that is none of these, ValueError
    naming an unknown entry with the registry's suggestions.
    """
    mode_attr = getattr(entry, "mode", None)
    if isinstance(mode_attr, str):
        entry = mode_attr
    if isinstance(entry, bool) or not isinstance(entry, (str, int)):
        raise ConfigTypeError(
            f"a conversion is a name, an alma id or 'mb:ID', got {type(entry).__name__} "
            f"{entry!r}"
        )
    text = str(entry).strip()
    if isinstance(entry, int) or text.isdigit():
        number = int(text)
        if number not in alma.MODEL_CONVERSION_OPTIONS:
            raise ConfigError(
                f"conversion id {number}: alma's ids are 0-{len(alma.ALMA_MODES) - 1} "
                "(modelbench's own ids are written 'mb:N', see modelbench list)"
            )
        text = alma.ALMA_MODES[number]
    elif text.lower().startswith("mb:"):
        name = _registry_name(text[3:].strip())
        return Selected(name, name)
    mode = alma.mode_of(text)
    if mode is not None:
        ours = ALIASES.get(mode.upper(), mode)
        if mode in alma.RUNS_AS:
            return Selected(mode, _registry_name(ours))
        return Selected(mode, None, alma.unavailable_reason(mode))
    name = _registry_name(ALIASES.get(text.upper(), text))
    return Selected(text, name)


def canonical_name(name_or_id: Union[str, int]) -> str:
    """The registry's name of a conversion given by name, id or alma alias;
    ValueError when modelbench has no such conversion (with alma's reason)."""
    chosen = select_one(name_or_id)
    if chosen.name is None:
        raise ConfigError(chosen.reason)
    return chosen.name


def select(conversions: Iterable[Union[str, int, Any]]) -> List[Selected]:
    """Every entry of a conversions list, in order. Two entries that run the
    same conversion are a ValueError naming both."""
    chosen: List[Selected] = []
    for entry in conversions:
        one = select_one(entry)
        for other in chosen:
            if other.key == one.key or (one.name and other.name == one.name):
                same = "" if other.key == one.key else f" (as {other.key})"
                raise ConfigError(f"conversion {one.key} is listed twice{same}")
        chosen.append(one)
    return chosen


def resolve(conversions: Iterable[Union[str, int, Any]]) -> List[str]:
    """Registry names of a list of names, ids and aliases, in order; an alma
    option modelbench does not run is a ValueError with its reason."""
    names = []
    for one in select(conversions):
        if one.name is None:
            raise ConfigError(one.reason)
        names.append(one.name)
    return names


def list_conversions() -> List[dict]:
    """Every row of the registry with its availability here (the PyTorch
    rows through this front's host runtime, as ``python3 -m modelbench list``
    shows them)."""
    from .. import host

    host.install()
    return [_lib.conversion_info(i) for i in range(_lib.lib.mb_conversion_count())]
