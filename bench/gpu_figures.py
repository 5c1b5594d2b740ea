#!/usr/bin/env python3
"""The figures of issue 26's device check (bench/gpu_check.sh runs this).

One model at one batch size per call, its results in
RESULTS/figures/MODEL_bBATCH.json, rewritten after every part so a call
cut short keeps what it measured:

    gpu_figures.py --model resnet18|bert --batch N --results DIR [--deadline EPOCH]
    gpu_figures.py --sweep --results DIR [--deadline EPOCH]
    gpu_figures.py --summary --results DIR --out summary.md
    gpu_figures.py --dry-run --results DIR

A model call measures, in this order (the deadline skips what is left):
  1. plain PyTorch: the module in eval mode on CUDA, fp32, a loop timed
     with CUDA events (median and p99 of ITERATIONS after WARMUP);
  2. modelbench's run of the same module through the Python front, one
     benchmark_model call per conversion of CONVERSIONS (an unknown name or
     a failed conversion is recorded with its reason);
  3. AOTInductor's own Python runner (torch._inductor.aoti_load_package) of
     the package modelbench's EXPORT+AOT_INDUCTOR built (else one compiled
     here), timed as in 1;
  4. plain PyTorch fp16 + torch.compile(mode="reduce-overhead").
The sweep benchmarks ResNet-18 with device "auto" over SWEEP_BATCHES (the
CPU-or-GPU crossover) and keeps its JSON and HTML reports.
The summary reads every figures file by key (a missing one shows as "-")
into one markdown table per model and batch, with the issue's checks.
"""

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

# modelbench's conversions, most important first (a phase that runs out of
# time skips the rest): EAGER is the baseline of every check, FP16 + CUDA
# graphs and EXPORT+AOT_INDUCTOR have checks of their own, max-autotune
# compiles longest. Each entry is one benchmark_model call (one report):
# names joined by "," share it, which saves the call's own cost (the
# module pickled and hashed, the engine started), but a call cut short by
# the time limit loses all of its results.
CONVERSIONS = [
    "EAGER",
    "FP16+COMPILE_CUDAGRAPHS",
    "EXPORT+AOT_INDUCTOR",
    "CHANNELS_LAST,FP16+EAGER,BF16+EAGER",
    "JIT_TRACE,JIT_FREEZE,TORCHSCRIPT",
    "COMPILE_CUDAGRAPHS",
    "COMPILE_INDUCTOR_DEFAULT",
    "COMPILE_INDUCTOR_REDUCE_OVERHEAD",
    "COMPILE_INDUCTOR_MAX_AUTOTUNE",
]
# The CPU-vs-GPU sweep (device "auto"): ResNet-18 at these batch sizes.
# The GPU side: eager and the fastest compiled form; the CPU side: ONNX
# Runtime and oneDNN, the best CPU options on most models. --device auto
# places each where it can run (the crossover compares the best of each).
SWEEP_CONVERSIONS = ["EAGER", "FP16+COMPILE_INDUCTOR_REDUCE_OVERHEAD", "ORT_CPU", "ONEDNN"]
SWEEP_BATCHES = [1, 2, 4, 8, 16, 32, 64]
WARMUP = 25
ITERATIONS = 200
# A conversion's worker is killed after this many seconds (and never past
# the deadline); none is started with less than MIN_START seconds left.
CONVERSION_TIMEOUT = 150
MIN_START = 15
# The "Done when" margins.
WITHIN = 0.05
CUDAGRAPHS_SPEEDUP = 4.0

MODELS = {"resnet18": "ResNet-18 224x224", "bert": "BERT-base encoder, seq 128"}


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def make_model(name: str) -> Any:
    """(module on the CPU in eval mode, one sample without the batch
    dimension, a description)."""
    import torch

    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision

        return (torchvision.models.resnet18(weights=None).eval(), torch.randn(3, 224, 224),
                "torchvision resnet18, random weights")
    if name == "bert":
        sample = torch.randint(0, 30522, (128,), dtype=torch.int64)
        bert_encoder, torch_encoder = _classes()
        try:
            import transformers

            config = transformers.BertConfig()  # bert-base: 12 layers, 768 wide
            return bert_encoder(transformers.BertModel(config)).eval(), sample, (
                f"transformers {transformers.__version__} BertModel(BertConfig()), random "
                "weights, last_hidden_state")
        except ImportError:
            return torch_encoder().eval(), sample, (
                "no transformers: nn.TransformerEncoder of BERT-base's size")
    raise SystemExit(f"--model {name!r}: one of {', '.join(MODELS)}")


def _classes() -> Any:
    """(BertEncoder, TorchEncoder), defined when first asked: torch is
    imported only by the calls that measure (cloudpickle sends these
    classes to modelbench's workers by value)."""
    import torch

    class BertEncoder(torch.nn.Module):
        """transformers' BertModel returning a tensor (its last hidden
        state), not a ModelOutput: what every conversion can trace and
        export."""

        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any) -> Any:
            return self.bert(input_ids=input_ids).last_hidden_state

    class TorchEncoder(torch.nn.Module):
        """BERT-base's shape without transformers: embeddings and 12 layers
        of 768 wide, 12 heads, 3072 feed-forward."""

        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(30522, 768)
            self.position = torch.nn.Parameter(torch.zeros(1, 512, 768))
            layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True,
                                                     activation="gelu")
            self.encoder = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)

        def forward(self, input_ids: Any) -> Any:
            x = self.embed(input_ids) + self.position[:, :input_ids.shape[1]]
            return self.encoder(x)

    return BertEncoder, TorchEncoder


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def stats(times: List[float]) -> Dict[str, Any]:
    ordered = sorted(times)
    if not ordered:
        return {"median": None, "p99": None, "n": 0}
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"median": statistics.median(ordered), "p99": p99, "min": ordered[0],
            "n": len(ordered)}


def time_loop(fn: Callable[[], Any], device: str, warmup: int = WARMUP,
              iterations: int = ITERATIONS, before: Optional[Callable[[], None]] = None,
              max_seconds: float = 20.0) -> Dict[str, Any]:
    """fn() timed: on CUDA each iteration between two CUDA events (and the
    wall clock to the event's completion), else the wall clock; fewer
    iterations (at least 10) when they would pass max_seconds."""
    import torch

    stop = time.perf_counter() + max_seconds

    with torch.inference_mode():
        for _ in range(warmup):
            if before:
                before()
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        gpu, wall = [], []
        for _ in range(iterations):
            if before:
                before()
            t0 = time.perf_counter()
            if device == "cuda":
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                fn()
                end.record()
                end.synchronize()
                gpu.append(begin.elapsed_time(end))
            else:
                fn()
            wall.append((time.perf_counter() - t0) * 1e3)
            if len(wall) >= 10 and time.perf_counter() > stop:
                break
    return {"events_ms": stats(gpu) if gpu else None, "wall_ms": stats(wall),
            "timer": "cuda events" if gpu else "wall clock"}


def batch_of(sample: Any, batch: int, device: str, half: bool = False) -> Any:
    import torch

    x = sample.unsqueeze(0).expand(batch, *sample.shape).contiguous().to(device)
    return x.half() if half and torch.is_floating_point(x) else x


# ---------------------------------------------------------------------------
# One model at one batch size
# ---------------------------------------------------------------------------


class Phase:
    """The figures file of one call, rewritten as parts finish."""

    def __init__(self, path: str, record: Dict[str, Any], deadline: float) -> None:
        self.path, self.record, self.deadline = path, record, deadline

    def left(self) -> float:
        return self.deadline - time.time()

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        part = self.path + ".part"
        with open(part, "w") as f:
            json.dump(self.record, f, indent=1, default=str)
        os.replace(part, self.path)

    def part(self, key: str, need: float, fn: Callable[[], Any]) -> Any:
        """record[key] = fn(), or why not (out of time, an exception)."""
        if self.left() < need:
            self.record[key] = {"skipped": f"out of time ({self.left():.0f} s left, "
                                           f"{need:.0f} needed)"}
        else:
            t0 = time.time()
            try:
                self.record[key] = fn()
            except Exception as e:  # noqa: BLE001 - every failure is a figure
                self.record[key] = {"error": f"{type(e).__name__}: {e}",
                                    "traceback": traceback.format_exc()[-3000:]}
            if isinstance(self.record[key], dict):
                self.record[key].setdefault("seconds", round(time.time() - t0, 1))
        self.save()
        return self.record[key]


def known_conversions(names: List[str]) -> Dict[str, Optional[str]]:
    """name -> None when modelbench knows it, else the reason it does not
    (every name, when modelbench does not import)."""
    try:
        from modelbench import conversions as table
    except Exception as e:  # noqa: BLE001 - LibraryNotFound, ImportError
        return {name: f"modelbench does not import: {type(e).__name__}: {e}" for name in names}

    known: Dict[str, Optional[str]] = {}
    for name in names:
        try:
            selected = table.select_one(name)
            known[name] = None if selected.name else (selected.reason or "not run by modelbench")
        except Exception as e:  # noqa: BLE001 - ConfigError/TypeError: unknown
            known[name] = f"{type(e).__name__}: {e}"
    return known


# The keys of a report's result kept in the figures (not the samples).
DROP_KEYS = ("samples_ms", "samples")


def names_of(groups: List[str]) -> List[str]:
    return [n.strip() for group in groups for n in group.split(",")]


def run_modelbench(module: Any, sample: Any, batch: int, names: List[str], device: str,
                   folder: str, timeout: float, quick: bool) -> Dict[str, Any]:
    """benchmark_model on the conversions `names` (one report); each one's
    result from it, by name."""
    import modelbench

    json_path = os.path.join(folder, f"report_{names[0].replace('+', '_')}.json")
    config = {
        "device": device, "batch_size": batch, "n_samples": 2 * batch,
        "warmup": 3 if quick else WARMUP, "warmup_time": 0,
        "min_iterations": 5 if quick else ITERATIONS, "min_time": 0,
        "max_time": 2 if quick else 20, "timeout": timeout, "fail_on_error": False,
        "record": False, "cache_dir": os.path.join(folder, "cache"), "json": json_path,
    }
    t0 = time.time()
    modelbench.benchmark_model(module, config, names, data=sample)
    with open(json_path) as f:
        report = json.load(f)
    rows = {r.get("conversion"): r for r in report.get("results") or []}
    found: Dict[str, Any] = {}
    for name in names:
        row = rows.get(name)
        if row is None:  # an alias: the report names the registry's row
            row = next((r for n, r in rows.items() if n and n.upper() == name.upper()), None)
        kept = {k: v for k, v in (row or {}).items() if k not in DROP_KEYS}
        if row is None:
            kept["error"] = f"not in the report ({', '.join(map(str, rows))})"
        kept["call_s"] = round(time.time() - t0, 1)
        kept["report"] = os.path.basename(json_path)
        found[name] = kept
    return found


def aoti_python_runner(module: Any, sample: Any, batch: int, device: str, folder: str,
                       phase: Phase) -> Dict[str, Any]:
    """AOTInductor's own Python runner on modelbench's package (the newest
    .pt2 in the conversion's cache), else on one compiled here."""
    import torch

    packages = sorted(glob.glob(os.path.join(folder, "cache", "**", "*.pt2"), recursive=True),
                      key=os.path.getmtime)
    out: Dict[str, Any] = {}
    if packages:
        path, out["package"] = packages[-1], "modelbench's (its build cache)"
    else:
        if phase.left() < 60:
            return {"skipped": "no package from modelbench and no time to compile one"}
        path, out["package"] = os.path.join(folder, "own.pt2"), "compiled here"
        x = batch_of(sample, batch, device)
        with torch.no_grad():
            program = torch.export.export(module.to(device).eval(), (x,))
            torch._inductor.aoti_compile_and_package(program, package_path=path)
        module.to("cpu")
    out["path"] = path
    runner = torch._inductor.aoti_load_package(path)
    # The package runs where it was compiled: try the GPU, then the CPU.
    last: Optional[Exception] = None
    for where in ([device, "cpu"] if device != "cpu" else ["cpu"]):
        x = batch_of(sample, batch, where)
        try:
            with torch.inference_mode():
                runner(x)
        except Exception as e:  # noqa: BLE001 - the next device
            last = e
            continue
        out["device"] = where
        with torch.inference_mode():
            y = runner(x)
        ys = y if isinstance(y, (list, tuple)) else [y]
        out["outputs"] = [{"name": f"output{i}", "dtype": str(t.dtype).replace("torch.", ""),
                           "shape": list(t.shape)} for i, t in enumerate(ys)]
        out["inputs"] = [{"name": "input0", "dtype": str(x.dtype).replace("torch.", ""),
                          "shape": list(x.shape)}]
        out.update(time_loop(lambda: runner(x), where))
        return out
    raise RuntimeError(f"the package runs on neither device: {last}")


def aoti_from_cli(runner: Dict[str, Any], device: str, folder: str, timeout: float,
                  quick: bool) -> Dict[str, Any]:
    """The package the Python runner timed, benched by the C CLI alone
    (MB_GPU_CLI: no PyTorch in its process) through a model manifest
    (docs/model-manifest.md): EXPORT+AOT_INDUCTOR from C."""
    import subprocess

    cli = os.environ.get("MB_GPU_CLI")
    if not cli or not os.path.exists(cli):
        return {"skipped": "no modelbench CLI (MB_GPU_CLI)"}
    if not runner.get("path") or not runner.get("inputs"):
        return {"skipped": "no package timed by the Python runner"}
    manifest = os.path.join(folder, "aoti_manifest.json")
    with open(manifest, "w") as f:
        json.dump({"modelbench_model": 1, "name": "aoti_package", "inputs": runner["inputs"],
                   "outputs": runner.get("outputs") or [],
                   "formats": {"aoti": {"path": runner["path"]}}}, f)
    json_path = os.path.join(folder, "report_aoti_cli.json")
    argv = [cli, "bench", manifest, "-c", "EXPORT+AOT_INDUCTOR", "--device",
            runner.get("device") or device, "--warmup", str(3 if quick else WARMUP),
            "--warmup-time", "0", "--min-iterations", str(5 if quick else ITERATIONS),
            "--min-time", "0", "--max-time", "2" if quick else "20", "--no-record",
            "--json", json_path]
    env = {k: v for k, v in os.environ.items() if k != "MODELBENCH_HOST_TORCH_LIB"}
    t0 = time.time()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace",
                          timeout=timeout)
    out: Dict[str, Any] = {"argv": " ".join(argv), "exit": proc.returncode,
                           "output": (proc.stdout + proc.stderr)[-2000:]}
    if os.path.exists(json_path):
        with open(json_path) as f:
            rows = json.load(f).get("results") or []
        if rows:
            out.update({k: v for k, v in rows[0].items() if k not in DROP_KEYS})
    if proc.returncode != 0 and "status" not in out:
        lines = [line for line in out["output"].splitlines() if line.strip()]
        out["error"] = f"exit {proc.returncode}: {lines[-1] if lines else 'no output'}"
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def measure_model(args: argparse.Namespace) -> int:
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cuda" and not args.allow_cpu:
        print("no CUDA device (torch.cuda.is_available() is False); --allow-cpu measures "
              "on the CPU", file=sys.stderr)
        return 1
    try:  # Inductor's builds here link this torch (modelbench.inductor's docstring)
        from modelbench import inductor

        inductor.prepare()
    except Exception:  # noqa: BLE001 - without modelbench, as plain PyTorch does
        pass
    quick = args.quick
    iterations = 5 if quick else ITERATIONS
    warmup = 2 if quick else WARMUP
    key = f"{args.model}_b{args.batch}"
    folder = os.path.join(args.results, "runs", key)
    os.makedirs(folder, exist_ok=True)
    module, sample, described = make_model(args.model)
    record: Dict[str, Any] = {
        "model": args.model, "batch": args.batch, "module": described, "device": device,
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
        "torch": torch.__version__, "cuda": torch.version.cuda, "conversions": {},
    }
    phase = Phase(os.path.join(args.results, "figures", key + ".json"), record, args.deadline)
    phase.save()

    def plain_fp32() -> Dict[str, Any]:
        m = module.to(device)
        x = batch_of(sample, args.batch, device)
        try:
            return time_loop(lambda: m(x), device, warmup, iterations)
        finally:
            module.to("cpu")
            if device == "cuda":
                torch.cuda.empty_cache()

    phase.part("plain_eager_fp32", 10, plain_fp32)

    groups = args.conversions.split(";") if args.conversions else CONVERSIONS
    known = known_conversions(names_of(groups))
    for group in groups:
        names = []
        for name in (n.strip() for n in group.split(",")):
            if known[name]:
                record["conversions"][name] = {"status": "unknown", "error": known[name]}
            else:
                names.append(name)
        phase.save()
        if not names:
            continue
        timeout = min(CONVERSION_TIMEOUT, phase.left() - 5)
        found = phase.part("_current", MIN_START, lambda: run_modelbench(
            module, sample, args.batch, names, device, folder, timeout, quick))
        record.pop("_current")
        # A call that failed or was skipped: its reason for each name.
        ran = all(isinstance(found.get(n), dict) for n in names)
        for name in names:
            record["conversions"][name] = found[name] if ran else dict(found)
        phase.save()
        if "EXPORT+AOT_INDUCTOR" in names:
            runner = phase.part("aoti_python", 20, lambda: aoti_python_runner(
                module, sample, args.batch, device, folder, phase))
            phase.part("aoti_cli", MIN_START, lambda: aoti_from_cli(
                runner, device, folder, min(CONVERSION_TIMEOUT, phase.left() - 5), quick))

    def plain_fp16_compiled() -> Dict[str, Any]:
        m = torch.compile(module.half().to(device), mode="reduce-overhead")
        x = batch_of(sample, args.batch, device, half=True)
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
        t0 = time.time()
        try:
            with torch.inference_mode():
                m(x)
            compile_s = time.time() - t0
            out = time_loop(lambda: m(x), device, warmup, iterations, before=mark)
            out["compile_s"] = round(compile_s, 1)
            return out
        finally:
            module.float().to("cpu")

    if device == "cuda" or args.allow_cpu:
        phase.part("plain_fp16_compile_reduce_overhead", 60, plain_fp16_compiled)
    record["finished"] = True
    phase.save()
    return 0


def measure_sweep(args: argparse.Namespace) -> int:
    import torch

    import modelbench

    device = "auto"
    module, sample, described = make_model("resnet18")
    batches = [int(b) for b in args.batches.split(",")] if args.batches else SWEEP_BATCHES
    names = names_of([args.conversions.replace(";", ",")]) if args.conversions else \
        SWEEP_CONVERSIONS
    known = known_conversions(names)
    record: Dict[str, Any] = {
        "model": "resnet18", "sweep": {"batch": batches}, "module": described,
        "device": device, "torch": torch.__version__,
        "skipped": {n: r for n, r in known.items() if r},
    }
    phase = Phase(os.path.join(args.results, "figures", "sweep.json"), record, args.deadline)
    runnable = [n for n in names if not known[n]]
    json_path = os.path.join(args.results, "sweep.json")
    html_path = os.path.join(args.results, "sweep.html")
    config = {
        "device": device, "n_samples": 2 * max(batches), "warmup": 3, "warmup_time": 0,
        "min_iterations": 5 if args.quick else 20, "min_time": 0,
        "max_time": 1 if args.quick else 3, "fail_on_error": False, "record": False,
        "timeout": max(30, min(CONVERSION_TIMEOUT, phase.left() - 10)),
        "cache_dir": os.path.join(args.results, "runs", "sweep", "cache"),
        "json": json_path, "html": html_path,
    }

    def sweep() -> Dict[str, Any]:
        if not runnable:
            return {"skipped": "none of the sweep's conversions is known here"}
        modelbench.benchmark_sweep(module, config, {"batch": batches}, runnable, data=sample)
        out = sweep_result(json_path)
        out["html"] = "sweep.html" if os.path.exists(html_path) else None
        return out

    phase.save()
    phase.part("result", 20, sweep)
    record["finished"] = True
    phase.save()
    return 0


def sweep_result(json_path: str) -> Dict[str, Any]:
    """The sweep's report by point (each conversion's result without its
    samples), with its crossover and recommendation as found (the keys the
    CPU-or-GPU answer adds)."""
    with open(json_path) as f:
        report = json.load(f)
    reports = report.get("reports") or [report]
    points = {}
    for rep in reports:
        points[str(rep.get("sweep_point"))] = {
            r.get("conversion"): {k: v for k, v in r.items() if k not in DROP_KEYS}
            for r in rep.get("results") or []}
    return {"points": points, "crossover": report.get("crossover"),
            "recommendation": report.get("recommendation"),
            "report_keys": sorted(report), "json": os.path.basename(json_path)}


# ---------------------------------------------------------------------------
# Dry run: the lists parse, torch imports
# ---------------------------------------------------------------------------


def dry_run(args: argparse.Namespace) -> int:
    out: Dict[str, Any] = {}
    problems = []
    for label, groups in (("CONVERSIONS", CONVERSIONS), ("SWEEP_CONVERSIONS",
                                                          SWEEP_CONVERSIONS)):
        if not groups or not all(isinstance(g, str) for g in groups):
            problems.append(f"{label} must be a non-empty list of strings")
            continue
        names = names_of(groups)
        if not all(names):
            problems.append(f"{label} has an empty name")
        elif len(set(n.upper() for n in names)) != len(names):
            problems.append(f"{label} lists a name twice")
    if not all(isinstance(b, int) and b > 0 for b in SWEEP_BATCHES):
        problems.append("SWEEP_BATCHES must be positive integers")
    try:
        import modelbench  # noqa: F401

        out["known"] = known_conversions(sorted(set(names_of(CONVERSIONS + SWEEP_CONVERSIONS))))
    except Exception as e:  # noqa: BLE001 - LibraryNotFound, ImportError
        problems.append(f"modelbench does not import: {type(e).__name__}: {e}")
    try:
        import torch

        out["torch"] = torch.__version__
        out["cuda"] = torch.cuda.is_available()
    except ImportError:
        out["torch"] = None
        print("torch does not import here: the figures need it (skipped)")
    out["problems"] = problems
    if args.results:
        os.makedirs(os.path.join(args.results, "figures"), exist_ok=True)
        with open(os.path.join(args.results, "figures", "dry_run.json"), "w") as f:
            json.dump(out, f, indent=1)
    for name, reason in (out.get("known") or {}).items():
        print(f"{name}: {'known' if reason is None else 'unknown here: ' + reason}")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    print(f"dry run: {len(problems)} problems; torch {out.get('torch')}")
    return 1 if problems else 0


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------


def get(d: Any, *path: str) -> Any:
    """d[path[0]][path[1]]..., None where any is missing."""
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and abs(value) >= 100:
            return f"{value:.0f}"
        return f"{value:.{digits}g}" if isinstance(value, float) else str(value)
    return str(value).replace("|", "/").replace("\n", " ")


def compute_or_latency(row: Any) -> Any:
    """(median ms, what it is): the GPU compute time when the result has
    one, else the end-to-end latency."""
    compute = get(row, "gpu", "compute_ms", "median")
    if compute is not None:
        return compute, "compute"
    return get(row, "latency_ms", "median"), "latency"


def verdict(ok: Optional[bool]) -> str:
    return "unknown" if ok is None else ("pass" if ok else "FAIL")


def checks_of(fig: Dict[str, Any]) -> List[str]:
    """The issue's "Done when" checks this figures file can answer."""
    lines = []
    convs = fig.get("conversions") or {}
    eager = convs.get("EAGER")
    plain = get(fig, "plain_eager_fp32", "events_ms", "median")
    mb, what = compute_or_latency(eager)
    ok = None if plain is None or mb is None else abs(mb / plain - 1) <= WITHIN
    ratio = f"{mb / plain:.3f}" if plain and mb is not None else "-"
    lat = get(eager, "latency_ms", "median")
    lat_ratio = f"{lat / plain:.3f}" if plain and lat is not None else "-"
    lines.append(f"- EAGER within {WITHIN:.0%} of the plain CUDA-event loop: **{verdict(ok)}** "
                 f"(modelbench {what} {fmt(mb)} ms / plain {fmt(plain)} ms = {ratio}; "
                 f"end-to-end latency {fmt(lat)} ms, ratio {lat_ratio})")
    if fig.get("model") == "resnet18" and fig.get("batch") == 1:
        fast = convs.get("FP16+COMPILE_CUDAGRAPHS")
        e, what_e = compute_or_latency(eager)
        f, what_f = compute_or_latency(fast)
        if what_e != what_f:  # compare like with like
            e, f = get(eager, "latency_ms", "median"), get(fast, "latency_ms", "median")
            what_e = "latency"
        speedup = e / f if e and f else None
        ok = None if speedup is None else speedup >= CUDAGRAPHS_SPEEDUP
        lines.append(f"- FP16+COMPILE_CUDAGRAPHS at least {CUDAGRAPHS_SPEEDUP:g}x EAGER: "
                     f"**{verdict(ok)}** ({what_e}: EAGER {fmt(e)} ms, FP16+COMPILE_CUDAGRAPHS "
                     f"{fmt(f)} ms, {fmt(speedup)}x)")
    runner = fig.get("aoti_python") or {}
    py = get(runner, "events_ms", "median") or get(runner, "wall_ms", "median")
    note = runner.get("error") or runner.get("skipped") or runner.get("package") or ""
    for label, aoti in (("benchmark_model", convs.get("EXPORT+AOT_INDUCTOR")),
                        ("the C CLI alone", fig.get("aoti_cli"))):
        c, what_c = compute_or_latency(aoti)
        ok = None if py is None or c is None else abs(c / py - 1) <= WITHIN
        lines.append(f"- EXPORT+AOT_INDUCTOR from C ({label}) within {WITHIN:.0%} of "
                     f"AOTInductor's Python runner: **{verdict(ok)}** (C {what_c} {fmt(c)} ms, "
                     f"Python runner {fmt(py)} ms on {fmt(runner.get('device'))}; package: "
                     f"{fmt(note)[:200]})")
    return lines


COLUMNS = ["conversion", "status", "median ms", "p99 ms", "compute ms", "H2D ms", "D2H ms",
           "host latency ms", "peak GPU MB", "SM MHz min-max", "throttle", "compile s",
           "first ms", "device", "note"]


def row_cells(name: str, r: Dict[str, Any]) -> List[str]:
    gpu = r.get("gpu") if isinstance(r.get("gpu"), dict) else {}
    host = gpu.get("host_latency_ms")
    if isinstance(host, dict):
        host = host.get("median")
    lo, hi = get(gpu, "state", "sm_clock_mhz_min"), get(gpu, "state", "sm_clock_mhz_max")
    build = r.get("build_ms")
    note = r.get("error") or r.get("skipped") or ""
    if not note and r.get("warnings"):
        note = "; ".join(str(w) for w in r["warnings"])
    where = get(gpu, "info", "name") or r.get("device") or r.get("runtime")
    status = r.get("status") or ("skipped" if r.get("skipped") else
                                 "error" if r.get("error") else None)
    return [name, fmt(status),
            fmt(get(r, "latency_ms", "median")), fmt(get(r, "latency_ms", "p99")),
            fmt(get(gpu, "compute_ms", "median")), fmt(get(gpu, "h2d_ms", "median")),
            fmt(get(gpu, "d2h_ms", "median")), fmt(host), fmt(gpu.get("memory_peak_mb")),
            f"{fmt(lo)}-{fmt(hi)}" if lo is not None or hi is not None else "-",
            fmt(get(gpu, "state", "throttle")),
            fmt(build / 1e3 if isinstance(build, (int, float)) else None),
            fmt(r.get("first_run_ms")), fmt(where), fmt(note)[:160]]


def plain_cells(label: str, r: Any) -> List[str]:
    r = r if isinstance(r, dict) else {}
    ev = r.get("events_ms") or {}
    note = r.get("error") or r.get("skipped") or r.get("timer") or ""
    status = ("ok" if ev or r.get("wall_ms") else "skipped" if r.get("skipped")
              else "error" if r.get("error") else None)
    cells = [label, fmt(status),
             fmt(get(r, "wall_ms", "median")), fmt(get(r, "wall_ms", "p99")),
             fmt(ev.get("median")), "-", "-", "-", "-", "-", "-", fmt(r.get("compile_s")), "-",
             fmt(r.get("device")), fmt(note)[:160]]
    return cells


def table(rows: List[List[str]]) -> List[str]:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(cells) + " |" for cells in rows]
    return out


def shim_outcome(results: str) -> List[str]:
    steps = os.path.join(results, "steps.tsv")
    status = None
    if os.path.exists(steps):
        with open(steps) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if parts[0] == "shim_build":
                    status = parts[1]
    lines = []
    if status is None:
        lines.append("- libtorch/AOTInductor module build against the device's PyTorch: not "
                     "finished (or not started) when this summary was written")
    else:
        ok = {"0": "built"}.get(status, f"failed (status {status})")
        if status.startswith("skipped"):
            ok = status
        lines.append(f"- libtorch/AOTInductor module build against the device's PyTorch: "
                     f"**{ok}** (logs/shim_build.log, logs/shim_aoti.log)")
    for name in ("aoti",):
        log = os.path.join(results, "logs", f"shim_{name}.log")
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                errors = [line.strip() for line in f if "error" in line][:3]
            for e in errors:
                lines.append(f"  - {name}: `{e[:300]}`")
    return lines


def summarize(args: argparse.Namespace) -> int:
    results = args.results
    figures = {}
    for path in sorted(glob.glob(os.path.join(results, "figures", "*.json"))):
        try:
            with open(path) as f:
                figures[os.path.basename(path)[:-5]] = json.load(f)
        except (OSError, ValueError) as e:
            figures[os.path.basename(path)[:-5]] = {"error": f"unreadable: {e}"}
    with open(os.path.join(results, "figures.json"), "w") as f:
        json.dump(figures, f, indent=1, default=str)
    gpu = next((fig.get("gpu") for fig in figures.values() if fig.get("gpu")), None)
    torch_v = next((fig.get("torch") for fig in figures.values() if fig.get("torch")), None)
    lines = [f"# modelbench device check: {gpu or 'no GPU seen'}", "",
             f"torch {fmt(torch_v)}; written {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}. "
             "Times in ms; compute = the result's gpu.compute_ms (CUDA events), median = "
             "end-to-end latency; plain rows: median/p99 = wall clock, compute = CUDA events.",
             "", "## Checks", ""]
    order = [f"{m}_b{b}" for b in (1, 32) for m in ("resnet18", "bert")]
    keys = [k for k in order if k in figures] + sorted(
        k for k in figures if k not in order and k not in ("sweep", "dry_run"))
    for key in keys:
        fig = figures[key]
        lines.append(f"### {MODELS.get(fig.get('model'), fig.get('model'))}, batch "
                     f"{fig.get('batch')}")
        lines += checks_of(fig)
    lines += shim_outcome(results)
    for key in keys:
        fig = figures[key]
        lines += ["", f"## {MODELS.get(fig.get('model'), fig.get('model'))}, batch "
                      f"{fig.get('batch')} ({fmt(fig.get('device'))}"
                      f"{'' if fig.get('finished') else ', cut short'})", "",
                  f"Module: {fmt(fig.get('module'))}.", ""]
        rows = [plain_cells("plain PyTorch fp32 (eager)", fig.get("plain_eager_fp32")),
                plain_cells("plain PyTorch fp16 + compile reduce-overhead",
                            fig.get("plain_fp16_compile_reduce_overhead")),
                plain_cells("AOTInductor Python runner", fig.get("aoti_python")),
                row_cells("EXPORT+AOT_INDUCTOR, C CLI alone", fig.get("aoti_cli") or {})]
        rows += [row_cells(n, r if isinstance(r, dict) else {})
                 for n, r in (fig.get("conversions") or {}).items()]
        lines += table(rows)
    sweep = figures.get("sweep")
    report = os.path.join(results, "sweep.json")
    if sweep is not None and not get(sweep, "result", "points") and os.path.exists(report):
        try:  # cut short: the points the engine had written
            sweep["result"] = dict(sweep.get("result") or {}, **sweep_result(report))
        except (OSError, ValueError) as e:
            sweep["result"] = {"error": f"{report}: {e}"}
    if sweep:
        result = sweep.get("result") or {}
        lines += ["", "## CPU-vs-GPU sweep (ResNet-18, device auto)", "",
                  f"Batches {fmt(get(sweep, 'sweep', 'batch'))}; crossover: "
                  f"{fmt(json.dumps(result.get('crossover')) if result.get('crossover') else None)}; "
                  f"recommendation: {fmt(json.dumps(result.get('recommendation'))[:300] if result.get('recommendation') else None)}; "
                  f"report: sweep.json, sweep.html; "
                  f"{fmt(result.get('error') or result.get('skipped') or '')[:300]}", ""]
        # One row per conversion, one column per point: the median
        # end-to-end latency (ms), its device, or its status.
        points = result.get("points") or {}
        names = list(dict.fromkeys(n for convs in points.values() for n in convs))
        if points:
            lines += ["| conversion | " + " | ".join(points) + " |",
                      "|---|" + "---|" * len(points)]
        for name in names:
            cells = []
            for convs in points.values():
                r = convs.get(name) or {}
                median = get(r, "latency_ms", "median")
                where = get(r, "gpu", "info", "name") or r.get("device")
                cells.append(f"{fmt(median)} ({fmt(where)})" if median is not None
                             else fmt(r.get("status")))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for title, name in (("Machine", "machine.log"), ("Fallback libraries", "fallback.log")):
        log = os.path.join(results, "logs", name)
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                lines += ["", f"## {title}", "", "```"] + [x.rstrip() for x in f][:30] + ["```"]
    steps = os.path.join(results, "steps.tsv")
    if os.path.exists(steps):
        lines += ["", "## Steps", "", "```"]
        with open(steps) as f:
            lines += [line.rstrip("\n") for line in f]
        lines += ["```"]
    text = "\n".join(lines) + "\n"
    if args.out:
        part = args.out + ".part"
        with open(part, "w") as f:
            f.write(text)
        os.replace(part, args.out)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--model", choices=sorted(MODELS))
    mode.add_argument("--sweep", action="store_true")
    mode.add_argument("--summary", action="store_true")
    mode.add_argument("--dry-run", action="store_true")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--results", default=None, help="the results folder")
    p.add_argument("--deadline", type=float, default=None,
                   help="Unix time after which nothing new starts (default: in 9 minutes)")
    p.add_argument("--out", default=None, help="--summary: the markdown file")
    p.add_argument("--conversions", default=None,
                   help="instead of the list: names joined by ',' share a call, calls are "
                        "separated by ';' (the sweep: one call)")
    p.add_argument("--batches", default=None, help="--sweep: comma-separated batch sizes")
    p.add_argument("--quick", action="store_true", help="few iterations (a trial run)")
    p.add_argument("--allow-cpu", action="store_true",
                   help="measure on the CPU when there is no GPU (a trial run)")
    args = p.parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    if not args.results:
        args.results = tempfile.mkdtemp(prefix="modelbench-figures-")
    if args.deadline is None:
        args.deadline = time.time() + 540
    if args.summary:
        return summarize(args)
    if args.batch < 1:
        p.error(f"--batch {args.batch}: must be at least 1")
    return measure_sweep(args) if args.sweep else measure_model(args)


if __name__ == "__main__":
    sys.exit(main())
