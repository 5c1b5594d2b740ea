"""alma itself beside modelbench (issue 31): the same nn.Modules under the
conversions both tools have, the two tools alternated round by round (ABBA),
both on 2 threads, each run in a fresh process. Prints per case each tool's
throughput (samples/s over its timed inference calls, alma's own definition),
their ratio, and what modelbench reports that alma does not.

alma-torch 0.3.7 (its latest release, January 2025) no longer imports on
current PyTorch: it imports torch.ao.quantization.quantize_pt2e and
torch.ao's XNNPACKQuantizer, which left PyTorch for torchao and executorch.
The alma side therefore runs with those two modules aliased to torchao's
copies (the XNNPACK quantiser, which torchao does not carry, raises when
used); nothing else in alma is touched, and the table says so.

Run by bench/run.sh on the project's PyTorch 2 environment:
  $(scripts/python-venv.sh --path) bench/alma_peer.py
MB_ALMA_ROUNDS (default 2) sets the rounds. A benchmark, not a test.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch

THREADS = 2

#: (alma's mode, modelbench's conversion): what both tools have. alma's
#: ONNX_CPU is ONNX Runtime's Python package (1.32 from PyPI) on alma's own
#: torch.onnx export; modelbench's ORT_CPU is ONNX Runtime's C library
#: (1.30 from npm) on modelbench's export.
PAIRS: List[Tuple[str, str]] = [
    ("EAGER", "EAGER"),
    ("JIT_TRACE", "JIT_TRACE"),
    ("EXPORT+EAGER", "EXPORT+EAGER"),
    ("COMPILE_INDUCTOR_DEFAULT", "COMPILE_INDUCTOR_DEFAULT"),
    ("EXPORT+AI8WI8_STATIC_QUANTIZED", "EXPORT+AI8WI8_STATIC_QUANTIZED"),
    ("COMPILE_OPENVINO", "COMPILE_OPENVINO"),
    ("ONNX_CPU", "ORT_CPU"),
]

#: name, model builder (module and one sample), batch size, alma's samples.
CASES = [
    ("ResNet-18, 224x224, batch 1", "resnet18", 1, 96),
    ("ResNet-18, 224x224, batch 8", "resnet18", 8, 192),
    ("BERT-style encoder (4 layers, d 256, seq 128), batch 1", "encoder", 1, 96),
]

MODELS = '''
import torch
def build(kind):
    torch.manual_seed(0)
    if kind == "resnet18":
        import torchvision
        return torchvision.models.resnet18().eval(), torch.randn(3, 224, 224)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
    return torch.nn.TransformerEncoder(layer, 4).eval(), torch.randn(128, 256)
'''

# alma in a process of its own: the two aliases, then alma's API as its
# README uses it.
ALMA_RUN = MODELS + '''
import importlib, json, sys, types
def alias(old, new):
    sys.modules[old] = importlib.import_module(new)
alias("torch.ao.quantization.quantize_pt2e", "torchao.quantization.pt2e.quantize_pt2e")
alias("torch.ao.quantization.quantizer", "torchao.quantization.pt2e.quantizer")
alias("torch.ao.quantization.quantizer.x86_inductor_quantizer",
      "torchao.quantization.pt2e.quantizer.x86_inductor_quantizer")
gone = types.ModuleType("torch.ao.quantization.quantizer.xnnpack_quantizer")
def _gone(*args, **kwargs):
    raise RuntimeError("torch.ao's XNNPACKQuantizer left PyTorch (now in executorch)")
gone.XNNPACKQuantizer = _gone
gone.get_symmetric_quantization_config = _gone
sys.modules[gone.__name__] = gone
from alma import benchmark_model
from alma.benchmark import BenchmarkConfig
kind, batch, n_samples, modes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
torch.set_num_threads(int(sys.argv[5]))
model, sample = build(kind)
config = BenchmarkConfig(n_samples=n_samples, batch_size=batch, device=torch.device("cpu"),
                         multiprocessing=sys.argv[6] == "1", fail_on_error=False)
results = benchmark_model(model, config, modes, data=sample)
out = {}
for mode, r in results.items():
    out[mode] = {"status": r.get("status"), "throughput": r.get("throughput"),
                 "error": str(r.get("error") or "").strip().splitlines()[:1]}
print("ALMA-JSON " + json.dumps(out))
'''

# modelbench in a process of its own, through the same Python API shape.
MB_RUN = MODELS + '''
import json, sys
sys.path.insert(0, sys.argv[6])
from modelbench import benchmark_model
kind, batch, cache, convs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(",")
model, sample = build(kind)
config = {"batch_size": batch, "threads": int(sys.argv[5]), "n_samples": 16, "min_time": 3.0,
          "warmup_time": 1.0, "fail_on_error": False, "record": False, "cache_dir": cache,
          "calibration_samples": 16}
results = benchmark_model(model, config, convs, data=sample)
out = {}
for name in convs:
    r = results[name]
    out[name] = {"status": r["status"], "throughput": r["throughput"],
                 "p99": r.get("latency_ms.p99"), "median": r.get("latency_ms.median"),
                 "cosine": r.get("accuracy.cosine"), "build_ms": r.get("build_ms"),
                 "load_ms": r.get("load_ms"), "error": str(r.get("error") or "")[:160]}
print("MB-JSON " + json.dumps(out))
'''


#: alma's run of one case in seconds before it counts as hung.
ALMA_TIMEOUT = 420


def run(tag: str, script: str, args: List[str], timeout: float = 3600) -> Dict[str, Any]:
    """Runs one tool's script in a fresh process on THREADS threads; a run
    past `timeout` is killed and says so."""
    env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), TQDM_DISABLE="1",
               PYTHONWARNINGS="ignore")
    proc = subprocess.Popen([sys.executable, "-c", script] + args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The whole group: alma's forked children too.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"_failed": f"no result in {timeout:.0f} s", "_hung": True}
    for line in stdout.splitlines():
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    tail = (stderr or stdout).strip().splitlines()[-3:]
    return {"_failed": " / ".join(tail)}


def fmt(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def main() -> None:
    rounds = int(os.environ.get("MB_ALMA_ROUNDS", "2"))
    python_dir = str(Path(__file__).resolve().parent.parent / "python")
    alma_modes = ",".join(a for a, _ in PAIRS)
    mb_convs = ",".join(m for _, m in PAIRS)
    machine = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                machine = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print(f"alma-torch vs modelbench: PyTorch {torch.__version__}, {THREADS} threads, "
          f"{rounds} rounds alternated, CPU {machine} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="mb-alma-peer-") as tmp:
        for title, kind, batch, n_samples in CASES:
            alma: Dict[str, List[float]] = {}
            mb: Dict[str, List[float]] = {}
            alma_err: Dict[str, str] = {}
            alma_notes: set = set()
            mb_last: Dict[str, Dict[str, Any]] = {}
            for rnd in range(rounds):
                order = ["alma", "mb"] if rnd % 2 == 0 else ["mb", "alma"]
                for tool in order:
                    if tool == "alma":
                        # alma's default: each option in a forked child.
                        # A child that hangs (fork after the parent ran
                        # OpenMP: the child waits on a barrier of threads
                        # it does not have) is given up, and alma runs
                        # again in one process, and the table says so.
                        args = [kind, str(batch), str(n_samples), alma_modes, str(THREADS)]
                        out = run("ALMA-JSON", ALMA_RUN, args + ["1"], ALMA_TIMEOUT)
                        if out.get("_hung"):
                            alma_notes.add("alma with multiprocessing=True gave no result in "
                                           f"{ALMA_TIMEOUT} s (its forked child hung); "
                                           "these are multiprocessing=False")
                            out = run("ALMA-JSON", ALMA_RUN, args + ["0"], ALMA_TIMEOUT)
                        for mode, _ in PAIRS:
                            r = out.get(mode) or {}
                            if r.get("status") == "success" and r.get("throughput"):
                                alma.setdefault(mode, []).append(r["throughput"])
                            else:
                                alma_err[mode] = (" ".join(r.get("error") or [])
                                                  or out.get("_failed", "no result"))
                    else:
                        out = run("MB-JSON", MB_RUN,
                                  [kind, str(batch), os.path.join(tmp, "cache"), mb_convs,
                                   str(THREADS), python_dir])
                        for _, name in PAIRS:
                            r = out.get(name) or {"status": "error",
                                                  "error": out.get("_failed", "")}
                            # The build is made once and then found: keep
                            # the round that made it.
                            made = mb_last.get(name, {}).get("build_ms")
                            if made and r.get("build_ms") is not None:
                                r["build_ms"] = max(r["build_ms"], made)
                            mb_last[name] = r
                            if r.get("status") == "success" and r.get("throughput"):
                                mb.setdefault(name, []).append(r["throughput"])
            print(f"\n== {title}")
            for note in sorted(alma_notes):
                print(f"note: {note}")
            print(f"{'alma mode -> modelbench':50s} {'alma s/s':>9s} {'modelbench s/s':>14s} "
                  f"{'ratio':>6s} {'p99 ms':>8s} {'cosine':>9s} {'build s':>8s}")
            for mode, name in PAIRS:
                a = statistics.median(alma[mode]) if mode in alma else None
                m = statistics.median(mb[name]) if name in mb else None
                last = mb_last.get(name, {})
                ratio = m / a if a and m else None
                label = mode if mode == name else f"{mode} -> {name}"
                build = last.get("build_ms")
                print(f"{label:50s} {fmt(a, '9.1f')} {fmt(m, '14.1f')} {fmt(ratio, '6.2f')} "
                      f"{fmt(last.get('p99'), '8.2f')} {fmt(last.get('cosine'), '9.6f')} "
                      f"{fmt(build / 1e3 if build is not None else None, '8.2f')}")
                if a is None:
                    print(f"    alma could not run it: {alma_err.get(mode, '?')[:200]}")
                if m is None:
                    print(f"    modelbench could not run it: {last.get('error', '?')[:200]}")
    print("\nalma reports per option: total and inference seconds, samples, throughput. "
          "modelbench adds: a warm-up before timing, latency percentiles and the noise "
          "warnings, accuracy against EAGER (cosine, max error), build/compile seconds "
          "apart from inference (and a build cache), recompiles in the timed loop, peak "
          "memory, the machine and the int8 form, in JSON/CSV/HTML with history.")


if __name__ == "__main__":
    main()
