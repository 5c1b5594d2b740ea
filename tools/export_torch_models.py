#!/usr/bin/python3
"""Exports PyTorch models to ONNX with reference outputs computed by PyTorch.

Usage: export_torch_models.py OUTDIR [NAME ...]

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_0/{input,output}_N.pb
(the ONNX backend test layout), so `modelbench check` can compare our
interpreter against PyTorch, an independent implementation. Weights are
random but seeded, nothing is downloaded. BatchNorm running statistics are
collected from random data so normalisation is not the identity, and
activations stay O(1) through deep networks.
"""

import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import numpy_helper

SEED = 1234


def calibrate_batchnorm(model, shape):
    """Gives BN layers realistic running stats and affine parameters."""
    gen = torch.Generator().manual_seed(SEED + 1)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):  # 1-D, 2-D, 3-D
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the calibration runs
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(*shape, generator=gen))
    model.eval()


def vision(builder, size):
    def make():
        model = builder(weights=None)
        calibrate_batchnorm(model, (4, 3, size, size))
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))
        return model, (x,), ["input"], ["logits"], {"input": {0: "batch"}, "logits": {0: "batch"}}
    return make


def transformer_encoder():
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                       dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    model.eval()
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(SEED))
    axes = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}
    return model, (x,), ["x"], ["y"], axes


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x, additive_mask):
        b, s, h = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)

        def split(t):
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-1, -2) / (self.head_dim ** 0.5)
        probs = F.softmax(scores + additive_mask, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.out(ctx)


class Block(nn.Module):
    """A transformer block; pre_norm selects GPT (pre-LN) or BERT (post-LN)."""

    def __init__(self, hidden, heads, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, 4 * hidden)
        self.ff2 = nn.Linear(4 * hidden, hidden)

    def ffn(self, x):
        return self.ff2(F.gelu(self.ff1(x)))  # exact GELU: exported via Erf

    def forward(self, x, mask):
        if self.pre_norm:
            x = x + self.attn(self.ln1(x), mask)
            return x + self.ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.ffn(x))


class Bert(nn.Module):
    def __init__(self, vocab=1000, hidden=64, heads=4, layers=2, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, False) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.ln(self.tok(input_ids) + self.pos(positions))
        # [batch, seq] of 1/0 -> [batch, 1, 1, seq] of 0/-10000.
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for blk in self.blocks:
            x = blk(x, mask)
        return x


class Gpt(nn.Module):
    def __init__(self, vocab=512, hidden=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, True) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)
        causal = torch.triu(torch.full((max_len, max_len), -1e9), diagonal=1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.tok(input_ids) + self.pos(positions)
        mask = self.causal[:seq, :seq]
        for blk in self.blocks:
            x = blk(x, mask)
        return self.ln(x) @ self.tok.weight.t()  # tied LM head


def randomise_layernorm(model):
    gen = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)


def bert():
    model = Bert()
    randomise_layernorm(model)
    model.eval()
    gen = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, 1000, (2, 24), generator=gen)
    mask = torch.ones(2, 24, dtype=torch.int64)
    mask[1, 17:] = 0  # a padded second sequence
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
            "last_hidden_state": {0: "batch", 1: "seq"}}
    return model, (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"], axes


def gpt():
    model = Gpt()
    randomise_layernorm(model)
    model.eval()
    ids = torch.randint(0, 512, (2, 20), generator=torch.Generator().manual_seed(SEED))
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    return model, (ids,), ["input_ids"], ["logits"], axes


# name -> (factory, opset). resnet18 keeps the full 224x224 input; the others
# use 96x96, which every architecture here allows, to keep the test fast.
MODELS = {
    "resnet18": (vision(torchvision.models.resnet18, 224), 13),
    "mobilenet_v2": (vision(torchvision.models.mobilenet_v2, 96), 13),
    "efficientnet_b0": (vision(torchvision.models.efficientnet_b0, 96), 13),
    "shufflenet_v2_x1_0": (vision(torchvision.models.shufflenet_v2_x1_0, 96), 13),
    "squeezenet1_0": (vision(torchvision.models.squeezenet1_0, 96), 13),
    "transformer_encoder_op13": (transformer_encoder, 13),
    "transformer_encoder_op17": (transformer_encoder, 17),
    "bert_encoder": (bert, 14),
    "gpt_decoder": (gpt, 17),
}


def save_pb(array, name, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(name, outdir):
    factory, opset = MODELS[name]
    torch.manual_seed(SEED)
    model, args, input_names, output_names, axes = factory()
    model_dir = os.path.join(outdir, name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(model_dir, "model.onnx")
    # Grad mode stays on: under no_grad PyTorch 1.13 runs TransformerEncoder
    # through a fused fast path that has no ONNX export. The reference outputs
    # come from the same (unfused) path that is exported.
    outputs = model(*args)
    torch.onnx.export(model, args, path, opset_version=opset,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    for i, (arg, arg_name) in enumerate(zip(args, input_names)):
        save_pb(arg.numpy(), arg_name, os.path.join(data_dir, "input_%d.pb" % i))
    for i, (out, out_name) in enumerate(zip(outputs, output_names)):
        save_pb(out.detach().numpy(), out_name, os.path.join(data_dir, "output_%d.pb" % i))
    print("exported %s (opset %d)" % (name, opset))


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: %s OUTDIR [NAME ...]\nmodels: %s\n"
                         % (argv[0], " ".join(MODELS)))
        return 2
    names = argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.stderr.write("unknown model(s): %s\n" % " ".join(unknown))
        return 2
    torch.set_num_threads(1)
    np.random.seed(SEED)
    for name in names:
        export(name, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
