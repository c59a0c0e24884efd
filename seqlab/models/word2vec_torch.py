"""Skip-gram word2vec in PyTorch (:mod:`seqlab.models.word2vec`'s readable reference and GPU path): :class:`SkipGram`.

Its own module so that the numba engine (:class:`seqlab.models.word2vec.SkipGramSGD` on a CPU) runs without
importing torch; ``seqlab.models.word2vec.SkipGram`` still names it. Notation and shapes: :mod:`seqlab.models.word2vec`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class SkipGram(nn.Module):
    r"""e_c = E·o_c (``input``) and output vectors θ (``ns_output``: one per word, for negative sampling;
    ``hs_output``: one per inner node of the Huffman tree). ``forward`` returns L(c, t) per pair.

    !!! equation "Word embeddings › Skip-gram"
        $\hat{y} = P(t \mid c) = \frac{\exp(\theta_t^\top e_c)}{\sum_{j=1}^{V} \exp(\theta_j^\top e_c)}$: the
        probability of a target word $t$ in the window of a context word $c$; its $O(V)$ normaliser is what
        negative sampling and hierarchical softmax avoid.

    !!! equation "Word embeddings › Skip-gram"
        $L(\hat{y}, y) = -\sum_{i=1}^{V} y_i \log \hat{y}_i$: the categorical cross-entropy of a (context,
        target) pair, $-\log P(t \mid c)$; ``forward`` computes it through one of the two approximations.

    !!! departure "Word embeddings › Skip-gram (slip in the notes)"
        notes: $\hat{y} = \frac{\theta_t^\top e_c}{\sum_{j} \theta_j^\top e_c}$, without the exponentials (a
        ratio of dot products, which can be negative).
        seqlab: the softmax $\frac{\exp(\theta_t^\top e_c)}{\sum_j \exp(\theta_j^\top e_c)}$, trained through
        negative sampling or hierarchical softmax (its $O(V)$ sum is never computed).

    !!! departure "Word embeddings › Skip-gram (notation)"
        notes: $e_c = E\, o_c$ the context word's vector and $\theta_t$ the target's; GloVe's $\theta_i$ and $e_j$.
        seqlab: ``input`` holds the $e$ (gensim's ``syn0``), ``ns_output`` one $\theta$ per word (``syn1neg``),
        and ``hs_output`` one $\theta_n$ per inner node of the Huffman tree, not per word (``syn1``). The notes'
        context word is word2vec's input (centre) word."""

    def __init__(self, cfg: Any, hs: bool = False):
        """``cfg``: a :class:`~seqlab.models.word2vec.Word2VecConfig` (``vocab_size`` and ``dim`` set)."""
        super().__init__()
        v, d = cfg.vocab_size, cfg.dim
        self.input = nn.Embedding(v, d, sparse=True)  # E: (V, D)
        self.ns_output = nn.Embedding(v, d, sparse=True) if cfg.negative > 0 else None  # θ: (V, D)
        self.hs_output = nn.Embedding(max(v - 1, 1), d, sparse=True) if hs else None  # θ: (V-1, D)

    @staticmethod
    def pair_loss(output: nn.Embedding, e_c: torch.Tensor, targets: torch.Tensor, labels: torch.Tensor,
                  mask: torch.Tensor) -> torch.Tensor:
        r"""Σ_k mask_k · -log σ(±θ_{targets_k}·e_c): e_c (B, D), targets/labels/mask (B, K) -> (B,).

        !!! equation "Word embeddings › Negative sampling (beyond the notes)"
            $L(c, t) = -\log \sigma(\theta_t^\top e_c) - \sum_{k=1}^{K} \log \sigma(-\theta_{n_k}^\top e_c)$:
            negative sampling (Mikolov et al. 2013), one logistic loss for the true target and one for each of
            $K$ noise words $n_k$.

        !!! equation "Word embeddings › Hierarchical softmax"
            $-\log P(t \mid c) = -\sum_{n \in \mathrm{path}(t)} \log \sigma(\pm \theta_n^\top e_c)$: the product of
            binary probabilities along the root-to-$t$ path of a tree over the vocabulary, $O(\log_2 V)$ terms
            instead of $V$; the sign is the branch taken."""
        theta = output(targets)  # (B, K, D)
        scores = torch.einsum("bkd,bd->bk", theta, e_c)  # (B, K)
        nll = nn.functional.binary_cross_entropy_with_logits(scores, labels, reduction="none")  # (B, K)
        return (nll * mask).sum(-1)

    def forward(self, c: torch.Tensor, ns: tuple | None = None, hs: tuple | None = None) -> torch.Tensor:
        """c (B,) input words; ns / hs = (targets, labels, mask), each (B, K); returns the loss per pair (B,)."""
        e_c = self.input(c)  # (B, D)
        loss = torch.zeros(c.shape[0], device=c.device)
        if ns is not None:
            loss = loss + self.pair_loss(self.ns_output, e_c, *ns)
        if hs is not None:
            loss = loss + self.pair_loss(self.hs_output, e_c, *hs)
        return loss
