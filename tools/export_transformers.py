#!/usr/bin/python3
"""Exports the transformer models of issue 17 to ONNX, with reference outputs.

Usage: export_transformers.py [--small] OUTDIR [NAME ...]

Writes OUTDIR/NAME/model.onnx and OUTDIR/NAME/test_data_set_0/{input,output}_N.pb
as export_torch_models.py does. The models are the spellings of attention
the PyTorch 1.13 exporter writes: nn.TransformerEncoder at opset 13 and 17,
nn.MultiheadAttention alone, a hand-written GPT block (causal mask, tanh
GELU) and a hand-written BERT encoder taking an attention mask; plus a
BERT-base-shaped nn.TransformerEncoder (12 layers, d_model 768). The float
input is named "input" ([batch, seq, d_model]) so that
`--shape input=1,128,256` works on each; --small shrinks every model (2
layers, d_model 64, sequence 16) for the tests. Weights are random but
seeded; nothing is downloaded.
"""

import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

from export_torch_models import SEED, randomise_layernorm, save_pb

# (layers, d_model, heads, ff, seq) of the full and the --small models.
FULL = {"layers": 4, "d": 256, "heads": 8, "ff": 1024, "seq": 128}
SMALL = {"layers": 2, "d": 64, "heads": 4, "ff": 128, "seq": 16}
BERT_BASE = {"layers": 12, "d": 768, "heads": 12, "ff": 3072, "seq": 128}


def encoder(cfg, activation="relu"):
    layer = nn.TransformerEncoderLayer(d_model=cfg["d"], nhead=cfg["heads"],
                                       dim_feedforward=cfg["ff"], dropout=0.0,
                                       activation=activation, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=cfg["layers"],
                                  enable_nested_tensor=False)
    randomise_layernorm(model)
    return model


class Mha(nn.Module):
    """nn.MultiheadAttention as self-attention, with an output projection."""

    def __init__(self, cfg):
        super().__init__()
        self.attn = nn.MultiheadAttention(cfg["d"], cfg["heads"], dropout=0.0,
                                          batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class GptBlock(nn.Module):
    """Pre-LN block as in GPT-2: fused QKV Linear, split into heads by
    view/transpose, scaled scores, causal mask by masked_fill, tanh GELU."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg["d"]
        self.heads = cfg["heads"]
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc = nn.Linear(d, cfg["ff"])
        self.fc_out = nn.Linear(cfg["ff"], d)
        causal = torch.tril(torch.ones(cfg["seq"], cfg["seq"], dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, cfg["seq"], cfg["seq"]))

    def attn(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        hd = d // self.heads
        q = q.view(b, s, self.heads, hd).transpose(1, 2)
        k = k.view(b, s, self.heads, hd).transpose(1, 2)
        v = v.view(b, s, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.causal[:, :, :s, :s], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, s, d)
        return self.proj(y)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.blocks = nn.ModuleList(GptBlock(cfg) for _ in range(cfg["layers"]))
        self.ln = nn.LayerNorm(cfg["d"])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x)


class BertLayer(nn.Module):
    """Post-LN BERT layer (as in HuggingFace's BertLayer): separate Q, K, V
    Linears, scores / sqrt(head_dim) + additive mask, erf GELU."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg["d"]
        self.heads = cfg["heads"]
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.fc = nn.Linear(d, cfg["ff"])
        self.fc_out = nn.Linear(cfg["ff"], d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def split(self, t):
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        probs = F.softmax(scores + mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.fc_out(F.gelu(self.fc(x))))


class BertMask(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg["layers"]))

    def forward(self, x, attention_mask):
        # [batch, seq] of 1/0 -> [batch, 1, 1, seq] of 0/-10000.
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


def float_input(cfg, batch=1):
    gen = torch.Generator().manual_seed(SEED)
    return torch.randn(batch, cfg["seq"], cfg["d"], generator=gen)


SEQ_AXES = {"input": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}}


def plain(build, cfg_name):
    def make(small):
        cfg = SMALL if small else {"full": FULL, "bert_base": BERT_BASE}[cfg_name]
        model = build(cfg)
        model.eval()
        return model, (float_input(cfg),), ["input"], ["output"], SEQ_AXES
    return make


def bert_mask(small):
    cfg = SMALL if small else FULL
    model = BertMask(cfg)
    randomise_layernorm(model)
    model.eval()
    x = float_input(cfg)
    mask = torch.ones(1, cfg["seq"], dtype=torch.int64)
    mask[0, cfg["seq"] * 3 // 4:] = 0  # padding at the end
    axes = dict(SEQ_AXES, attention_mask={0: "batch", 1: "seq"})
    return model, (x, mask), ["input", "attention_mask"], ["output"], axes


def gpt(cfg):
    model = Gpt(cfg)
    randomise_layernorm(model)
    return model


# name -> (factory(small), opset)
MODELS = {
    "encoder_op17": (plain(encoder, "full"), 17),
    "encoder_op13": (plain(encoder, "full"), 13),
    "mha": (plain(Mha, "full"), 17),
    "gpt_block": (plain(gpt, "full"), 17),
    "bert_mask": (bert_mask, 14),
    "bert_base": (plain(lambda c: encoder(c, "gelu"), "bert_base"), 17),
}


def export(name, outdir, small):
    factory, opset = MODELS[name]
    torch.manual_seed(SEED)
    model, args, input_names, output_names, axes = factory(small)
    model_dir = os.path.join(outdir, name)
    data_dir = os.path.join(model_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(model_dir, "model.onnx")
    # Grad mode stays on: under no_grad PyTorch 1.13 runs TransformerEncoder
    # and MultiheadAttention through fused fast paths with no ONNX export.
    outputs = model(*args)
    torch.onnx.export(model, args, path, opset_version=opset,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(path)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    for i, (arg, arg_name) in enumerate(zip(args, input_names)):
        save_pb(arg.numpy(), arg_name, os.path.join(data_dir, "input_%d.pb" % i))
    for i, (out, out_name) in enumerate(zip(outputs, output_names)):
        save_pb(out.detach().numpy(), out_name, os.path.join(data_dir, "output_%d.pb" % i))
    print("exported %s (opset %d%s)" % (name, opset, ", small" if small else ""))


def main(argv):
    small = "--small" in argv
    argv = [a for a in argv if a != "--small"]
    if len(argv) < 2:
        sys.stderr.write("usage: %s [--small] OUTDIR [NAME ...]\nmodels: %s\n"
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
        export(name, argv[1], small)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
