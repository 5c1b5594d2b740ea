"""Small TorchScript files for the libtorch runtime's tests.

Usage: /usr/bin/python3 tests/torchscript_models.py DIR

Writes into DIR, for each model NAME:
  NAME.pt           torch.jit.trace or torch.jit.script, then torch.jit.save
  NAME.in<i>.npy    the inputs forward() is called with, in order
  NAME.out<i>.npy   what torch itself returns for them (the file reloaded
                    with torch.jit.load), flattened as modelbench flattens
                    it: tuples, lists and dicts in order, quantized tensors
                    dequantized, float16/bfloat16 as float32
plus models whose use is an error (their .pt only, and inputs), a corrupt
.pt, and model manifests (docs/model-manifest.md) naming a TorchScript file
with declared inputs and outputs.
"""
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(y, 1))


class TwoInTwoOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, a, b) -> Tuple[torch.Tensor, torch.Tensor]:
        return a @ self.w + b, torch.relu(b).sum(1)


class DictOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x) -> Dict[str, torch.Tensor]:
        return {"logits": self.fc(x), "features": x * 2.0}


class ListOut(torch.nn.Module):
    def forward(self, x) -> List[torch.Tensor]:
        return [x + 1.0, x.sum(0)]


class Embedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 6)

    def forward(self, ids):
        return self.emb(ids).mean(1)


class Reduced(torch.nn.Module):
    """float16, bfloat16 and quantized outputs."""

    def forward(self, x) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = torch.quantize_per_tensor(x, 0.05, 128, torch.quint8)
        return (x * 2.0).half(), x.to(torch.bfloat16), q


class DefaultArg(torch.nn.Module):
    def forward(self, x, scale: Optional[torch.Tensor] = None):
        if scale is None:
            return x * 3.0
        return x * scale


class ReturnsInt(torch.nn.Module):
    def forward(self, x) -> Tuple[torch.Tensor, int]:
        return x + 1.0, 3


class IntArgument(torch.nn.Module):
    def forward(self, x, k: int):
        return x * k


def flatten(value):
    if isinstance(value, torch.Tensor):
        if value.is_quantized:
            value = value.dequantize()
        if value.dtype in (torch.float16, torch.bfloat16):
            value = value.float()
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flatten(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flatten(v)]
    raise TypeError(f"unexpected output {type(value)}")


def save(out, name, module, inputs, script, expected=True):
    module.eval()
    with torch.no_grad():
        m = torch.jit.script(module) if script else torch.jit.trace(module, inputs)
    path = os.path.join(out, name + ".pt")
    torch.jit.save(m, path)
    for i, x in enumerate(inputs):
        np.save(os.path.join(out, f"{name}.in{i}.npy"), x.numpy())
    if not expected:
        return
    loaded = torch.jit.load(path)
    with torch.inference_mode():
        outputs = flatten(loaded(*inputs))
    for i, y in enumerate(outputs):
        np.save(os.path.join(out, f"{name}.out{i}.npy"), y.numpy())


def manifest(out, name, pt, inputs, outputs, reference=None):
    doc = {
        "modelbench_model": 1,
        "name": name,
        "inputs": inputs,
        "outputs": outputs,
        "formats": {"torchscript": {"path": pt}},
    }
    if reference:
        doc["reference"] = reference
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    save(out, "cnn", Cnn(), (torch.randn(1, 3, 16, 16),), script=False)
    save(out, "two_io", TwoInTwoOut(), (torch.randn(2, 4), torch.randn(2, 3)),
         script=True)
    save(out, "dict_out", DictOut(), (torch.randn(2, 4),), script=True)
    save(out, "list_out", ListOut(), (torch.randn(2, 3),), script=True)
    save(out, "int64_in", Embedding(),
         (torch.randint(0, 10, (2, 5), dtype=torch.int64),), script=False)
    save(out, "reduced", Reduced(), (torch.randn(2, 5),), script=True)
    save(out, "default_arg", DefaultArg(), (torch.randn(2, 2),), script=True)
    save(out, "returns_int", ReturnsInt(), (torch.randn(2, 2),), script=True,
         expected=False)
    save(out, "int_argument", IntArgument(), (torch.randn(2, 2),),
         script=True, expected=False)
    # A zip (so it is taken for TorchScript) that libtorch cannot read.
    with open(os.path.join(out, "corrupt.pt"), "wb") as f:
        f.write(b"PK\x03\x04" + b"\x00" * 60)
    manifest(out, "cnn_manifest", "cnn.pt",
             [{"name": "x", "dtype": "float32", "shape": [1, 3, 16, 16]}],
             [{"name": "logits", "dtype": "float32", "shape": [1, 10]}])
    manifest(out, "int64_manifest", "int64_in.pt",
             [{"name": "ids", "dtype": "int64", "shape": [2, 5]}],
             [{"name": "mean", "dtype": "float32", "shape": [2, 6]}],
             reference="TORCHSCRIPT")


if __name__ == "__main__":
    main()
