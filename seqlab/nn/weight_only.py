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
The compiled int8 product reads the weights as int32 words, four weights each (``_int8_packed``): read as int8,
inductor's vector load of 8 bytes went through a copy; as words the int8 step ran 3.0-4.2x faster (AMD EPYC,
AVX2, the bench model at batch 1, one thread, four interleaved rounds beside other jobs: a ratio only).
"""

from __future__ import annotations

import sys

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
        if self.scale is not None and torch.compiler.is_compiling() and _packs(self.weight):
            return self._int8_packed(x)
        return F.linear(x, self.dequantized(x.dtype), self.bias)

    def _int8_packed(self, x: Tensor) -> Tensor:
        """The int8 product as the compiled step computes it: y[r, n] = s_n · sum_b sum_j x[r, 4j + b] Q[n, 4j + b]
        + b[n], reading Q as int32 words (out, in / 4) whose byte b is Q[n, 4j + b] (little-endian), each byte
        widened by two shifts. Every load of the weights is then a whole vector of 32-bit words (inductor's
        vectorised int8 load of 8 bytes into a 32-byte register goes through a copy) and the four sums over j are
        four independent accumulators in one loop."""
        *lead, width = x.shape
        out = self.weight.shape[0]
        words = self.weight.view(torch.int32)  # out, in / 4
        xs = x.reshape(-1, width // 4, 4)  # rows, in / 4, 4
        y = sum(xs[:, :, b].contiguous() @ ((words << (24 - 8 * b)) >> 24).to(x.dtype).t()
                for b in range(4))  # rows, out
        y = y * self.scale.to(x.dtype)  # rows, out
        return (y if self.bias is None else y + self.bias).reshape(*lead, out)  # ..., out

    def extra_repr(self) -> str:
        out_features, in_features = self.weight.shape
        return f"in_features={in_features}, out_features={out_features}, weight={self.weight.dtype}"


def _packs(weight: Tensor) -> bool:
    """Whether an int8 weight (out, in) reads as int32 words in place: ``in`` a multiple of 4, a little-endian
    machine, the rows contiguous."""
    return weight.shape[1] % 4 == 0 and sys.byteorder == "little" and weight.is_contiguous()


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
