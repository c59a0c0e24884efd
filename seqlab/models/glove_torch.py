"""GloVe in PyTorch (:mod:`seqlab.models.glove`'s GPU path): :class:`GloVe`, with sparse embeddings.

Its own module so that the numba engine (:class:`seqlab.models.glove.GloVeAdaGrad` on a CPU) runs without
importing torch; ``seqlab.models.glove.GloVe`` still names it. Notation and shapes: :mod:`seqlab.models.glove`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class GloVe(nn.Module):
    r"""θ (``word``), e (``context``) and the biases b, b̃; ``forward`` is the weighted squared error per entry.

    !!! equation "Word embeddings › GloVe"
        $\frac{1}{2} J = \frac{1}{2} \sum_{i,j:\ X_{ij} > 0} f(X_{ij}) (\theta_i^\top e_j + b_i + \tilde{b}_j -
        \log X_{ij})^2$: the GloVe loss, word vectors whose dot product fits the log co-occurrence count, halved
        as the reference tool halves it (the same minimiser, half the gradient); the weight
        $f(x) = \min(1, (x/x_{max})^\alpha)$ (beyond the notes) drops the pairs never seen and damps the frequent
        ones.
        default: model.x_max = 100.0; presets: glove = 10.0
        default: model.alpha = 0.75

    !!! departure "Word embeddings › GloVe"
        notes: $\sum_{i=1}^{10k} \sum_{j=1}^{10k} (\theta_i^\top e_j + b_i + b_j - \log X_{ij})^2$, every pair
        unweighted, though $\log X_{ij}$ does not exist for a pair never seen.
        seqlab: $\frac{1}{2} \sum_{X_{ij} > 0} f(X_{ij}) (\theta_i^\top e_j + b_i + \tilde{b}_j - \log
        X_{ij})^2$: the pairs seen only, weighted by $f$ (``model.x_max``, ``model.alpha``), halved; the context
        bias is written $\tilde{b}_j$, and a word's vector is $\theta_w + e_w$."""

    def __init__(self, cfg: Any):
        """``cfg``: a :class:`~seqlab.models.glove.GloVeConfig` (``vocab_size``, ``dim``, ``x_max``, ``alpha``)."""
        super().__init__()
        self.cfg = cfg
        v, d = cfg.vocab_size, cfg.dim
        self.word = nn.Embedding(v, d, sparse=True)  # θ: (V, D)
        self.context = nn.Embedding(v, d, sparse=True)  # e: (V, D)
        self.word_bias = nn.Embedding(v, 1, sparse=True)  # b: (V, 1)
        self.context_bias = nn.Embedding(v, 1, sparse=True)  # b̃: (V, 1)

    def weight(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = min(1, (x / x_max)^alpha)."""
        return torch.clamp(x / self.cfg.x_max, max=1.0) ** self.cfg.alpha

    def forward(self, i: torch.Tensor, j: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """i, j, x (B,) -> ½ f(X_ij) (θ_i·e_j + b_i + b̃_j - log X_ij)² (B,)."""
        score = (self.word(i) * self.context(j)).sum(-1)  # (B, D) -> (B,)
        diff = score + self.word_bias(i)[:, 0] + self.context_bias(j)[:, 0] - torch.log(x)
        return 0.5 * self.weight(x) * diff * diff

    def vectors(self) -> torch.Tensor:
        """(V, D) word vectors θ_w + e_w."""
        return self.word.weight + self.context.weight
