"""BenchmarkConfig and conversion names: every mistake names the key or entry."""

from __future__ import annotations

import random

import pytest

import modelbench
from modelbench import BenchmarkConfig
from modelbench.conversions import canonical_name, resolve


def test_defaults_and_dict():
    cfg = BenchmarkConfig.from_any({"batch_size": 8, "threads": 2})
    assert cfg.batch_size == 8 and cfg.threads == 2
    assert cfg.fail_on_error is True and cfg.multiprocessing is True
    assert BenchmarkConfig.from_any(None) == BenchmarkConfig()
    assert BenchmarkConfig.from_any(cfg) is cfg


def test_unknown_key_suggests():
    with pytest.raises(ValueError, match=r"unknown config key 'batchsize' \(did you mean 'batch_size'\?\)"):
        BenchmarkConfig.from_any({"batchsize": 8})
    with pytest.raises(ValueError, match="unknown config key 'zzz'"):
        BenchmarkConfig.from_any({"zzz": 1})


@pytest.mark.parametrize(
    "key, value, error, text",
    [
        ("batch_size", "8", TypeError, "'batch_size' must be int, got str"),
        ("batch_size", True, TypeError, "'batch_size' must be int"),
        ("min_time", "1", TypeError, "'min_time' must be float"),
        ("fail_on_error", 1, TypeError, "'fail_on_error' must be bool"),
        ("batch_size", 0, ValueError, "'batch_size' must be >= 1"),
        ("timeout", 0, ValueError, "'timeout' must be > 0"),
        ("device", "tpu", ValueError, "'device' must be one of cpu, cuda, cuda:N, mps, auto"),
        ("opset", 99, ValueError, "'opset' must be between 7 and 17"),
        ("labels", {"a=b": "c"}, ValueError, "'labels'"),
        ("cache_dir", 3, TypeError, "'cache_dir' must be str"),
        ("int8_weights", 6, ValueError, "'int8_weights' must be 7, 8, 'mixed' or None"),
    ],
)
def test_bad_values_name_the_key(key, value, error, text):
    with pytest.raises(error, match=text):
        BenchmarkConfig.from_any({key: value})


def test_config_must_be_a_mapping():
    with pytest.raises(TypeError, match="config must be a dict or a BenchmarkConfig"):
        BenchmarkConfig.from_any([("batch_size", 1)])


def test_seeded_random_configs():
    """A seeded generator of configs (Hypothesis is not packaged in Debian):
    every config either validates or raises TypeError/ValueError naming a key,
    never anything else."""
    rng = random.Random(12)
    fields = list(BenchmarkConfig.__dataclass_fields__)
    values = [0, 1, -1, 2.5, -0.5, "", "cpu", "x", None, True, False, {}, {"a": "b"}, [1], 10**9]
    for _ in range(500):
        config = {rng.choice(fields + ["nope", "batchsize"]): rng.choice(values)
                  for _ in range(rng.randint(1, 4))}
        try:
            BenchmarkConfig.from_any(config)
        except (TypeError, ValueError) as e:
            assert any(repr(k) in str(e) or k in str(e) for k in config), (config, e)


def test_conversion_names_ids_and_aliases():
    assert canonical_name("eager") == "EAGER"
    assert canonical_name(0) == "EAGER"  # alma's ids
    assert canonical_name("32") == "JIT_SCRIPT"
    assert canonical_name("mb:60") == "EAGER"  # modelbench's
    with pytest.raises(ValueError, match="alma's FP16\\+EXPORT\\+COMPILE_CUDAGRAPHS is not"):
        canonical_name(60)
    assert canonical_name("ONNX_CPU") == "ORT_CPU"
    assert canonical_name("TORCH_SCRIPT") == "JIT_SCRIPT"
    assert canonical_name("NATIVE_CONVERT_AI8WI8_STATIC_QUANTIZED") == "INT8_STATIC+EAGER"
    assert canonical_name("NATIVE_FAKE_QUANTIZED_AI8WI8_STATIC") == "FAKE_QUANT+EAGER"
    assert resolve(["EAGER", 2, "jit_trace"]) == ["EAGER", "ORT_CPU", "JIT_TRACE"]


def test_unknown_conversion_did_you_mean():
    with pytest.raises(ValueError, match="unknown conversion 'EAGRE'; did you mean EAGER"):
        canonical_name("EAGRE")
    with pytest.raises(ValueError, match="conversion id 9999: alma's ids are 0-71"):
        canonical_name(9999)
    with pytest.raises(ValueError, match="unknown conversion id 9999"):
        canonical_name("mb:9999")
    with pytest.raises(ValueError, match="JIT_TRACE is listed twice"):
        resolve(["JIT_TRACE", "jit_trace"])
    with pytest.raises(TypeError, match="a conversion is a name, an alma id or 'mb:ID'"):
        canonical_name(1.5)


def test_every_pytorch_conversion_is_a_registry_row():
    rows = {r["name"]: r for r in modelbench.list_conversions()}
    for name in modelbench.PYTORCH_CONVERSIONS:
        assert rows[name]["runtime"] == "pytorch" and rows[name]["format"] == "pytorch"
    pytorch_rows = {n for n, r in rows.items() if r["runtime"] == "pytorch"}
    assert pytorch_rows == set(modelbench.PYTORCH_CONVERSIONS)
