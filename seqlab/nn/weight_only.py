"""Weight-only low precision for decoding: linear layers whose weights are stored in bf16 or int8.

Batch-1 decoding reads every weight once per token, so its speed is the memory's read bandwidth over the
weight bytes (bench/generate.py). Storing W in fewer bytes and computing in fp32 cuts those bytes:

- ``bf16``: W stored as bfloat16 (2 bytes), y = x · float(W)^T + b.
- ``int8``: symmetric per-output-row quantisation (4x fewer bytes than fp32):
  s_n = max_k |W[n, k]| / 127, Q[n, k] = round(W[n, k] / s_n) in [-127, 127], and
  y = x · (Q · s)^T + b, i.e. y[r, n] = s_n · sum_k x[r, k] Q[n, k] + b[n].

Activations, biases, layer norms, the embeddings and the (tied) output head stay in fp32. The dequantisation
is written inside ``forward``; eagerly it materialises the fp32 weight at every call (slower than fp32), and
under ``torch.compile`` (``decode.decode_step``, compiled without freezing so the conversion is not folded
back into an fp32 constant) it is fused into the streaming products, which then read 2 or 1 byte per weight.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, named

DTYPES = ("fp32", "bf16", "int8")


class WeightOnlyLinear(nn.Module):
    """An ``nn.Linear`` with its weight (out, in) stored in bf16, or in int8 with one fp32 scale per row."""

    def __init__(self, linear: nn.Linear, dtype: str) -> None:
        super().__init__()
        if dtype not in ("bf16", "int8"):
            raise SeqlabError(f"weight-only dtype must be bf16 or int8, got {dtype!r}")
        weight = linear.weight.detach().float()  # out, in
        if dtype == "bf16":
            self.register_buffer("weight", weight.to(torch.bfloat16))
            self.scale = None
        else:
            scale = weight.abs().amax(dim=1).clamp_min(torch.finfo(torch.float32).tiny) / 127.0  # out
            self.register_buffer("weight", torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8))
            self.register_buffer("scale", scale)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)

    def dequantized(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """The weight (out, in) in ``dtype``: float(W) or Q · s."""
        weight = self.weight.to(dtype)  # out, in
        return weight if self.scale is None else weight * self.scale.to(dtype)[:, None]

    def forward(self, x: Tensor) -> Tensor:
        """x (..., in) -> (..., out)."""
        return F.linear(x, self.dequantized(x.dtype), self.bias)

    def extra_repr(self) -> str:
        out_features, in_features = self.weight.shape
        return f"in_features={in_features}, out_features={out_features}, weight={self.weight.dtype}"


def to_weight_only(model: nn.Module, dtype: str) -> int:
    """Replace, in place, every ``nn.Linear`` of ``model`` whose weight is its own (not tied to an embedding,
    e.g. a language model's output head) by a :class:`WeightOnlyLinear`; returns how many were replaced.
    ``fp32`` changes nothing."""
    if dtype not in DTYPES:
        raise SeqlabError(f"unknown {named('dtype')} {dtype!r}; use one of {', '.join(DTYPES)}")
    if dtype == "fp32":
        return 0
    tied = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    targets = [(name, m) for name, m in model.named_modules()
               if isinstance(m, nn.Linear) and id(m.weight) not in tied]
    for name, linear in targets:
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, WeightOnlyLinear(linear, dtype))
    return len(targets)


def has_weight_only(model: nn.Module) -> bool:
    return any(isinstance(m, WeightOnlyLinear) for m in model.modules())
