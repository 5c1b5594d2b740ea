#!/usr/bin/env bash
# Prepares handwritten digits for the MNIST example without any download:
# the 1,797 8x8 digits Debian's python3-sklearn ships (sklearn.datasets.
# load_digits), upsampled to 28x28 like MNIST, split 80/20 into
# data/train.npz and data/test.npz (images float32 [N, 1, 28, 28],
# normalised; labels int64).
set -euo pipefail
cd "$(dirname "$0")"
/usr/bin/python3 - "$@" <<'PY'
import sys

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits

digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
images = F.interpolate(images, size=(28, 28), mode="bilinear", align_corners=False)
images = (images - 0.1307) / 0.3081  # MNIST's normalisation
labels = torch.tensor(digits.target, dtype=torch.int64)
order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
split = int(0.8 * len(labels))
for name, idx in (("train", order[:split]), ("test", order[split:])):
    np.savez(f"{name}.npz", images=images[idx].numpy(), labels=labels[idx].numpy())
    print(f"data/{name}.npz: {len(idx)} digits")
PY
