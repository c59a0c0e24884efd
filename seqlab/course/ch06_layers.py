"""Chapter 6, the Transformer, 06.6-06.8: sinusoidal positions, one decoder layer, an attention step of decoding
with a KV cache (docs/tutorials/06-transformer.md).

The references are :mod:`seqlab.nn.positions`, the attention of :mod:`seqlab.nn.attention` and the Transformer of
:mod:`seqlab.models.transformer`; shapes are batch-first, masks boolean with True = may attend.
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.models.transformer import DecoderLayer, TransformerConfig
from seqlab.nn.attention import LayerKV, MultiHeadAttention, attention_equations, merge_heads, split_heads
from seqlab.nn.positions import sinusoidal_table

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

EXERCISES: tuple[Exercise, ...] = (POSITIONS, DECODER_LAYER, KV_STEP)
