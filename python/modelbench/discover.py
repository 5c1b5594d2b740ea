"""The child process of ``modelbench script``: runs one user script and
records every model it calls.

``python3 -m modelbench.discover SPEC.json`` runs the script named in the
spec as ``__main__`` (its folder first on sys.path, its arguments in
sys.argv, as ``python3 SCRIPT.py ARGS`` would), with a capture on
``nn.Module.__call__`` (``modelbench.capture``). A model is a module
called with one input signature (a module called with three input shapes
is three models, up to ``max_shapes`` of them); each is recorded at the
end of its first call: class, where it was built, parameters, the input
signature, its hash; with ``benchmark`` in the spec the models to
benchmark are also written as model manifests then (module, inputs, ONNX
export), so that whatever happens later (the script raises, hangs and is
stopped) what was found is kept. Records go to an append-only JSON-lines
file as they happen; the last line says how the script ended.

It runs in its own process because the script runs PyTorch operators, and
the process that forks the engine's workers never may (GNU OpenMP does not
survive fork() after use): the parent starts a fresh
``python3 -m modelbench bench`` on the manifests.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback
from typing import Any, Dict, List, Optional, Set, Tuple

from . import capture

#: A call's input signature: ((argument name, its description), ...).
Signature = Tuple[Tuple[str, str], ...]
#: A record: one module called with one input signature.
Key = Tuple[int, Signature]
#: How many distinct input signatures of one module become models (--max-shapes).
DEFAULT_MAX_SHAPES = 8


class ScriptStopped(BaseException):
    """Raised in the script when the parent asks it to stop (its timeout)."""


class Discovery(capture.Listener):
    """Records the models of one script run (see the module doc)."""

    def __init__(self, spec: Dict[str, Any]) -> None:
        self.spec = spec
        self.max_depth = int(spec.get("max_depth", 0))
        # ::H0,H1: only the models whose hash starts with one of these are
        # shown and benchmarked (whatever their depth).
        self.hash_prefixes = [h.lower() for h in (spec.get("hash") or "").split(",") if h]
        # Each distinct input signature a module is called with is a model
        # of its own: records are keyed by (id(module), signature).
        self.max_shapes = int(spec.get("max_shapes") or DEFAULT_MAX_SHAPES)
        self.records: Dict[Key, Dict[str, Any]] = {}
        self.modules: Dict[int, Any] = {}  # keeps ids unique while recorded
        self.order: Dict[Key, int] = {}  # -> index, given when a first call starts
        self.names: Dict[int, Optional[str]] = {}  # id -> "net.block"
        self.shapes: Dict[int, List[Key]] = {}  # id -> its signatures, in call order
        # id -> the signatures past max_shapes (not recorded) and their calls
        self.other_shapes: Dict[int, Set[Signature]] = {}
        self.other_calls: Dict[int, int] = {}
        self.stack: List[Key] = []
        self.out = open(spec["records"], "a", buffering=1)
        self.written: Dict[str, str] = {}  # sha256 -> manifest (one per hash)

    def emit(self, record: Dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def on_call(self, module, args, kwargs, depth, call):
        mid = id(module)
        signature = capture.call_signature(module, args, kwargs)
        key: Key = (mid, tuple((a["name"], a["value"]) for a in signature))
        record = self.records.get(key)
        if record is not None:
            record["calls"] += 1
            self.stack.append(key)
            try:
                return call()
            finally:
                self.stack.pop()
        if key in self.order:  # a recursive call inside its own first call
            return call()
        seen = self.shapes.setdefault(mid, [])
        if len(seen) >= self.max_shapes:
            # An input signature past --max-shapes: counted, not kept.
            self.other_shapes.setdefault(mid, set()).add(key[1])
            self.other_calls[mid] = self.other_calls.get(mid, 0) + 1
            return call()
        seen.append(key)
        parent = self.stack[-1] if self.stack else None
        parent_module = self.modules.get(parent[0]) if parent else None
        if mid not in self.names:
            variable = _variable_name(module, parent_module)
            if parent is not None and variable:
                variable = (f"{self.names.get(parent[0]) or parent_module.__class__.__name__}"
                            f".{variable}")
            self.names[mid] = variable
        variable = self.names[mid]
        self.order[key] = len(self.order)
        self.modules[mid] = module
        self.stack.append(key)
        try:
            # The inputs before the call: a module may change them in place.
            try:
                bench_module, tensors = capture.benchmarkable(module, args, kwargs)
                why_not = ""
            except capture.NotBenchmarkable as e:
                bench_module, tensors, why_not = module, None, str(e)
            started = time.perf_counter()
            result = call()
            first_call_ms = (time.perf_counter() - started) * 1e3
        finally:
            self.stack.pop()
        self.record(module, key, depth, parent, signature, tensors, why_not, first_call_ms,
                    variable, bench_module)
        return result

    def record(self, module, key, depth, parent, signature, tensors, why_not, first_call_ms,
               variable, bench_module) -> None:
        """Records one model; bench_module is what is hashed and benchmarked
        (the module, or it with its constant arguments bound)."""
        params, size = capture.parameter_stats(module)
        first = self.shapes[key[0]][0]
        record: Dict[str, Any] = {
            "event": "model",
            "index": self.order[key],
            # The module's first signature's model (itself for the first):
            # the records of one module called with several input shapes.
            "module_index": self.order[first],
            "shape_index": self.shapes[key[0]].index(key),
            "class": capture.class_name(module),
            "name": type(module).__name__,
            "variable": variable,
            "location": capture.built_at(module),
            "depth": depth,
            "parent": self.order.get(parent) if parent is not None else None,
            "parameters": params,
            "parameter_bytes": size,
            "inputs": signature,
            "calls": 1,
            "first_call_ms": first_call_ms,
            "sha256": None,
            "benchmark": None,
            "manifest": None,
        }
        self.records[key] = record
        try:
            if tensors is not None:
                record["sha256"] = capture.model_hash(bench_module, tensors, batch=True)
        except Exception as e:  # noqa: BLE001 - a model we cannot hash is still listed
            why_not = f"cannot hash it: {type(e).__name__}: {e}"
        if self.hash_prefixes and not any((record["sha256"] or "").startswith(h)
                                          for h in self.hash_prefixes):
            return  # not selected: neither shown nor benchmarked
        if why_not:
            record["benchmark"] = f"not benchmarked: {why_not}"
        elif self.spec.get("benchmark"):
            self.write_manifest(bench_module, record, tensors)
        self.emit(record)

    def write_manifest(self, module, record, tensors) -> None:
        sha = record["sha256"]
        if sha in self.written:
            record["manifest"] = self.written[sha]
            record["benchmark"] = "same model as one found before"
            return
        folder = os.path.join(self.spec["folder"], f"{record['name']}-{sha[:12]}")
        origin = capture.ModelOrigin(self.spec["script"], record["location"],
                                     self.spec.get("labels") or {})
        try:
            path = capture.write_model(
                folder, module, tensors, sha, origin, self.spec.get("formats") or [],
                self.spec.get("opset"), bool(self.spec.get("cache", True)),
                self.spec.get("cache_dir"),
            )
        except Exception as e:  # noqa: BLE001 - one model's failure spares the others
            record["benchmark"] = f"not benchmarked: {type(e).__name__}: {e}".splitlines()[0]
            record["traceback"] = traceback.format_exc()
            return
        self.written[sha] = path
        record["manifest"] = path

    def finish(self, status: str, error: str = "", trace: str = "") -> None:
        self.emit({
            "event": "end",
            "status": status,
            "error": error,
            "traceback": trace,
            "calls": {str(r["index"]): r["calls"] for r in self.records.values()},
            # Per module (its first record's index): how many input
            # signatures it was called with, those past --max-shapes included,
            # and how many calls those had.
            "shapes": {str(self.order[keys[0]]): sum(k in self.records for k in keys)
                       + len(self.other_shapes.get(mid, ()))
                       for mid, keys in self.shapes.items()},
            "other_shape_calls": {str(self.order[self.shapes[mid][0]]): n
                                  for mid, n in self.other_calls.items()},
        })
        self.out.close()


def _variable_name(module: Any, parent: Any) -> Optional[str]:
    """What the script calls the module: its attribute name in the module
    that calls it; else the name (or dict entry) bound to it in the
    outermost frame of the user's code that has one."""
    if parent is not None:
        for name, child in parent.named_children():
            if child is module:
                return name
        return None
    frames = []
    frame = sys._getframe(3)
    while frame is not None:
        if not capture._is_library(frame.f_code.co_filename):
            frames.append(frame)
        frame = frame.f_back
    for frame in reversed(frames):
        scopes = [frame.f_locals] if frame.f_locals is frame.f_globals else [frame.f_locals, frame.f_globals]
        named = None
        for scope in scopes:
            for name, value in list(scope.items()):
                if name.startswith("_"):
                    continue
                if isinstance(value, dict):
                    for key, item in value.items():
                        if item is module and isinstance(key, (str, int)):
                            return f"{name}[{key!r}]"
                elif value is module and named is None:
                    named = name
        if named:
            return named
    return None


def _stop(signum, frame):  # noqa: ARG001 - signal handler signature
    raise ScriptStopped(f"stopped by signal {signum}")


def run(spec: Dict[str, Any]) -> int:
    """Runs the script of `spec` under discovery; returns 0 (the outcome is
    in the records file)."""
    script = spec["script"]
    discovery = Discovery(spec)
    signal.signal(signal.SIGTERM, _stop)
    capture.track_construction()
    sys.argv = [script] + list(spec.get("args") or [])
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    status, error, trace = "ok", "", ""
    try:
        with capture.listening(discovery):
            runpy.run_path(script, run_name="__main__")
    except ScriptStopped as e:
        status, error = "stopped", str(e)
    except SystemExit as e:
        if e.code not in (None, 0):
            status, error = "raised", f"SystemExit: {e.code}"
            trace = traceback.format_exc()
    except BaseException as e:  # noqa: BLE001 - the script's own failure is data
        status, error = "raised", f"{type(e).__name__}: {e}".splitlines()[0]
        trace = traceback.format_exc()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    discovery.finish(status, error, trace)
    return 0


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m modelbench.discover SPEC.json", file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        spec = json.load(f)
    rc = run(spec)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: the script's threads and atexit handlers
    # are not ours to wait for once the records are written.
    os._exit(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
