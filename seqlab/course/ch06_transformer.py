"""Chapter 6, the Transformer: scaled dot-product attention, the masks, sinusoidal positions, heads, one decoder
layer, decoding with a KV cache (docs/tutorials/06-transformer.md).

The references are :mod:`seqlab.nn.attention`, :mod:`seqlab.nn.masks`, :mod:`seqlab.nn.positions` and the
Transformer of :mod:`seqlab.models.transformer`; shapes are batch-first, masks boolean with True = may attend.
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding, sqrt_text
from seqlab.models.transformer import DecoderLayer, TransformerConfig
from seqlab.nn.attention import LayerKV, MultiHeadAttention, attention_equations, merge_heads, split_heads
from seqlab.nn.masks import causal_mask, combine, padding_mask
from seqlab.nn.positions import sinusoidal_table

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

# ------------------------------------------------------------------------------------------------------
# 06.6 sinusoidal positions


def _positions_cases() -> list[Case]:
    # (max_len, d_model): d_model even (pairs of columns), all different
    return [Case((max_len, d_model), {"max_len": max_len, "d_model": d_model}, n=4, magnitude=float(max_len))
            for max_len, d_model in [(5, 8), (9, 6), (7, 12)]]


def _table(max_len, d_model):
    return sinusoidal_table(max_len, d_model, torch.float64)


def _exponent_per_column(max_len, d_model):
    # seqlab's table has no knob for the exponent: the wrong frequencies, 10000^(-2j/d) for column j, written out
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angle = pos / 10000.0 ** (2 * j / d_model)  # max_len, d_model
    return torch.where(torch.arange(d_model) % 2 == 0, torch.sin(angle), torch.cos(angle))


POSITIONS = Exercise(
    id="06.6",
    name="sinusoidal_positions",
    title="Sinusoidal positions",
    section="Transformer › Positional encoding",
    signature="sinusoidal_positions(max_len, d_model)",
    statement=r"""Return the sinusoidal position table, a float64 tensor (max_len, d_model), row = position:

$$PE_{(pos,\, 2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right), \qquad
PE_{(pos,\, 2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)$$

Positions are 0-based (`pos = 0 .. max_len - 1`), `i` is the index of a **pair** of columns (`i = 0 ..
d_model / 2 - 1`), and the pairs are interleaved: column 2i holds the sine, column 2i + 1 the cosine of the same
angle. `d_model` is even.""",
    reference=_table,
    cases=_positions_cases,
    mistakes=(
        Mistake("sin-cos-swapped", "your sines and cosines are swapped: the even columns 2i hold sin(pos / "
                "10000^(2i/d_model)), the odd columns 2i + 1 the cosine (Transformer › Positional encoding).",
                lambda max_len, d_model: _table(max_len, d_model).view(max_len, d_model // 2, 2).flip(-1)
                .reshape(max_len, d_model)),
        Mistake("exponent-per-column", "your exponent uses the column j where the notes have the pair index i: "
                "columns 2i and 2i + 1 share the angle pos / 10000^(2i/d_model), so the exponent of column j is "
                "2 * (j // 2) / d_model, not 2j / d_model (Transformer › Positional encoding).",
                _exponent_per_column),
        Mistake("concatenated", "your table puts all the sines first and all the cosines after them; the notes "
                "(and seqlab) interleave them: column 2i the sine, column 2i + 1 the cosine of the same angle "
                "(Transformer › Positional encoding).",
                lambda max_len, d_model: torch.cat([_table(max_len, d_model)[:, 0::2],
                                                    _table(max_len, d_model)[:, 1::2]], dim=1)),
        Mistake("positions-from-1", "your positions start at 1: row pos is position pos = 0 .. max_len - 1, so the "
                "first row is [sin 0, cos 0, ...] = [0, 1, 0, 1, ...] (Transformer › Positional encoding; the "
                "notes' 1-based form writes p - 1).",
                lambda max_len, d_model: _table(max_len + 1, d_model)[1:]),
    ),
    # an angle pos * 10000^(-2i/d) carries a few roundings relative to it (the power's exponent, the power, the
    # product: up to n = 4 of them), and |sin'| <= 1 passes its error on; the angle is at most max_len (magnitude)
    tolerance=rounding(products=6),
    follows="The notes write the table three ways (0-based interleaved, 10^(4 delta/d), 1-based P_{i,p}); this "
            "checks seqlab's (seqlab.nn.positions.sinusoidal_table): the first, 0-based, sines in the even columns.",
)

# ------------------------------------------------------------------------------------------------------
# 06.7 one decoder layer (decoder-only, GPT-style), equal to seqlab's DecoderLayer with the same weights


def _layer_weights(g, d_model: int, d_ff: int) -> dict[str, torch.Tensor]:
    """A DecoderLayer's state dict (cross_attention=False), drawn so that every part matters: unit-scale
    projections, LayerNorm gains around 1, biases around 0."""
    def linear(out_features, in_features):
        return randn(g, out_features, in_features) / math.sqrt(in_features), 0.3 * randn(g, out_features)

    weights = {}
    for name, (rows, cols) in {"self_attn.qkv": (3 * d_model, d_model), "self_attn.out": (d_model, d_model),
                               "ff.w1": (d_ff, d_model), "ff.w2": (d_model, d_ff)}.items():
        weights[f"{name}.weight"], weights[f"{name}.bias"] = linear(rows, cols)
    for name in ("self_res.norm", "ff_res.norm"):
        weights[f"{name}.weight"] = 1.0 + 0.3 * randn(g, d_model)
        weights[f"{name}.bias"] = 0.3 * randn(g, d_model)
    return weights


def _build_layer(weights, n_heads: int, norm: str = "pre", activation: str = "gelu") -> DecoderLayer:
    d_ff, d_model = weights["ff.w1.weight"].shape
    cfg = TransformerConfig(n_layers=1, n_heads=n_heads, d_model=d_model, d_ff=d_ff, dropout=0.0, norm=norm,
                            activation=activation, impl="equations")
    layer = DecoderLayer(cfg, cross_attention=False).to(torch.float64).eval()
    layer.load_state_dict(weights)
    return layer


@torch.no_grad()
def _decoder_layer(x, weights, n_heads, norm="pre", activation="gelu", causal=True):
    layer = _build_layer(weights, n_heads, norm, activation)
    layer.self_attn.causal = causal  # False: the mistake of a decoder without its causal mask
    return layer(x)  # batch, seq, d_model


@torch.no_grad()
def _decoder_layer_without_residuals(x, weights, n_heads):
    layer = _build_layer(weights, n_heads)
    h = layer.self_attn(layer.self_res.enter(x))  # MHA(lnorm(x)), not added to x
    return layer.ff(layer.ff_res.enter(h))  # FFN(lnorm(h)), not added to h


def _terms(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> float:
    """The largest sum of |terms| of one output of a linear map: max (|inputs| |W|^T + |b|)."""
    return (inputs.abs() @ weight.abs().T + bias.abs()).max().item()


@torch.no_grad()
def _layer_cases() -> list[Case]:
    cases = []
    # (batch, seq, d_model, head, d_ff): all different in a case
    for seed, (batch, seq, d_model, head, d_ff) in enumerate([(2, 5, 12, 3, 16), (3, 4, 8, 2, 6),
                                                              (4, 3, 10, 5, 7)]):
        g = generator(300 + seed)
        weights = _layer_weights(g, d_model, d_ff)
        x = randn(g, batch, seq, d_model)
        layer = _build_layer(weights, head)
        a = layer.self_res.enter(x)  # the terms of every reduction, for the tolerance
        q, k, v = (split_heads(p, head) for p in layer.self_attn.qkv(a).chunk(3, dim=-1))  # batch, head, seq, depth
        o = attention_equations(q, k, v, is_causal=True)[0]  # batch, head, seq, depth: the heads' outputs
        x1 = x + layer.self_attn(a)
        h = layer.ff.act(layer.ff.w1(layer.ff_res.enter(x1)))
        magnitude = max(_terms(a, weights["self_attn.qkv.weight"], weights["self_attn.qkv.bias"]),
                        (q.abs() @ k.abs().transpose(-2, -1)).max().item() / math.sqrt(d_model // head),
                        seq * v.abs().max().item(),
                        _terms(merge_heads(o), weights["self_attn.out.weight"], weights["self_attn.out.bias"]),
                        _terms(layer.ff_res.enter(x1), weights["ff.w1.weight"], weights["ff.w1.bias"]),
                        _terms(h, weights["ff.w2.weight"], weights["ff.w2.bias"]),
                        d_model * x1.abs().max().item() ** 2, 1.0)
        cases.append(Case((x, weights, head), {"batch": batch, "seq": seq, "d_model": d_model, "head": head,
                                               "d_ff": d_ff}, seed=300 + seed, n=max(d_model, d_ff, seq),
                          magnitude=magnitude))
    return cases


DECODER_LAYER = Exercise(
    id="06.7",
    name="decoder_layer",
    title="One decoder layer",
    section="Transformer › Encoder and decoder",
    signature="decoder_layer(x, weights, n_heads)",
    statement=r"""Compute one layer of a decoder-only Transformer (GPT-style: causal self-attention, then a
feed-forward network; no cross-attention), as seqlab's `DecoderLayer` does by default (`model.norm = "pre"`,
`model.activation = "gelu"`):

$$T = X + \mathrm{MHA}(\mathrm{lnorm}_1(X)), \qquad X' = T + \mathrm{FFN}(\mathrm{lnorm}_2(T))$$

`x` is (batch, seq, d_model); return $X'$, (batch, seq, d_model). `weights` is the layer's state dict, every
matrix stored as `nn.Linear` stores it (out × in, so a projection is `x @ W.T + b`):

- `self_attn.qkv.weight` (3 d_model, d_model) and `.bias`: the rows of $W_Q$, $W_K$, $W_V$ stacked, in that
  order; split each of Q, K, V into `n_heads` heads of depth d_model / n_heads (head $\nu$: the $\nu$-th block
  of columns);
- `self_attn.out.weight` (d_model, d_model) and `.bias`: $W^O$, applied to the merged heads;
- `self_res.norm.weight`, `.bias` ($\gamma_1, \beta_1$) and `ff_res.norm.weight`, `.bias` ($\gamma_2,
  \beta_2$): lnorm over d_model with the biased variance and $\epsilon = 10^{-5}$ inside the square root;
- `ff.w1.weight` (d_ff, d_model), `ff.w1.bias`, `ff.w2.weight` (d_model, d_ff), `ff.w2.bias`:
  $\mathrm{FFN}(x) = W_2\, \mathrm{GELU}(W_1 x + b_1) + b_2$, the exact GELU $x \Phi(x)$ (`torch.nn.functional.gelu`).

The self-attention is causal (query i attends keys j <= i) and scaled by $1/\sqrt{depth}$; no padding, no
dropout, no final lnorm (the stack adds that one after its last layer).""",
    reference=_decoder_layer,
    cases=_layer_cases,
    mistakes=(
        Mistake("post-norm", "your layer normalises after the residual join, lnorm(X + f(X)) (the original "
                "Transformer's \"post\"); seqlab's decoder layer is \"pre\": X + f(lnorm(X)) for both sublayers "
                "(Transformer › Residual connections).",
                lambda x, weights, n_heads: _decoder_layer(x, weights, n_heads, norm="post")),
        Mistake("sublayer-norm", "your layer is the notes' lnorm(f(X)) + X (model.norm = \"sublayer\"); this "
                "exercise checks seqlab's default \"pre\", X + f(lnorm(X)) (Transformer › Residual connections; "
                "the departures page).",
                lambda x, weights, n_heads: _decoder_layer(x, weights, n_heads, norm="sublayer")),
        Mistake("causal-mask-missing", "your self-attention is not causal: in a decoder query i may attend only "
                "the keys j <= i, M_ij = -inf for j > i (Transformer › Masked attention).",
                lambda x, weights, n_heads: _decoder_layer(x, weights, n_heads, causal=False)),
        Mistake("residual-missing", "the residual connections are missing: each sublayer's output is added to its "
                "input, T = X + MHA(lnorm(X)) and X' = T + FFN(lnorm(T)) (Transformer › Residual connections).",
                _decoder_layer_without_residuals),
        Mistake("relu-not-gelu", "your feed-forward network uses ReLU (the notes'); seqlab's default and this "
                "exercise use the exact GELU x Phi(x) (Transformer › Feed-forward network; the departures page).",
                lambda x, weights, n_heads: _decoder_layer(x, weights, n_heads, activation="relu")),
    ),
    # nine chained reductions (two lnorms' mean and variance, QK^T, the softmax's sum, weights times V, W^O, W1,
    # W2); an error passes on with a gain <= 4 (the softmax's 2 max|v|, lnorm's gamma / std for unit-scale inputs)
    tolerance=rounding(products=9, gain=4.0),
    follows="Checks seqlab's default layer (model.norm = \"pre\", model.activation = \"gelu\", biases on), not "
            "the notes' lnorm(f(X)) + X with ReLU: both of those are named mistakes here.",
)

# ------------------------------------------------------------------------------------------------------
# 06.8 one attention step of decoding with a KV cache


def _mha(weights, n_heads: int) -> MultiHeadAttention:
    d_model = weights["out.weight"].shape[0]
    mha = MultiHeadAttention(d_model, n_heads, impl="equations", causal=True).to(torch.float64).eval()
    mha.load_state_dict(weights)
    return mha


@torch.no_grad()
def _step(x, k_cache, v_cache, weights, n_heads, position: int, keys: str = "all"):
    """seqlab's decode step: x + PE(position) through MultiHeadAttention with a KVCache layer holding the cached
    keys and values in slots 0 .. t-1 and the new one written at slot t; ``keys`` "all" (right), "cached" (the
    new key not attended) or "new" (the cache dropped: only the new key)."""
    batch, head, t, depth = k_cache.shape
    d_model = x.shape[-1]
    x = x + sinusoidal_table(position + 1, d_model, torch.float64)[position]  # batch, 1, d_model
    slots = t + 1 if keys != "new" else 1
    k = torch.zeros(batch, head, slots, depth, dtype=torch.float64)  # batch, head, slots, depth
    v = torch.zeros_like(k)
    if keys != "new":
        k[:, :, :t], v[:, :, :t] = k_cache, v_cache
    cache = LayerKV(k, v, torch.tensor([slots - 1]))  # the new token's key and value go into the last slot
    mask = (torch.arange(slots) < t)[None, None, None, :] if keys == "cached" else None  # batch, head, 1, slots
    out = _mha(weights, n_heads)(x, mask=mask, cache=cache)  # batch, 1, d_model
    return out, cache.k, cache.v


def _cached_step(x, k_cache, v_cache, weights, n_heads):
    return _step(x, k_cache, v_cache, weights, n_heads, position=k_cache.shape[2])


@torch.no_grad()
def _step_cases() -> list[Case]:
    cases = []
    # (batch, cached, d_model, head): all different in a case; the cache is a real prefix's keys and values
    for seed, (batch, t, d_model, head) in enumerate([(2, 5, 12, 3), (3, 6, 8, 4), (4, 3, 10, 5)]):
        g = generator(400 + seed)
        weights = {"qkv.weight": randn(g, 3 * d_model, d_model) / math.sqrt(d_model),
                   "qkv.bias": 0.3 * randn(g, 3 * d_model),
                   "out.weight": randn(g, d_model, d_model) / math.sqrt(d_model), "out.bias": 0.3 * randn(g, d_model)}
        prefix = randn(g, batch, t, d_model) + sinusoidal_table(t, d_model, torch.float64)  # embeddings + PE
        depth = d_model // head
        cache = LayerKV(torch.zeros(batch, head, t, depth, dtype=torch.float64),
                        torch.zeros(batch, head, t, depth, dtype=torch.float64), torch.arange(t))
        _mha(weights, head)(prefix, cache=cache)  # the prefix's keys and values, as decoding left them
        x = randn(g, batch, 1, d_model)
        inputs = x + sinusoidal_table(t + 1, d_model, torch.float64)[t]
        q, k, v = (split_heads(p, head) for p in (inputs @ weights["qkv.weight"].T + weights["qkv.bias"]).chunk(3, -1))
        magnitude = max(_terms(inputs, weights["qkv.weight"], weights["qkv.bias"]),
                        (q.abs() @ torch.cat([cache.k, k], 2).abs().transpose(-2, -1)).max().item() / math.sqrt(depth),
                        (t + 1) * torch.cat([cache.v, v], 2).abs().max().item(),
                        d_model * torch.cat([cache.v, v], 2).abs().max().item()  # W^O over convex sums of v
                        * weights["out.weight"].abs().max().item() + weights["out.bias"].abs().max().item(), 1.0)
        cases.append(Case((x, cache.k.clone(), cache.v.clone(), weights, head),
                          {"batch": batch, "cached": t, "d_model": d_model, "head": head}, seed=400 + seed,
                          n=max(d_model, t + 1), magnitude=magnitude))
    return cases


KV_STEP = Exercise(
    id="06.8",
    name="cached_attention_step",
    title="Decoding with a KV cache",
    section="Transformer › Self-attention (beyond the notes)",
    signature="cached_attention_step(x, k_cache, v_cache, weights, n_heads)",
    statement=r"""Compute one step of causal self-attention while decoding with a KV cache: the new token's
output, and the cache with its key and value appended.

- `x`, (batch, 1, d_model): the new token's embedding, **without** its position;
- `k_cache`, `v_cache`, (batch, head, t, depth): the keys and values of the t tokens before it (positions 0 ..
  t - 1), split into heads;
- `weights`: `qkv.weight` (3 d_model, d_model) and `qkv.bias` (the rows of $W_Q$, $W_K$, $W_V$ stacked in that
  order), `out.weight` (d_model, d_model) and `out.bias` ($W^O$), each applied as `x @ W.T + b`.

The new token sits at position t: add the sinusoidal $PE_t$ (exercise 06.6) to `x`, project it to q, k and v,
split them into `n_heads` heads (exercise 06.4), **append** k and v to the cache, let q attend all t + 1 keys
(scaled by $1/\sqrt{depth}$; it may attend every one of them), merge the heads (06.5) and apply $W^O$. Return
`(output, k_all, v_all)`: (batch, 1, d_model) and two (batch, head, t + 1, depth). The output equals the last
row of causal multi-head attention over all t + 1 tokens computed without a cache, since $h_t$ reads only
$k_{1..t}$ and $v_{1..t}$: $K_{1..t} = [K_{1..t-1}; k_t]$.""",
    reference=_cached_step,
    cases=_step_cases,
    mistakes=(
        Mistake("new-key-not-appended", "your query attends only the {cached} cached keys: append the new token's "
                "key and value to the cache BEFORE attending, so that it attends itself too, K_{{1..t}} = "
                "[K_{{1..t-1}}; k_t] (Transformer › Self-attention; the causal mask includes the diagonal).",
                lambda x, k, v, w, h: _step(x, k, v, w, h, position=k.shape[2], keys="cached")),
        Mistake("positions-restart", "your new token got position 0: after {cached} cached tokens it sits at "
                "position {cached}, so x gets PE_{cached}, not PE_0 (Transformer › Positional encoding; a cache "
                "continues the positions).",
                lambda x, k, v, w, h: _step(x, k, v, w, h, position=0)),
        Mistake("position-off-by-one", "your new token's position is one too far: positions are 0-based, so "
                "after {cached} cached tokens (positions 0 .. {cached} - 1) it is at {cached} "
                "(Transformer › Positional encoding).",
                lambda x, k, v, w, h: _step(x, k, v, w, h, position=k.shape[2] + 1)),
        Mistake("cache-replaced", "your step drops the cache: the new key and value must be appended to the "
                "{cached} cached ones and the query attend all of them, not only the new token "
                "(Transformer › Self-attention (beyond the notes)).",
                lambda x, k, v, w, h: _step(x, k, v, w, h, position=k.shape[2], keys="new")),
    ),
    # five chained reductions (the qkv projection, q.k over depth, the softmax's sum and the weights times V over
    # t + 1 keys, W^O); the softmax passes a score's error on with a gain <= 2 max|v|, counted in the magnitude
    tolerance=rounding(products=5, gain=2.0),
    follows="Beyond the notes (they decode without a cache); checks seqlab's MultiHeadAttention with a KVCache "
            "layer (biases on, sinusoidal positions added to the token's embedding).",
)

EXERCISES: tuple[Exercise, ...] = (ATTENTION, CAUSAL, DECODER_MASK, SPLIT, MERGE, POSITIONS, DECODER_LAYER, KV_STEP)
