"""Small modules for the tests, at module level so that worker processes can
import them (as users' classes must be)."""

from __future__ import annotations

import os
import signal
import time

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Conv + BN + ReLU + pool + Linear: every PyTorch conversion applies."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3)))


class TwoInputs(nn.Module):
    """Two inputs of different dtypes, a dict of two outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.fc = nn.Linear(8, 4)

    def forward(self, ids, scale):
        h = self.embed(ids).mean(1) * scale
        return {"logits": self.fc(h), "hidden": h}


class Misbehaving(nn.Module):
    """Fine in eager fp32; under bf16 autocast it crashes or hangs in the
    worker, to test that one conversion's death spares the others."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.mode = mode

    def forward(self, x):
        if torch.is_autocast_cpu_enabled() and os.environ.get("MODELBENCH_WORKER"):
            if self.mode == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            if self.mode == "hang":
                time.sleep(3600)
            if self.mode == "raise":
                raise RuntimeError("bf16 is not for me")
        return self.fc(x)


class NotExportable(nn.Module):
    """torch.cummax has no ONNX symbolic in torch 1.13: eager runs it,
    torch.onnx.export cannot."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(torch.cummax(x, -1)[0])


def make_small_cnn() -> nn.Module:
    """A zero-argument factory, as benchmark_model accepts."""
    torch.manual_seed(0)
    return SmallCNN()


class GuardBreaker(nn.Module):
    """Scales by how many times it has been called: torch.compile guards on
    the count and compiles again when it changes (a guard failure)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x) * (1.0 + (self.calls % 5))
