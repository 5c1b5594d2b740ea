"""modelbench's exceptions: ``Error`` is the base of every one the package
raises for the caller, so ``except modelbench.Error`` catches them all.

Each also keeps the builtin base it had before there was an ``Error`` (a bad
config value is still a ValueError, a missing library still an ImportError),
so code written against those (and alma's) keeps working. The classes that
belong to one module stay there (``LibraryNotFound`` in ``_lib``,
``NotBenchmarkable`` in ``capture``, ``ConversionError`` in ``results``,
``CatalogError`` in ``conversions.catalog``) and derive from ``Error``.

This module imports nothing of the package: ``_lib`` needs it before the
C library is loaded.
"""

from __future__ import annotations


class Error(Exception):
    """The base of every exception modelbench raises for the caller."""


class ConfigError(Error, ValueError):
    """A bad argument or a refused run: a config key or value, a conversion
    name, data, a scenario or sweep setting, an executor option, or a command
    line the engine refused. The message names the key or value at fault."""


class ConfigTypeError(Error, TypeError):
    """An argument of the wrong type (a config value, data, a model, a
    conversion); the message names it and the type it must be."""


class EngineError(Error, RuntimeError):
    """The C engine could not do what it was asked: it wrote no report, a
    conversion could not be prepared or run in this process, or the library
    does not match this package."""
