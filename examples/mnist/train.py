#!/usr/bin/env python3
"""Trains the example CNN on the digits data/setup-data.sh prepared and saves
its weights; with --quantize also a post-training-quantized (PTQ) and a
quantization-aware-trained (QAT) int8 model, as TorchScript files.

    /usr/bin/python3 train.py --save-path model/mnist.pt [--quantize]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import torch
from torch.ao.quantization import get_default_qat_qconfig_mapping, get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx, prepare_qat_fx

from model import HERE, MnistCNN, accuracy, load_split


def train(model, loader, epochs: int, lr: float) -> None:
    """Plain Adam on cross-entropy."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
        print(f"epoch {epoch + 1}: loss {total / len(loader.dataset):.4f}")


def quantized_engine() -> str:
    for name in ("x86", "fbgemm", "onednn", "qnnpack"):
        if name in torch.backends.quantized.supported_engines:
            torch.backends.quantized.engine = name
            return name
    raise SystemExit("this PyTorch has no quantized CPU backend")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--save-path", default=str(HERE / "model" / "mnist.pt"))
    p.add_argument("--data-dir", default=str(HERE / "data"))
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--quantize", action="store_true",
                   help="also save PTQ and QAT int8 models beside the float one")
    args = p.parse_args()

    torch.manual_seed(0)
    train_set = load_split(Path(args.data_dir), "train")
    test_set = load_split(Path(args.data_dir), "test")
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=256)

    model = MnistCNN()
    train(model, train_loader, args.epochs, args.lr)
    model.eval()
    print(f"test accuracy (float): {accuracy(model, test_loader):.2%} on {len(test_set)} digits")
    save = Path(args.save_path)
    save.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), save)
    print(f"saved {save}")
    if not args.quantize:
        return

    engine = quantized_engine()
    example = (next(iter(test_loader))[0][:1],)
    # Post-training static quantisation, calibrated on training batches.
    ptq = prepare_fx(copy.deepcopy(model).eval(), get_default_qconfig_mapping(engine), example)
    with torch.no_grad():
        for i, (x, _) in enumerate(train_loader):
            ptq(x)
            if i == 10:
                break
    ptq = convert_fx(ptq)
    print(f"test accuracy (PTQ int8, {engine}): {accuracy(ptq, test_loader):.2%}")
    # Quantisation-aware training: one more epoch with fake quantisation.
    qat = prepare_qat_fx(copy.deepcopy(model).train(), get_default_qat_qconfig_mapping(engine), example)
    train(qat, train_loader, 1, args.lr / 4)
    qat = convert_fx(qat.eval())
    print(f"test accuracy (QAT int8, {engine}): {accuracy(qat, test_loader):.2%}")
    for name, q in (("ptq", ptq), ("qat", qat)):
        path = save.with_name(f"{save.stem}_{name}.pt")
        torch.jit.save(torch.jit.trace(q, example), str(path))
        print(f"saved {path}")


if __name__ == "__main__":
    main()
