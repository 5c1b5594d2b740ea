"""Seeded random configs against the engine (Hypothesis is not packaged in
Debian, so a seeded generator stands in for it).

BenchmarkConfig is the Python front's only check before a run: every config it
accepts must give a `modelbench bench` command line that the C engine accepts
as well, else the user learns of a bad value from a worker's usage error
instead of a ValueError naming the key. The engine runs in this process on a
model that does not exist: its options are parsed, then the model is missing
(exit status 1); an option it refuses is a usage error (exit status 2).
"""

from __future__ import annotations

import math
import random
import typing

import pytest

from modelbench import BenchmarkConfig, _lib
from modelbench._engine import bench_argv

EXIT_USAGE = 2

# Values where the two sides' ranges tend to part: both ends of C's int,
# int64_t and double, zero, and the Python-only ones (inf, nan, huge ints).
_INTS = [0, 1, 2, 7, 1023, 1024, 1025, 2**20, 2**20 + 1, 2**30, 2**31 - 1, 2**31,
         2**63 - 1, 2**63, 2**64, -1]
_FLOATS = [0.0, 1e-300, 5e-324, 0.5, 1.0, 300.0, 1e308, 2**70, float("inf"),
           float("nan"), -0.0, -1.0]
_STRINGS = {"device": ["cpu", "auto", "cuda"],
            "log_level": ["error", "warn", "info", "debug"]}


def _random_value(rng: random.Random, name: str, hint: typing.Any) -> typing.Any:
    args = getattr(hint, "__args__", None)
    if args and type(None) in args:
        if rng.random() < 0.3:
            return None
        hint = next(a for a in args if a is not type(None))
    if hint is bool:
        return rng.random() < 0.5
    if hint is int:
        return rng.choice(_INTS) if rng.random() < 0.7 else rng.randint(0, 100)
    if hint is float:
        return rng.choice(_FLOATS + _INTS) if rng.random() < 0.7 else rng.uniform(0, 100)
    if hint is str:
        return rng.choice(_STRINGS.get(name, ["x", "out/report"]))
    if getattr(hint, "__origin__", None) is dict:
        return rng.choice([{}, {"team": "a"}, {"k": "v", "run": "2"}])
    raise AssertionError(f"no generator for {name}: {hint}")


def _random_config(rng: random.Random) -> dict:
    hints = typing.get_type_hints(BenchmarkConfig)
    names = sorted(hints)
    return {name: _random_value(rng, name, hints[name])
            for name in rng.sample(names, rng.randint(1, 8))}


def test_accepted_configs_are_accepted_by_the_engine(tmp_path, capfd):
    rng = random.Random(18)
    accepted = refused = 0
    for _ in range(400):
        raw = _random_config(rng)
        try:
            cfg = BenchmarkConfig.from_any(raw)
        except (TypeError, ValueError) as e:
            # Refused: the message names a key of the config.
            assert any(repr(k) in str(e) for k in raw), (raw, e)
            refused += 1
            continue
        accepted += 1
        argv = bench_argv(cfg, [str(tmp_path / "missing.onnx")], ["REFERENCE"],
                          json_path=str(tmp_path / "r.json"), labels=cfg.labels, device="cpu",
                          in_process=True)
        rc = _lib.cli_main(argv)
        err = capfd.readouterr().err
        assert rc != EXIT_USAGE, f"BenchmarkConfig accepted {raw}, the engine refused: {err}"
        assert "missing.onnx" in err, (raw, err)
    # Both kinds occur, so the test tests something either way.
    assert accepted >= 50 and refused >= 50, (accepted, refused)


@pytest.mark.parametrize("key, value", [
    ("threads", 1025), ("n_samples", 2**20 + 1), ("seed", 2**63),
    ("min_iterations", 2**31), ("warmup", 2**31), ("batch_size", 2**31),
    ("max_time", float("inf")), ("timeout", float("nan")), ("rtol", float("nan")),
    ("calibration_samples", 2**31),
])
def test_engine_limits_are_config_errors(key, value):
    with pytest.raises(ValueError, match=repr(key)):
        BenchmarkConfig.from_any({key: value})


def test_generator_is_seeded():
    assert _random_config(random.Random(3)) == _random_config(random.Random(3)) or all(
        isinstance(v, float) and math.isnan(v)
        for v in _random_config(random.Random(3)).values())
