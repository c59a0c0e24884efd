"""The worked example of the notes (Transformer › Worked example), traced step by step with named dimensions.

Three sentences, "Hello world haha", "How old are you", "Hey you", padded to max_len = 4 with
d_model = 4 and two heads of depth 2. The steps follow the notes' "Steps":

    (1) x = embeddings + PE                       (batch, seq, d_model)    = (3, 4, 4)
    (2) q = x·W_q, k = x·W_k, v = x·W_v            (batch, seq, d_model)
        split into heads                          (batch, head, seq, depth) = (3, 2, 4, 2)
        A = q·k^T / sqrt(d_k)                      (batch, head, seq, seq)  = (3, 2, 4, 4)
        S = softmax(A + M), M = -inf on padding keys (notes: Transformer › Masked attention)
        S·v, merged back to                       (batch, seq, d_model)    = (3, 4, 4)
        output = merged·W_o                        (batch, seq, d_model)

The token embeddings are the hand-made ones of the notes (the padding row is -1 everywhere); PE is the
sinusoidal encoding (notes: Transformer › Positional encoding); W_q, W_k, W_v, W_o come from
``torch.Generator().manual_seed(seed)`` (N(0, 0.3^2), rounded to one decimal) and without biases, so a reader
can redo the arithmetic by hand. The step functions are the library's own (:mod:`seqlab.nn`), and
:func:`attention_module` builds the MultiHeadAttention that computes the same output in one call.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch import Tensor

from seqlab.nn.attention import MultiHeadAttention, attention_equations, merge_heads, split_heads
from seqlab.nn.masks import key_padding_to_attn, padding_mask
from seqlab.nn.positions import sinusoidal_table

SENTENCES = ("Hello world haha", "How old are you", "Hey you")
D_MODEL, MAX_LEN, N_HEADS = 4, 4, 2
PAD = "<pad>"
# the notes' embedding tables, one row per word; "<.>" (padding) is -1 everywhere
NOTES_EMBEDDINGS = {
    PAD: [-1, -1, -1, -1],
    "hello": [1, 3, 4, 1],
    "world": [3, 2, 1, 0],
    "haha": [4, 5, 7, 6],
    "how": [1, 4, 6, 1],
    "old": [3, 1, 5, 4],
    "are": [1, 10, 20, 10],
    "you": [1, 2, 0, 1],
    "hey": [3, 1, 4, 5],
}

Trace = dict[str, tuple[Tensor, tuple[str, ...]]]


def vocabulary(sentences=SENTENCES) -> list[str]:
    """Lower-cased words: <pad> = 0, then by frequency, ties in order of first appearance."""
    counts = Counter(w for s in sentences for w in s.lower().split())
    return [PAD] + sorted(counts, key=lambda w: -counts[w])  # sorted() is stable: ties keep first appearance


def projection_weights(seed: int = 0) -> dict[str, Tensor]:
    """W_q, W_k, W_v, W_o as (d_model in, d_model out) matrices, applied as x·W: N(0, 0.3^2) draws
    rounded to one decimal (small enough that the softmax is not saturated by the notes' large embeddings)."""
    gen = torch.Generator().manual_seed(seed)
    names = ("w_q", "w_k", "w_v", "w_o")
    draws = {n: 0.3 * torch.randn(D_MODEL, D_MODEL, generator=gen, dtype=torch.float64) for n in names}
    return {n: w.round(decimals=1) + 0.0 for n, w in draws.items()}  # + 0.0 turns -0.0 into 0.0


def attention_module(seed: int = 0) -> MultiHeadAttention:
    """The library's MultiHeadAttention holding the same weights (nn.Linear stores W^T)."""
    w = projection_weights(seed)
    mha = MultiHeadAttention(D_MODEL, N_HEADS, bias=False).double().eval()
    with torch.no_grad():
        mha.qkv.weight.copy_(torch.cat([w["w_q"].T, w["w_k"].T, w["w_v"].T]))  # 3*d_model, d_model
        mha.out.weight.copy_(w["w_o"].T)  # d_model, d_model
    return mha


def trace(seed: int = 0) -> Trace:
    r"""Every tensor of the worked example: name -> (tensor, dimension names), in order of computation.

    !!! equation "Transformer › Worked example"
        $A = q\, k^\top / \sqrt{d_k},\ S = \mathrm{softmax}(A + M),\ \mathrm{out} = \mathrm{merge}(S\, v)\, W_o$:
        the notes' three sentences with $d_{model} = 4$, $\mathrm{max\_len} = 4$ and two heads of depth 2, every
        tensor kept with its named dimensions (``seqlab explain`` prints them).

    !!! departure "Transformer › Worked example (slip in the notes)"
        notes: step (1) adds PE to the embeddings, but $EPE_1$ (hello $[1.1, 3.2, 4.1, 10]$, world $[3.2, 2.1,
        1.2, 0.1]$) does not follow from the formula, and $EPE_2$, $EPE_3$ repeat the embeddings unchanged.
        seqlab: $x$ = embeddings + $PE$ from the formula: hello at position 0 becomes $[1, 4, 4, 2]$, world at
        position 1 $[3.841, 2.540, 1.010, 1.000]$, and every sentence gets the same $PE$ rows."""
    vocab = vocabulary()
    index = {w: i for i, w in enumerate(vocab)}
    words = [s.lower().split() for s in SENTENCES]
    ids = torch.tensor([[index[w] for w in ws] + [0] * (MAX_LEN - len(ws)) for ws in words])  # batch, seq
    table = torch.tensor([NOTES_EMBEDDINGS[w] for w in vocab], dtype=torch.float64)  # vocab, d_model
    pe = sinusoidal_table(MAX_LEN, D_MODEL, torch.float64)  # seq, d_model
    emb = table[ids]  # batch, seq, d_model
    x = emb + pe  # batch, seq, d_model  -- step (1)
    pad = padding_mask(ids, 0)  # batch, seq: True = real token
    w = projection_weights(seed)
    q, k, v = x @ w["w_q"], x @ w["w_k"], x @ w["w_v"]  # batch, seq, d_model
    qh, kh, vh = (split_heads(t, N_HEADS) for t in (q, k, v))  # batch, head, seq, depth
    scores = qh @ kh.transpose(-2, -1) / qh.shape[-1] ** 0.5  # batch, head, seq_q, seq_k: A = q·k^T/sqrt(d_k)
    attended, weights = attention_equations(qh, kh, vh, key_padding_to_attn(pad))  # S·v; S = softmax(A + M)
    merged = merge_heads(attended)  # batch, seq, d_model
    bsd, bhsd = ("batch", "seq", "d_model"), ("batch", "head", "seq", "depth")
    bhss = ("batch", "head", "seq_q", "seq_k")
    return {
        "ids": (ids, ("batch", "seq")),
        "padding": (pad, ("batch", "seq")),
        "embeddings": (emb, bsd),
        "pe": (pe, ("seq", "d_model")),
        "x": (x, bsd),
        **{name: (w[name], ("d_model_in", "d_model_out")) for name in ("w_q", "w_k", "w_v")},
        "q": (q, bsd), "k": (k, bsd), "v": (v, bsd),
        "q_heads": (qh, bhsd), "k_heads": (kh, bhsd), "v_heads": (vh, bhsd),
        "scores": (scores, bhss),
        "weights": (weights, bhss),
        "attended": (attended, bhsd),
        "merged": (merged, bsd),
        "w_o": (w["w_o"], ("d_model_in", "d_model_out")),
        "output": (merged @ w["w_o"], bsd),
    }


TITLES = {
    "ids": "token ids (vocabulary below), 0 = <pad>",
    "padding": "padding mask, True = real token (may be attended)",
    "embeddings": "token embeddings from the notes' tables",
    "pe": "sinusoidal PE(pos, 2i) = sin(pos/10000^(2i/d_model)), PE(pos, 2i+1) = cos(...)",
    "x": "step (1): embeddings + PE",
    "w_q": "W_q, applied as q = x·W_q", "w_k": "W_k, applied as k = x·W_k", "w_v": "W_v, applied as v = x·W_v",
    "q": "q = x·W_q", "k": "k = x·W_k", "v": "v = x·W_v",
    "q_heads": "q split into heads", "k_heads": "k split into heads", "v_heads": "v split into heads",
    "scores": "A = q_heads·k_heads^T / sqrt(depth)",
    "weights": "S = softmax(A + M), M = -inf on padding keys: rows sum to 1, padding columns are 0",
    "attended": "S·v_heads",
    "merged": "heads merged back",
    "w_o": "W_o, applied as output = merged·W_o",
    "output": "multi-head attention output = merged·W_o",
}


def _format(t: Tensor, dims: tuple[str, ...], words: list[list[str]], at: dict[str, int] | None = None) -> list[str]:
    """Matrices (the last two dims) under headers naming the leading indices; rows and key columns
    of a sentence are labelled with its words."""
    at = at or {}
    if t.dim() > 2:
        lines = []
        for i in range(t.shape[0]):
            lines += _format(t[i], dims[1:], words, {**at, dims[0]: i})
        return lines
    rows = t.reshape(-1, t.shape[-1]) if t.dim() == 2 else t.reshape(1, -1)
    row_dim, col_dim = (dims[-2] if t.dim() == 2 else None), dims[-1]
    sentence = words[at["batch"]] if "batch" in at else None
    labels = [""] * rows.shape[0]
    if row_dim in ("seq", "seq_q"):
        labels = sentence if sentence else [f"pos {i}" for i in range(rows.shape[0])]
    if rows.dtype == torch.bool:
        cells = [[str(c) for c in r.tolist()] for r in rows]
    elif rows.is_floating_point():
        cells = [[f"{c + 0.0:.4f}" for c in r.tolist()] for r in rows]  # + 0.0: no "-0.0000"
    else:
        cells = [[str(c) for c in r.tolist()] for r in rows]
    header = sentence if col_dim == "seq_k" and sentence else None
    cw = max(len(c) for c in sum(cells, header or []))  # column width
    lw = max(len(w) for w in sum(words, ["pos 0"])) + 2  # label width
    lines = [f"  [{', '.join(f'{k} {v}' for k, v in at.items())}]"] if at else []
    if header:
        lines.append(" " * (lw + 2) + "  ".join(f"{w:>{cw}}" for w in header))
    return lines + [f"{label:>{lw}}  " + "  ".join(f"{c:>{cw}}" for c in r) for label, r in zip(labels, cells)]


def render(tr: Trace, seed: int = 0) -> str:
    """The trace as text: per tensor its name, shape tuple, dimension names, title, then its values."""
    vocab = vocabulary()
    words = [[vocab[i] for i in row] for row in tr["ids"][0].tolist()]
    lines = [
        "the notes' worked example: " + " | ".join(SENTENCES),
        f"d_model={D_MODEL}, max_len={MAX_LEN}, {N_HEADS} heads of depth {D_MODEL // N_HEADS}; "
        f"W_q, W_k, W_v, W_o from torch.Generator().manual_seed({seed}), N(0, 0.3^2) rounded to 1 decimal, no biases",
        "vocabulary: " + " ".join(f"{w}={i}" for i, w in enumerate(vocab)),
        "",
    ]
    for name, (t, dims) in tr.items():
        lines.append(f"{name}  {tuple(t.shape)}  {', '.join(dims)}  -- {TITLES[name]}")
        lines += _format(t, dims, words)
        lines.append("")
    return "\n".join(lines)
