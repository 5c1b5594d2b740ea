"""``modelbench script``: find the models a Python script runs, and benchmark them.

    python3 -m modelbench script demo.py [--analyze-only] [bench's options] [-- ARGS]
    modelbench script demo.py::3fa2c1d0 -c EAGER,ORT_CPU --html report.html
    modelbench script examples/ --recursive --analyze-only --json found.json

As MLAgility's ``benchit script.py`` does: each script runs in a child
process (``modelbench.discover``) with a capture on ``nn.Module.__call__``;
every model it calls is recorded (class, where it was built, parameters,
each input signature it was called with as a model of its own, how often,
its hash),
then each one is benchmarked by one ``python3 -m modelbench bench`` run on
their model manifests: the PyTorch front's conversions and the engine's, the
same hash, export cache, reports and results database as
``benchmark_model``. ``# labels: key::value ...`` lines of a script are stored
with its models' results.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _engine

#: bench's options that take a value / are flags, passed through as given.
BENCH_VALUE_OPTIONS = (
    "--conversions", "--tier", "--baseline", "--reference", "--device", "--warmup",
    "--warmup-time", "--min-iterations", "--min-time", "--max-time", "--timeout",
    "--threads", "--seed", "--rtol", "--atol", "--max-error", "--calibration-samples",
    "--calibration-method", "--calibration-inputs", "--int8-weights", "--csv",
    "--markdown", "--html",
    "--predicted-ms", "--label", "--cache-dir", "--rebuild", "--log-dir", "--log-level",
    "--config", "--slo", "--ci-target", "--price-per-core-hour",
    # Node names: each of the script's models must have them (bench says
    # which does not).
    "--keep-float",
    # The executors' (docs/executors.md): the models' folders go where the
    # tasks can read them (see _run_parent).
    "--executor", "--split", "--partition", "--time-limit", "--mem", "--cpus-per-task",
    "--account", "--sbatch-arg", "--retries", "--run-dir", "--ssh-config",
    "--remote-modelbench",
)
BENCH_FLAGS = (
    "--allow-device-override", "--no-isolate", "--fail-fast", "--no-fallback",
    "--no-record", "--lean-cache", "--no-cache", "--traceback", "--no-wait", "--build-only",
    # Accepted for bench's sake; the manifests a script run writes are
    # trusted anyway (the user named the script: its modules are theirs).
    "--trust-code",
    # Issue 30's figures beside the steady state, and the roofline's opt-out.
    "--cold", "--fresh-inputs", "--cold-cache", "--no-roofline",
)
#: bench's input options: a script's models run on the inputs the script gave them.
REFUSED = ("--batch-size", "--shape", "--input-range", "--n-samples", "--inputs", "--labels",
           "--dim")
#: bench's sweeps (issue 16) re-run a model file at other batch sizes, dims or
#: threads; a script's models are benchmarked once, as the script called them.
NO_SWEEP = ("--sweep",)

LABEL_LINE = re.compile(r"^#\s*labels:\s*(.*)$")
LABEL_KEY = re.compile(r"^[A-Za-z0-9_.\-/]+$")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Passthrough(argparse.Action):
    """Keeps a bench option, in order, for the bench run."""

    def __call__(self, parser, namespace, values, option_string=None):
        namespace.bench.append(self.option_strings[-1])
        if values is not None and not isinstance(values, list):
            namespace.bench.append(values)


class _Refused(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string}: a script's models run on the inputs the script "
                     "gives them, so bench's input options do not apply")


class _NoSweep(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string}: a script's models are benchmarked once, as the "
                     "script called them; sweep a model file with 'modelbench bench "
                     "--sweep' (or 'modelbench load') instead")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="modelbench script",
        description="Runs each Python script with a hook on nn.Module.__call__, lists the "
        "models it calls and benchmarks each one under the conversions (default: EAGER "
        "and the default ONNX set), as the PyTorch front does.",
        epilog="Every option of 'modelbench bench' but its input options is accepted and "
        "passed on (-c, --tier, --html, --csv, --markdown, --no-record, --label, "
        "--min-time, --executor slurm|ssh:HOSTS and its options, ...). A script's "
        "'# labels: key::value ...' lines are stored with its results. Exit status: 0 "
        "every script ran and every conversion ran; 1 a script failed (raised, stopped, "
        "missing) or a conversion failed; 2 usage error.",
    )
    p.set_defaults(bench=[])
    a = p.add_argument
    a("targets", nargs="*", metavar="SCRIPT.py[::HASH]|FOLDER",
      help="scripts, folders of scripts; ::HASH keeps the models whose hash starts so")
    a("--analyze-only", action="store_true",
      help="list the models as a tree and stop (no benchmark)")
    a("--max-depth", type=int, default=0, metavar="N",
      help="also list (and benchmark) the modules called up to N levels inside a model "
           "(default 0: the models the script calls itself)")
    a("--max-shapes", type=int, default=8, metavar="N",
      help="a module called with several input shapes is one model per shape: "
           "keep its first N shapes (default 8; the others are counted)")
    a("--script-timeout", type=float, default=600.0, metavar="S",
      help="stop a script running longer than S seconds, keeping what it ran "
           "(default 600; 0: no limit)")
    a("--recursive", action="store_true", help="take the scripts of sub-folders too")
    a("--json", metavar="FILE",
      help="with --analyze-only, the discovery as JSON; else bench's JSON report")
    a("--opset", type=int, default=None, metavar="N",
      help="ONNX opset of the exports (default: the highest the exporter has)")
    a("--keep-run-dir", action="store_true",
      help="keep the folder of manifests, modules and inputs (printed)")
    a("--show-output", action="store_true", help="show the scripts' own output")
    a("-c", "--conversions", action=_Passthrough, metavar="LIST")
    for opt in BENCH_VALUE_OPTIONS[1:]:
        a(opt, action=_Passthrough, metavar="VALUE", help=argparse.SUPPRESS)
    for opt in BENCH_FLAGS:
        a(opt, action=_Passthrough, nargs=0, help=argparse.SUPPRESS)
    for opt in REFUSED:
        a(opt, action=_Refused, help=argparse.SUPPRESS)
    for opt in NO_SWEEP:
        a(opt, action=_NoSweep, help=argparse.SUPPRESS)
    return p


# ---------------------------------------------------------------------------
# Scripts
# ---------------------------------------------------------------------------


#: How deep a ``::HASH`` selection searches the module tree.
SEARCH_DEPTH = 64


@dataclass
class Target:
    path: str
    hash_prefix: str = ""
    error: str = ""  # why it cannot run (missing file)


@dataclass
class ScriptRun:
    """One script's discovery."""

    target: Target
    labels: Dict[str, str] = field(default_factory=dict)
    status: str = "ok"  # ok, raised, stopped, missing, failed
    error: str = ""
    traceback: str = ""
    output_tail: str = ""
    seconds: float = 0.0
    models: List[Dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> Dict[str, Any]:
        return {
            "path": self.target.path,
            "hash": self.target.hash_prefix or None,
            "labels": self.labels,
            "status": self.status,
            "error": self.error or None,
            "traceback": self.traceback or None,
            "seconds": round(self.seconds, 3),
            "models": self.models,
        }


def expand_targets(items: Sequence[str], recursive: bool) -> List[Target]:
    """Scripts of the command line: files as given, folders' *.py files
    (sorted; sub-folders' too with recursive); PATH::HASH keeps a hash."""
    targets: List[Target] = []
    for item in items:
        path, _, prefix = item.partition("::")
        bad = [p for p in prefix.split(",") if not re.fullmatch(r"[0-9a-fA-F]{4,64}", p)]
        if prefix and bad:
            targets.append(Target(path, prefix, f"'::{prefix}': a hash prefix is 4 to 64 hex "
                                  "digits (several: ::H0,H1)"))
            continue
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
                found += [os.path.join(root, f) for f in files if f.endswith(".py")]
                if not recursive:
                    break
            if not found:
                targets.append(Target(path, prefix, "no .py file in this folder"
                                      + ("" if recursive else " (--recursive searches sub-folders)")))
            targets += [Target(f, prefix.lower()) for f in sorted(found)]
        elif os.path.isfile(path):
            targets.append(Target(path, prefix.lower()))
        else:
            targets.append(Target(path, prefix, "no such file or folder"))
    return targets


def read_labels(path: str) -> Tuple[Dict[str, str], List[str]]:
    """The script's '# labels: key::value key2::v1,v2' lines: (labels,
    problems)."""
    labels: Dict[str, str] = {}
    problems: List[str] = []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return labels, [str(e)]
    for n, line in enumerate(lines, 1):
        m = LABEL_LINE.match(line.strip())
        if not m:
            continue
        for token in m.group(1).split():
            key, sep, value = token.partition("::")
            if not sep or not LABEL_KEY.match(key):
                problems.append(f"{path}:{n}: label {token!r} is not key::value "
                                "(keys: letters, digits, _ - . /)")
                continue
            labels[key] = value
    return labels, problems


def _bench_options_error(bench: List[str]) -> str:
    """bench's verdict on the options passed on to it, before any script runs
    (a bad --device or --min-time would otherwise be found only after every
    script had run and exported): bench parses its options before it opens a
    model, so a model that does not exist tells options (exit 2) from the rest.
    Returns bench's message for a bad option, "" when they are fine."""
    with tempfile.TemporaryDirectory(prefix="modelbench-options-") as folder:
        proc = subprocess.run(
            _engine.command("bench", os.path.join(folder, "no-model.onnx"), *bench),
            env=_engine.environment(worker=False), capture_output=True, text=True, errors="replace")
    if proc.returncode != EXIT_USAGE:
        return ""
    return proc.stderr.replace("modelbench bench:", "modelbench script:", 1)


def _run_parent(executor: Optional[str], cache_dir: Optional[str]) -> Optional[str]:
    """Where the run folder (manifests, pickled modules, inputs) goes: the
    temporary folder, or with an executor <cache>/script-runs, which Slurm's
    nodes share anyway (docs/executors.md); over SSH the folders are copied
    to the hosts, and a kept folder (--no-wait) must not vanish with /tmp
    either."""
    if not executor:
        return None
    from .api import shared_run_parent

    return shared_run_parent(cache_dir, "script-runs")


def _tail(path: str, lines: int = 12) -> str:
    try:
        with open(path, errors="replace") as f:
            return "\n".join(f.read().splitlines()[-lines:])
    except OSError:
        return ""


def run_script(target: Target, index: int, run_dir: str, args: argparse.Namespace,
               script_args: List[str], formats: List[str], cache_dir: Optional[str],
               cache: bool) -> ScriptRun:
    """Runs one script under discovery in a child process."""
    run = ScriptRun(target)
    if target.error:
        run.status, run.error = "missing", target.error
        return run
    run.labels, problems = read_labels(target.path)
    for problem in problems:
        print(f"modelbench script: warning: {problem}", file=sys.stderr)
    folder = os.path.join(run_dir, f"{index:03d}-{os.path.splitext(os.path.basename(target.path))[0]}")
    os.makedirs(folder, exist_ok=True)
    spec = {
        "script": os.path.abspath(target.path),
        "args": script_args,
        # A hash selects at any depth: a submodule's is found without
        # --max-depth; the tree then shows the selected models only.
        "max_depth": SEARCH_DEPTH if target.hash_prefix else args.max_depth,
        "max_shapes": args.max_shapes,
        "hash": target.hash_prefix,
        "benchmark": not args.analyze_only,
        "formats": formats,
        "opset": args.opset,
        "cache": cache,
        "cache_dir": cache_dir,
        "labels": run.labels,
        "folder": folder,
        "records": os.path.join(folder, "records.jsonl"),
    }
    spec_path = os.path.join(folder, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=1)
    log_path = os.path.join(folder, "output.log")
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        out = None if args.show_output else log
        proc = subprocess.Popen(
            [sys.executable, "-m", "modelbench.discover", spec_path],
            env=_engine.environment(worker=False), stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT if out else None, start_new_session=True,
        )
        timeout = args.script_timeout if args.script_timeout > 0 else None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            run.status = "stopped"
            run.error = f"stopped after --script-timeout {args.script_timeout:g} s"
    run.seconds = time.perf_counter() - started
    _read_records(run, spec["records"], proc.returncode)
    if run.status != "ok":
        run.output_tail = _tail(log_path)
    return run


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the script's process group (the script sees ScriptStopped
    and its records are closed), SIGKILL 5 s later if it is still there."""
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _read_records(run: ScriptRun, path: str, returncode: Optional[int]) -> None:
    ended = None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                record = json.loads(line)
                event = record.pop("event", None)
                if event == "model":
                    run.models.append(record)
                elif event == "end":
                    ended = record
    except (OSError, json.JSONDecodeError):
        pass
    run.models.sort(key=lambda m: m["index"])
    if ended is not None:
        for model in run.models:
            model["calls"] = ended["calls"].get(str(model["index"]), model["calls"])
            group = str(model.get("module_index", model["index"]))
            model["shapes"] = ended.get("shapes", {}).get(group, 1)
            model["other_shape_calls"] = ended.get("other_shape_calls", {}).get(group, 0)
        if run.status == "ok":
            run.status = ended["status"]
            run.error, run.traceback = ended["error"], ended["traceback"]
        elif ended.get("traceback"):
            run.traceback = ended["traceback"]
    elif run.status == "ok":
        run.status = "failed"
        run.error = f"the discovery process ended without a result (exit status {returncode})"


# ---------------------------------------------------------------------------
# The tree
# ---------------------------------------------------------------------------


def _count(n: int) -> str:
    return f"{n:,}"


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


STATUS_TEXT = {
    "ok": "ran to the end",
    "raised": "raised an exception after the models below ran",
    "stopped": "was stopped",
    "missing": "cannot run",
    "failed": "failed",
}


def print_tree(run: ScriptRun, out=sys.stdout) -> None:
    """MLAgility-style status of one script: its models, nested by depth."""
    w = out.write
    labels = " ".join(f"{k}::{v}" for k, v in run.labels.items())
    w(f"\n{run.target.path}" + (f"::{run.target.hash_prefix}" if run.target.hash_prefix else "")
      + (f"  (labels: {labels})" if labels else "") + "\n")
    if run.status != "ok":
        what = STATUS_TEXT.get(run.status, run.status)
        if run.status == "raised" and not run.models:
            what = "raised an exception"
        w(f"  ! the script {what}: {run.error}\n")
        if run.traceback:
            w("    " + run.traceback.rstrip().replace("\n", "\n    ") + "\n")
        elif run.output_tail:
            w("    output (last lines):\n    " + run.output_tail.replace("\n", "\n    ") + "\n")
    if not run.models:
        if run.status in ("ok", "raised", "stopped"):
            w("  no model: the script called no torch.nn.Module\n")
        return
    last_of_module = {m.get("module_index", m["index"]): m["index"] for m in run.models}
    for m in run.models:
        pad = "  " + "    " * m["depth"]
        shown = m.get("variable") or m["name"]
        shapes = m.get("shapes", 1)
        shape = f", input shape {m.get('shape_index', 0) + 1} of {shapes}" if shapes > 1 else ""
        w(f"{pad}{shown} (executed {m['calls']}x{shape})\n")
        rows = [
            ("Class", m["class"]),
            ("Location", m["location"]),
            ("Parameters", f"{_count(m['parameters'])} ({_bytes(m['parameter_bytes'])})"),
            ("Input", ", ".join(f"{i['name']}: {i['value']}" for i in m["inputs"]) or "-"),
            ("Hash", (m["sha256"] or "-")[:12]),
        ]
        if m.get("benchmark"):
            rows.append(("Status", m["benchmark"]))
        for key, value in rows:
            w(f"{pad}    {key + ':':<12}{value}\n")
        group = m.get("module_index", m["index"])
        listed = sum(1 for x in run.models if x.get("module_index", x["index"]) == group)
        if last_of_module[group] != m["index"] or listed >= shapes:
            continue
        if run.target.hash_prefix:
            # Each shape has its own hash: a selection may keep some.
            w(f"{pad}    ! called with {shapes} input shapes; ::{run.target.hash_prefix} "
              f"selects {listed}, only those are benchmarked\n")
        else:
            w(f"{pad}    ! {shapes - listed} more input shape(s) in "
              f"{m['other_shape_calls']} call(s) are not listed: --max-shapes "
              f"{shapes} keeps them all\n")


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------


def _split_script_args(argv: List[str]) -> Tuple[List[str], List[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _bench_value(bench: List[str], option: str) -> Optional[str]:
    value = None
    for i, item in enumerate(bench[:-1]):
        if item == option:
            value = bench[i + 1]
    return value


#: benchit's spellings, answered with ours.
BENCHIT_SPELLINGS = {
    "--script-args": "the script's arguments go after '--' (modelbench script demo.py -- "
                     "--size 224)",
    "-s": "give the folder itself (modelbench script DIR, --recursive for its sub-folders)",
    "--search-dir": "give the folder itself (modelbench script DIR, --recursive for its "
                    "sub-folders)",
    "--all": "every model a script runs is benchmarked unless SCRIPT.py::HASH selects some",
}


def main(argv: List[str]) -> int:
    ours, script_args = _split_script_args(list(argv))
    parser = build_parser()
    for item in ours:
        flag = item.split("=", 1)[0]
        if flag in BENCHIT_SPELLINGS:
            parser.error(f"{flag} is benchit's: {BENCHIT_SPELLINGS[flag]}")
    args = parser.parse_args(ours)
    if not args.targets:
        parser.error("give at least one SCRIPT.py or folder")
    if args.max_depth < 0:
        parser.error("--max-depth must be >= 0")
    if args.max_shapes < 1:
        parser.error(f"--max-shapes must be >= 1, got {args.max_shapes}")
    if importlib.util.find_spec("torch") is None:
        print("modelbench script: PyTorch is not installed for this Python "
              f"({sys.executable}): apt install python3-torch", file=sys.stderr)
        return EXIT_FAILURE
    from . import conversions as conv_table
    from .capture import wanted_formats

    bench = list(args.bench)
    named = _bench_value(bench, "--conversions")
    tier = _bench_value(bench, "--tier")
    names: Optional[List[str]] = None
    try:
        if named is not None:
            # A command line's ids are modelbench's, as bench's -c takes them.
            names = conv_table.resolve([f"mb:{n.strip()}" if n.strip().isdigit() else n
                                        for n in named.split(",") if n.strip()])
            bench[bench.index(named)] = ",".join(names)  # alma aliases to ours
        formats = wanted_formats(names, int(tier) if tier and tier.isdigit() else None)
    except (ValueError, TypeError) as e:
        parser.error(f"-c: {e}")
    if args.json and not args.analyze_only:
        bench += ["--json", args.json]
    cache = "--no-cache" not in bench
    cache_dir = _bench_value(bench, "--cache-dir")

    bad = _bench_options_error(bench)
    if bad:
        sys.stderr.write(bad)
        return EXIT_USAGE

    executor = _bench_value(bench, "--executor")
    if executor and executor.startswith("ssh:") and _bench_value(
            bench, "--remote-modelbench") is None:
        # The hosts need the Python front for the PyTorch conversions.
        bench += ["--remote-modelbench", "python3 -m modelbench"]
    no_wait = "--no-wait" in bench
    targets = expand_targets(args.targets, args.recursive)
    run_dir = tempfile.mkdtemp(prefix="modelbench-script-", dir=_run_parent(executor, cache_dir))
    rc = EXIT_OK
    try:
        runs = []
        for i, target in enumerate(targets):
            run = run_script(target, i, run_dir, args, script_args, formats, cache_dir, cache)
            runs.append(run)
            print_tree(run)
            sys.stdout.flush()
            if run.status != "ok":
                rc = EXIT_FAILURE
        n_models = sum(len(r.models) for r in runs)
        print(f"\n{len(runs)} script{'s' if len(runs) != 1 else ''}, {n_models} "
              f"model{'s' if n_models != 1 else ''} found"
              + (f", {sum(r.status != 'ok' for r in runs)} failed" if rc else ""))
        if args.analyze_only:
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"modelbench_script": 1, "scripts": [r.as_json() for r in runs]},
                              f, indent=1)
            return rc
        manifests = [m["manifest"] for r in runs for m in r.models
                     if m.get("manifest") and m.get("benchmark") is None]
        if not manifests:
            selected = [r.target for r in runs if r.target.hash_prefix]
            if selected and not any(r.models for r in runs if r.target.hash_prefix):
                print("no model to benchmark: no model's hash starts with "
                      + ", ".join(f"{t.path}::{t.hash_prefix}" for t in selected)
                      + " (--analyze-only lists every model's hash, at every depth with "
                      "--max-depth)")
            else:
                print("no model to benchmark")
            return EXIT_FAILURE
        if executor and executor.startswith("ssh:"):
            from .model import make_self_contained

            for manifest in manifests:
                make_self_contained(manifest)
        if _bench_value(bench, "--baseline") is None and (names is None or "EAGER" in names):
            bench += ["--baseline", "EAGER"]
        print(f"\nbenchmarking {len(manifests)} model{'s' if len(manifests) != 1 else ''}\n")
        sys.stdout.flush()
        # The manifests' pytorch forms are the modules of the script the user
        # named, pickled by this front into its run folder: the user's own
        # code, which they asked to run (--trust-code lets the engine load it).
        bench_rc = subprocess.call(_engine.command("bench", *manifests, *bench, "--trust-code"),
                                   env=_engine.environment(worker=False))
        return max(rc, bench_rc)
    finally:
        if no_wait and not args.analyze_only and os.path.isdir(run_dir):
            print(f"run folder kept for the tasks: {run_dir} (remove it once "
                  "'modelbench jobs collect' has the results)")
        elif args.keep_run_dir:
            print(f"run folder kept: {run_dir}")
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
