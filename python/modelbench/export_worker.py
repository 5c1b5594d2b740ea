"""python3 -m modelbench.export_worker JOB.json: one export of a module,
in a process of its own.

The Python front runs torch.onnx.export, torch.jit.trace and AOTInductor
(torch.export, then aoti_compile_and_package) here rather than
in the user's process: an exporter that crashes (a segmentation fault in a
symbolic function), hangs or runs out of memory fails that export, and the
conversions that need it, not the caller. The job names the module's worker
spec (the same file the benchmark workers load), its example inputs and what
to write; the answer (the opset used, or the error) goes to JOB's "answer"
file.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Dict


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    """Performs the export the job describes; returns the answer."""
    import torch

    from .host import load_model
    from .model import compile_aoti, export_module, trace_module

    # The job and its spec are the front's own (model.export_forms wrote
    # them from the caller's object, in the run folder): trusted.
    module = load_model(job["spec"], trust_code=True)
    example = torch.load(job["inputs"], map_location="cpu", weights_only=True)
    if job["what"] == "onnx":
        opset = export_module(module, example, job["names"], job["out_names"],
                              job["batched"], job["path"], job.get("opset"),
                              bool(job.get("dynamo")))
        return {"opset": opset}
    if job["what"] == "torchscript":
        trace_module(module, example, job["path"], job.get("device", "cpu"))
        return {}
    if job["what"] == "aoti":
        compile_aoti(module, example, job["path"], job.get("device", "cpu"))
        return {}
    raise ValueError(f"unknown export {job['what']!r}")


def main(argv: list) -> int:
    """Reads the job, exports, writes the answer; 0 when it exported."""
    if len(argv) != 1:
        sys.stderr.write("usage: python3 -m modelbench.export_worker JOB.json\n")
        return 2
    with open(argv[0]) as f:
        job = json.load(f)
    try:
        answer = run(job)
        status = 0
    except Exception as e:  # noqa: BLE001 - every failure is the export's
        traceback.print_exc()
        answer = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
        status = 1
    with open(job["answer"], "w") as f:
        json.dump(answer, f)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
