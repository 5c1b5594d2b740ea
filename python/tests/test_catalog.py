"""One file per PyTorch conversion: the catalog read from options/, the C
rows generated from it, and the check that the loaded library matches."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import modelbench
from modelbench import _lib
from modelbench.conversions import alma, catalog, check_library, option

OPTIONS = Path(catalog.__file__).parent / "options"

NEW_OPTION = '''"""NO_GRAD+EAGER: a test's conversion."""

import torch

from ..catalog import Conversion
from .base import ConvertContext, Converted, eval_copy

CONVERSION = Conversion(
    id=99,
    name="NO_GRAD+EAGER",
    precision="fp32",
    tier=3,
    description='eager under torch.no_grad() "quoted" \\\\ and \u00e9',
)


def convert(model: torch.nn.Module, ctx: ConvertContext) -> Converted:
    """The module under no_grad."""
    return Converted(fn=eval_copy(model), call_context=torch.no_grad)
'''


def test_every_file_is_a_row_of_the_library():
    entries = catalog.read()
    assert [e.conversion.id for e in entries] == sorted(e.conversion.id for e in entries)
    rows = {r["name"]: r for r in modelbench.list_conversions()}
    for e in entries:
        row = rows[e.conversion.name]
        assert row["id"] == e.conversion.id
        assert row["runtime"] == "pytorch" and row["format"] == "pytorch"
        assert row["description"] == e.conversion.description
        assert row["precision"] == e.conversion.precision
        assert row["device"] == e.conversion.device
        assert [d["device"] for d in row["devices"]] == list(e.conversion.devices)
        assert row["default"] == e.conversion.default
        # The module the front imports is the file the row came from.
        assert option(e.conversion.name).CONVERSION == e.conversion
    check_library()  # the library built from these files matches them


def test_catalog_names_match_the_library():
    name_of = lambda prefix: getattr(_lib.lib, f"mb_{prefix}_name")  # noqa: E731
    devices = [name_of("device")(i).decode() for i in range(len(catalog.DEVICES))]
    precisions = [name_of("precision")(i).decode() for i in range(len(catalog.PRECISIONS))]
    assert tuple(devices) == catalog.DEVICES and tuple(precisions) == catalog.PRECISIONS
    # One past the end is "invalid": the lists are complete.
    assert name_of("precision")(len(catalog.PRECISIONS)) == b"invalid"
    assert name_of("device")(len(catalog.DEVICES)) == b"invalid"


def test_alma_names_come_from_the_files():
    for e in catalog.read():
        if e.conversion.alma:
            assert alma.RUNS_AS[e.conversion.alma] == e.conversion.name
            assert modelbench.conversions.canonical_name(e.conversion.alma) == e.conversion.name
    assert alma.RUNS_AS["TORCH_SCRIPT"] == "JIT_SCRIPT"


def _options_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "options"
    shutil.copytree(OPTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def test_a_new_file_is_a_new_row(tmp_path):
    folder = _options_copy(tmp_path)
    (folder / "no_grad.py").write_text(NEW_OPTION, encoding="utf-8")
    out = tmp_path / "rows.inc"
    subprocess.run(
        [sys.executable, catalog.__file__, "--c-rows", str(out), str(folder)], check=True
    )
    text = out.read_text()
    assert "/* options/no_grad.py */" in text
    assert '.name = "NO_GRAD+EAGER",' in text
    # Quotes, backslashes and UTF-8 are escaped for C.
    assert '.description = "eager under torch.no_grad() \\042quoted\\042 \\134 and \\303\\251",' in text
    # The devices it can run on: the CPU alone unless the file says more.
    row = text[text.index("/* options/no_grad.py */"):]
    assert ".devices = (1u << MB_DEVICE_CPU),\n" in row.split("},")[0]
    eager = text[text.index("/* options/eager.py */"):].split("},")[0]
    assert ".devices = (1u << MB_DEVICE_CPU) | (1u << MB_DEVICE_CUDA)," in eager
    # Rows stay in id order, whatever the file names.
    ids = [int(line.split("=")[1].strip(" ,")) for line in text.splitlines() if ".id =" in line]
    assert ids == sorted(ids) and ids[-1] == 99


@pytest.mark.parametrize(
    "body, message",
    [
        ("X = 1\n", r"assigns CONVERSION = Conversion\(...\) once at module level \(found 0\)"),
        ("CONVERSION = dict(id=98)\n", r"CONVERSION must be Conversion\(key=value, ...\)"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", colour="red")\n',
         r"Conversion has no key 'colour'"),
        ('CONVERSION = Conversion(id=98, name="A", description=str(1))\n',
         r"Conversion key 'description' must be a literal"),
        ('CONVERSION = Conversion(id=98, name="A")\n', r"Conversion needs description"),
        ('CONVERSION = Conversion(id=7, name="A", description="d")\n',
         r"id 7 is not in the PyTorch ranges \(60-99, 200-399\)"),
        ('CONVERSION = Conversion(id=98, name="a+b", description="d")\n',
         r"name 'a\+b' is not UPPER_CASE"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", precision="int4")\n',
         r"precision 'int4' is not one of fp32, fp16, bf16, int8"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", device="tpu")\n',
         r"device 'tpu' is not one of cpu, cuda, auto"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", devices=("tpu",))\n',
         r"devices \('tpu',\) is not a tuple of distinct devices among cpu, cuda"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", devices=("cpu", "cpu"))\n',
         r"devices \('cpu', 'cpu'\) is not a tuple of distinct devices"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", device="cuda")\n',
         r"device 'cuda' is not one of its devices \('cpu',\)"),
        ('CONVERSION = Conversion(id=98, name="A", description="d", tier=0)\n',
         r"tier 0 is not 1, 2 or 3"),
        ('CONVERSION = Conversion(id=60, name="A", description="d")\n',
         r"both have id 60"),
        ('CONVERSION = Conversion(id=98, name="EAGER", description="d")\n',
         r"both have name 'EAGER'"),
        ("CONVERSION = Conversion(\n", r"broken\.py"),
    ],
)
def test_a_wrong_file_is_named_with_its_key(tmp_path, body, message):
    folder = _options_copy(tmp_path)
    (folder / "broken.py").write_text(body, encoding="utf-8")
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.read(str(folder))
    # The build step fails with the same message, and writes nothing.
    out = tmp_path / "rows.inc"
    done = subprocess.run(
        [sys.executable, catalog.__file__, "--c-rows", str(out), str(folder)],
        capture_output=True, text=True,
    )
    assert done.returncode == 1 and "broken.py" in done.stderr and not out.exists()


def test_a_library_built_before_a_file_was_added_is_named(monkeypatch):
    from modelbench import conversions

    extra = catalog.Entry(
        catalog.Conversion(id=99, name="NO_GRAD+EAGER", description="d"), "no_grad", "x"
    )
    monkeypatch.setattr(conversions, "_ENTRIES", conversions._ENTRIES + [extra])
    with pytest.raises(RuntimeError, match=r"NO_GRAD\+EAGER \(id 99, options/no_grad.py\) is "
                       r"missing.*rebuild it \(make build\)"):
        check_library()
    changed = [
        catalog.Entry(
            catalog.Conversion(**{**e.conversion.__dict__, "description": "new words"}),
            e.module, e.path,
        ) if e.conversion.name == "JIT_TRACE" else e
        for e in conversions._ENTRIES if e is not extra
    ]
    monkeypatch.setattr(conversions, "_ENTRIES", changed)
    with pytest.raises(RuntimeError, match=r"JIT_TRACE's description is 'torch.jit.trace on "
                       r"the first sample', options/jit_trace.py says 'new words'"):
        check_library()


def test_the_host_says_whether_pytorch_has_cuda_without_importing_it(tmp_path, monkeypatch):
    """The host's `devices` reads torch/version.py (importing torch, or asking
    torch.cuda, would touch the process that forks the workers)."""
    import ctypes
    import importlib.util
    from types import SimpleNamespace

    from modelbench import host

    fake = tmp_path / "torch"
    fake.mkdir()
    spec = SimpleNamespace(submodule_search_locations=[str(fake)])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    reason = ctypes.create_string_buffer(256)
    for text, cuda in [("cuda = '12.4'\n", "12.4"), ("cuda: Optional[str] = '13.0'\n", "13.0"),
                       ("cuda = None\n", None), ("git_version = 'x'\n", None)]:
        (fake / "version.py").write_text("__version__ = '2.9.0'\n" + text)
        assert host._cuda_built() == cuda
        monkeypatch.setattr(host, "_devices_cache", None)
        mask = host._devices(None, ctypes.addressof(reason))
        assert mask == (3 if cuda else 1)
        assert (reason.value == b"") == bool(cuda)
        if not cuda:
            assert b"built without CUDA" in reason.value
