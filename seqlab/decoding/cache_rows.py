"""The rows of a KV cache as decoding moves them: keep, repeat and reorder rows (beam search: each surviving
prefix continues its parent's row), shift a row's slots (rows that joined at different steps aligned on one
clock), stack two caches.

A :class:`~seqlab.nn.attention.KVCache` holds ``k[layer]`` and ``v[layer]`` (batch, head, max_len, depth), one
slot counter ``pos`` shared by every row and, with left padding, ``start`` (batch,): row b's token in slot s is at
position s - start[b], and slots before start[b] are masked (:meth:`~seqlab.nn.attention.KVCache.pad_left`). So a
row's keys and values do not depend on the slots they sit in, only on the positions they were computed at: moving
a row's tokens by d slots and its start by d leaves every attention score, and so every output, as it was (up to
the order of a softmax's sum over the slots, a rounding).

Shapes: batch (rows), head, max_len (slots), depth.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqlab.nn.attention import KVCache


def select_rows(cache: KVCache, rows: Tensor) -> None:
    """Row i of the cache becomes row ``rows[i]`` of the old one (rows may repeat, reorder or drop rows), keys,
    values and left padding alike: ``index_select`` on the batch dimension of every layer's storage.

    With as many rows as before (beam search's reordering) it is done in place, so a compiled step keeps reading
    the same storage, and copies only what a later step reads: the rows that take another row's tokens, and of
    them the ``pos`` filled slots (a slot at or past ``pos`` is written before any query attends it)."""
    if rows.numel() == cache.k[0].shape[0]:
        moved = (rows != torch.arange(rows.numel(), device=rows.device)).nonzero().flatten()  # moved
        if moved.numel() and cache.pos:
            source = rows.index_select(0, moved)  # moved
            for t in (*cache.k, *cache.v):
                filled = t.narrow(2, 0, cache.pos)  # batch, head, pos, depth
                filled.index_copy_(0, moved, filled.index_select(0, source))  # moved, head, pos, depth
    else:
        for store in (cache.k, cache.v):
            for i, t in enumerate(store):
                store[i] = t.index_select(0, rows)  # rows, head, slots, depth
    if cache.start is not None:
        cache.start = cache.start.index_select(0, rows)  # rows


def row_lengths(cache: KVCache) -> Tensor:
    """(batch,) the tokens each row holds: pos - start[b] (pos for every row without left padding)."""
    batch = cache.k[0].shape[0]
    start = cache.start if cache.start is not None else torch.zeros(batch, dtype=torch.long)
    return cache.pos - start.cpu()  # batch


def shift_slots(cache: KVCache, shift: Tensor, pos: int) -> None:
    """Move row b's tokens ``shift[b]`` slots to the right (left when negative) and set the slot counter to
    ``pos``: slot s of the result holds slot s - shift[b] (a ``gather`` on the slot dimension), start[b] grows by
    shift[b]. Slots that receive no token keep a copy of an edge slot: they lie before the new start (masked) or
    at or after ``pos`` (masked causally, then written)."""
    k0 = cache.k[0]
    batch, heads, slots, depth = k0.shape
    device = k0.device
    start = cache.start if cache.start is not None else torch.zeros(batch, dtype=torch.long, device=device)
    shift = shift.to(device=device, dtype=torch.long)  # batch
    source = (torch.arange(slots, device=device)[None, :] - shift[:, None]).clamp(0, slots - 1)  # batch, max_len
    index = source[:, None, :, None].expand(batch, heads, slots, depth)  # batch, head, max_len, depth
    cache.k = [k.gather(2, index) for k in cache.k]  # batch, head, max_len, depth
    cache.v = [v.gather(2, index) for v in cache.v]  # batch, head, max_len, depth
    cache.start = start + shift  # batch
    set_pos(cache, pos)


def set_pos(cache: KVCache, pos: int) -> None:
    """Set the slot counter (the Python int, its device copy and the slot window that a compiled step reads)."""
    cache.set_pos(pos)


def stack(cache: KVCache, other: KVCache) -> None:
    """Append ``other``'s rows below ``cache``'s (both at the same ``pos``, with left padding set on both)."""
    if cache.pos != other.pos or cache.start is None or other.start is None:
        raise ValueError(f"stacked caches need one slot counter and left padding; got pos {cache.pos} and {other.pos}")
    cache.k = [torch.cat([a, b]) for a, b in zip(cache.k, other.k)]  # batch + other, head, max_len, depth
    cache.v = [torch.cat([a, b]) for a, b in zip(cache.v, other.v)]  # batch + other, head, max_len, depth
    cache.start = torch.cat([cache.start, other.start])  # batch + other
