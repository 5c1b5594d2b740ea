#!/usr/bin/python3
"""A control for modelbench's int8 accuracy: PyTorch's own static int8
(FX graph mode, fbgemm: per-channel int8 weights, histogram-calibrated uint8
activations) on the same seeded random-weight models tools/export_torch_models.py
exports, calibrated on 100 and judged on 50 uniform [-1, 1) inputs (the
distribution modelbench generates). If PyTorch loses as much accuracy as
INT8_STATIC+* does, the loss belongs to the model, not to our quantiser.

Usage: torch_int8_control.py [NAME ...]   (resnet18, mobilenet_v2, ...)
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402
from torch.ao.quantization import get_default_qconfig_mapping  # noqa: E402
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx  # noqa: E402

import export_torch_models as E  # noqa: E402

torch.set_num_threads(2)
SIZES = {"resnet18": 224, "mobilenet_v2": 96, "efficientnet_b0": 96,
         "shufflenet_v2_x1_0": 96, "squeezenet1_0": 96}


def control(name, size):
    torch.manual_seed(E.SEED)
    model, args, *_ = E.vision(getattr(torchvision.models, name), size)()
    model.eval()
    g = torch.Generator().manual_seed(99)
    calib = [torch.rand(1, 3, size, size, generator=g) * 2 - 1 for _ in range(100)]
    evals = [torch.rand(1, 3, size, size, generator=g) * 2 - 1 for _ in range(50)]
    qm = get_default_qconfig_mapping("fbgemm")
    p = prepare_fx(copy.deepcopy(model), qm, (calib[0],))
    with torch.no_grad():
        for x in calib:
            p(x)
    q = convert_fx(p)
    with torch.no_grad():
        a = torch.cat([model(x) for x in evals]).numpy().astype(np.float64)
        b = torch.cat([q(x) for x in evals]).numpy().astype(np.float64)
    cos = min(float(np.dot(x, y) / np.linalg.norm(x) / np.linalg.norm(y))
              for x, y in zip(a, b))
    top1 = float((a.argmax(1) == b.argmax(1)).mean())
    print(f"{name}: PyTorch fbgemm static int8: min cosine {cos:.5f}, "
          f"top-1 agreement {top1:.2f} over {len(evals)} inputs")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["resnet18", "mobilenet_v2"]:
        control(name, SIZES[name])
