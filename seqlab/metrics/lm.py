"""Language-model metrics: token-level negative log-likelihood and perplexity.

The notes (Recurrent neural networks › Language model loss): the loss is the average token-level negative
log-likelihood, L = (1/N) sum_t -log p(x_t | x_<t). Perplexity is exp of the *token-weighted* mean NLL over the
whole evaluation set (specs/metrics.md §4.1): padding positions are excluded from both the sum and the count
(§4.2), and sums are accumulated over batches before dividing, never averaged per batch (§4.3). A token stream is
scored in non-overlapping windows, so that every token after the first is scored exactly once (:func:`score_stream`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    import numpy as np


def nll_sum(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None = None,
            label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
    r"""Sum of -log p(target) over the real (mask True) positions, and their count.

    logits (batch, seq, vocab) score the targets (batch, seq) at the same positions (already shifted:
    logits at position i predict the token at i + 1 of the input). The log-softmax runs in float32 at least.
    With ``label_smoothing`` = eps (a training loss, Szegedy et al. 2016), each term is
    (1 - eps) * -log p(target) + eps * mean over the vocabulary of -log p(v), as torch's cross_entropy.

    !!! equation "Recurrent neural networks › Softmax and cross-entropy"
        $p_i = \frac{e^{a_i}}{\sum_j e^{a_j}},\ L(\hat{y}, y) = -\sum_i y_i \log \hat{y}_i = -\log p_{y}$: the
        softmax of the logits over the vocabulary (or the labels) and the cross-entropy of the true token,
        computed together as a log-softmax.
    """
    vocab = logits.size(-1)
    flat_logits = logits.reshape(-1, vocab)  # (batch * seq, vocab)
    flat_targets = targets.reshape(-1)  # (batch * seq,)
    if flat_logits.dtype in (torch.float16, torch.bfloat16):
        flat_logits = flat_logits.float()
    if mask is None:
        return (F.cross_entropy(flat_logits, flat_targets, reduction="sum", label_smoothing=label_smoothing),
                flat_targets.numel())
    keep = mask.reshape(-1)
    losses = F.cross_entropy(flat_logits, flat_targets, reduction="none",
                             label_smoothing=label_smoothing)  # (batch * seq,)
    return (losses * keep).sum(), int(keep.sum())


def perplexity(total_nll: float, count: int) -> float:
    r"""exp(token-weighted mean NLL); NaN when nothing was scored (0/0, as the references give).

    !!! equation "Recurrent neural networks › Language model loss (beyond the notes)"
        $\mathrm{PPL} = \exp\left(\frac{1}{N} \sum_{t=1}^{N} -\log p(x_t \mid x_{<t})\right)$: perplexity, the
        exponential of the average token-level negative log-likelihood over a whole evaluation set."""
    if count == 0:
        return math.nan
    return math.exp(total_nll / count)


def eval_windows(n_tokens: int, max_len: int) -> list[tuple[int, int]]:
    """Non-overlapping (start, length) windows: inputs t[s:s+L], targets t[s+1:s+L+1]; every token but the
    first is a target exactly once."""
    return [(s, min(max_len, n_tokens - 1 - s)) for s in range(0, max(n_tokens - 1, 0), max_len)]


def window_batches(tokens: np.ndarray, max_len: int, batch_size: int, max_batches: int | None = None):
    """Batches of :func:`eval_windows` as (x, y, mask) int64/int64/bool arrays (batch, seq): inputs, targets, and
    True on real targets (a short last window is padded after its tokens). With ``max_batches`` only that many
    batches, spread evenly over the stream (periodic validation); all of them otherwise."""
    import numpy as np

    from seqlab.data.batching import spread_batches

    for batch in spread_batches(eval_windows(len(tokens), max_len), batch_size, max_batches):
        length = max(n for _, n in batch)
        x = np.zeros((len(batch), length), dtype=np.int64)  # batch, seq
        y = np.zeros((len(batch), length), dtype=np.int64)  # batch, seq
        mask = np.zeros((len(batch), length), dtype=bool)  # batch, seq
        for row, (s, n) in enumerate(batch):
            x[row, :n] = tokens[s:s + n]
            y[row, :n] = tokens[s + 1:s + n + 1]
            mask[row, :n] = True
        yield x, y, mask


@torch.no_grad()
def score_stream(model: torch.nn.Module, tokens: np.ndarray, max_len: int, batch_size: int, device: torch.device,
                 max_batches: int | None = None) -> tuple[float, int]:
    """(sum of NLL, number of scored tokens) over non-overlapping windows of the stream (:func:`window_batches`);
    padding is excluded from the sum and the count."""
    total, count = 0.0, 0
    for x, y, mask in window_batches(tokens, max_len, batch_size, max_batches):
        logits = model(torch.from_numpy(x).to(device))  # (batch, seq, vocab)
        s_, c_ = nll_sum(logits, torch.from_numpy(y).to(device), torch.from_numpy(mask).to(device))
        total += float(s_)
        count += c_
    return total, count


def ngram_nll(train: np.ndarray, tokens: np.ndarray, order: int, vocab_size: int,
              alpha: float = 1.0) -> tuple[float, int]:
    """(sum of NLL, count) of an add-alpha smoothed unigram (order 1) or bigram (order 2) model.

    Estimated on the ``train`` stream, it scores the same targets as the neural model's evaluation:
    every token of ``tokens`` but the first. Unigram P(b) = (c(b) + a) / (N + aV); bigram
    P(b | a') = (c(a' b) + a) / (c(a') + aV), with c(a') counted as a left context.
    """
    import numpy as np

    train = np.asarray(train, dtype=np.int64)
    tokens = np.asarray(tokens, dtype=np.int64)
    targets = tokens[1:]
    if order == 1:
        counts = np.bincount(train, minlength=vocab_size).astype(np.float64)
        logp = np.log((counts[targets] + alpha) / (len(train) + alpha * vocab_size))
    elif order == 2:
        pairs = train[:-1] * vocab_size + train[1:]
        keys, pair_counts = np.unique(pairs, return_counts=True)
        context = np.bincount(train[:-1], minlength=vocab_size).astype(np.float64)
        query = tokens[:-1] * vocab_size + targets
        at = np.clip(np.searchsorted(keys, query), 0, len(keys) - 1)
        c = np.where(keys[at] == query, pair_counts[at], 0).astype(np.float64)
        logp = np.log((c + alpha) / (context[tokens[:-1]] + alpha * vocab_size))
    else:
        raise ValueError(f"order must be 1 or 2, got {order}")
    return float(-logp.sum()), int(targets.size)
