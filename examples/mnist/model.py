"""The MNIST example's CNN and data, shared by training and benchmarking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class MnistCNN(nn.Module):
    """Two conv blocks and two Linear layers, with QuantStub/DeQuantStub-free
    structure so that FX quantisation handles it."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def load_split(data_dir: Path, split: str) -> torch.utils.data.TensorDataset:
    """data/<split>.npz (written by data/setup-data.sh) as a dataset of
    (image, label)."""
    path = Path(data_dir) / f"{split}.npz"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run data/setup-data.sh first")
    arrays = np.load(path)
    return torch.utils.data.TensorDataset(
        torch.from_numpy(arrays["images"]), torch.from_numpy(arrays["labels"])
    )


def build_model(weights: Path | None = None) -> MnistCNN:
    """A fresh MnistCNN, with the weights train.py saved when given."""
    model = MnistCNN()
    if weights is not None:
        model.load_state_dict(torch.load(weights, map_location="cpu"))
    return model.eval()


def make_trained_model() -> MnistCNN:
    """A zero-argument factory (benchmark_model builds it in each worker):
    the model train.py saved at its default path."""
    return build_model(HERE / "model" / "mnist.pt")


def accuracy(model, loader) -> float:
    """Top-1 accuracy of model on a loader of (images, labels)."""
    right = total = 0
    with torch.no_grad():
        for x, y in loader:
            right += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    return right / total
