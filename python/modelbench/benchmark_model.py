"""alma's ``alma.benchmark_model``: ``from modelbench.benchmark_model import
benchmark_model``. The module itself is callable, so ``modelbench.benchmark_model``
stays the function once this module is imported."""

import sys
import types
from typing import Any

from .api import benchmark_model

__all__ = ["benchmark_model"]


class _CallableModule(types.ModuleType):
    """This module, callable as benchmark_model."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return benchmark_model(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
