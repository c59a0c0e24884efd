"""Batching: padding with masks, LM windows, random LM batches, length buckets, length-pooled random batches and
length-sorted evaluation batches (notes: Tokens › Padding).

The notes: a batch of m sequences has one time axis up to the longest sequence, so shorter
sequences are padded ("we can perform zero padding"): ``<pad>`` has id 0 and a mask tells the
model which positions are real. Masks follow the one convention of :mod:`seqlab.nn.masks`
(boolean, True = real token / may attend); ``causal_mask`` and ``padding_mask`` are re-exported
from there.

Language-model windows: the target is the input shifted by one, ``x = t[i : i+T]``,
``y = t[i+1 : i+T+1]`` (each position predicts the next token).

Sentence tasks (translation, tagging, classification) draw each training batch with the data generator only
(:func:`sample_batch`): a pool of ``POOL_BATCHES * n`` random example indices, sorted by length, of which a random
run of ``n`` consecutive examples is the batch (little padding, no state besides the generator, so ``--resume``
continues bit-for-bit). Their evaluation batches are length-sorted runs over the whole split
(:func:`sorted_batches`, or ``max_batches`` of them spread evenly).

Shapes: batch, seq; T = seq_len (tokens per window); pool (POOL_BATCHES * n indices).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError
from seqlab.nn.masks import causal_mask, padding_mask

__all__ = ["bucket_batches", "causal_mask", "lm_windows", "pad_batch", "padding_mask", "random_lm_batch",
           "sample_batch", "sorted_batches", "spread_batches"]

POOL_BATCHES = 16  # sample_batch cuts training batches from length-sorted pools of this many batches


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[Tensor, Tensor]:
    r"""Pad to the longest sequence in the batch.

    Returns ``ids`` LongTensor (batch, seq) filled with ``pad_id`` after each sequence's end, and
    ``mask`` BoolTensor (batch, seq), True = real token (from the lengths, so a ``pad_id`` inside a
    sequence still counts as real).

    !!! equation "Tokens › Padding"
        $\mathrm{ids}_{b,t} = \langle pad \rangle = 0,\ \mathrm{mask}_{b,t} = \mathrm{False} \text{ for } t \ge
        \ell_b$: a batch of sequences of lengths $\ell_b$ on one time axis, the short ones padded with zeros and
        a mask telling the model which positions are real.
    """
    if len(seqs) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)  # batch
    width = int(lengths.max())
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)  # batch, seq
    mask = torch.arange(width)[None, :] < lengths[:, None]  # batch, seq
    if width:
        ids[mask] = torch.as_tensor(np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs]))
    return ids, mask


def _as_long_1d(tokens) -> Tensor:
    t = tokens if isinstance(tokens, Tensor) else torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    if t.dim() != 1:
        raise ValueError(f"expected a 1-D token sequence, got shape {tuple(t.shape)}")
    return t.long()


def lm_windows(tokens, seq_len: int, stride: int | None = None) -> tuple[Tensor, Tensor]:
    r"""All LM windows of a 1-D token sequence: ``x[k] = t[i : i+T]``, ``y[k] = t[i+1 : i+T+1]`` for
    ``i = k * stride`` (default stride = ``seq_len``, non-overlapping), while ``i + T + 1 <= len(t)``.

    Returns ``(x, y)`` LongTensors (windows, T), views of the input (no copy) when it is a LongTensor.

    !!! equation "Tokens › Next-token windows"
        $x = (t_i, \dots, t_{i+T-1}),\ y = (t_{i+1}, \dots, t_{i+T})$: a language model's training pair, the
        target the input shifted by one, so each position predicts the next token.
    """
    t = _as_long_1d(tokens)
    stride = seq_len if stride is None else stride
    if seq_len < 1 or stride < 1:
        raise ValueError(f"seq_len and stride must be >= 1, got {seq_len} and {stride}")
    if len(t) < seq_len + 1:
        raise SeqlabError(
            f"corpus of {len(t)} tokens is too short for windows of {seq_len} tokens (needs {seq_len + 1}); "
            "give more text or lower the sequence length"
        )
    x = t[:-1].unfold(0, seq_len, stride)  # windows, T
    y = t[1:].unfold(0, seq_len, stride)  # windows, T
    return x, y


def random_lm_batch(tokens, batch: int, seq_len: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """A random LM batch (nanoGPT style): ``batch`` start offsets drawn uniformly from
    ``[0, len(t) - T)`` with ``generator`` only (no global RNG), then x = t[i:i+T], y = t[i+1:i+T+1].

    ``tokens`` is a 1-D numpy array, a ``np.memmap`` (only the sampled rows are read) or a tensor.
    Returns ``(x, y)`` LongTensors (batch, T).
    """
    n = len(tokens)
    if n < seq_len + 1:
        raise SeqlabError(
            f"corpus of {n} tokens is too short for windows of {seq_len} tokens (needs {seq_len + 1}); "
            "give more text or lower the sequence length"
        )
    starts = torch.randint(n - seq_len, (batch,), generator=generator)  # batch
    rows = starts[:, None] + torch.arange(seq_len + 1)[None, :]  # batch, T+1
    if isinstance(tokens, Tensor):
        window = tokens[rows].long()  # batch, T+1
    else:
        window = torch.from_numpy(np.asarray(tokens)[rows.numpy()].astype(np.int64))  # batch, T+1
    return window[:, :-1], window[:, 1:]  # (batch, T), (batch, T)


def bucket_batches(
    lengths: Sequence[int],
    batch_size: int,
    shuffle: bool,
    generator: torch.Generator | None = None,
    pool_batches: int = 50,
) -> list[list[int]]:
    """Group example indices into batches of similar length, so little of each batch is padding.

    Without ``shuffle``: indices sorted by length (ties by index) and cut into consecutive batches.
    With ``shuffle`` (``generator`` required, the only randomness used): the indices are permuted,
    cut into pools of ``pool_batches * batch_size``, each pool is sorted by length and cut into
    batches, and the batch order is permuted; so batches differ between epochs but stay homogeneous.
    Every index appears exactly once; only the last batch of a pool may be smaller than ``batch_size``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    lengths = np.asarray(lengths, dtype=np.int64)
    if not shuffle:
        order = np.argsort(lengths, kind="stable")
        return [order[i : i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if generator is None:
        raise ValueError("bucket_batches(shuffle=True) needs a torch.Generator, so batches are reproducible")
    perm = torch.randperm(len(lengths), generator=generator).numpy()
    pool = pool_batches * batch_size
    batches = []
    for p in range(0, len(perm), pool):
        chunk = perm[p : p + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def spread_batches(items: Sequence, batch_size: int, max_batches: int | None = None) -> list:
    """``items`` cut into consecutive batches of ``batch_size``; with ``max_batches``, only that many, spread
    evenly over them (periodic validation scores a representative subset, deterministically)."""
    batches = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
    if max_batches is not None and len(batches) > max_batches:
        step = len(batches) / max_batches
        batches = [batches[int(i * step)] for i in range(max_batches)]
    return batches


def sample_batch(lengths: Tensor, n: int, generator: torch.Generator) -> list[int]:
    """``n`` example indices: a random run of ``n`` in a length-sorted random pool of POOL_BATCHES * n, drawn with
    ``generator`` only. ``lengths`` (examples,) is each example's length."""
    pool = torch.randint(len(lengths), (POOL_BATCHES * n,), generator=generator)  # pool
    pool = pool[torch.sort(lengths[pool], stable=True).indices]  # pool, by length
    start = int(torch.randint(POOL_BATCHES, (1,), generator=generator)) * n
    return pool[start:start + n].tolist()


def sorted_batches(lengths: Sequence[int], batch_size: int, max_batches: int | None = None) -> list[list[int]]:
    """Example indices in length-sorted batches (ties in index order); with ``max_batches``, that many spread
    evenly over them."""
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable").tolist()
    return spread_batches(order, batch_size, max_batches)
