"""Code runs only when the user says so (issue 27, finding 1), the Python
side: a pytorch spec that is a pickle (or adds sys_path entries, or names a
script) and a pickled ``.pt`` given to benchmark_model run nothing without
the trust flag (``--trust-code``, config key ``trust_code``) and say so
naming it; with the flag they load as before. Each hostile file touches a
marker when it is unpickled, so "nothing ran" is checked, not assumed.
TorchScript stays data: it needs no flag. The CLI side (bench on a
manifest, on a .pt) is tests/cli_trust.sh."""

from __future__ import annotations

import json
import pickle
import sys
import warnings
from pathlib import Path

import pytest
import torch

import modelbench
from modelbench import _engine, host
from modelbench.config import BenchmarkConfig

FAST_CONFIG = {"n_samples": 1, "warmup": 1, "warmup_time": 0.0, "min_iterations": 3,
               "min_time": 0.0, "record": False}


class Hostile:
    """Unpickling it opens (creates) the marker file: code from the file ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _manifest(folder: Path, spec: dict) -> Path:
    """A one-form manifest (a pytorch spec `spec`) of a model with input x[1, 4]."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "module.json").write_text(json.dumps(spec))
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({
        "modelbench_model": 1, "name": "suspect",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 4]}],
        "outputs": [{"name": "y", "dtype": "float32", "shape": [1, 2]}],
        "formats": {"pytorch": {"path": "module.json"}}, "reference": "EAGER"}))
    return manifest


@pytest.mark.parametrize("kind", ["module", "factory"])
def test_a_pickled_pytorch_form_loads_only_with_trust_code(tmp_path, kind):
    """The worker's loader (the CLI side is tests/cli_trust.sh)."""
    marker = tmp_path / "ran"
    folder = tmp_path / "model"
    folder.mkdir()
    if kind == "module":
        torch.save(Hostile(marker), folder / "module.pt")
        file = "module.pt"
    else:
        with open(folder / "factory.pkl", "wb") as f:
            pickle.dump(Hostile(marker), f)
        file = "factory.pkl"
    _manifest(folder, {"kind": kind, "file": file})
    with pytest.raises(host.UntrustedCode, match=f"pickled {kind}.*--trust-code"):
        host.load_model(str(folder / "module.json"))
    assert not marker.exists(), "the pickle was loaded without trust"
    try:
        host.load_model(str(folder / "module.json"), trust_code=True)
    except TypeError:  # the factory it unpickled (a file object) cannot be called
        pass
    assert marker.exists()


def test_a_pickle_given_as_the_pytorch_form_needs_trust_code(tmp_path):
    """bench MODEL.pt --trust-code hands the .pt itself to the worker."""
    marker = tmp_path / "ran"
    torch.save(Hostile(marker), tmp_path / "hostile.pt")
    with pytest.raises(host.UntrustedCode, match="--trust-code"):
        host.load_model(str(tmp_path / "hostile.pt"))
    assert not marker.exists()
    torch.save(torch.nn.Linear(4, 2), tmp_path / "linear.pt")
    assert isinstance(host.load_model(str(tmp_path / "linear.pt"), trust_code=True),
                      torch.nn.Linear)


def test_sys_path_in_a_manifest_needs_trust_code(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    torch.jit.script(torch.nn.Linear(4, 2)).save(str(folder / "m.ts.pt"))
    _manifest(folder, {"kind": "torchscript", "file": "m.ts.pt",
                       "sys_path": ["/nonexistent/evil"]})
    with pytest.raises(host.UntrustedCode, match="sys_path.*--trust-code"):
        host.load_model(str(folder / "module.json"))
    assert "/nonexistent/evil" not in sys.path


def test_a_script_key_is_refused_even_with_trust_code(tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    _manifest(folder, {"kind": "torchscript", "file": "m.ts.pt", "main": "evil.py"})
    for trust in (False, True):
        with pytest.raises(ValueError, match="unknown key 'main'"):
            host.load_model(str(folder / "module.json"), trust_code=trust)
    assert not marker.exists()


def test_torchscript_stays_data(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    torch.jit.script(torch.nn.Linear(4, 2)).save(str(folder / "m.ts.pt"))
    _manifest(folder, {"kind": "torchscript", "file": "m.ts.pt"})
    module = host.load_model(str(folder / "module.json"))
    assert module(torch.randn(1, 4)).shape == (1, 2)


def test_a_pickled_pt_given_to_benchmark_model_runs_only_with_trust_code(tmp_path, cache_dir):
    marker = tmp_path / "ran"
    torch.save(Hostile(marker), tmp_path / "hostile.pt")
    with pytest.raises(modelbench.ConfigError, match="trust_code"):
        modelbench.benchmark_model(str(tmp_path / "hostile.pt"), FAST_CONFIG, ["EAGER"],
                                   data=torch.randn(4))
    assert not marker.exists()
    with pytest.raises(TypeError):  # it ran, and held no module
        modelbench.benchmark_model(str(tmp_path / "hostile.pt"),
                                   {**FAST_CONFIG, "trust_code": True}, ["EAGER"],
                                   data=torch.randn(4))
    assert marker.exists()


def test_allow_pickle_is_a_deprecated_trust_code():
    with pytest.warns(DeprecationWarning, match="trust_code"):
        cfg = BenchmarkConfig(allow_pickle=True)
    assert cfg.trust_code
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not BenchmarkConfig().trust_code


def test_the_front_trusts_only_what_it_wrote():
    """The engine's --trust-code: from the config, or from the front for the
    pytorch form it pickled from the caller's object; never by default."""
    argv = _engine.bench_argv(BenchmarkConfig(), ["m.json"], ["EAGER"], json_path="r.json",
                              device="cpu", labels={})
    assert "--trust-code" not in argv
    own = _engine.bench_argv(BenchmarkConfig(), ["m.json"], ["EAGER"], json_path="r.json",
                             device="cpu", labels={}, own_code=True)
    assert "--trust-code" in own
    asked = _engine.bench_argv(BenchmarkConfig(trust_code=True), ["m.json"], ["EAGER"],
                               json_path="r.json", device="cpu", labels={})
    assert "--trust-code" in asked


def test_an_in_memory_module_needs_no_flag(fast):
    results = modelbench.benchmark_model(torch.nn.Linear(4, 2), fast, ["EAGER"],
                                         data=torch.randn(4))
    assert results["EAGER"]["status"] == "success", results["EAGER"]
