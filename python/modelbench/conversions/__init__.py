"""The PyTorch conversions the Python front runs, and the names it accepts.

The C registry (``modelbench list``) is the source of truth for every
conversion's name, id, precision and tier; this table only says which Python
function performs each PyTorch-native one (rows whose runtime is ``pytorch``)
and which alma names are accepted as aliases.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, Iterable, List, Union

from .. import _lib

#: C conversion name -> the option (a module of .options) that performs it,
#: for the rows whose runtime is "pytorch". Imported when used: the engine
#: process that forks the workers must not load torch.
PYTORCH_CONVERSIONS: Dict[str, str] = {
    "EAGER": "eager",
    "JIT_TRACE": "jit_trace",
    "JIT_SCRIPT": "jit_script",
    "JIT_FREEZE": "jit_freeze",
    "CHANNELS_LAST": "channels_last",
    "BF16+EAGER": "bf16",
    "INT8_DYNAMIC+EAGER": "int8_dynamic",
    "INT8_STATIC+EAGER": "int8_static",
    "FAKE_QUANT+EAGER": "fake_quant",
}


def option(name: str) -> ModuleType:
    """The option module performing PyTorch conversion `name`."""
    if name not in PYTORCH_CONVERSIONS:
        raise ValueError(f"the Python front does not implement {name}")
    return importlib.import_module(f"{__name__}.options.{PYTORCH_CONVERSIONS[name]}")


#: alma's names -> ours (the table in docs/pytorch.md).
ALIASES: Dict[str, str] = {
    "ONNX_CPU": "ORT_CPU",
    "ONNX+DYNAMIC_QUANTIZATION": "INT8_DYNAMIC+ORT_CPU",
    "ONNX+STATIC_QUANTIZATION": "INT8_STATIC+ORT_CPU",
    "TORCH_SCRIPT": "JIT_SCRIPT",
    "NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED": "INT8_STATIC+EAGER",
    "NATIVE_FAKE_QUANTIZED_AI8WI8_STATIC": "FAKE_QUANT+EAGER",
    "EAGER_BF16": "BF16+EAGER",
}


def canonical_name(name_or_id: Union[str, int]) -> str:
    """The registry's name of a conversion given by name, id or alma alias.

    Raises TypeError for a value that is neither, ValueError naming an unknown
    entry with the registry's suggestions ("did you mean ...").
    """
    if isinstance(name_or_id, bool) or not isinstance(name_or_id, (str, int)):
        raise TypeError(
            f"a conversion is a name or an id, got {type(name_or_id).__name__} "
            f"{name_or_id!r}"
        )
    text = str(name_or_id).strip()
    text = ALIASES.get(text.upper(), text)
    index = _lib.conversion_find(text)
    return str(_lib.conversion_info(index)["name"])


def resolve(conversions: Iterable[Union[str, int]]) -> List[str]:
    """Registry names of a list of names, ids and aliases, in order. A
    duplicate is a ValueError naming it."""
    names: List[str] = []
    for entry in conversions:
        name = canonical_name(entry)
        if name in names:
            raise ValueError(f"conversion {name} is listed twice")
        names.append(name)
    return names


def list_conversions() -> List[dict]:
    """Every row of the registry with its availability here."""
    return [_lib.conversion_info(i) for i in range(_lib.lib.mb_conversion_count())]
