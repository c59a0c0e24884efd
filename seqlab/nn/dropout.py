"""Dropout (Srivastava et al., 2014): in training, keep each unit with probability 1 - p and scale the kept ones
by 1 / (1 - p), so that E[dropout(x)] = x; in evaluation, the identity.

On CPU, torch draws one Bernoulli sample per element (``bernoulli_``), and with p = 0.1 that was more than half of
a 6-layer, d_model 384 Transformer LM's training step (bench/dropout.py; its section of bench/RESULTS.md has the
seconds per step on the CPU it ran on). This version takes the keep decision from 16-bit slices of 64-bit random
integers instead (a quarter of the generator calls, no float draws) and applies it as one multiply by a mask of x's
dtype, which takes about a third off that step's time. p is rounded to a multiple of 2^-16 and the scale uses the
rounded p, so the expectation stays exactly x. The integers come from torch's default generator, so
``torch.manual_seed`` and checkpointed RNG state reproduce the masks. On other devices (CUDA), ``F.dropout``'s
fused kernels are used.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_STEPS = 1 << 16  # p's resolution on CPU


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device: torch.device | str = "cpu") -> Tensor:
    """Boolean mask of ``shape``, each element True (kept) with probability 1 - round(p * 2^16) / 2^16."""
    n = math.prod(shape)
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), 2**63 - 1)
    threshold = round(p * _STEPS) - _STEPS // 2  # int16 r >= threshold  <=>  uniform 16-bit u >= p * 2^16
    return (words.view(torch.int16)[:n] >= threshold).view(shape)


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout of ``x`` (any shape) with drop probability ``p``; the identity when not training."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    q = round(p * _STEPS) / _STEPS  # the probability actually applied
    if q == 0.0:
        return x
    if q >= 1.0:
        return x * 0.0
    return x * keep_mask(x.shape, q, x.device).to(x.dtype).mul_(1.0 / (1.0 - q))  # one mask of x's dtype, one mul


class Dropout(nn.Module):
    """Module form of :func:`dropout` (a drop-in for ``nn.Dropout``)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
