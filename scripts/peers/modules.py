"""PyTorch modules for the peer harness (scripts/peers/peers.py).

Two kinds:
- the examples/*.onnxtxt blocks, written the way a PyTorch user writes them
  (nn.Conv2d / nn.BatchNorm2d / nn.Linear / F.layer_norm / F.gelu /
  F.softmax) and loaded with the very initializers the harness materialised
  into the ONNX file (`build_example(name, weights)`), so ONNX Runtime,
  PyTorch and fuseplan see the same constants;
- zoo models built from their configs with seeded random weights (no hub
  download): torchvision ResNet-50 and MobileNetV2, a transformers BERT-base
  encoder (BertModel without pooler) and GPT-2 small (GPT2Model). The harness
  exports them to ONNX (the legacy TorchScript exporter, opset 17) and keeps
  the state dict, so the ONNX initializers are the module's parameters.

Every module returns a tuple of tensors in the ONNX graph's output order.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def _p(a: np.ndarray) -> nn.Parameter:
    return nn.Parameter(torch.from_numpy(np.ascontiguousarray(a)).clone(), requires_grad=False)


def _bn(w: dict, sfx: str, eps: float = 1e-5) -> nn.BatchNorm2d:
    g = w["gamma_" + sfx]
    bn = nn.BatchNorm2d(g.shape[0], eps=eps)
    bn.weight, bn.bias = _p(g), _p(w["beta_" + sfx])
    bn.running_mean.copy_(torch.from_numpy(w["w_mean_" + sfx]))
    bn.running_var.copy_(torch.from_numpy(w["w_var_" + sfx]))
    return bn


def _conv(wt: np.ndarray, pad: int = 0, groups: int = 1) -> nn.Conv2d:
    o, i, kh, kw = wt.shape
    c = nn.Conv2d(i * groups, o, (kh, kw), padding=pad, groups=groups, bias=False)
    c.weight = _p(wt)
    return c


def _linear(w_kn: np.ndarray, b: np.ndarray) -> nn.Linear:
    # ONNX MatMul(x, W[K, N]) + b  ==  nn.Linear(K, N) with weight W^T
    k, n = w_kn.shape
    lin = nn.Linear(k, n)
    lin.weight, lin.bias = _p(w_kn.T), _p(b)
    return lin


class ResNet50Bottleneck(nn.Module):
    """examples/resnet50_bottleneck.onnxtxt (torchvision's Bottleneck with a downsample)."""

    def __init__(self, w: dict):
        super().__init__()
        self.conv1, self.bn1 = _conv(w["w_conv1"]), _bn(w, "bn1")
        self.conv2, self.bn2 = _conv(w["w_conv2"], pad=1), _bn(w, "bn2")
        self.conv3, self.bn3 = _conv(w["w_conv3"]), _bn(w, "bn3")
        self.down, self.bnd = _conv(w["w_down"]), _bn(w, "bnd")

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return (F.relu(y + self.bnd(self.down(x))),)


class MobileNetV2InvertedResidual(nn.Module):
    """examples/mobilenetv2_inverted_residual.onnxtxt (t=6, stride 1, residual)."""

    def __init__(self, w: dict):
        super().__init__()
        self.expand, self.bn1 = _conv(w["w_expand"]), _bn(w, "bn1")
        c = w["w_dw"].shape[0]
        self.dw, self.bn2 = _conv(w["w_dw"], pad=1, groups=c), _bn(w, "bn2")
        self.project, self.bn3 = _conv(w["w_project"]), _bn(w, "bn3")

    def forward(self, x):
        y = F.relu6(self.bn1(self.expand(x)))
        y = F.relu6(self.bn2(self.dw(y)))
        return (x + self.bn3(self.project(y)),)


def _heads(t, n_heads):  # [N, S, H*D] -> [N, H, S, D]
    n, s, hd = t.shape
    return t.view(n, s, n_heads, hd // n_heads).transpose(1, 2)


def _merge(t):  # [N, H, S, D] -> [N, S, H*D]
    n, h, s, d = t.shape
    return t.transpose(1, 2).reshape(n, s, h * d)


class BertLayer(nn.Module):
    """examples/bert_base_layer.onnxtxt: post-LN encoder layer, additive mask, erf GELU."""

    def __init__(self, w: dict, heads: int = 12):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v = (_linear(w["w_" + n], w["b_" + n]) for n in "qkv")
        self.o = _linear(w["w_o"], w["b_o"])
        self.ln1 = nn.LayerNorm(768, eps=1e-12)
        self.ln1.weight, self.ln1.bias = _p(w["gamma_attn"]), _p(w["beta_attn"])
        self.ff1, self.ff2 = _linear(w["w_ff1"], w["b_ff1"]), _linear(w["w_ff2"], w["b_ff2"])
        self.ln2 = nn.LayerNorm(768, eps=1e-12)
        self.ln2.weight, self.ln2.bias = _p(w["gamma_out"]), _p(w["beta_out"])

    def forward(self, x, mask):
        q, k, v = (_heads(f(x), self.h) for f in (self.q, self.k, self.v))
        scores = q @ k.transpose(-1, -2) / 8.0 + mask
        ctx = _merge(F.softmax(scores, dim=-1) @ v)
        h = self.ln1(self.o(ctx) + x)
        return (self.ln2(self.ff2(F.gelu(self.ff1(h))) + h),)


class GPT2Block(nn.Module):
    """examples/gpt2_block.onnxtxt: pre-LN, fused QKV, boolean causal mask, tanh GELU."""

    def __init__(self, w: dict, heads: int = 12):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(768, eps=1e-5)
        self.ln1.weight, self.ln1.bias = _p(w["gamma_ln1"]), _p(w["beta_ln1"])
        self.attn, self.proj = _linear(w["w_attn"], w["b_attn"]), _linear(w["w_proj"], w["b_proj"])
        self.ln2 = nn.LayerNorm(768, eps=1e-5)
        self.ln2.weight, self.ln2.bias = _p(w["gamma_ln2"]), _p(w["beta_ln2"])
        self.fc, self.mlp_proj = _linear(w["w_fc"], w["b_fc"]), _linear(w["w_mlp_proj"], w["b_mlp_proj"])

    def forward(self, x, causal_mask):
        q, k, v = self.attn(self.ln1(x)).split(768, dim=2)
        q, k, v = _heads(q, self.h), _heads(k, self.h), _heads(v, self.h)
        scores = torch.where(causal_mask, q @ k.transpose(-1, -2) / 8.0, torch.finfo(torch.float32).min)
        res1 = x + self.proj(_merge(F.softmax(scores, dim=-1) @ v))
        return (res1 + self.mlp_proj(F.gelu(self.fc(self.ln2(res1)), approximate="tanh")),)


class ViTBlock(nn.Module):
    """examples/vit_block.onnxtxt: pre-LN (eps 1e-6), 12 heads, erf GELU MLP."""

    def __init__(self, w: dict, heads: int = 12):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(768, eps=1e-6)
        self.ln1.weight, self.ln1.bias = _p(w["gamma_ln1"]), _p(w["beta_ln1"])
        self.q, self.k, self.v = (_linear(w["w_" + n], w["b_" + n]) for n in "qkv")
        self.o = _linear(w["w_o"], w["b_o"])
        self.ln2 = nn.LayerNorm(768, eps=1e-6)
        self.ln2.weight, self.ln2.bias = _p(w["gamma_ln2"]), _p(w["beta_ln2"])
        self.fc1, self.fc2 = _linear(w["w_fc1"], w["b_fc1"]), _linear(w["w_fc2"], w["b_fc2"])

    def forward(self, x):
        y = self.ln1(x)
        q, k, v = (_heads(f(y), self.h) for f in (self.q, self.k, self.v))
        ctx = _merge(F.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v)
        res1 = self.o(ctx) + x
        return (res1 + self.fc2(F.gelu(self.fc1(self.ln2(res1)))),)


EXAMPLES = {
    "resnet50_bottleneck": ResNet50Bottleneck,
    "mobilenetv2_inverted_residual": MobileNetV2InvertedResidual,
    "bert_base_layer": BertLayer,
    "gpt2_block": GPT2Block,
    "vit_block": ViTBlock,
}


def build_example(name: str, weights: dict) -> nn.Module:
    return EXAMPLES[name](weights).eval()


# ----------------------------------------------------------------- zoo models

class _Tuple(nn.Module):
    """Wraps a model so it returns a tuple of the ONNX outputs."""

    def __init__(self, m: nn.Module, field: str | None = None, ones_mask: bool = False):
        super().__init__()
        self.m, self.field, self.ones_mask = m, field, ones_mask

    def forward(self, *args):
        if self.field is None:
            return (self.m(*args),)
        kw = {"input_ids": args[0]}
        if self.ones_mask:  # an explicit all-ones mask: transformers then skips its packed-sequence
            kw["attention_mask"] = torch.ones_like(args[0])  # check (aten::diff, which ONNX cannot export)
        return (getattr(self.m(**kw), self.field),)


# name -> (description, data inputs as (name, dtype, shape template), output names)
ZOO = {
    "resnet50": ("torchvision ResNet-50 (weights=None, seeded)", [("input", "float32", ("batch", 3, 224, 224))],
                 ["logits"]),
    "mobilenetv2": ("torchvision MobileNetV2 (weights=None, seeded)",
                    [("input", "float32", ("batch", 3, 224, 224))], ["logits"]),
    "bert-base": ("transformers BertModel(BertConfig()) without pooler, 12 layers, random weights",
                  [("input_ids", "int64", ("batch", "seq"))], ["last_hidden_state"]),
    "gpt2-small": ("transformers GPT2Model(GPT2Config()), 12 layers, random weights",
                   [("input_ids", "int64", ("batch", "seq"))], ["last_hidden_state"]),
}
ZOO_DEFAULT_DIMS = {"bert-base": {"seq": 128}, "gpt2-small": {"seq": 128}}
ZOO_VOCAB = {"bert-base": 30522, "gpt2-small": 50257}


def build_zoo(name: str, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    if name == "resnet50":
        import torchvision
        return _Tuple(torchvision.models.resnet50(weights=None)).eval()
    if name == "mobilenetv2":
        import torchvision
        return _Tuple(torchvision.models.mobilenet_v2(weights=None)).eval()
    if name == "bert-base":
        import transformers
        return _Tuple(transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False),
                      "last_hidden_state").eval()
    if name == "gpt2-small":
        import transformers
        cfg = transformers.GPT2Config(use_cache=False)
        return _Tuple(transformers.GPT2Model(cfg), "last_hidden_state", ones_mask=True).eval()
    raise KeyError(name)


def export_onnx(module: nn.Module, example_args: tuple, input_names: list, output_names: list, path: str) -> None:
    """Static-shape export (the shapes of example_args) with the legacy
    TorchScript exporter: plain ONNX ops, parameters as initializers.

    A transformers model is exported with its "eager" attention (explicit
    MatMul/Softmax): the exporter's lowering of SDPA with a boolean causal
    mask emits IsNaN, which fuseplan's CPU backend does not run. The same
    weights, so the same function; PyTorch itself is timed with the
    model's default attention (SDPA)."""
    import warnings
    inner = getattr(module, "m", None)
    hf = inner is not None and hasattr(inner, "set_attn_implementation")
    if hf:
        before = inner.config._attn_implementation
        inner.set_attn_implementation("eager")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, example_args, path, dynamo=False, opset_version=17, input_names=input_names,
                              output_names=output_names, external_data=False, do_constant_folding=True)
    finally:
        if hf:
            inner.set_attn_implementation(before)

