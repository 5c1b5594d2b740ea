"""alma's ``lazyload``: a class whose instances are built on first use.

``@lazyload`` on a model class makes ``Net()`` return a :class:`LazyLoader`:
nothing is built until ``load()``, an attribute or a call needs it. Passed to
``benchmark_model`` it is built once, as a factory would be.
"""

from __future__ import annotations

from typing import Any, Callable, Type

__all__ = ["LazyLoader", "lazyload"]


class LazyLoader:
    """cls(*args, **kwargs), built the first time it is needed."""

    def __init__(self, cls: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self._cls = cls
        self._args = args
        self._kwargs = kwargs
        self._instance: Any = None
        self._loaded = False

    def load(self) -> Any:
        """The object, built now if it was not yet."""
        if not self._loaded:
            self._instance = self._cls(*self._args, **self._kwargs)
            self._loaded = True
        return self._instance

    def is_loaded(self) -> bool:
        """Has the object been built?"""
        return self._loaded

    def unload(self) -> None:
        """Drops the object (built again on the next use)."""
        self._instance = None
        self._loaded = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)


def lazyload(cls: Type[Any]) -> Callable[..., LazyLoader]:
    """Decorates a class: calling it returns a LazyLoader of the instance."""

    def make(*args: Any, **kwargs: Any) -> LazyLoader:
        return LazyLoader(cls, *args, **kwargs)

    make.__name__ = cls.__name__
    make.__qualname__ = cls.__qualname__
    make.__doc__ = cls.__doc__
    return make
