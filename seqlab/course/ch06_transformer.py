"""Chapter 6, the Transformer: scaled dot-product attention, the masks, sinusoidal positions, heads, one decoder
layer, decoding with a KV cache (docs/tutorials/06-transformer.md).

The references are :mod:`seqlab.nn.attention`, :mod:`seqlab.nn.masks`, :mod:`seqlab.nn.positions` and the
Transformer of :mod:`seqlab.models.transformer`; shapes are batch-first, masks boolean with True = may attend.
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding, sqrt_text
from seqlab.nn.attention import attention_equations

# ------------------------------------------------------------------------------------------------------
# 06.1 scaled dot-product attention


def _attention_cases() -> list[Case]:
    cases = []
    # (batch, head, seq_q, seq_k, depth): all different within a case; depth 4 and 9 make sqrt(d_k) whole
    for seed, (batch, head, seq_q, seq_k, depth) in enumerate([(2, 3, 5, 7, 4), (3, 2, 6, 4, 9), (4, 5, 2, 3, 7)]):
        g = generator(seed)
        q, k, v = randn(g, batch, head, seq_q, depth), randn(g, batch, head, seq_k, depth), randn(g, batch, head,
                                                                                                     seq_k, depth)
        lengths = torch.randint(1, seq_k, (batch,), generator=g)
        lengths[0] = seq_k  # one row sees every key, the others fewer
        mask = (torch.arange(seq_k) < lengths[:, None])[:, None, None, :].expand(batch, 1, seq_q, seq_k)  # keys
        scores = (q.abs() @ k.abs().transpose(-2, -1)).max().item() / math.sqrt(depth)
        cases.append(Case((q, k, v), {"batch": batch, "head": head, "seq_q": seq_q, "seq_k": seq_k, "depth": depth},
                          {"mask": mask.clone()}, seed=seed, n=max(depth, seq_k),
                          magnitude=max(scores, seq_k * v.abs().max().item(), 1.0)))
    return cases


def _attention(q, k, v, mask=None):
    return attention_equations(q, k, v, mask)[0]


def _softmax_over_queries(q, k, v, mask=None):
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)  # batch, head, seq_q, seq_k
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # a key no query sees: a column of NaN after the softmax
    return torch.softmax(scores, dim=-2) @ v  # batch, head, seq_q, depth: each column summed to 1, not each row


ATTENTION = Exercise(
    id="06.1",
    name="scaled_dot_product_attention",
    title="Scaled dot-product attention",
    section="Transformer › Scaled dot-product attention",
    signature="scaled_dot_product_attention(q, k, v, mask=None)",
    statement=r"""Compute $\mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V$ for every head at once.

`q` is (batch, head, seq_q, depth), `k` and `v` are (batch, head, seq_k, depth); `mask` is a boolean tensor
broadcastable to (batch, head, seq_q, seq_k) with **True where a query may attend to a key** (None: every key).
A masked key gets weight 0 (add $-\infty$ to its score before the softmax). Return the output, (batch, head,
seq_q, depth). Every query in the cases has at least one key it may attend to.""",
    reference=_attention,
    cases=_attention_cases,
    mistakes=(
        Mistake("unscaled", lambda case: (
            f"your scores are {sqrt_text(case.sizes['depth'])}x too large: sqrt(d_k) = "
            f"{sqrt_text(case.sizes['depth'])} for d_k = {case.sizes['depth']}; the notes divide QK^T by sqrt(d_k) "
            "before the softmax (Transformer › Scaled dot-product attention)."),
            lambda q, k, v, mask=None: _attention(q * math.sqrt(q.shape[-1]), k, v, mask)),
        Mistake("divided-by-d_k", "your scores are divided by d_k = {depth}, not by its square root; the notes "
                "scale QK^T by 1/sqrt(d_k) (Transformer › Scaled dot-product attention).",
                lambda q, k, v, mask=None: _attention(q / math.sqrt(q.shape[-1]), k, v, mask)),
        Mistake("mask-inverted", "the mask's polarity is inverted: True means the query MAY attend to the key, "
                "so the scores where the mask is False get -inf (Transformer › Masked attention).",
                lambda q, k, v, mask=None: _attention(q, k, v, None if mask is None else ~mask)),
        Mistake("mask-ignored", "the mask is not applied: keys where the mask is False must get weight 0, "
                "att(Q, K, V, M) = softmax(QK^T / sqrt(d_k) + M) V (Transformer › Masked attention).",
                lambda q, k, v, mask=None: _attention(q, k, v, None)),
        Mistake("softmax-over-queries", "the softmax runs over the queries (dim -2); each query's weights over "
                "the keys must sum to 1: softmax over the last dim, seq_k (Transformer › Self-attention).",
                _softmax_over_queries),
    ),
    # three chained reductions (QK^T over depth, the softmax's sum over seq_k, the weights times V over seq_k); an
    # error in a score moves the output by at most 2 max|v| times it (the softmax's derivative), hence the gain
    tolerance=rounding(products=3, gain=2.0),
)

EXERCISES: tuple[Exercise, ...] = (ATTENTION,)
