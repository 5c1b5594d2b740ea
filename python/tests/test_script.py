"""`modelbench script`: discovery of the models a script runs (tree, JSON,
depth, counts, shapes, hashes, labels, failing scripts) and their benchmark
(one bench run, reports with the script, history with its labels)."""

from __future__ import annotations

import csv as csv_module
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PYTHON_DIR = str(Path(__file__).resolve().parent.parent)

MODELS = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.block(x).mean((2, 3)))
'''

FAST = ["--min-time", "0", "--warmup", "1", "--warmup-time", "0", "--min-iterations", "3",
        "--no-record"]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("MODELBENCH_WORKER", None)
    return env


def script(folder: Path, name: str, body: str, header: str = "") -> Path:
    path = folder / name
    path.write_text(header + MODELS + textwrap.dedent(body))
    return path


def modelbench(*args, cwd=None, check=None):
    proc = subprocess.run([sys.executable, "-m", "modelbench", *map(str, args)],
                          capture_output=True, text=True, env=_env(), cwd=cwd, timeout=600)
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc


def discover(tmp_path, *targets, extra=()):
    out = tmp_path / f"found-{len(list(tmp_path.glob('found-*')))}.json"
    proc = modelbench("script", *targets, "--analyze-only", "--json", out, *extra)
    return proc, json.loads(out.read_text())


TWO_MODELS = '''
torch.manual_seed(0)
net = Wrapper()
mlp = nn.Sequential(nn.Linear(6, 5), nn.ReLU())
x = torch.randn(2, 3, 8, 8)
for _ in range(3):
    net(x)
mlp(torch.randn(4, 6))
'''


def test_discovery_top_level_and_nested(tmp_path, cache_dir):
    s = script(tmp_path, "two.py", TWO_MODELS)
    proc, found = discover(tmp_path, s)
    assert proc.returncode == 0, proc.stderr
    (run,) = found["scripts"]
    assert run["status"] == "ok"
    models = run["models"]
    assert [m["class"] for m in models] == ["Wrapper", "torch.nn.modules.container.Sequential"]
    net, mlp = models
    assert net["variable"] == "net" and mlp["variable"] == "mlp"
    assert net["calls"] == 3 and mlp["calls"] == 1
    assert net["inputs"] == [{"name": "x", "value": "float32[2, 3, 8, 8]"}]
    assert mlp["inputs"][0]["value"] == "float32[4, 6]"
    lines = s.read_text().splitlines()
    line = int(net["location"].rsplit(":", 1)[1])
    assert lines[line - 1].strip() == "net = Wrapper()", net["location"]
    assert net["parameters"] == 3 * 4 * 9 + 4 + 4 * 3 + 3
    assert net["parameter_bytes"] == 4 * net["parameters"]
    assert all(m["depth"] == 0 and len(m["sha256"]) == 64 for m in models)
    # The tree says the same.
    assert "net (executed 3x)" in proc.stdout and "Wrapper" in proc.stdout

    # --max-depth 1: the submodules each model calls, under their parent.
    _, deep = discover(tmp_path, s, extra=["--max-depth", "1"])
    models = deep["scripts"][0]["models"]
    by_var = {m["variable"]: m for m in models}
    assert set(by_var) == {"net", "net.block", "net.head", "mlp", "mlp.0", "mlp.1"}
    assert by_var["net.block"]["depth"] == 1
    assert by_var["net.block"]["parent"] == by_var["net"]["index"]
    assert by_var["net.head"]["inputs"][0]["value"] == "float32[2, 4]"
    assert by_var["net.block"]["calls"] == 3
    # Block was built inside Wrapper.__init__: that line is its location.
    line = int(by_var["net.block"]["location"].rsplit(":", 1)[1])
    assert lines[line - 1].strip() == "self.block = Block()"
    # Block.conv is two levels down: not listed.
    assert not any(m["class"].endswith("Conv2d") for m in models)


def test_hashes_are_stable_and_change_with_shapes_not_weights(tmp_path, cache_dir):
    base = TWO_MODELS
    a = script(tmp_path, "a.py", base)
    b = script(tmp_path, "b.py", "# another script, the same models\n" + base)
    weight = script(tmp_path, "weight.py", base.replace(
        "for _ in range(3):", "with torch.no_grad():\n    net.head.bias[0] += 1\nfor _ in range(3):"))
    shape = script(tmp_path, "shape.py", base.replace("torch.randn(2, 3, 8, 8)", "torch.randn(2, 3, 9, 8)"))
    _, found = discover(tmp_path, a, b, weight, shape)
    runs = {Path(r["path"]).name: r for r in found["scripts"]}
    h = {name: [m["sha256"] for m in r["models"]] for name, r in runs.items()}
    assert h["a.py"] == h["b.py"]
    # The model hash is the architecture and the input signature: other
    # weights are the same model (the build keys hash the weights too).
    assert h["weight.py"] == h["a.py"]
    assert h["shape.py"][0] != h["a.py"][0] and h["shape.py"][1] == h["a.py"][1]
    # Run again: the same hashes.
    _, again = discover(tmp_path, a)
    assert [m["sha256"] for m in again["scripts"][0]["models"]] == h["a.py"]


@pytest.mark.any_torch
def test_an_unseeded_script_keeps_its_hashes_and_hashes_select(tmp_path, cache_dir):
    unseeded = script(tmp_path, "unseeded.py", TWO_MODELS.replace("torch.manual_seed(0)\n", ""))
    hashes = []
    for _ in range(2):  # two runs, two draws of the unseeded weights
        _, found = discover(tmp_path, unseeded)
        hashes.append([m["sha256"] for m in found["scripts"][0]["models"]])
    assert hashes[0] == hashes[1], hashes
    net, mlp = hashes[0]
    # Several hashes at once, and --analyze-only honours them.
    _, both = discover(tmp_path, f"{unseeded}::{net[:8]},{mlp[:6]}")
    assert [m["sha256"] for m in both["scripts"][0]["models"]] == [net, mlp]
    proc, one = discover(tmp_path, f"{unseeded}::{mlp[:8]}")
    assert [m["variable"] for m in one["scripts"][0]["models"]] == ["mlp"]
    assert "net (executed" not in proc.stdout
    # A submodule's hash (listed with --max-depth 1) selects it without it.
    _, deep = discover(tmp_path, unseeded, extra=["--max-depth", "1"])
    block = next(m for m in deep["scripts"][0]["models"] if m["variable"] == "net.block")
    _, sub = discover(tmp_path, f"{unseeded}::{block['sha256'][:10]}")
    assert [m["variable"] for m in sub["scripts"][0]["models"]] == ["net.block"]
    # Benchmarking the selection; a hash that selects nothing says why.
    proc = modelbench("script", f"{unseeded}::{mlp[:8]}", "-c", "EAGER,ORT_CPU", *FAST,
                      check=0)
    assert "benchmarking 1 model" in proc.stdout
    proc = modelbench("script", f"{unseeded}::abcdef12", "-c", "EAGER", *FAST, check=1)
    assert "no model's hash starts with" in proc.stdout and "--analyze-only" in proc.stdout
    proc = modelbench("script", f"{unseeded}::{net[:8]},xyz1", "--analyze-only")
    assert "a hash prefix is 4 to 64 hex digits" in proc.stdout + proc.stderr


@pytest.mark.any_torch
def test_failing_scripts_keep_what_ran(tmp_path, cache_dir):
    raising = script(tmp_path, "raising.py", TWO_MODELS + "raise RuntimeError('after the models')\n")
    empty = tmp_path / "empty.py"
    empty.write_text("import torch\nprint(torch.ones(2).sum())\n")
    hanging = script(tmp_path, "hanging.py", TWO_MODELS + "import time\ntime.sleep(600)\n")
    proc, found = discover(tmp_path, raising, empty, hanging, tmp_path / "missing.py",
                           extra=["--script-timeout", "20"])
    assert proc.returncode == 1
    runs = {Path(r["path"]).name: r for r in found["scripts"]}
    r = runs["raising.py"]
    assert r["status"] == "raised" and "RuntimeError: after the models" in r["error"]
    assert "raise RuntimeError" in r["traceback"] and len(r["models"]) == 2
    assert runs["empty.py"]["status"] == "ok" and runs["empty.py"]["models"] == []
    h = runs["hanging.py"]
    assert h["status"] == "stopped" and "--script-timeout 20" in h["error"]
    assert [m["calls"] for m in h["models"]] == [3, 1]
    assert h["seconds"] < 60
    assert runs["missing.py"]["status"] == "missing"
    out = proc.stdout
    assert "raised an exception after the models below ran" in out
    assert "no model: the script called no torch.nn.Module" in out
    assert "was stopped" in out and "no such file" in out


@pytest.mark.any_torch
def test_benchmark_with_labels_hash_filter_and_reports(tmp_path, cache_dir):
    header = "# labels: task::demo author::tests\n"
    s = script(tmp_path, "bench_me.py", TWO_MODELS, header=header)
    other = script(tmp_path, "other.py", "m = nn.Linear(3, 2)\nm(torch.randn(1, 3))\n")
    _, found = discover(tmp_path, s)
    net_hash = found["scripts"][0]["models"][0]["sha256"]
    assert found["scripts"][0]["labels"] == {"task": "demo", "author": "tests"}

    report = tmp_path / "r.json"
    html = tmp_path / "r.html"
    csv = tmp_path / "r.csv"
    proc = modelbench("script", f"{s}::{net_hash[:8]}", other, "-c", "EAGER,JIT_TRACE,ORT_CPU",
                      "--json", report, "--html", html, "--csv", csv,
                      *[a for a in FAST if a != "--no-record"], check=0)
    reports = json.loads(report.read_text())["reports"]
    # ::HASH kept Wrapper only; other.py's model is there too.
    assert [r["model"]["name"] for r in reports] == ["Wrapper", "Linear"]
    net = reports[0]
    assert net["model"]["sha256"] == net_hash
    assert net["model"]["script"] == str(s.resolve())
    assert net["model"]["location"].endswith(f"{s.name}:{_line(s, 'net = Wrapper()')}")
    assert net["labels"] == {"model": "Wrapper", "framework": "pytorch",
                             "class": "Wrapper", "parameters": "127", "task": "demo",
                             "author": "tests"}
    assert reports[1]["labels"] == {"model": "Linear", "framework": "pytorch",
                                    "class": "torch.nn.modules.linear.Linear",
                                    "parameters": "8"}
    assert {r["conversion"]: r["status"] for r in net["results"]} == {
        "EAGER": "ok", "JIT_TRACE": "ok", "ORT_CPU": "ok"}
    assert net["baseline"] == "EAGER" and net["reference"] == "EAGER"
    assert all(r["accuracy"]["max_abs_err"] < 1e-4 for r in net["results"])
    # The script's own inputs were benchmarked.
    assert net["model"]["inputs"][0]["shape"] == [2, 3, 8, 8]
    page = html.read_text()
    assert page.count('<section class="script"') == 2
    assert f"Script <code>{s.resolve()}</code>" in page and "task=demo" in page
    header_row = csv.read_text().splitlines()[0].split(",")
    # The script's columns, then (after the load columns) the labels, last.
    at = header_row.index("script")
    assert header_row[at + 1] == "model_location"
    assert header_row[-6:] == ["label:model", "label:framework", "label:class",
                               "label:parameters", "label:task", "label:author"]

    # The history keeps the labels and the script.
    hist = modelbench("history", "--label", "task=demo", "--json", check=0).stdout
    runs = json.loads(hist)["runs"]
    assert len(runs) == 1
    assert runs[0]["labels"]["script"] == str(s.resolve())
    assert runs[0]["labels"]["author"] == "tests"


@pytest.mark.any_torch
def test_a_failed_conversion_leaves_no_temporary_folder(tmp_path, cache_dir, monkeypatch):
    """The run folder, the options probe and the engine's logs leave $TMPDIR
    as it was; a failed conversion's log is kept under <cache>/logs."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    s = script(tmp_path, "unscriptable.py", """
        class Lambda(nn.Module):
            def __init__(self):
                super().__init__()
                self.f = lambda t: t * 2  # TorchScript cannot compile this

            def forward(self, x):
                return self.f(x)


        Lambda()(torch.randn(2, 3))
        """)
    report = tmp_path / "r.json"
    proc = modelbench("script", s, "-c", "EAGER,JIT_SCRIPT", "--json", report, *FAST, check=1)
    results = {r["conversion"]: r for r in json.loads(report.read_text())["results"]}
    assert results["EAGER"]["status"] == "ok", proc.stdout + proc.stderr
    assert results["JIT_SCRIPT"]["status"] == "error"
    log = Path(results["JIT_SCRIPT"]["log"])
    assert log.is_file() and log.parent.parent == cache_dir / "logs", log
    assert log.parent.name.startswith("run-")
    assert [p.name for p in tmp.iterdir() if p.name.startswith("modelbench")] == []
    # The ok conversion's log went with the report.
    assert [p.name for p in log.parent.iterdir()] == [log.name]


@pytest.mark.any_torch
def test_build_only_then_the_benchmark_starts_from_the_builds(tmp_path, cache_dir):
    """--build-only exports and builds every conversion of the script's
    models and measures nothing; the next run takes the builds from the
    cache (a seeded script: the builds hold its weights)."""
    s = script(tmp_path, "build_me.py", TWO_MODELS)
    convs = "EAGER,ORT_CPU,INT8_DYNAMIC+ORT_CPU"
    built = tmp_path / "built.json"
    proc = modelbench("script", s, "-c", convs, "--build-only", "--json", built, *FAST,
                      check=0)
    assert "Build only: " in proc.stdout, proc.stdout
    reports = json.loads(built.read_text())["reports"]
    assert [r["model"]["name"] for r in reports] == ["Wrapper", "Sequential"]
    for report in reports:
        results = {r["conversion"]: r for r in report["results"]}
        assert {k: r["status"] for k, r in results.items()} == dict.fromkeys(
            convs.split(","), "built"), results
        assert results["ORT_CPU"]["cache_hit"] is False
        assert all(r["iterations"] == 0 for r in results.values())
    ran = tmp_path / "ran.json"
    modelbench("script", s, "-c", convs, "--json", ran, *FAST, check=0)
    for report in json.loads(ran.read_text())["reports"]:
        results = {r["conversion"]: r for r in report["results"]}
        assert all(r["status"] == "ok" for r in results.values()), results
        for name in ("ORT_CPU", "INT8_DYNAMIC+ORT_CPU"):
            assert results[name]["cache_hit"] is True, results[name]


def test_every_input_shape_is_a_model_of_its_own(tmp_path, cache_dir):
    """A module called with several input signatures is one model per
    signature (batch size included), each with its hash and benchmark;
    --max-shapes bounds them and says what it left out; a hash selecting
    some of them says so."""
    s = script(tmp_path, "shapes.py", """
        torch.manual_seed(0)
        conv = nn.Conv2d(3, 4, 3, padding=1)
        conv(torch.randn(1, 3, 8, 8))
        conv(torch.randn(2, 3, 16, 16))
        conv(torch.randn(1, 3, 8, 8))
        head = nn.Linear(4, 2)
        for batch in (1, 2, 4):
            head(torch.randn(batch, 4))
        """)
    proc, found = discover(tmp_path, s)
    models = found["scripts"][0]["models"]
    assert [(m["variable"], m["inputs"][0]["value"], m["calls"], m["shape_index"], m["shapes"])
            for m in models] == [
        ("conv", "float32[1, 3, 8, 8]", 2, 0, 2), ("conv", "float32[2, 3, 16, 16]", 1, 1, 2),
        ("head", "float32[1, 4]", 1, 0, 3), ("head", "float32[2, 4]", 1, 1, 3),
        ("head", "float32[4, 4]", 1, 2, 3)]
    assert len({m["sha256"] for m in models}) == 5
    assert "conv (executed 1x, input shape 2 of 2)" in proc.stdout, proc.stdout
    # --max-shapes keeps the first N of each module and counts the rest.
    proc, few = discover(tmp_path, s, extra=["--max-shapes", "1"])
    assert [m["inputs"][0]["value"] for m in few["scripts"][0]["models"]] == [
        "float32[1, 3, 8, 8]", "float32[1, 4]"]
    assert "2 more input shape(s) in 2 call(s) are not listed" in proc.stdout, proc.stdout
    # A hash selects one shape, and says the others are left out.
    proc, one = discover(tmp_path, f"{s}::{models[1]['sha256'][:10]}")
    assert [m["inputs"][0]["value"] for m in one["scripts"][0]["models"]] == [
        "float32[2, 3, 16, 16]"]
    assert "called with 2 input shapes" in proc.stdout and "selects 1" in proc.stdout
    # Each shape is benchmarked on its own inputs.
    report = tmp_path / "shapes.json"
    modelbench("script", f"{s}::{models[0]['sha256'][:10]},{models[1]['sha256'][:10]}",
               "-c", "EAGER,ORT_CPU", "--json", report, *FAST, check=0)
    reports = json.loads(report.read_text())["reports"]
    assert [r["model"]["inputs"][0]["shape"] for r in reports] == [[1, 3, 8, 8], [2, 3, 16, 16]]
    for r in reports:
        assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
    proc = modelbench("script", s, "--max-shapes", "0", check=2)
    assert "--max-shapes must be >= 1" in proc.stderr


@pytest.mark.any_torch
def test_the_cache_knows_a_script_model_by_its_hash(tmp_path, cache_dir):
    """A script's builds are filed under the script, class and model hash:
    the second run hits every conversion, `cache list/stats/delete` take the
    hash, `cache clean` keeps them while the script exists, and `cache
    report` joins each conversion's result and build in one row with the
    script, class, parameters and labels."""
    s = script(tmp_path, "cached.py", TWO_MODELS, header="# labels: task::cache\n")
    convs = "EAGER,ORT_CPU,JIT_TRACE"
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}.json"
        modelbench("script", s, "-c", convs, "--json", out, *[a for a in FAST if a != "--no-record"],
                   check=0)
        runs.append(json.loads(out.read_text())["reports"])
    net = runs[1][0]
    h = net["model"]["sha256"]
    assert runs[0][0]["model"]["sha256"] == h
    for report in runs[1]:
        # EAGER builds nothing to keep: it reuses nothing (null), honestly.
        assert {r["conversion"]: r["cache_hit"] for r in report["results"]} == {
            "EAGER": None, "ORT_CPU": True, "JIT_TRACE": True}, report["results"]
    listed = json.loads(modelbench("cache", "list", h[:10], "--json", check=0).stdout)["builds"]
    assert {b["conversion"] for b in listed} == set(convs.split(",")) | {"ONNX_EXPORT"}
    for b in listed:
        assert b["id"].startswith(f"cached-Wrapper-{h[:12]}/"), b["id"]
        assert b["source"] == {"script": str(s.resolve()), "class": "Wrapper",
                               "model_hash": h}, b["source"]
        assert b["stale"] is None, b
    assert "cached.py" in modelbench("cache", "list", str(s), check=0).stdout
    proc = modelbench("cache", "stats", h[:10], check=1)
    assert "is a model with 4 builds" in proc.stderr and "MODEL/CONVERSION" in proc.stderr
    stats = json.loads(modelbench("cache", "stats", f"{h[:10]}/ORT_CPU", "--json",
                                  check=0).stdout)
    assert stats["conversion"] == "ORT_CPU" and stats["source"]["model_hash"] == h
    # The manifests were temporary; the builds are the script's.
    assert "nothing to clean" in modelbench("cache", "clean", check=0).stdout
    # One row per model x conversion, result and build joined.
    rows = list(csv_module.DictReader(io.StringIO(modelbench("cache", "report", check=0).stdout)))
    mine = [r for r in rows if r["model_sha256"] == h]
    assert sorted(r["conversion"] for r in mine) == sorted(convs.split(",") + ["ONNX_EXPORT"])
    for r in mine:
        if r["conversion"] == "ONNX_EXPORT":
            assert r["status"] == "n/a: not run" and r["build_status"] == "ok", r
            continue
        assert r["status"] == "ok" and r["build_status"] == "ok", r
        assert r["model"] == "Wrapper" and r["script"] == str(s.resolve()), r
        assert r["class"] == "Wrapper" and r["parameters"] == "127", r
        assert "task=cache" in r["labels"].split(";"), r
    # Without the script the builds are stale; deleting by hash takes all.
    s.rename(tmp_path / "gone.py")
    proc = modelbench("cache", "clean", "--dry-run", check=0)
    assert f"script {s.resolve()} no longer exists" in proc.stdout, proc.stdout
    proc = modelbench("cache", "delete", h[:10], check=0)
    assert "removed 4 builds" in proc.stdout, proc.stdout
    assert json.loads(modelbench("cache", "list", h[:10], "--json",
                                 check=0).stdout)["builds"] == []


def test_pytorch_conversions_keep_real_builds(tmp_path, cache_dir):
    """JIT_TRACE, JIT_SCRIPT and JIT_FREEZE keep their TorchScript module and
    INT8_DYNAMIC+EAGER its quantised module in the build cache and load it
    on the next run, under one key whether or
    not an ONNX conversion is in -c; a conversion that fails is recorded as
    a failed build and tried again; one with nothing to keep says so."""
    s = script(tmp_path, "jit.py", """
        torch.manual_seed(0)


        class Unscriptable(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)
                self.f = lambda t: t * 2  # TorchScript cannot compile this

            def forward(self, x):
                return self.f(self.lin(x))


        Unscriptable()(torch.randn(2, 4))
        """)
    convs = ["EAGER", "JIT_TRACE", "JIT_SCRIPT", "JIT_FREEZE", "JIT_ONEDNN_FUSION",
             "INT8_DYNAMIC+EAGER"]
    results = []
    for extra in ([], ["ORT_CPU"]):
        out = tmp_path / f"jit{len(results)}.json"
        modelbench("script", s, "-c", ",".join(convs + extra), "--json", out, *FAST, check=1)
        results.append({r["conversion"]: r for r in json.loads(out.read_text())["results"]})
    first, second = results
    assert {k: (r["status"], r["cache_hit"]) for k, r in first.items()} == {
        "EAGER": ("ok", None), "JIT_TRACE": ("ok", False), "JIT_SCRIPT": ("error", False),
        "JIT_FREEZE": ("ok", False), "JIT_ONEDNN_FUSION": ("ok", False),
        "INT8_DYNAMIC+EAGER": ("ok", False)}, first
    assert first["JIT_TRACE"]["build_ms"] > 0
    # The second run (ORT_CPU too: an ONNX export in the manifest) loads the
    # traced and frozen modules; JIT_SCRIPT's failure was not kept as ok.
    assert {k: (r["status"], r["cache_hit"]) for k, r in second.items() if k in convs} == {
        "EAGER": ("ok", None), "JIT_TRACE": ("ok", True), "JIT_SCRIPT": ("error", False),
        "JIT_FREEZE": ("ok", True), "JIT_ONEDNN_FUSION": ("ok", True),
        "INT8_DYNAMIC+EAGER": ("ok", True)}, second
    assert second["JIT_TRACE"]["build_id"] == first["JIT_TRACE"]["build_id"]
    assert second["JIT_TRACE"]["accuracy"]["max_abs_err"] < 1e-5
    assert (second["INT8_DYNAMIC+EAGER"]["accuracy"]["max_abs_err"]
            == first["INT8_DYNAMIC+EAGER"]["accuracy"]["max_abs_err"])
    builds = {b["conversion"]: b for b in json.loads(
        modelbench("cache", "list", str(s), "--json", check=0).stdout)["builds"]}
    assert builds["JIT_SCRIPT"]["status"] == "failed", builds["JIT_SCRIPT"]
    assert builds["JIT_TRACE"]["status"] == "ok" and builds["JIT_TRACE"]["hits"] == 1
    stats = json.loads(modelbench("cache", "stats", builds["JIT_FREEZE"]["id"], "--json",
                                  check=0).stdout)
    assert [a["name"] for a in stats["artifacts"]] == ["module.ts.pt"], stats["artifacts"]


def test_constant_arguments_are_bound(tmp_path, cache_dir):
    """A module called with plain constants (scale=0.5, return_dict=False)
    is benchmarked with them bound, one model per set of constants; a
    container of tensors is still refused, naming the argument."""
    s = script(tmp_path, "consts.py", """
        torch.manual_seed(0)


        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 3)

            def forward(self, x, scale=1.0, *, return_dict=True):
                y = self.lin(x) * scale
                return {"y": y} if return_dict else y


        m = Scaled()
        m(torch.randn(2, 4), scale=0.5, return_dict=False)
        m(torch.randn(2, 4), 2.0, return_dict=False)


        class TakesDict(nn.Module):
            def forward(self, inputs):
                return inputs["x"] * 2


        TakesDict()({"x": torch.ones(2)})
        """)
    report = tmp_path / "consts.json"
    proc = modelbench("script", s, "-c", "EAGER,ORT_CPU", "--json", report, *FAST, check=0)
    models = {(r["model"]["name"], r["model"]["sha256"]): r
              for r in json.loads(report.read_text())["reports"]}
    scaled = [r for (name, _), r in models.items() if name == "Scaled"]
    assert len(scaled) == 2, list(models)
    for r in scaled:
        assert [i["name"] for i in r["model"]["inputs"]] == ["x"], r["model"]["inputs"]
        assert [x["status"] for x in r["results"]] == ["ok", "ok"], r["results"]
        assert r["labels"]["class"] == "Scaled", r["labels"]
    assert "scale: 0.5, return_dict: False" in proc.stdout
    assert "argument 'inputs' is a dict(x: float32[2])" in proc.stdout, proc.stdout


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == text)


@pytest.mark.any_torch
def test_options_are_checked_before_any_script_runs(tmp_path, cache_dir):
    s = script(tmp_path, "s.py", TWO_MODELS)
    proc = modelbench("script", s, "-c", "EAGR", check=2)
    assert "EAGR" in proc.stderr and "did you mean" in proc.stderr
    proc = modelbench("script", s, "--batch-size", "4", check=2)
    assert "inputs the script gives" in proc.stderr
    proc = modelbench("script", check=2)
    assert "at least one" in proc.stderr
    proc = modelbench("script", s, "--dim", "seq=8", check=2)
    assert "inputs the script gives" in proc.stderr
    proc = modelbench("script", s, "--sweep", "threads=1,2", check=2)
    assert "--sweep" in proc.stderr and "benchmarked once" in proc.stderr
    # The executor's options are bench's to check too.
    proc = modelbench("script", s, "--executor", "pbs", check=2)
    assert "--executor" in proc.stderr and "executed" not in proc.stdout, proc.stderr
    # bench's own checks, before the script runs (it would print its tree).
    for option, value, said in (("--device", "x86", "--device 'x86'"),
                                ("--min-time", "abc", "--min-time 'abc'")):
        proc = modelbench("script", s, option, value, check=2)
        assert said in proc.stderr and "modelbench script:" in proc.stderr, proc.stderr
        assert "executed" not in proc.stdout, proc.stdout
    # The command line's ids are modelbench's, as bench -c takes them.
    proc = modelbench("script", s, "-c", "60,9999", check=2)
    assert "unknown conversion id 9999" in proc.stderr and "alma" not in proc.stderr


@pytest.mark.parametrize("flag,hint", [
    (["--script-args", "a b"], "go after '--'"),
    (["-s", "."], "give the folder itself"),
    (["--all"], "unless SCRIPT.py::HASH"),
])
def test_benchit_spellings_are_answered_with_ours(flag, hint, tmp_path):
    proc = modelbench("script", tmp_path / "x.py", *flag, check=2)
    assert f"{flag[0]} is benchit's: " in proc.stderr and hint in proc.stderr, proc.stderr


@pytest.mark.any_torch
def test_bench_options_table_matches_bench():
    """script.py passes bench's options through: its table must know each one."""
    from modelbench import script as script_cmd

    text = modelbench("bench", "--help", check=0).stdout
    import re

    options = set(re.findall(r"(--[a-z][a-z0-9-]+)", text))
    known = set(script_cmd.BENCH_VALUE_OPTIONS) | set(script_cmd.BENCH_FLAGS) | set(
        script_cmd.REFUSED) | set(script_cmd.NO_SWEEP) | {
            "--json", "--recursive", "--help"}
    assert options - known == set(), options - known
