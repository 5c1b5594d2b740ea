"""alma's ``alma.utils.multiprocessing``: lazyload."""

from .lazyload import LazyLoader, lazyload

__all__ = ["LazyLoader", "lazyload"]
