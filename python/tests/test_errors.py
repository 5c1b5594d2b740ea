"""modelbench.Error: the base of every exception the package raises, each
keeping the builtin base callers (and alma's users) catch."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import torch

import modelbench
from modelbench import (BenchmarkConfig, ConfigError, ConfigTypeError, Error, benchmark_model,
                        benchmark_sweep)

PACKAGE = Path(modelbench.__file__).resolve().parent

#: Exception classes that are not errors: ScriptStopped stops a script that
#: ran past its timeout and derives from BaseException on purpose, so that
#: the script's own ``except Exception`` cannot swallow it.
NOT_ERRORS = {"modelbench.discover.ScriptStopped"}


def _exception_classes():
    """(module, class name) of every class the package's sources define whose
    bases name an exception (read with ast: nncf_quantize.py, a script, is
    not imported)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    ast.unparse(b).endswith(("Error", "Exception")) for b in node.bases):
                module = ".".join(("modelbench",) + path.relative_to(PACKAGE).with_suffix("").parts)
                found.append((module.replace(".__init__", ""), node.name))
    return found


def test_every_exception_class_is_a_modelbench_error():
    classes = _exception_classes()
    names = {f"{m}.{c}" for m, c in classes}
    # The search finds the ones known to exist, so it can fail.
    for known in ("modelbench._lib.LibraryNotFound", "modelbench.capture.NotBenchmarkable",
                  "modelbench.results.ConversionError", "modelbench.errors.ConfigError",
                  "modelbench.conversions.catalog.CatalogError"):
        assert known in names, names
    for module, name in classes:
        cls = getattr(importlib.import_module(module), name)
        if f"{module}.{name}" in NOT_ERRORS or not issubclass(cls, BaseException):
            continue
        assert issubclass(cls, Error), f"{module}.{name} is not a modelbench.Error"


@pytest.mark.parametrize("cls, builtin", [
    ("modelbench._lib.LibraryNotFound", ImportError),
    ("modelbench.capture.NotBenchmarkable", ValueError),
    ("modelbench.results.ConversionError", RuntimeError),
    ("modelbench.conversions.catalog.CatalogError", ValueError),
    ("modelbench.errors.ConfigError", ValueError),
    ("modelbench.errors.ConfigTypeError", TypeError),
    ("modelbench.errors.EngineError", RuntimeError),
])
def test_each_keeps_its_builtin_base(cls, builtin):
    module, _, name = cls.rpartition(".")
    found = getattr(importlib.import_module(module), name)
    assert issubclass(found, Error) and issubclass(found, builtin)


def test_type_errors_are_not_value_errors():
    # `except ValueError` in callers' code must not start catching type errors.
    assert not issubclass(ConfigTypeError, ValueError)
    assert not issubclass(ConfigError, TypeError)


def test_bad_config_is_a_config_error_naming_the_key():
    with pytest.raises(ConfigError, match="'threads'") as bad_value:
        BenchmarkConfig.from_any({"threads": 0})
    assert isinstance(bad_value.value, ValueError)
    with pytest.raises(ConfigTypeError, match="'threads'") as bad_type:
        BenchmarkConfig.from_any({"threads": "2"})
    assert isinstance(bad_type.value, TypeError)
    with pytest.raises(Error, match="unknown config key 'thread'"):
        BenchmarkConfig.from_any({"thread": 2})


def test_unknown_conversion_and_bad_data_are_config_errors():
    with pytest.raises(ConfigError):
        modelbench.conversions.resolve(["NOT_A_CONVERSION"])
    with pytest.raises(ConfigTypeError, match="a conversion is a name"):
        modelbench.conversions.resolve([1.5])
    with pytest.raises(ConfigError, match="give data or data_loader, not both"):
        benchmark_model(torch.nn.Identity(), {}, ["EAGER"], data=torch.ones(1),
                        data_loader=[torch.ones(1, 1)])
    with pytest.raises(ConfigError, match="level must be one of"):
        modelbench.setup_logging(level="LOUD")


def test_a_refused_run_is_a_config_error(monkeypatch, cache_dir):
    """The engine's usage error (exit status 2) comes back as a ConfigError,
    a modelbench.Error and a ValueError, as before."""
    from modelbench import api

    monkeypatch.setattr(api._engine, "run", lambda argv, in_process: 2)
    with pytest.raises(ConfigError, match="refused the run") as refused:
        benchmark_model(torch.nn.Linear(3, 2), {"record": False}, ["EAGER"],
                        data=torch.ones(3))
    assert isinstance(refused.value, ValueError) and isinstance(refused.value, Error)


def test_an_empty_sweep_is_refused_before_any_run():
    with pytest.raises(ConfigTypeError, match="benchmark_sweep needs a sweep"):
        benchmark_sweep(torch.nn.Identity(), {}, None)  # type: ignore[arg-type]
