"""Chapter 6, the Transformer, 06.1-06.5: scaled dot-product attention, the causal mask, a decoder's
self-attention mask, splitting and merging heads (docs/tutorials/06-transformer.md).

The references are :mod:`seqlab.nn.attention` and :mod:`seqlab.nn.masks`; shapes are batch-first, masks boolean
with True = may attend.
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding, sqrt_text
from seqlab.nn.attention import attention_equations, merge_heads, split_heads
from seqlab.nn.masks import causal_mask, combine, padding_mask

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


# ------------------------------------------------------------------------------------------------------
# 06.2 the causal mask


def _causal_cases() -> list[Case]:
    # seq_q < seq_k in every case: the queries are the last seq_q positions (a decoding step over cached keys),
    # the sizes where seqlab's bottom-right alignment and a top-left one differ
    return [Case((seq_q, seq_k), {"seq_q": seq_q, "seq_k": seq_k}) for seq_q, seq_k in [(3, 5), (4, 7), (2, 6)]]


def _diagonal(seq_q: int, seq_k: int) -> torch.Tensor:
    """(seq_q, seq_k) True where key j is the query's own position, j = i + seq_k - seq_q (the mistakes' edge)."""
    return torch.arange(seq_k)[None, :] == torch.arange(seq_q)[:, None] + (seq_k - seq_q)


CAUSAL = Exercise(
    id="06.2",
    name="causal_mask",
    title="The causal mask",
    section="Transformer › Masked attention",
    signature="causal_mask(seq_q, seq_k)",
    statement=r"""Build the boolean causal mask of shape (seq_q, seq_k): **True where query i may attend key j**.

The notes' additive mask is $M_{ij} = 0$ for $j \le i$ and $-\infty$ for $j > i$: a position attends itself
and the positions before it; your mask is True where $M_{ij} = 0$. When there are fewer queries than keys
(`seq_q < seq_k`, as in a decoding step whose keys include the cached positions), the queries are the **last**
seq_q positions of the sequence: query i sits at position `i + seq_k - seq_q`, so the last query sees every
key. Return a `torch.bool` tensor.""",
    reference=lambda seq_q, seq_k: causal_mask(seq_q, seq_k),
    cases=_causal_cases,
    mistakes=(
        Mistake("mask-inverted", "the mask's polarity is inverted: True means the query MAY attend the key (key j "
                "at or before the query's position, where the notes' M is 0), False the keys that get -inf "
                "(Transformer › Masked attention).",
                lambda seq_q, seq_k: ~causal_mask(seq_q, seq_k)),
        Mistake("diagonal-excluded", "your mask leaves out the diagonal: a position may attend itself, M_ij = 0 "
                "for j <= i, not only for j < i (Transformer › Masked attention).",
                lambda seq_q, seq_k: causal_mask(seq_q, seq_k) & ~_diagonal(seq_q, seq_k)),
        Mistake("top-left", "your mask is aligned top-left: with seq_q = {seq_q} queries and seq_k = {seq_k} keys the "
                "queries are the LAST {seq_q} positions, so query i may attend the keys j <= i + {seq_k} - {seq_q}, "
                "and the last query every key (Transformer › Masked attention; seqlab.nn.masks.causal_mask).",
                lambda seq_q, seq_k: causal_mask(seq_k, seq_k)[:seq_q]),  # the square mask's first rows
        Mistake("looks-ahead", "your mask lets a query attend its own position and the keys AFTER it: True must "
                "mark j <= i, the position itself and the past (Transformer › Masked attention).",
                lambda seq_q, seq_k: ~causal_mask(seq_q, seq_k) | _diagonal(seq_q, seq_k)),
    ),
    tolerance=exact,
    follows="The notes' M is square (j <= i). With seq_q != seq_k this checks seqlab's alignment "
            "(seqlab.nn.masks.causal_mask: the queries are the last seq_q positions, j <= i + seq_k - seq_q), not "
            "the top-left one of PyTorch's is_causal.",
)

# ------------------------------------------------------------------------------------------------------
# 06.3 a decoder's self-attention mask: causal and key padding


def _mask_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, pad_id) in enumerate([(2, 5, 0), (3, 6, 1), (4, 3, 2)]):
        g = generator(100 + seed)
        ids = torch.randint(pad_id + 1, pad_id + 20, (batch, seq), generator=g)
        lengths = torch.randint(1, seq, (batch,), generator=g)  # every row but the first is padded on the right
        lengths[0] = seq
        ids[torch.arange(seq)[None, :] >= lengths[:, None]] = pad_id
        cases.append(Case((ids, pad_id), {"batch": batch, "seq": seq}, seed=100 + seed))
    return cases


def _decoder_mask(ids, pad_id):
    seq = ids.shape[1]
    return combine(causal_mask(seq), padding_mask(ids, pad_id)[:, None, :])  # batch, seq (query), seq (key)


DECODER_MASK = Exercise(
    id="06.3",
    name="decoder_mask",
    title="A decoder's mask: causal and padding",
    section="Transformer › Masked attention",
    signature="decoder_mask(ids, pad_id)",
    statement=r"""Build the self-attention mask of a decoder over a padded batch: (batch, seq, seq), boolean,
**True where query i may attend key j**.

`ids` is a (batch, seq) tensor of token ids, shorter sentences padded on the right with `pad_id` (it differs
between the cases). Query i may attend key j when j is not after i (the causal mask, $M_{ij} = 0$ for $j \le
i$) **and** key j is a real token (`ids[b, j] != pad_id`). Only the keys are masked for padding: a padding
query still attends the real keys before it (its output is computed but never used).""",
    reference=_decoder_mask,
    cases=_mask_cases,
    mistakes=(
        Mistake("mask-inverted", "the mask's polarity is inverted: True means the query MAY attend the key, "
                "a real token at or before it (Transformer › Masked attention).",
                lambda ids, pad_id: ~_decoder_mask(ids, pad_id)),
        Mistake("padding-ignored", "the padding keys are not masked: a key whose id is pad_id must be False for "
                "every query, so that no position attends the padding (Transformer › Masked attention).",
                lambda ids, pad_id: _decoder_mask(torch.full_like(ids, pad_id + 1), pad_id)),
        Mistake("causal-ignored", "the causal mask is missing: query i may attend only the keys j <= i, "
                "M_ij = -inf for j > i (Transformer › Masked attention).",
                lambda ids, pad_id: combine(torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool),
                                            padding_mask(ids, pad_id)[:, None, :])),
        Mistake("padding-on-queries", "your mask masks the padding queries' rows too: only the keys are masked "
                "for padding, a padding query still attends the real keys before it (seqlab.nn.masks: "
                "key_padding_to_attn; Transformer › Masked attention).",
                lambda ids, pad_id: _decoder_mask(ids, pad_id) & padding_mask(ids, pad_id)[:, :, None]),
    ),
    tolerance=exact,
)

# ------------------------------------------------------------------------------------------------------
# 06.4 and 06.5 splitting and merging heads


def _heads_cases(split: bool) -> list[Case]:
    cases = []
    # (batch, seq, head, depth): all different, d_model = head * depth too
    for seed, (batch, seq, head, depth) in enumerate([(2, 5, 3, 4), (3, 4, 2, 5), (4, 6, 7, 2)]):
        g = generator(200 + seed)
        sizes = {"batch": batch, "seq": seq, "d_model": head * depth, "head": head, "depth": depth}
        if split:
            cases.append(Case((randn(g, batch, seq, head * depth), head), sizes, seed=200 + seed))
        else:
            cases.append(Case((randn(g, batch, head, seq, depth),), sizes, seed=200 + seed))
    return cases


def _split_without_transpose(x, n_heads):
    batch, seq, d_model = x.shape
    # split_heads of the columns rearranged so that its view-and-transpose gives x.view(batch, head, seq, depth)
    y = x.reshape(batch, n_heads, seq, d_model // n_heads).transpose(1, 2).reshape(batch, seq, d_model)
    return split_heads(y, n_heads)


def _split_from_wrong_end(x, n_heads):
    batch, seq, d_model = x.shape
    # head nu gets the columns nu, nu + head, nu + 2 head, ...: the columns transposed (depth, head) -> (head, depth)
    y = x.reshape(batch, seq, d_model // n_heads, n_heads).transpose(-1, -2).reshape(batch, seq, d_model)
    return split_heads(y, n_heads)


SPLIT = Exercise(
    id="06.4",
    name="split_heads",
    title="Splitting into heads",
    section="Transformer › Tensor notation",
    signature="split_heads(x, n_heads)",
    statement=r"""Split the last axis of `x`, (batch, seq, d_model), into `n_heads` heads: return (batch, head,
seq, depth) with depth = d_model / n_heads.

Head $\nu$ (0-based) takes the $\nu$-th block of depth consecutive columns, `x[..., nu * depth:(nu + 1) *
depth]`: the notes' $T^{\Delta(\nu, \delta)} \to T^{\nu, \delta}$ with $\Delta = \nu \cdot depth + \delta$,
then the head axis moved before seq (the notes' worked example: (batch-size, num-heads, seq-len, depth)).""",
    reference=split_heads,
    cases=lambda: _heads_cases(split=True),
    mistakes=(
        Mistake("no-transpose", "your heads mix the positions: viewing (batch, seq, d_model) directly as (batch, "
                "head, seq, depth) reads the memory in the wrong order; view it as (batch, seq, head, depth), "
                "then swap the seq and head axes (Transformer › Tensor notation).",
                _split_without_transpose),
        Mistake("heads-from-wrong-end", "your head nu takes the columns nu, nu + head, nu + 2 head, ... (the head "
                "index varying fastest); head nu is the block of depth = {depth} consecutive columns "
                "nu * {depth} .. nu * {depth} + {depth} - 1, Delta = nu * depth + delta (Transformer › Tensor "
                "notation).",
                _split_from_wrong_end),
    ),
    tolerance=exact,  # a reshape: the same numbers, moved
)


def _merge_without_transpose(x):
    batch, head, seq, depth = x.shape
    return merge_heads(x.reshape(batch, seq, head, depth).transpose(1, 2))  # = x.reshape(batch, seq, d_model)


def _merge_depth_major(x):
    batch, head, seq, depth = x.shape
    # column delta * head + nu instead of nu * depth + delta: the heads interleaved
    return merge_heads(x.permute(0, 2, 3, 1).reshape(batch, seq, head, depth).transpose(1, 2))


MERGE = Exercise(
    id="06.5",
    name="merge_heads",
    title="Merging the heads",
    section="Transformer › Tensor notation",
    signature="merge_heads(x)",
    statement=r"""Merge the heads of `x`, (batch, head, seq, depth), back into one vector per position: return
(batch, seq, d_model) with d_model = head * depth.

The inverse of `split_heads`: head $\nu$'s output fills the columns $\nu \cdot depth$ to $(\nu + 1) \cdot depth -
1$ (the notes' $A^{[n_h], [d], [\ell]} \to A^{[D], [\ell]}$, the heads concatenated
$[\mathrm{head}_1; \dots; \mathrm{head}_h]$ before $W^O$).""",
    reference=merge_heads,
    cases=lambda: _heads_cases(split=False),
    mistakes=(
        Mistake("no-transpose", "your merge mixes the positions: reshaping (batch, head, seq, depth) straight to "
                "(batch, seq, d_model) reads the memory in the wrong order; move the head axis after seq first, "
                "then reshape (Transformer › Tensor notation).",
                _merge_without_transpose),
        Mistake("heads-interleaved", "your columns interleave the heads (column delta * head + nu); the notes "
                "concatenate them, head nu filling columns nu * {depth} .. nu * {depth} + {depth} - 1 "
                "(Transformer › Tensor notation; Multi-head attention).",
                _merge_depth_major),
    ),
    tolerance=exact,
)

EXERCISES: tuple[Exercise, ...] = (ATTENTION, CAUSAL, DECODER_MASK, SPLIT, MERGE)
