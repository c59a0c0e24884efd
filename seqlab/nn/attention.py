"""Scaled dot-product attention, multi-head attention and the KV cache for incremental decoding.

Equations (notes: Transformer; each function below carries its own as tags):
- masked attention: att(Q, K, V, M) = softmax(Q·K / sqrt(d_k) + M) · V
- the tensor notation: per-head projections Q, K, V; B = QK / sqrt(d); A = V softmax(B); heads merged back
  to D = n_heads * d; the reshapes (head, depth) <-> d_model
- the multi-head steps of the notes' worked example: dense q/k/v, split into heads (batch, head, seq, depth),
  A = q·k^T / sqrt(d_k), S = softmax(A), S·v
- multi-head attention: MHA(X) = W^O · att(W^Q X, W^K X, W^V X, M)

Masks follow :mod:`seqlab.nn.masks` (boolean, True = may attend). A query row whose keys are all
masked yields zeros in the output and the weights, never NaN (also not in the gradients):
:func:`seqlab.nn.masks.masked_softmax`, the rule additive attention uses too.

``MultiHeadAttention.forward`` returns the output (fused SDPA by default); ``forward_with_weights`` returns an
:class:`Attended` (output, weights) computed on the equations path: one return type per method.

Shapes: batch; head; seq_q, seq_k (query and key positions); depth = d_model / n_heads;
max_len (slots of a KV cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError
from seqlab.nn.dropout import dropout
from seqlab.nn.masks import causal_mask, causal_mask_at, combine, masked_softmax, open_empty_rows, to_additive

IMPLS = ("auto", "fused", "equations")  # MultiHeadAttention.impl: which path computes att(Q, K, V, M)


def check_heads(d_model: int, n_heads: int) -> None:
    """Refuse a d_model that n_heads does not divide (depth = d_model / n_heads must be whole)."""
    if n_heads <= 0 or d_model <= 0:
        raise SeqlabError(f"d_model={d_model} and n_heads={n_heads} must be positive; set both to whole numbers >= 1")
    if d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise SeqlabError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}; "
            f"use n_heads in {divisors} or a d_model that is a multiple of {n_heads}"
        )


@lru_cache(maxsize=32)
def _cached_causal(seq_q: int, seq_k: int, device: torch.device) -> Tensor:
    """causal_mask, built once per (seq_q, seq_k, device); read-only, shared by every call."""
    with torch.inference_mode(False):  # a normal tensor, usable later in autograd
        return causal_mask(seq_q, seq_k, device)


@lru_cache(maxsize=32)
def _cached_causal_bias(seq_q: int, seq_k: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    with torch.inference_mode(False):
        return to_additive(causal_mask(seq_q, seq_k, device), dtype)


def _causal_bias(seq_q: int, seq_k: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """The notes' additive causal M (Transformer › Masked attention: 0 where j <= i, -inf elsewhere), (seq_q,
    seq_k), cached per dtype."""
    if torch.compiler.is_compiling():
        return to_additive(causal_mask(seq_q, seq_k, device), dtype)
    return _cached_causal_bias(seq_q, seq_k, dtype, device)


def _causal(seq_q: int, seq_k: int, device: torch.device) -> Tensor:
    if torch.compiler.is_compiling():  # inside a compiled graph the mask is a constant anyway
        return causal_mask(seq_q, seq_k, device)
    return _cached_causal(seq_q, seq_k, device)


def attention_equations(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    r"""softmax(QK^T / sqrt(d_k) + M) V written out (notes: Transformer › Masked attention).

    q (batch, head, seq_q, depth), k and v (batch, head, seq_k, depth); ``mask`` broadcastable to
    (batch, head, seq_q, seq_k), True = may attend; ``is_causal`` adds the (cached) causal mask.
    Returns out (batch, head, seq_q, depth) and the weights (batch, head, seq_q, seq_k) before dropout.

    !!! equation "Transformer › Self-attention"
        $A(q, K, V) = \sum_i \frac{\exp(q \cdot k_i / \sqrt{d_k})}{\sum_j \exp(q \cdot k_j / \sqrt{d_k})} v_i$:
        one query's output, the values weighted by how well each key answers the query; the notes'
        self-attention with the $1/\sqrt{d_k}$ of scaled dot-product attention, which the code applies to the query
        before the product, or on the causal training path to the product itself, before the softmax.

    !!! departure "Transformer › Self-attention"
        notes: the self-attention lecture scores $\mathrm{softmax}(\langle q_3 \cdot k_1, q_3 \cdot k_2, q_3 \cdot
        k_3 \rangle)$ and $A(q, K, V) = \sum_i \frac{\exp(q \cdot k_i)}{\sum_j \exp(q \cdot k_j)} v_i$, unscaled;
        the Transformer lectures divide by $\sqrt{d_k}$.
        seqlab: always scaled, $q \cdot k_i / \sqrt{d_k}$: on the causal training path (``is_causal`` with no
        other mask) the product is scaled, $QK^\top / \sqrt{d_k} + M$ in one ``baddbmm``; on every other path
        $q$ is multiplied by $1/\sqrt{d_k}$ before the product (the smaller tensor). The same scores up to
        rounding.

    !!! equation "Transformer › Scaled dot-product attention"
        $\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V$: every query
        at once, as matrix products; the equations path, which also returns the weights.

    !!! equation "Transformer › Masked attention"
        $\mathrm{att}(Q, K, V, M) = \mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V$: a mask
        $M$ (0 or $-\infty$) adds to the scores, so a masked key gets weight 0.
    """
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    if is_causal and mask is None and seq_k >= seq_q:
        # causal only (training): M added inside the GEMM, QK^T / sqrt(d_k) + M in one baddbmm; no row is empty
        batch, head, _, depth = q.shape
        scores = torch.baddbmm(
            _causal_bias(seq_q, seq_k, q.dtype, q.device),  # seq_q, seq_k: 0 or -inf
            q.reshape(batch * head, seq_q, depth),  # batch*head, seq_q, depth
            k.reshape(batch * head, seq_k, depth).transpose(1, 2),  # batch*head, depth, seq_k
            alpha=1.0 / math.sqrt(depth),
        ).view(batch, head, seq_q, seq_k)  # batch, head, seq_q, seq_k
        weights = torch.softmax(scores, dim=-1)  # batch, head, seq_q, seq_k
        return dropout(weights, dropout_p, training) @ v, weights  # batch, head, seq_q, depth
    mask = combine(_causal(seq_q, seq_k, q.device), mask) if is_causal else mask
    # (q / sqrt(d_k)) K^T equals QK^T / sqrt(d_k) and scales the smaller tensor
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)  # batch, head, seq_q, seq_k
    weights = masked_softmax(scores, mask)  # batch, head, seq_q, seq_k: + M, softmax, fully-masked rows -> zeros
    out = dropout(weights, dropout_p, training) @ v  # batch, head, seq_q, depth
    return out, weights


def attention_fused(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
    is_causal: bool = False,
) -> Tensor:
    r"""The same attention through ``torch.nn.functional.scaled_dot_product_attention``.

    Same arguments and conventions as :func:`attention_equations`; returns only out
    (batch, head, seq_q, depth) because SDPA does not expose the weights.

    !!! equation "Transformer › Scaled dot-product attention"
        $\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V$: the
        fused path, PyTorch's kernel (flash or memory-efficient attention), tested equal to the equations path.
    """
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    if is_causal and (mask is not None or seq_q != seq_k):
        # SDPA's is_causal is aligned top-left; ours bottom-right (masks.causal_mask), and cannot mix with a mask
        mask, is_causal = combine(_causal(seq_q, seq_k, q.device), mask), False
    mask, empty = open_empty_rows(mask)  # as masked_softmax does, around the kernel
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p if training else 0.0, is_causal=is_causal
    )  # batch, head, seq_q, depth
    if empty is not None:
        out = out.masked_fill(empty, 0.0)  # fully-masked rows -> zeros
    return out


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    r"""(batch, seq, d_model) -> (batch, head, seq, depth) (notes: Transformer › Tensor notation).

    !!! equation "Transformer › Tensor notation"
        $T^{\Delta(\nu, \delta)} \rightarrow T^{\nu, \delta}$: the reshape that splits the model width $D$ into
        $n_h$ heads of depth $d$ ("split into heads")."""
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)  # batch, head, seq, depth


def merge_heads(x: Tensor) -> Tensor:
    r"""(batch, head, seq, depth) -> (batch, seq, d_model) (notes: Transformer › Tensor notation).

    !!! equation "Transformer › Tensor notation"
        $A^{[n_h], [d], [\ell]} \rightarrow A^{[D], [\ell]}$: the heads' outputs merged back into one vector of
        width $D = n_h d$ per position."""
    batch, head, seq, depth = x.shape
    return x.transpose(1, 2).reshape(batch, seq, head * depth)  # batch, seq, d_model


class Attended(NamedTuple):
    """An output and the attention weights that produced it (each query's row sums to 1, or is 0 when
    all its keys are masked). The shapes are MultiHeadAttention's; a method that returns other shapes
    says so (Seq2SeqAttention: logits and alpha)."""

    output: Tensor  # batch, seq_q, d_model
    weights: Tensor  # batch, head, seq_q, seq_k (seq_k = the attended slots with a KV cache: pos + seq_q)


@dataclass
class LayerKV:
    """One layer's slice of a :class:`KVCache` for one forward call: storage plus the positions written."""

    k: Tensor  # batch, head, slots, depth
    v: Tensor  # batch, head, slots, depth
    positions: Tensor  # seq_q: absolute positions of the new tokens
    keys: int | None = None  # the slots attended, 0 .. keys - 1 (the filled ones and the new tokens'); None = all

    def write(self, k_new: Tensor, v_new: Tensor) -> tuple[Tensor, Tensor]:
        """Store new keys/values (batch, head, seq_q, depth) at ``positions``; return all slots."""
        self.k.index_copy_(2, self.positions, k_new.to(self.k.dtype))  # batch, head, slots, depth
        self.v.index_copy_(2, self.positions, v_new.to(self.v.dtype))  # batch, head, slots, depth
        if self.keys is None:
            return self.k, self.v
        return self.k.narrow(2, 0, self.keys), self.v.narrow(2, 0, self.keys)  # batch, head, keys, depth


class KVCache:
    r"""A preallocated, static-shape key/value cache for incremental decoding.

    ``k[layer]`` and ``v[layer]`` are (batch, head, max_len + 1, depth). A forward call with ``seq``
    new tokens writes their keys/values at positions [pos, pos + seq) (``index_copy_`` with a
    position tensor) and attends over slots [0, pos + seq) only, with a causal mask built from the positions
    (:func:`seqlab.nn.masks.causal_mask_at`). That count is read from the length of ``window`` (the slot numbers
    0 .. pos: the filled ones and the next token's), which the compiled decode step marks dynamic
    (:func:`seqlab.decoding.decode.decode_step`), so it is one graph for every position, its loops running over
    the filled slots instead of all max_len; a step follows the prompt, so the window holds at least 2 slots (a
    length of 1 is one torch.compile always specialises on). The one spare slot keeps that window a strict part
    of the storage at every position (a window of all of it would be contiguous, a case the compiled graph would
    specialise on). The model advances the cache after the call. Passed explicitly to ``forward``; never stored in
    a module. Use it in the
    autograd mode it was created in (e.g. create and use it inside ``torch.inference_mode()``).

    !!! equation "Transformer › Self-attention (beyond the notes)"
        $K_{1..t} = [K_{1..t-1} ; k_t],\ V_{1..t} = [V_{1..t-1} ; v_t]$: in causal self-attention $h_t$ reads
        only $k_{1..t}$ and $v_{1..t}$, so generation keeps them and computes one new key and value per step.
    """

    def __init__(
        self,
        n_layers: int,
        batch: int,
        n_heads: int,
        max_len: int,
        depth: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        shape = (batch, n_heads, max_len + 1, depth)  # one spare slot (see above), never written
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.max_len = max_len
        self._slots = torch.arange(max_len + 1, device=device)  # slots
        self.pos_tensor = torch.zeros((), dtype=torch.long, device=device)  # the count, on the device
        self.set_pos(0)  # tokens already cached
        self.start: Tensor | None = None  # (batch,) first real slot of each left-padded row; None = no padding

    def set_pos(self, pos: int) -> None:
        """Count ``pos`` tokens as cached: the Python int, its device copy and the ``window`` (pos + 1,)."""
        self.pos = pos
        self.pos_tensor.fill_(pos)
        self.window = self._slots[: pos + 1]  # pos + 1: the filled slots and the next token's

    def keys(self, seq: int) -> int:
        """The slots a forward call of ``seq`` new tokens attends: the filled ones and theirs."""
        return self.window.shape[0] - 1 + seq

    def positions(self, seq: int) -> Tensor:
        """(seq,) slots pos .. pos + seq - 1 of the next ``seq`` tokens (their positions without left padding)."""
        return self.pos_tensor + torch.arange(seq, device=self.pos_tensor.device)

    def pad_left(self, pads: Tensor) -> None:
        """Mark the first ``pads[b]`` slots of row b (batch,) as left padding: a row's token in slot s is at
        position s - pads[b] (Hugging Face's cumsum of the attention mask, minus 1), and no query attends the
        padding slots. Set before the prompt is fed."""
        self.start = pads.to(device=self.pos_tensor.device, dtype=torch.long)  # batch

    def token_positions(self, seq: int) -> Tensor:
        """The positions of the next ``seq`` tokens: (seq,), or (batch, seq) with left padding (padding
        slots get position 0; their outputs are never attended)."""
        slots = self.positions(seq)  # seq
        if self.start is None:
            return slots
        return (slots[None, :] - self.start[:, None]).clamp(min=0)  # batch, seq

    def key_padding(self, seq: int) -> Tensor | None:
        """(batch, keys) for ``seq`` new tokens: True = a real token's slot, or None without left padding."""
        if self.start is None:
            return None
        slots = self._slots[: self.keys(seq)]  # keys
        return slots[None, :] >= self.start[:, None]  # batch, keys

    def layer(self, index: int, positions: Tensor) -> LayerKV:
        """Layer ``index``'s storage, to write the tokens at ``positions`` and attend the slots up to them."""
        return LayerKV(self.k[index], self.v[index], positions, self.keys(positions.shape[0]))

    def advance(self, seq: int) -> None:
        """Count ``seq`` more tokens as cached (called by the model after a forward pass)."""
        self.set_pos(self.pos + seq)

    def reset(self) -> None:
        """Forget every cached token and the left padding (the storage is reused; stale slots are masked)."""
        self.set_pos(0)
        self.start = None


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention: project, split into heads, attend, merge, output projection.

    MHA(X) = W^O · att(W^Q X, W^K X, W^V X, M) (notes: Transformer › Multi-head attention, and the steps of
    the worked example). Self-attention computes Q, K, V with ONE packed projection ``qkv``
    (rows [W^Q; W^K; W^V], the layout of torch's ``in_proj_weight``: one GEMM). Cross-attention
    (``cross=True``) takes Q from x and K, V from a context: ``q`` and packed ``kv`` projections.
    ``causal=True`` makes self-attention causal (the notes' M). ``impl`` ("auto", "fused" = SDPA, or
    "equations" = :func:`attention_equations`; :func:`attention_path` says which path a call takes) is a
    config choice (``model.impl``) and may be switched, e.g. by :func:`set_attention_impl`. ``forward`` returns the
    output; ``forward_with_weights`` the same output with the weights, an :class:`Attended`, through the equations
    path (SDPA does not expose the weights).

    !!! equation "Transformer › Multi-head attention"
        $Q = X W_Q + b_Q,\ K = X W_K + b_K,\ V = X W_V + b_V$: the queries, keys and values, affine projections of
        the rows of $X$ (one position a row; for cross-attention, K and V project the context); the biases are on
        by default (the notes have none; ``model.bias = false`` drops them).
        default: model.bias = true

    !!! equation "Transformer › Multi-head attention"
        $\mathrm{MHA}(X) = [\mathrm{att}(Q_1, K_1, V_1, M), \dots, \mathrm{att}(Q_{n_h}, K_{n_h}, V_{n_h}, M)]\,
        W^O + b^O$: attention in each of the $n_h$ heads ($Q_\nu$: the $\nu$-th block of $d_{model} / n_h$
        columns of $Q$), the heads' outputs concatenated and projected back to $d_{model}$ by $W^O$.
        default: model.bias = true

    !!! departure "Transformer › Multi-head attention (notation)"
        notes: named tensors, $Q = W^Q \cdot_{emb} X$ and $\mathrm{MHA}(X) = W^O \cdot_{head, val}
        \mathrm{att}(\dots)$; column vectors in the tensor-notation lecture ($Q^{[D], [\ell]} = W_q E$); row
        vectors in another ($Q = X W_Q$).
        seqlab: row vectors throughout, one position a row: $Q = X W_Q + b_Q$ and $\mathrm{MHA}(X) = [\dots]\,
        W^O + b^O$; ``nn.Linear`` stores $W_Q^\top$ (out × in). The three $W$ are one packed projection
        ``qkv``.

    !!! departure "Transformer › Multi-head attention"
        notes: $Q$, $K$, $V$ and the output projection without biases.
        seqlab: a bias on each of the four projections by default (``model.bias``), as PyTorch's
        ``nn.MultiheadAttention`` and BERT have.
        default: model.bias = true

    !!! departure "Transformer › Multi-head attention"
        notes: the self-attention lecture computes $q_1 = f(W_q c_1)$, $k_1 = f(W_k c_1)$, $v_1 = f(W_v c_1)$ with
        $f = \mathrm{ReLU}$.
        seqlab: affine projections without an activation, $q = W_q c + b_q$, as in the Transformer lectures and
        the Transformer paper.

    !!! departure "Transformer › Multi-head attention"
        notes: the projection example has $d_k = 50$ and $d_v = 60$ ($W_K$: $70 \times 50$, $W_V$: $70 \times
        60$ for $d_{model} = 70$).
        seqlab: $d_k = d_v = d_{model} / n_h$ in every head (the named-tensor lecture's $W^V \in
        \mathbb{R}^{head, emb, val: d_k}$), so ``model.d_model`` must be a multiple of ``model.n_heads``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        impl: str = "auto",
        causal: bool = False,
        cross: bool = False,
    ) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        if impl not in IMPLS:
            raise SeqlabError(f"unknown attention impl {impl!r}; use one of {', '.join(IMPLS)}")
        if causal and cross:
            raise SeqlabError("cross-attention cannot be causal; pass causal=False with cross=True")
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.impl, self.causal, self.cross = impl, causal, cross
        if cross:
            self.q = nn.Linear(d_model, d_model, bias=bias)  # W^Q
            self.kv = nn.Linear(d_model, 2 * d_model, bias=bias)  # [W^K; W^V]
        else:
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # [W^Q; W^K; W^V]
        self.out = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def _heads(self, x: Tensor, context: Tensor | None, mask: Tensor | None, cache: LayerKV | None
               ) -> tuple[Tensor, Tensor, Tensor, Tensor | None, bool]:
        """Q from x, K and V from the context (cross) or x (self), split into heads: q (batch, head, seq_q, depth),
        k and v (batch, head, seq_k, depth), or the cache's max_len slots with ``cache`` (the new keys written,
        the causal mask built from its positions). Returns q, k, v, the mask and whether attention is still to
        be made causal."""
        if self.cross != (context is not None):
            raise ValueError("cross-attention needs a context and self-attention takes none")
        if self.cross:
            q, k, v = self.q(x), *self.kv(context).chunk(2, dim=-1)  # batch, seq_q|seq_k, d_model
        else:
            q, k, v = self.qkv(x).chunk(3, dim=-1)  # batch, seq, d_model each
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))  # batch, head, seq, depth
        is_causal = self.causal
        if cache is not None:
            k, v = cache.write(k, v)  # batch, head, keys, depth
            if self.causal:
                mask, is_causal = combine(causal_mask_at(cache.positions, k.shape[-2]), mask), False
        return q, k, v, mask, is_causal

    def forward(self, x: Tensor, context: Tensor | None = None, mask: Tensor | None = None,
                cache: LayerKV | None = None, weights: list[Tensor] | None = None) -> Tensor:
        """x (batch, seq_q, d_model), context (batch, seq_k, d_model) -> (batch, seq_q, d_model).

        ``mask`` broadcasts to (batch, head, seq_q, seq_k) (True = may attend); with ``cache`` the keys are the
        cache's max_len slots. The path is :func:`attention_path`'s choice; ``weights``, a list, collects this
        call's attention weights (batch, head, seq_q, seq_k) and takes the equations path (SDPA does not expose
        them): what :meth:`forward_with_weights` and the layers' ``record`` use.
        """
        q, k, v, mask, is_causal = self._heads(x, context, mask, cache)  # batch, head, seq, depth
        p = self.dropout if self.training else 0.0
        cached_step = cache is not None and q.shape[-2] == 1  # one query against the cache: a decode step
        if weights is not None or attention_path(self.impl, q, p, cached_step) == "equations":
            o, w = attention_equations(q, k, v, mask, p, self.training, is_causal)  # batch, head, seq_q, depth
            if weights is not None:
                weights.append(w)  # batch, head, seq_q, seq_k
        else:
            o = attention_fused(q, k, v, mask, p, self.training, is_causal)  # batch, head, seq_q, depth
        return self.out(merge_heads(o))  # batch, seq_q, d_model

    def forward_with_weights(self, x: Tensor, context: Tensor | None = None, mask: Tensor | None = None,
                             cache: LayerKV | None = None) -> Attended:
        """As :meth:`forward`, through the equations path (SDPA does not expose the weights): Attended(output
        (batch, seq_q, d_model), weights (batch, head, seq_q, seq_k))."""
        weights: list[Tensor] = []
        return Attended(self(x, context, mask, cache, weights), weights[0])  # batch, seq_q, d_model


def attention_path(impl: str, q: Tensor, dropout: float, cached_step: bool) -> str:
    """The path one ``MultiHeadAttention.forward`` call takes: "fused" (SDPA) or "equations"
    (``forward_with_weights`` always takes the equations path: SDPA does not expose the weights). "fused" and
    "equations" are taken as given; "auto" (the default) takes the equations path where it measured faster, and
    SDPA elsewhere:

    - a one-query step against a KV cache (decoding): SDPA's per-call overhead exceeds the work;
    - on CPU, dropout in training: its dropout is cheaper than SDPA's (seqlab.nn.dropout, bench/RESULTS.md);
    - on CPU in bf16 (autocast): explicit bf16 matmuls beat SDPA's CPU kernel in training (lm_throughput).

    q (batch, head, seq_q, depth): its device and dtype (bf16 under autocast) are all the rule reads.
    """
    if impl != "auto":
        return impl
    on_cpu = q.device.type == "cpu"
    return "equations" if cached_step or (on_cpu and (dropout > 0.0 or q.dtype == torch.bfloat16)) else "fused"


def set_attention_impl(model: nn.Module, impl: str) -> None:
    """Switch every MultiHeadAttention in ``model`` to ``impl`` ("auto", "fused" or "equations"), in place."""
    if impl not in IMPLS:
        raise SeqlabError(f"unknown attention impl {impl!r}; use one of {', '.join(IMPLS)}")
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.impl = impl
