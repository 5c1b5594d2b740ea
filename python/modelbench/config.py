"""BenchmarkConfig: every setting of a Python-front run, checked by name and type.

alma's keys (batch_size, n_samples, device, allow_device_override, fail_on_error,
multiprocessing, non_blocking) mean what they mean in alma; the others are the
C engine's settings under the names of ``modelbench bench``'s long options.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Union, get_type_hints

from .errors import ConfigError, ConfigTypeError

_DEVICES = ("cpu", "cuda", "mps", "auto")
_LOG_LEVELS = ("error", "warn", "info", "debug")
# The engine's own limits (`modelbench bench`'s option parser): a config
# beyond them would fail in the worker instead of here, naming the key.
_ENGINE_MAX = {"batch_size": 2**31 - 1, "n_samples": 2**20, "threads": 1024,
               "warmup": 2**31 - 1, "min_iterations": 2**31 - 1, "seed": 2**63 - 1,
               "calibration_samples": 100000}
_FLOAT_KEYS = ("warmup_time", "min_time", "max_time", "timeout", "rtol", "atol",
               "max_error")


def _is_ci_target(value: Union[float, str]) -> bool:
    """0.02 or "2%" (bench's --ci-target takes both)."""
    try:
        if isinstance(value, str):
            share = float(value[:-1]) / 100 if value.endswith("%") else float(value)
        else:
            share = float(value)
    except ValueError:
        return False
    return math.isfinite(share) and 0 < share < 1


@dataclass
class BenchmarkConfig:
    """Settings of :func:`modelbench.benchmark_model` (a dict with these keys works too).

    Attributes (times in seconds):
        batch_size: samples per inference (generated data; a data_loader's own batches win).
        n_samples: samples to benchmark and evaluate on, across batches.
        device: "cpu", "cuda", "cuda:N", "mps", "auto" or a ``torch.device``; None
            picks as alma does (cuda when allowed and present, then mps, then cpu).
            modelbench's conversions run on the CPU today: another device runs
            there with allow_device_override, reported, or fails every conversion.
        allow_device_override: a device that is missing (cuda without a GPU) falls back
            to the CPU, reported, instead of failing every conversion.
        allow_cuda, allow_mps: alma's: may the device picked for None or "auto" be
            cuda (mps)?
        fail_on_error: raise ConversionError at the first failed conversion (alma's
            default); False records the error and traceback and goes on.
        multiprocessing: each conversion in its own process (a crash, hang or OOM
            takes only that one down); False runs them in this process.
        non_blocking: accepted for alma compatibility; no effect on the CPU.
        threads: intra-op threads of every runtime.
        warmup, warmup_time: warm-up iterations and seconds (both are met).
        min_iterations, min_time, max_time: timed iterations and seconds. Unset
            (None), the timed run is alma's: n_samples samples, that is
            ceil(n_samples / batch_size) inferences after the warm-up; set either
            and modelbench's rules apply (at least min_iterations, default 20, and
            min_time seconds, default 2, capped at max_time).
        ci_target: keep timing past the minimums until the median's 95% interval
            is within this share of it (0.02 or "2%") or max_time passes; the
            results say which (bench's ``--ci-target``). None: off.
        fresh_inputs, cold_cache: after the steady state, also time a phase on a
            fresh input buffer per iteration (a pool over the last-level cache)
            and one with that cache flushed before each iteration; the results'
            ``realistic`` holds them beside the steady figures.
        timeout: seconds after which a conversion's worker is killed.
        seed: seed of generated inputs and calibration data.
        opset: ONNX opset of the export (None: the highest the exporter has).
        cache: keep and reuse builds (the ONNX export, converted models).
        cache_dir: the cache and results folder (None: ~/.cache/modelbench).
        record: store the run in the results database (`modelbench history`).
        json, html, csv, markdown: report files to write.
        rtol, atol: fp32 accuracy tolerances against the reference (EAGER).
        max_error: reduced precision is flagged inaccurate beyond 1 - cosine = this.
        calibration_samples: batches the int8 conversions calibrate on (None: the
            evaluation data when given, else 100 generated batches).
        int8_weights: the int8 form: 8, 7 or "mixed" (7-bit weights where a product's
            input is signed, 8-bit where it is non-negative); None: each conversion's
            runtime picks for this CPU ("mixed" where its u8 x s8 products saturate,
            x86 without VNNI or AMX, else 8; the results' int8_weights say which).
        labels: key=value pairs stored with the run in the results database.
        log_level: the engine's logging ("error", "warn", "info", "debug").
        log_dir: keep per-conversion logs there (None: only failed ones, in a
            temporary folder).
        keep_run_dir: keep the run folder (manifest, exported models, inputs).
        tier: with no conversions given, run those of modelbench's tier 1 (quick
            check), 2 (the core deployment options) or 3 (all) instead of every
            available one.
        trust_code: let a model's code run: a model *file* (``.pt``) that holds a
            pickled module is loaded, which runs code from the file (bench's
            ``--trust-code``); off by default. In-memory modules are the caller's
            own code and TorchScript files are data: they need no such trust.
        allow_pickle: deprecated name of trust_code (a DeprecationWarning).
        cold: measure what a first request costs (bench's ``--cold``): each
            result's ``cold_start`` holds the build with the cache rebuilt and
            from it, the load, the first inference and the iterations to
            steady state.
        price_per_core_hour: what a core-hour costs (``--price-per-core-hour``):
            each result's ``cost_per_million`` is then what a million
            inferences cost on the cores it holds; None: no cost.
    """

    batch_size: int = 1
    n_samples: int = 64
    device: Optional[str] = None
    allow_device_override: bool = True
    allow_cuda: bool = True
    allow_mps: bool = True
    fail_on_error: bool = True
    multiprocessing: bool = True
    non_blocking: bool = False
    threads: int = 1
    warmup: int = 5
    warmup_time: float = 0.5
    min_iterations: Optional[int] = None
    min_time: Optional[float] = None
    max_time: float = 30.0
    ci_target: Optional[Union[float, str]] = None
    fresh_inputs: bool = False
    cold_cache: bool = False
    timeout: float = 300.0
    seed: int = 0
    opset: Optional[int] = None
    cache: bool = True
    cache_dir: Optional[str] = None
    record: bool = True
    json: Optional[str] = None
    html: Optional[str] = None
    csv: Optional[str] = None
    markdown: Optional[str] = None
    rtol: float = 1e-3
    atol: float = 1e-4
    max_error: float = 1e-3
    calibration_samples: Optional[int] = None
    int8_weights: Optional[Union[int, str]] = None
    labels: Dict[str, str] = field(default_factory=dict)
    log_level: str = "warn"
    log_dir: Optional[str] = None
    keep_run_dir: bool = False
    trust_code: bool = False
    allow_pickle: bool = False
    tier: Optional[int] = None
    cold: bool = False
    price_per_core_hour: Optional[float] = None

    def __post_init__(self) -> None:
        self.device = _device_text(self.device)
        self.validate()
        if self.allow_pickle:
            warnings.warn("config key 'allow_pickle' is deprecated: use trust_code=True",
                          DeprecationWarning, stacklevel=3)
            self.trust_code = True

    @property
    def timed_by_samples(self) -> bool:
        """Is the timed run alma's (n_samples samples) rather than modelbench's
        (min_iterations and min_time)?"""
        return self.min_iterations is None and self.min_time is None

    @classmethod
    def from_any(cls, config: Union["BenchmarkConfig", Mapping[str, Any], None]) -> "BenchmarkConfig":
        """A config from a BenchmarkConfig, a dict of its keys, or None (defaults).

        Raises ConfigError (a ValueError) for an unknown key (with the closest
        known one) and ConfigTypeError (a TypeError) for a value of the wrong
        type, both naming the key.
        """
        if config is None:
            return cls()
        if isinstance(config, cls):
            config.device = _device_text(config.device)
            config.validate()
            return config
        if not isinstance(config, Mapping) and hasattr(config, "model_dump"):
            config = config.model_dump()  # alma's own (pydantic) BenchmarkConfig
        elif not isinstance(config, Mapping) and hasattr(config, "dict") and hasattr(
                config, "__fields__"):
            config = config.dict()
        if not isinstance(config, Mapping):
            raise ConfigTypeError(
                f"config must be a dict or a BenchmarkConfig, got {type(config).__name__}"
            )
        known = {f.name for f in dataclasses.fields(cls)}
        for key in config:
            if not isinstance(key, str) or key not in known:
                close = difflib.get_close_matches(str(key), sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"unknown config key {key!r}{hint}")
        return cls(**dict(config))

    def validate(self) -> None:
        """Checks every field's type and range; errors (ConfigError,
        ConfigTypeError) name the key and value."""
        hints = get_type_hints(type(self))
        for f in dataclasses.fields(self):
            _check_type(f.name, getattr(self, f.name), hints[f.name])
        for key in _FLOAT_KEYS:
            if getattr(self, key) is not None and not math.isfinite(getattr(self, key)):
                raise ConfigError(f"config key {key!r} must be a finite number, got {getattr(self, key)}")
        for key, most in _ENGINE_MAX.items():
            value = getattr(self, key)
            if value is not None and value > most:
                raise ConfigError(f"config key {key!r} must be <= {most}, got {value}")
        for key in ("batch_size", "n_samples", "threads", "min_iterations"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise ConfigError(f"config key {key!r} must be >= 1, got {getattr(self, key)}")
        for key in ("warmup", "seed"):
            if getattr(self, key) < 0:
                raise ConfigError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        for key in ("warmup_time", "min_time", "rtol", "atol"):
            if getattr(self, key) is not None and getattr(self, key) < 0:
                raise ConfigError(f"config key {key!r} must be >= 0, got {getattr(self, key)}")
        for key in ("max_time", "timeout", "max_error"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"config key {key!r} must be > 0, got {getattr(self, key)}")
        if self.ci_target is not None and not _is_ci_target(self.ci_target):
            raise ConfigError(
                "config key 'ci_target' must be a share above 0 and below 1 (0.02) or a "
                f"percentage such as '2%', got {self.ci_target!r}")
        base, _, index = (self.device or "auto").partition(":")
        if base not in _DEVICES or (index and not (base == "cuda" and index.isdigit())):
            raise ConfigError(
                "config key 'device' must be one of cpu, cuda, cuda:N, mps, auto, None or "
                f"a torch.device, got {self.device!r}"
            )
        if self.tier is not None and self.tier not in (1, 2, 3):
            raise ConfigError(f"config key 'tier' must be 1, 2 or 3, got {self.tier!r}")
        if self.log_level not in _LOG_LEVELS:
            raise ConfigError(
                f"config key 'log_level' must be one of {', '.join(_LOG_LEVELS)}, "
                f"got {self.log_level!r}"
            )
        if self.opset is not None and not 7 <= self.opset <= 17:
            raise ConfigError(f"config key 'opset' must be between 7 and 17, got {self.opset}")
        if self.price_per_core_hour is not None and not self.price_per_core_hour > 0:
            raise ConfigError(
                f"config key 'price_per_core_hour' must be > 0, got {self.price_per_core_hour}"
            )
        if self.calibration_samples is not None and self.calibration_samples < 1:
            raise ConfigError(
                f"config key 'calibration_samples' must be >= 1, got {self.calibration_samples}"
            )
        if self.int8_weights is not None and (
                isinstance(self.int8_weights, bool)
                or self.int8_weights not in (7, 8, "7", "8", "mixed")):
            raise ConfigError(
                "config key 'int8_weights' must be 7, 8, 'mixed' or None, "
                f"got {self.int8_weights!r}"
            )
        for k, v in self.labels.items():
            if not isinstance(k, str) or not isinstance(v, str) or not k or "=" in k:
                raise ConfigError(
                    f"config key 'labels' holds str -> str pairs without '=' in keys, "
                    f"got {k!r}: {v!r}"
                )


def _device_text(device: Any) -> Any:
    """A torch.device as its text ("cuda:0"); anything else unchanged (and
    checked by validate)."""
    if type(device).__name__ == "device" and type(device).__module__ == "torch":
        return str(device)
    return device


def _check_type(key: str, value: Any, hint: Any) -> None:
    """ConfigTypeError naming the key when value does not fit the annotation."""
    optional = getattr(hint, "__args__", None) and type(None) in hint.__args__
    if value is None:
        if optional:
            return
        raise ConfigTypeError(f"config key {key!r} must not be None")
    base = hint
    if optional:
        choices = tuple(a for a in hint.__args__ if a is not type(None))
        if len(choices) > 1:  # Optional[Union[int, str]]: any of them
            if isinstance(value, bool) or not isinstance(value, choices):
                names = " or ".join(c.__name__ for c in choices)
                raise ConfigTypeError(f"config key {key!r} must be {names}, "
                                      f"got {type(value).__name__} {value!r}")
            return
        base = choices[0]
    origin = getattr(base, "__origin__", None)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigTypeError(f"config key {key!r} must be a dict, got {type(value).__name__}")
        return
    if base is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif base is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, base)
    if not ok:
        raise ConfigTypeError(
            f"config key {key!r} must be {base.__name__}, got {type(value).__name__} {value!r}"
        )
