"""NNCF post-training quantisation of an ONNX model, for INT8_STATIC+OPENVINO.

The C engine's build runs this file as a script (never imported by the
package: it needs nothing of modelbench, and a script starts without
importing torch) with the Python that has NNCF (the project's virtual
environment, scripts/python-venv.sh):

    python3 nncf_quantize.py --model IN.onnx --calibration DIR --out OUT.onnx \
        [--overflow-fix enable|disable]

DIR holds the calibration batches the engine calibrates every int8
conversion on, written by it: ``batches.json`` (``{"inputs": [names],
"batches": n}``) and ``b<i>_<k>.npy`` for batch i, input k. NNCF's ONNX
backend quantises the model for the CPU (its hardware configuration for
OpenVINO's CPU plugin: per-channel symmetric int8 weights, per-tensor
activations, the performance preset, fast bias correction; with the
overflow fix, 7-bit weights on every layer for CPUs without VNNI), collecting its
statistics with ONNX Runtime; the result is a QDQ ONNX model that OpenVINO
turns into int8 kernels. On success the last line of stdout is a JSON object
(``nncf``: NNCF's version, ``quantize_nodes``: QuantizeLinear nodes in the
result, ``batches``). Exit status: 0 done; 3 NNCF (or what it needs) cannot
be imported here, with the reason; 2 bad arguments or calibration files; 1
NNCF failed on this model, with its message.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, NoReturn

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3


def _fail(code: int, message: str) -> NoReturn:
    print(f"nncf_quantize: {message}", file=sys.stderr)
    sys.exit(code)


def read_batches(folder: str) -> List[Dict[str, Any]]:
    """The calibration batches in `folder` as NNCF's ONNX backend takes them:
    one {input name: array} per batch. Exits with EXIT_USAGE naming the file
    at fault."""
    import numpy as np

    index = os.path.join(folder, "batches.json")
    try:
        with open(index, encoding="utf-8") as f:
            meta = json.load(f)
        names = meta["inputs"]
        count = int(meta["batches"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _fail(EXIT_USAGE, f"{index}: {exc}")
    if not isinstance(names, list) or not names or count < 1:
        _fail(EXIT_USAGE, f"{index}: needs a non-empty 'inputs' list and 'batches' >= 1")
    batches = []
    for i in range(count):
        batch = {}
        for k, name in enumerate(names):
            path = os.path.join(folder, f"b{i}_{k}.npy")
            try:
                batch[name] = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as exc:
                _fail(EXIT_USAGE, f"{path}: {exc}")
        batches.append(batch)
    return batches


def main(argv: List[str]) -> int:
    """Quantises --model with NNCF on --calibration's batches into --out."""
    parser = argparse.ArgumentParser(prog="nncf_quantize.py", description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="the fp32 ONNX model")
    parser.add_argument("--calibration", required=True, help="folder of calibration batches")
    parser.add_argument("--out", required=True, help="where the QDQ ONNX model goes")
    parser.add_argument(
        "--overflow-fix", choices=("enable", "disable"), default="disable",
        help="7-bit weights on every layer (CPUs without VNNI, whose int8 "
             "products can saturate) or 8-bit ones",
    )
    parser.add_argument(
        "--ignore", action="append", default=[], metavar="NODE",
        help="a node NNCF leaves in float (its ignored scope; --keep-float); repeatable",
    )
    args = parser.parse_args(argv)
    # No network at run time: NNCF sends usage events (openvino_telemetry)
    # unless told it runs in CI, its only switch for them.
    os.environ["NNCF_CI"] = "1"
    # NNCF imports torch whenever it can, for its torch tensor backend; the
    # ONNX backend never uses it, and importing it is a third of this
    # script's time (a slow build of every INT8_STATIC+OPENVINO candidate).
    # None in sys.modules makes "import torch" fail, which NNCF allows.
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    try:
        import nncf  # noqa: F401 - the availability check itself
        import onnx
        import onnxruntime  # noqa: F401 - NNCF's ONNX backend collects with it
    except Exception as exc:  # noqa: BLE001 - any import failure means unavailable
        _fail(EXIT_UNAVAILABLE, f"cannot import NNCF's ONNX backend with {sys.executable}: {exc}")
    import logging

    # NNCF logs progress bars and notes to stdout: quiet, so that the last
    # line is ours; its warnings still reach stderr.
    logging.getLogger("nncf").setLevel(logging.WARNING)
    batches = read_batches(args.calibration)
    try:
        model = onnx.load(args.model)
    except Exception as exc:  # noqa: BLE001 - onnx raises several types
        _fail(EXIT_USAGE, f"{args.model}: {exc}")
    from nncf.quantization.advanced_parameters import (
        AdvancedQuantizationParameters,
        OverflowFix,
    )

    fix = OverflowFix.ENABLE if args.overflow_fix == "enable" else OverflowFix.DISABLE
    try:
        quantized = nncf.quantize(
            model,
            nncf.Dataset(batches),
            preset=nncf.QuantizationPreset.PERFORMANCE,
            target_device=nncf.TargetDevice.CPU,
            subset_size=len(batches),
            advanced_parameters=AdvancedQuantizationParameters(overflow_fix=fix),
            # Nodes kept in float: NNCF quantises neither them nor their
            # inputs; a name the model lacks is NNCF's error (validate).
            ignored_scope=nncf.IgnoredScope(names=args.ignore) if args.ignore else None,
        )
        onnx.save(quantized, args.out)
    except Exception as exc:  # noqa: BLE001 - NNCF's own errors vary
        _fail(EXIT_FAILED, f"NNCF {nncf.__version__} cannot quantise {args.model}: "
              f"{type(exc).__name__}: {exc}")
    count = sum(1 for node in quantized.graph.node if node.op_type == "QuantizeLinear")
    print(json.dumps({"nncf": nncf.__version__, "quantize_nodes": count,
                      "batches": len(batches), "overflow_fix": args.overflow_fix}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
