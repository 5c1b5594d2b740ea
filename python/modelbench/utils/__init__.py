"""alma's ``alma.utils`` helpers: save_dict_to_json, setup_logging,
load_model, multiprocessing.lazyload."""

from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping

__all__ = ["save_dict_to_json"]


def _plain(value: Any) -> Any:
    """value as JSON holds it: dicts, lists, numbers, strings; torch devices,
    dtypes, paths and tensors as text or lists; NaN and infinities as null."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return str(value)


def save_dict_to_json(data: Mapping[str, Any], file_path: str) -> None:
    """Writes a results dict (benchmark_model's, or any dict) as JSON at
    file_path, creating its folder; values JSON cannot hold become text."""
    folder = os.path.dirname(os.path.abspath(file_path))
    os.makedirs(folder, exist_ok=True)
    with open(file_path, "w") as f:
        json.dump(_plain(data), f, indent=2)
