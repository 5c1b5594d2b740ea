#!/usr/bin/env python3
"""`make bench`, the PyTorch part: the Python front's conversions side by side.

1. ResNet-18 (torchvision, random weights, 224x224, batch 1) at 1 and 2
   threads under EAGER, JIT_FREEZE, TORCHSCRIPT (libtorch), BF16+EAGER, INT8_STATIC+EAGER, ORT_CPU,
   ONEDNN, BF16+ONEDNN and INT8_STATIC+ONEDNN: median, speed-up and
   accuracy against EAGER.
2. The digits CNN of examples/mnist, trained here, on its 360 held-out
   digits with their labels: each conversion's real top-1 accuracy.
3. Fidelity: modelbench's EAGER median against a plain
   `torch.inference_mode()` loop over the same module in a fresh process,
   alternated over rounds; and the Python side's overhead per iteration
   (a one-layer module, where the call itself is nearly all of it).
4. Shapes (issue 32): a function profile of an MLP called at batch 1, 4,
   16, 64 and 256: each shape's segment benchmarked on its own, the
   prediction per conversion against the validated measurement, overall
   and per shape group.
5. Builds (issue 32): ResNet-18's PyTorch conversions benchmarked twice on
   one build cache: the first run's build_ms and load_ms against the
   second's (which loads the kept TorchScript or quantised module).

6. PyTorch 2 (issue 31, PyTorch 2.x only): ResNet-18 and a transformer
   encoder under torch.compile, torch.export and PT2E int8 beside ORT and
   oneDNN: build seconds, median, speed-up and cosine against EAGER.
7. AOTInductor from C (issue 31, PyTorch 2.6+): EXPORT+AOT_INDUCTOR's median
   (the package run by the engine's aoti runtime) against AOTInductor's own
   Python runner on the same package, alternated.

    PYTHONPATH=python /usr/bin/python3 bench/pytorch.py BUILD_DIR
MB_BENCH_ROUNDS (default 3) sets the fidelity rounds; MB_BENCH_PYTORCH_PARTS
(default resnet,digits,fidelity,shapes,builds,torch2,aoti) which parts run. bench/run.sh runs it with
Debian's python3 (PyTorch 1.13), then resnet and fidelity again with the
PyTorch 2.x of scripts/python-venv.sh when that environment is there.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

from modelbench import benchmark_model  # noqa: E402

RESNET_CONVERSIONS = ["EAGER", "JIT_FREEZE", "TORCHSCRIPT", "BF16+EAGER", "INT8_STATIC+EAGER",
                      "ORT_CPU", "ONEDNN", "BF16+ONEDNN", "INT8_STATIC+ONEDNN"]


def fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def resnet_table(cache: str) -> None:
    import torchvision

    print("== ResNet-18, 224x224, batch 1 (random weights), accuracy vs EAGER on 16 samples")
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    runs = {}
    for threads in (1, 2):
        config = {"batch_size": 1, "n_samples": 16, "threads": threads, "min_time": 3.0,
                  "warmup_time": 1.0, "fail_on_error": False, "record": False,
                  "cache_dir": cache, "calibration_samples": 32}
        runs[threads] = benchmark_model(model, config, RESNET_CONVERSIONS,
                                        data=torch.randn(3, 224, 224))
    print(f"{'conversion':20s} {'1 thread ms':>12s} {'speed-up':>9s} {'2 threads ms':>13s} "
          f"{'speed-up':>9s} {'cosine':>9s} {'top-1 agr.':>10s}")
    for name in RESNET_CONVERSIONS:
        one, two = runs[1][name], runs[2][name]
        if one["status"] != "success" or two["status"] != "success":
            print(f"{name:20s} {one['bench_status']}/{two['bench_status']}: "
                  f"{one['error'] or two['error']}")
            continue
        print(f"{name:20s} {one['latency_ms.median']:12.2f} {fmt(one['speedup_vs_baseline'], '8.2f')}x "
              f"{two['latency_ms.median']:13.2f} {fmt(two['speedup_vs_baseline'], '8.2f')}x "
              f"{fmt(two['accuracy.cosine'], '9.6f')} {fmt(two['accuracy.top1_agreement'], '10.2%')}")
    machine = runs[2].report["machine"]
    print(f"machine: {machine['cpu_model']}, {machine['cores']} cores, load "
          f"{fmt(machine['load_average'], '.2f')}")


def digits_table(work: Path, cache: str) -> None:
    print("\n== digits CNN (examples/mnist, trained here), 360 held-out digits, batch 1, 2 threads")
    folder = work / "mnist"
    shutil.copytree(ROOT / "examples" / "mnist", folder,
                    ignore=shutil.ignore_patterns("*.npz", "model", "__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), MODELBENCH_CACHE_DIR=cache)
    subprocess.run(["bash", "data/setup-data.sh"], cwd=folder, check=True, capture_output=True)
    out = subprocess.run([sys.executable, "train.py", "--quantize"], cwd=folder, env=env,
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("test accuracy"):
            print("train.py:", line)
    report = work / "digits.json"
    subprocess.run([sys.executable, "benchmark_with_dataloader.py", "--threads", "2",
                    "--no-record", "--json", str(report), "--min-time", "2"],
                   cwd=folder, env=env, check=True, capture_output=True)
    data = json.loads(report.read_text())
    print(f"{'conversion':20s} {'median ms':>10s} {'speed-up':>9s} {'task top-1':>11s} "
          f"{'agreement':>10s} {'cosine':>9s}")
    for r in data["results"]:
        if r["status"] != "ok":
            print(f"{r['conversion']:20s} {r['status']}: {r['error']}")
            continue
        acc = r["accuracy"] or {}
        print(f"{r['conversion']:20s} {r['latency_ms']['median']:10.4f} "
              f"{fmt(r['speedup_vs_baseline'], '8.2f')}x "
              f"{fmt(r['task_accuracy'], '11.2%')} {fmt(acc.get('top1_agreement'), '10.2%')} "
              f"{fmt(acc.get('cosine'), '9.6f')}")


PLAIN_LOOP = r"""
import json, sys, time, torch
torch.set_num_threads(int(sys.argv[3]))
torch.set_num_interop_threads(1)
model = torch.load(sys.argv[2], weights_only=False).eval()
x = torch.randn(*json.loads(sys.argv[4]))
times = []
with torch.inference_mode():
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:  # warm-up, as modelbench's
        model(x)
    end = time.perf_counter() + float(sys.argv[5])
    while time.perf_counter() < end or len(times) < 20:
        t0 = time.perf_counter()
        model(x)
        times.append((time.perf_counter() - t0) * 1e3)
times.sort()
print(json.dumps({"median": times[len(times) // 2], "n": len(times)}))
"""


def fidelity(work: Path, cache: str, rounds: int) -> None:
    import torchvision

    print(f"\n== fidelity: modelbench EAGER vs a plain inference_mode loop, {rounds} rounds "
          "alternated, medians (ms)")
    torch.manual_seed(0)
    cases = [("ResNet-18 224, 1 thread", torchvision.models.resnet18().eval(), (3, 224, 224), 1),
             # The call is nearly all of a Linear(8, 8)'s time.
             ("one Linear(8, 8), 1 thread", torch.nn.Linear(8, 8).eval(), (8,), 1)]
    for label, model, shape, threads in cases:
        path = work / "model.pt"
        torch.save(model, path)
        bench, plain = [], []
        for _ in range(rounds):
            r = benchmark_model(model, {"batch_size": 1, "n_samples": 1, "threads": threads,
                                        "min_time": 2.0, "warmup_time": 1.0, "record": False,
                                        "cache_dir": cache}, ["EAGER"], data=torch.randn(*shape))
            bench.append(r["EAGER"]["latency_ms.median"])
            out = subprocess.run(
                [sys.executable, "-c", PLAIN_LOOP, "", str(path),
                 str(threads), json.dumps([1, *shape]), "2.0"],
                check=True, capture_output=True, text=True).stdout
            plain.append(json.loads(out)["median"])
        b, p = statistics.median(bench), statistics.median(plain)
        # Each round's pair ran back to back: the median of their ratios
        # cancels the machine's slow spells better than the ratio of medians.
        paired = statistics.median(x / y for x, y in zip(bench, plain))
        print(f"{label:28s} modelbench {b:9.4f}  plain {p:9.4f}  ratio {b / p:6.3f}  "
              f"paired ratio {paired:6.3f}  "
              f"difference {(b - p) * 1e3:+8.1f} us/iteration  "
              f"(rounds: {', '.join(f'{x:.4f}' for x in bench)} vs "
              f"{', '.join(f'{x:.4f}' for x in plain)})")


def shapes(cache: str) -> None:
    """A function profile across batch sizes: prediction vs validation."""
    import modelbench

    print("\n== function profile across batch sizes (MLP 256-512-256, batch 1..256, "
          "1 thread): predicted vs validated per call (ms)")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                              torch.nn.Linear(512, 256)).eval()
    convs = ["EAGER", "JIT_FREEZE", "ORT_CPU"]

    @modelbench.profile(conversions=convs, validate=True)
    def infer(x):
        with torch.no_grad():
            return mlp(x).sum()

    config = {"min_time": 1.0, "threads": 1, "record": False, "cache_dir": cache}
    with modelbench.profile_session(config=config, display=lambda line: None,
                                    validate_calls=10) as session:
        for _ in range(4):
            for batch in (1, 4, 16, 64, 256):
                infer(torch.randn(batch, 256))
    table = session.last_report.function("infer")
    for row in table.rows:
        print(f"{row.conversion:12s} predicted {row.predicted_ms:8.3f}  measured "
              f"{row.measured_ms:8.3f}  error {row.error_pct:+6.1f}%")
    for g in table.shapes:
        print(f"  {g['segments'][0]:45s} measured {g['measured_ms']:8.3f}  " + "  ".join(
            f"{name} pred {g['predicted_ms'][name]:7.3f} val "
            f"{g.get('validated_ms', {}).get(name, float('nan')):7.3f}" for name in convs))


def builds(cache: str) -> None:
    """The PyTorch conversions' builds: a first run against a second."""
    import torchvision

    print("\n== PyTorch conversions' builds: ResNet-18 224, first run (build) vs "
          "second (from the cache), ms; load is the worker's whole prepare")
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    convs = ["JIT_TRACE", "JIT_FREEZE", "INT8_DYNAMIC+EAGER", "INT8_STATIC+EAGER"]
    config = {"batch_size": 1, "n_samples": 4, "min_time": 0.5, "warmup_time": 0.2,
              "record": False, "cache_dir": os.path.join(cache, "builds-bench"),
              "calibration_samples": 8}
    runs = [benchmark_model(model, config, convs, data=torch.randn(3, 224, 224))
            for _ in range(2)]
    for name in convs:
        a, b = runs[0][name], runs[1][name]
        def ms(v):
            return "-" if v is None else f"{v:.1f}"

        print(f"{name:20s} first: cache_hit {a['cache_hit']!s:5s} build {ms(a['build_ms']):>8s} "
              f"load {ms(a['load_ms']):>8s} | second: cache_hit {b['cache_hit']!s:5s} "
              f"load {ms(b['load_ms']):>8s}")


#: PyTorch 2's conversions beside the engine's (issue 31): compile and
#: build seconds apart from the timed median.
TORCH2_CONVERSIONS = ["EAGER", "JIT_FREEZE", "COMPILE_INDUCTOR_DEFAULT",
                      "COMPILE_INDUCTOR_MAX_AUTOTUNE", "COMPILE_INDUCTOR_FREEZING", "EXPORT+EAGER",
                      "EXPORT+COMPILE_INDUCTOR_DEFAULT", "EXPORT+AOT_INDUCTOR",
                      "EXPORT+AI8WI8_STATIC_QUANTIZED", "TORCHAO_AI8WI8_DYNAMIC", "COMPILE_OPENVINO",
                      "ORT_CPU", "OPENVINO",
                      "INT8_STATIC+OPENVINO", "ONEDNN", "BF16+ONEDNN",
                      "INT8_STATIC+ONEDNN"]


def torch2_cases() -> list:
    """The issue's two models: ResNet-18 and a BERT-style encoder, with one
    sample each (batch 1)."""
    import torchvision

    torch.manual_seed(0)
    encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0), 4)
    return [("ResNet-18, 224x224", torchvision.models.resnet18().eval(),
             torch.randn(3, 224, 224)),
            ("transformer encoder, 4 layers, d 256, seq 128", encoder.eval(),
             torch.randn(128, 256))]


def torch2_table(cache: str) -> None:
    """ResNet-18 and a BERT-style encoder under PyTorch 2's conversions and
    the engine's, 2 threads, batch 1: build seconds (compilation, export,
    quantisation: never in the median), median, speed-up and cosine vs EAGER."""
    if int(torch.__version__.split(".")[0]) < 2:
        print("\n== PyTorch 2 conversions skipped: this is PyTorch", torch.__version__)
        return
    for title, model, sample in torch2_cases():
        print(f"\n== {title}, batch 1, 2 threads, PyTorch {torch.__version__}")
        config = {"batch_size": 1, "n_samples": 16, "threads": 2, "min_time": 3.0,
                  "warmup_time": 1.0, "fail_on_error": False, "record": False,
                  "cache_dir": os.path.join(cache, "torch2"), "calibration_samples": 16}
        results = benchmark_model(model, config, TORCH2_CONVERSIONS, data=sample)
        # build: the cached step (conversion, export, quantisation); load:
        # preparing the session from it (OpenVINO and ORT compile here).
        print(f"{'conversion':32s} {'build s':>8s} {'load s':>7s} {'median ms':>10s} "
              f"{'speed-up':>9s} {'cosine':>9s} {'recompiles':>10s}")
        for name in TORCH2_CONVERSIONS:
            r = results[name]
            if r["status"] != "success":
                print(f"{name:32s} {r['bench_status']}: {r['error']}")
                continue
            build = r["build_ms"] or 0.0
            print(f"{name:32s} {build / 1e3:8.2f} {(r['load_ms'] or 0) / 1e3:7.2f} "
                  f"{r['latency_ms.median']:10.2f} "
                  f"{fmt(r['speedup_vs_baseline'], '8.2f')}x {fmt(r['accuracy.cosine'], '9.6f')} "
                  f"{fmt(r['recompiles'], '10d')}")
        machine = results.report["machine"]
        print(f"machine: {machine['cpu_model']}, {machine['cores']} cores")


def aoti_from_c(cache: str, rounds: int) -> None:
    """EXPORT+AOT_INDUCTOR (the package run from C by the engine's aoti
    runtime) against AOTInductor's own Python runner
    (torch._inductor.aoti_load_package) on the same package, same inputs
    and threads, alternated: the medians and their ratio."""
    import glob

    if not hasattr(getattr(torch, "_inductor", None), "aoti_load_package"):
        print("\n== AOTInductor from C skipped: this is PyTorch", torch.__version__)
        return
    threads = 2
    print(f"\n== EXPORT+AOT_INDUCTOR from C vs AOTInductor's Python runner, same package, "
          f"batch 1, {threads} threads, {rounds} rounds alternated")
    print(f"{'model':48s} {'C median ms':>12s} {'Python ms':>10s} {'C / Python':>11s}")
    for title, model, sample in torch2_cases():
        folder = os.path.join(cache, "aoti-" + str(abs(hash(title))))
        config = {"batch_size": 1, "n_samples": 16, "threads": threads, "min_time": 3.0,
                  "warmup_time": 1.0, "fail_on_error": False, "record": False,
                  "cache_dir": folder}
        c_medians, py_medians = [], []
        for _ in range(rounds):
            r = benchmark_model(model, config, ["EXPORT+AOT_INDUCTOR"], data=sample)
            r = r["EXPORT+AOT_INDUCTOR"]
            if r["status"] != "success":
                print(f"{title:48s} {r['bench_status']}: {r['error']}")
                break
            c_medians.append(r["latency_ms.median"])
            package = glob.glob(os.path.join(folder, "**", "model.pt2"), recursive=True)[0]
            torch.set_num_threads(threads)
            runner = torch._inductor.aoti_load_package(package)
            x = sample.unsqueeze(0)
            times = []
            with torch.inference_mode():
                end = time.perf_counter() + 1.0
                while time.perf_counter() < end:  # warm-up, as the engine's
                    runner(x)
                end = time.perf_counter() + 3.0
                while time.perf_counter() < end or len(times) < 20:
                    t0 = time.perf_counter()
                    runner(x)
                    times.append((time.perf_counter() - t0) * 1e3)
            py_medians.append(statistics.median(times))
            del runner
        if c_medians and py_medians:
            c, py = statistics.median(c_medians), statistics.median(py_medians)
            print(f"{title:48s} {c:12.3f} {py:10.3f} {c / py:11.3f}")


def main() -> None:
    rounds = int(os.environ.get("MB_BENCH_ROUNDS", "3"))
    with tempfile.TemporaryDirectory(prefix="mb-bench-pytorch-") as tmp:
        work = Path(tmp)
        cache = str(work / "cache")
        parts = os.environ.get("MB_BENCH_PYTORCH_PARTS",
                               "resnet,digits,fidelity,shapes,builds,torch2,aoti").split(",")
        print(f"PyTorch {torch.__version__} ({sys.executable})")
        if "resnet" in parts:
            resnet_table(cache)
        if "digits" in parts:
            digits_table(work, cache)
        if "fidelity" in parts:
            fidelity(work, cache, rounds)
        if "shapes" in parts:
            shapes(cache)
        if "builds" in parts:
            builds(cache)
        if "torch2" in parts:
            torch2_table(cache)
        if "aoti" in parts:
            aoti_from_c(cache, rounds)


if __name__ == "__main__":
    main()
