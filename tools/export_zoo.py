#!/usr/bin/python3
"""Exports a zoo of real PyTorch architectures to ONNX, with PyTorch's outputs.

Usage: export_zoo.py OUTDIR [--small] [NAME ...]

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_0/{input,output}_N.pb
(the ONNX backend test layout), plus OUTDIR/NAME/atol.txt: the absolute
tolerance that is 1e-4 of the output's scale (max |y|), so `modelbench check
--atol $(cat atol.txt)` compares with PyTorch relative to the model's output
scale. Weights are random but seeded, nothing is downloaded; batch-norm
statistics come from random data (see export_torch_models.py).

The zoo covers what a user benchmarks first: torchvision classification
(ResNet-50, ResNeXt, DenseNet-121, GoogLeNet, Inception-v3, MNASNet,
MobileNetV3 small and large, RegNet, EfficientNetV2, ConvNeXt, Swin-T, a ViT,
AlexNet, VGG with BatchNorm), segmentation (LRASPP, DeepLabV3), video
(R3D-18), recurrent (2-layer bidirectional LSTM and GRU), a Conv1d
keyword-spotting net, MultiheadAttention, and a decoder with ConvTranspose,
InstanceNorm, PReLU and Resize.

--small shrinks inputs (and the widest classifier layers) so the whole zoo
exports and runs in a couple of minutes: that is what `make test` checks
(tests/cli_torch_zoo.sh). Without it the models have their usual sizes (the
LSTM and GRU: batch 1, 50 steps, hidden 128), as in the figures of the
closing note.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torchvision.models import segmentation, video

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torch_models import SEED, calibrate_batchnorm, save_pb  # noqa: E402

import onnx  # noqa: E402


def gen():
    return torch.Generator().manual_seed(SEED)


def image(small, full, small_size):
    return small_size if small else full


def classifier(builder, size, small_size, shrink=None, **kwargs):
    """A torchvision classifier at size x size (small_size with --small)."""
    def make(small):
        s = image(small, size, small_size)
        model = builder(weights=None, **kwargs)
        if small and shrink:
            shrink(model)
        calibrate_batchnorm(model, (4, 3, s, s))
        x = torch.randn(1, 3, s, s, generator=gen())
        return model, (x,), ["input"], ["logits"]
    return make


def shrink_head(channels, widths):
    """Small inputs: pools the features to 1x1 (the 7x7 / 6x6 adaptive pool
    needs 224x224) and narrows the Linear layers of model.classifier."""
    def apply(model):
        model.avgpool = nn.AdaptiveAvgPool2d(1)
        layers = model.classifier
        linear = [i for i, m in enumerate(layers) if isinstance(m, nn.Linear)]
        prev = channels
        for i, width in zip(linear, widths):
            layers[i] = nn.Linear(prev, width)
            prev = width
    return apply


def vit(small):
    """A ViT: ViT-S/16 at 224 (6 layers to keep the table's runs short), or
    a 2-layer one on 64x64 with --small."""
    from torchvision.models.vision_transformer import VisionTransformer
    if small:
        model = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4,
                                  hidden_dim=64, mlp_dim=128, num_classes=100)
        s = 64
    else:
        model = VisionTransformer(image_size=224, patch_size=16, num_layers=6, num_heads=6,
                                  hidden_dim=384, mlp_dim=1536, num_classes=1000)
        s = 224
    # torchvision starts the head at zero: give it weights, or every
    # logit is 0 and a comparison proves nothing.
    with torch.no_grad():
        model.heads.head.weight.normal_(0.0, 0.05, generator=gen())
        model.heads.head.bias.normal_(0.0, 0.05, generator=gen())
    model.eval()
    x = torch.randn(1, 3, s, s, generator=gen())
    return model, (x,), ["input"], ["logits"]


class SegmentationOut(nn.Module):
    """torchvision's segmentation models return a dict: export its 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def segmenter(builder):
    def make(small):
        s = image(small, 256, 64)
        model = builder(weights=None, weights_backbone=None, num_classes=21)
        calibrate_batchnorm(model, (4, 3, s, s))
        x = torch.randn(1, 3, s, s, generator=gen())
        return SegmentationOut(model).eval(), (x,), ["input"], ["mask"]
    return make


def r3d_18(small):
    frames, s = (4, 32) if small else (8, 112)
    model = video.r3d_18(weights=None)
    calibrate_batchnorm(model, (2, 3, frames, s, s))
    x = torch.randn(1, 3, frames, s, s, generator=gen())
    return model, (x,), ["clip"], ["logits"]


class Recurrent(nn.Module):
    """A 2-layer bidirectional LSTM or GRU over [seq, batch, features] and a
    linear head on every step."""

    def __init__(self, cell, features, hidden, classes):
        super().__init__()
        self.rnn = cell(features, hidden, num_layers=2, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


def recurrent(cell):
    def make(small):
        steps, features, hidden = (10, 16, 32) if small else (50, 40, 128)
        model = Recurrent(cell, features, hidden, 12).eval()
        x = torch.randn(steps, 1, features, generator=gen())
        return model, (x,), ["features"], ["logits"]
    return make


class KeywordSpotter(nn.Module):
    """A Conv1d keyword-spotting net over 40 MFCCs x 100 frames."""

    def __init__(self, mfcc=40, width=64, classes=12):
        super().__init__()
        layers = []
        channels = mfcc
        for dilation in (1, 2, 4):
            layers += [nn.Conv1d(channels, width, 3, padding=dilation, dilation=dilation),
                       nn.BatchNorm1d(width), nn.ReLU()]
            channels = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=2))


def kws(small):
    frames = 32 if small else 100
    model = KeywordSpotter()
    calibrate_batchnorm(model, (4, 40, frames))
    x = torch.randn(1, 40, frames, generator=gen())
    return model, (x,), ["mfcc"], ["logits"]


class SelfAttention(nn.Module):
    """nn.MultiheadAttention as self-attention on [seq, batch, embed]."""

    def __init__(self, embed, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed, heads)

    def forward(self, x):
        y, _ = self.attn(x, x, x, need_weights=False)
        return y


def mha(small):
    seq, embed = (16, 64) if small else (128, 256)
    model = SelfAttention(embed, 4).eval()
    x = torch.randn(seq, 1, embed, generator=gen())
    return model, (x,), ["x"], ["y"]


class Decoder(nn.Module):
    """An image decoder: ConvTranspose2d, InstanceNorm2d, PReLU, bilinear
    Upsample (ONNX Resize), then a 3x3 convolution to RGB."""

    def __init__(self, channels=64):
        super().__init__()
        c = channels
        self.body = nn.Sequential(
            nn.ConvTranspose2d(c, c // 2, 4, stride=2, padding=1),
            nn.InstanceNorm2d(c // 2, affine=True), nn.PReLU(c // 2),
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
            nn.ConvTranspose2d(c // 2, c // 4, 4, stride=2, padding=1),
            nn.InstanceNorm2d(c // 4, affine=True), nn.PReLU(c // 4),
            nn.Conv2d(c // 4, 3, 3, padding=1), nn.Tanh())

    def forward(self, z):
        return self.body(z)


def decoder(small):
    s = 4 if small else 16
    model = Decoder().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.InstanceNorm2d):
                m.weight.uniform_(0.5, 1.5, generator=gen())
                m.bias.normal_(0.0, 0.1, generator=gen())
    z = torch.randn(1, 64, s, s, generator=gen())
    return model, (z,), ["z"], ["image"]


M = torchvision.models
# name -> factory(small). Classification runs at 224 (Inception-v3 299), or
# 64 (Inception-v3 80, the least it takes; AlexNet 96) with --small; AlexNet
# and VGG then pool to 1x1 and get narrower classifiers, whose 4096-wide
# layers would otherwise dominate.
ZOO = {
    "resnet50": classifier(M.resnet50, 224, 64),
    "resnext50_32x4d": classifier(M.resnext50_32x4d, 224, 64),
    "densenet121": classifier(M.densenet121, 224, 64),
    "googlenet": classifier(M.googlenet, 224, 64, aux_logits=False, init_weights=True),
    "inception_v3": classifier(M.inception_v3, 299, 80, aux_logits=False,
                               init_weights=True),
    "mnasnet1_0": classifier(M.mnasnet1_0, 224, 64),
    "mobilenet_v3_small": classifier(M.mobilenet_v3_small, 224, 64),
    "mobilenet_v3_large": classifier(M.mobilenet_v3_large, 224, 64),
    "regnet_y_400mf": classifier(M.regnet_y_400mf, 224, 64),
    "efficientnet_v2_s": classifier(M.efficientnet_v2_s, 224, 64),
    "convnext_tiny": classifier(M.convnext_tiny, 224, 64),
    "swin_t": classifier(M.swin_t, 224, 64),
    "vit": vit,
    "alexnet": classifier(M.alexnet, 224, 96, shrink=shrink_head(256, [256, 256, 100])),
    "vgg11_bn": classifier(M.vgg11_bn, 224, 64, shrink=shrink_head(512, [256, 256, 100])),
    "lraspp_mobilenet_v3": segmenter(segmentation.lraspp_mobilenet_v3_large),
    "deeplabv3_mobilenet_v3": segmenter(segmentation.deeplabv3_mobilenet_v3_large),
    "r3d_18": r3d_18,
    "lstm_bidirectional_2layer": recurrent(nn.LSTM),
    "gru_bidirectional_2layer": recurrent(nn.GRU),
    "kws_conv1d": kws,
    "multihead_attention": mha,
    "decoder_convtranspose": decoder,
}
OPSET = 17


def export(name, outdir, small):
    torch.manual_seed(SEED)
    model, args, input_names, output_names = ZOO[name](small)
    model.eval()
    model_dir = os.path.join(outdir, name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(model_dir, "model.onnx")
    # Grad mode stays on: under no_grad PyTorch 1.13 runs attention through
    # a fused fast path that has no ONNX export; the reference outputs come
    # from the same (unfused) path that is exported.
    outputs = model(*args)
    torch.onnx.export(model, args, path, opset_version=OPSET,
                      input_names=input_names, output_names=output_names,
                      do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    for i, (arg, arg_name) in enumerate(zip(args, input_names)):
        save_pb(arg.numpy(), arg_name, os.path.join(data_dir, "input_%d.pb" % i))
    scale = 0.0
    for i, (out, out_name) in enumerate(zip(outputs, output_names)):
        y = out.detach().numpy()
        scale = max(scale, float(np.abs(y).max()))
        save_pb(y, out_name, os.path.join(data_dir, "output_%d.pb" % i))
    with open(os.path.join(model_dir, "atol.txt"), "w") as f:
        f.write("%.6g\n" % (1e-4 * max(scale, 1e-6)))
    print("exported %s" % name, flush=True)


def main(argv):
    args = [a for a in argv[1:] if a != "--small"]
    small = "--small" in argv[1:]
    usage = "usage: %s OUTDIR [--small] [NAME ...]\nmodels: %s\n" % (
        argv[0], " ".join(ZOO))
    if any(a in ("-h", "--help") for a in args):
        sys.stdout.write(usage)
        return 0
    options = [a for a in args if a.startswith("-")]
    if not args or options:
        if options:
            sys.stderr.write("unknown option(s): %s\n" % " ".join(options))
        sys.stderr.write(usage)
        return 2
    names = args[1:] or list(ZOO)
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        sys.stderr.write("unknown model(s): %s\n" % " ".join(unknown))
        return 2
    torch.set_num_threads(1)
    np.random.seed(SEED)
    for name in names:
        export(name, args[0], small)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
