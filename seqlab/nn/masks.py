"""Attention masks: THE one mask convention of seqlab, documented here and only here.

    A mask is a boolean tensor and ``True`` means "may attend".

A mask broadcasts against the attention scores, shape (batch, head, seq_q, seq_k): a causal
mask is (seq_q, seq_k), a key-padding mask becomes (batch, 1, 1, seq_k). It is the boolean form
of the notes' additive mask M (Transformer › Masked attention): M = 0 where the mask is True and -inf where
it is False. ``None`` means "no mask" (everything may attend).

PyTorch is of two minds: ``F.scaled_dot_product_attention`` uses our polarity, while
``nn.MultiheadAttention`` and the ``nn.Transformer*`` layers take ``True`` = "ignore". The
``to_torch_*`` adapters below are the only places the opposite polarity appears.

A query row whose keys are all masked (a sequence that is all padding) yields zeros, never NaN:
:func:`masked_softmax` implements that rule (for scaled dot-product and additive attention alike), and
:func:`open_empty_rows` is its first half, for the fused kernel that takes the mask itself.

Shapes: batch, seq (a token sequence); seq_q, seq_k (queries, keys); head.
"""

from __future__ import annotations

from functools import reduce

import torch
from torch import Tensor


def causal_mask(seq_q: int, seq_k: int | None = None, device: torch.device | str | None = None) -> Tensor:
    r"""(seq_q, seq_k) lower-triangular mask: query i may attend key j iff j <= i + (seq_k - seq_q).

    The notes' M (0 for j <= i, -inf otherwise). When seq_k > seq_q the queries are the *last*
    seq_q positions of the keys (incremental decoding), so the last query sees every key.

    !!! equation "Transformer › Masked attention"
        $M_{ij} = 0 \text{ if } j \le i, \text{ else } -\infty$: the causal mask; position $i$ attends only to
        itself and the positions before it (True here where $M_{ij} = 0$).
    """
    seq_k = seq_q if seq_k is None else seq_k
    return torch.ones(seq_q, seq_k, dtype=torch.bool, device=device).tril(diagonal=seq_k - seq_q)  # seq_q, seq_k


def causal_mask_at(positions: Tensor, seq_k: int) -> Tensor:
    """(seq_q, seq_k) causal mask for queries at absolute ``positions`` (seq_q,): key j iff j <= position.

    Built from a position tensor, so a one-token decode step over a preallocated KV cache of
    ``seq_k`` slots has the same shapes at every step (slots past the position are masked).
    """
    keys = torch.arange(seq_k, device=positions.device)  # seq_k
    return keys[None, :] <= positions[:, None]  # seq_q, seq_k


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(batch, seq) True = real token, False = padding.

    The polarity is the opposite of PyTorch's ``key_padding_mask`` (``nn.MultiheadAttention``,
    ``nn.TransformerEncoder``), where True marks a padding position to ignore: a mask from seqlab passed to
    PyTorch, or the other way, must be inverted (``~mask``). Every seqlab mask reads True = may attend."""
    return ids != pad_id


def key_padding_to_attn(mask: Tensor) -> Tensor:
    """(batch, seq_k) key-padding mask -> (batch, 1, 1, seq_k), broadcastable over heads and queries."""
    return mask[:, None, None, :]  # batch, 1 (head), 1 (seq_q), seq_k


def combine(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of masks with broadcasting; ``None`` entries are ignored; all ``None`` -> ``None``."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    return reduce(torch.logical_and, present)


def to_additive(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    r"""The notes' additive M (Transformer › Masked attention): 0.0 where the mask is True, -inf where it is False.

    !!! equation "Transformer › Masked attention"
        $M = 0 \text{ (may attend)}, -\infty \text{ (masked)}$: a boolean mask as the additive mask of the
        scores, $\mathrm{softmax}(S + M)$."""
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))


def open_empty_rows(mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """Let fully-masked query rows attend everything (a finite softmax, no NaN in forward or backward); return
    that mask and the rows' marker (..., seq_q, 1), True = the row had nothing to attend, so the caller zeroes
    their results afterwards. No mask: (None, None)."""
    if mask is None:
        return None, None
    empty = ~mask.any(dim=-1, keepdim=True)  # ..., seq_q, 1
    return mask | empty, empty


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    r"""softmax over the last axis with masked positions at weight 0, and a fully-masked row all zeros.

    The notes' softmax(S + M), M = -inf where ``mask`` is False; ``mask`` broadcasts to ``scores``
    (..., seq_q, seq_k), None = no mask.

    !!! equation "Transformer › Softmax"
        $P^\alpha = \frac{\exp(x^\alpha)}{\sum_{\beta} \exp(x^\beta)}$: a vector of scores to probabilities
        over the keys; a masked key gets 0, and a row whose keys are all masked gives zeros, never NaN.

    !!! departure "Transformer › Softmax (slip in the notes)"
        notes: $P^{[n]} = \exp(x^{[n]}) / \Vert \exp(x^{[n]}) \Vert_0$.
        seqlab: the sum of the exponentials, $\Vert \exp(x) \Vert_1 = \sum_\beta \exp(x^\beta)$, as the notes'
        own component form has it ($\Vert \cdot \Vert_0$ would count the non-zero entries).

    !!! departure "Transformer › Masked attention (slip in the notes)"
        notes: the mask example fills the future scores with $-10$ ("PyTorch mask-fill (0, -10)") and shows their
        weights after the softmax as exactly 0.
        seqlab: $M = -\infty$, so a masked key's weight is exactly 0 (with $-10$ a masked key keeps
        $e^{-10} \approx 4.5 \cdot 10^{-5}$ times the weight of a visible key of score 0), and a row whose keys
        are all masked gives zeros.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)  # ..., seq_q, seq_k
    mask, empty = open_empty_rows(mask)
    scores = scores.masked_fill(~mask, float("-inf"))  # + M: -inf where the mask is False (empty rows stay finite)
    return torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)  # ..., seq_q, seq_k; fully-masked rows -> zeros


def to_torch_key_padding_mask(mask: Tensor) -> Tensor:
    """Our (batch, seq_k) True = real token -> ``key_padding_mask`` of nn.MultiheadAttention (True = ignore)."""
    return ~mask


def to_torch_attn_mask(mask: Tensor) -> Tensor:
    """Our (seq_q, seq_k) True = may attend -> boolean ``attn_mask`` of nn.MultiheadAttention (True = not allowed)."""
    return ~mask
