"""Chapter 6's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # batch, head, seq_q, seq_k
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # True = may attend: the others get -inf
    weights = torch.softmax(scores, dim=-1)  # over the keys: each query's weights sum to 1
    return weights @ v  # batch, head, seq_q, depth


def causal_mask(seq_q, seq_k):
    # query i is the position i + (seq_k - seq_q): the queries are the last seq_q positions of the keys
    query_pos = torch.arange(seq_q)[:, None] + (seq_k - seq_q)  # seq_q, 1
    key_pos = torch.arange(seq_k)[None, :]  # 1, seq_k
    return key_pos <= query_pos  # True = may attend: itself and the past


def decoder_mask(ids, pad_id):
    seq = ids.shape[1]
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()  # query i sees keys j <= i
    real_keys = (ids != pad_id)[:, None, :]  # batch, 1 (every query), seq (keys)
    return causal & real_keys  # batch, seq, seq


def split_heads(x, n_heads):
    batch, seq, d_model = x.shape
    depth = d_model // n_heads
    x = x.view(batch, seq, n_heads, depth)  # column nu * depth + delta -> (nu, delta)
    return x.transpose(1, 2)  # batch, head, seq, depth


def merge_heads(x):
    batch, head, seq, depth = x.shape
    x = x.transpose(1, 2)  # batch, seq, head, depth
    return x.reshape(batch, seq, head * depth)  # the heads side by side: [head_1; ...; head_h]


def sinusoidal_positions(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # max_len, 1
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i for each pair i
    angle = pos / 10000 ** (two_i / d_model)  # max_len, d_model / 2
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # PE(pos, 2i)
    pe[:, 1::2] = torch.cos(angle)  # PE(pos, 2i + 1)
    return pe


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # the biased variance
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _causal_self_attention(x, w_qkv, b_qkv, w_out, b_out, n_heads, causal=True):
    batch, seq, d_model = x.shape
    depth = d_model // n_heads
    q, k, v = (x @ w_qkv.T + b_qkv).chunk(3, dim=-1)  # batch, seq, d_model each
    q, k, v = (t.view(batch, seq, n_heads, depth).transpose(1, 2) for t in (q, k, v))  # batch, head, seq, depth
    scores = q @ k.transpose(-2, -1) / math.sqrt(depth)  # batch, head, seq, seq
    if causal:
        future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v  # batch, head, seq, depth
    out = out.transpose(1, 2).reshape(batch, seq, d_model)  # merge the heads
    return out @ w_out.T + b_out


def _gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))  # x Phi(x), the exact GELU


def _decoder_layer_as(x, weights, n_heads, norm="pre", causal=True, residual=True, activation=_gelu):
    w = weights

    def attention(h):
        return _causal_self_attention(h, w["self_attn.qkv.weight"], w["self_attn.qkv.bias"],
                                      w["self_attn.out.weight"], w["self_attn.out.bias"], n_heads, causal)

    def ffn(h):
        return activation(h @ w["ff.w1.weight"].T + w["ff.w1.bias"]) @ w["ff.w2.weight"].T + w["ff.w2.bias"]

    def ln1(h):
        return _layer_norm(h, w["self_res.norm.weight"], w["self_res.norm.bias"])

    def ln2(h):
        return _layer_norm(h, w["ff_res.norm.weight"], w["ff_res.norm.bias"])

    if norm == "pre":
        t = attention(ln1(x)) + (x if residual else 0)
        return ffn(ln2(t)) + (t if residual else 0)
    if norm == "post":
        t = ln1(x + attention(x))
        return ln2(t + ffn(t))
    t = ln1(attention(x)) + x  # the notes': lnorm(f(X)) + X
    return ln2(ffn(t)) + t


def decoder_layer(x, weights, n_heads):
    # "pre": each sublayer reads lnorm of the stream and adds its output to it
    return _decoder_layer_as(x, weights, n_heads)


def _sinusoid_row(pos, d_model):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / 10000 ** (two_i / d_model)
    row = torch.zeros(d_model, dtype=torch.float64)
    row[0::2], row[1::2] = torch.sin(angle), torch.cos(angle)
    return row


def _cached_step_as(x, k_cache, v_cache, weights, n_heads, position=None, append_first=True, keep_cache=True):
    batch, _, d_model = x.shape
    depth = d_model // n_heads
    t = k_cache.shape[2]  # tokens already cached
    x = x + _sinusoid_row(t if position is None else position, d_model)  # the new token is at position t
    q, k, v = (x @ weights["qkv.weight"].T + weights["qkv.bias"]).chunk(3, dim=-1)  # batch, 1, d_model
    q, k, v = (a.view(batch, 1, n_heads, depth).transpose(1, 2) for a in (q, k, v))  # batch, head, 1, depth
    k_all = torch.cat([k_cache, k], dim=2) if keep_cache else k  # batch, head, t + 1, depth
    v_all = torch.cat([v_cache, v], dim=2) if keep_cache else v
    keys, values = (k_all, v_all) if append_first else (k_cache, v_cache)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(depth)  # batch, head, 1, t + 1: every key is in the past
    out = torch.softmax(scores, dim=-1) @ values  # batch, head, 1, depth
    out = out.transpose(1, 2).reshape(batch, 1, d_model)
    return out @ weights["out.weight"].T + weights["out.bias"], k_all, v_all


def cached_attention_step(x, k_cache, v_cache, weights, n_heads):
    return _cached_step_as(x, k_cache, v_cache, weights, n_heads)


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _attention_with(scale, fill_where_true=False, use_mask=True, axis=-1):
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / scale(q.shape[-1])
        if mask is not None and use_mask:
            scores = scores.masked_fill(mask if fill_where_true else ~mask, float("-inf"))
        return torch.softmax(scores, dim=axis) @ v  # a fully masked row gives NaN: the checker still names it

    return attention



def _causal_inverted(seq_q, seq_k):
    i = torch.arange(seq_q)[:, None] + (seq_k - seq_q)
    return torch.arange(seq_k)[None, :] > i  # marks the future: the masked keys, not the attended ones


def _causal_strict(seq_q, seq_k):
    i = torch.arange(seq_q)[:, None] + (seq_k - seq_q)
    return torch.arange(seq_k)[None, :] < i  # j < i: the diagonal left out


def _causal_top_left(seq_q, seq_k):
    return torch.ones(seq_q, seq_k, dtype=torch.bool).tril()  # query i at position i


def _causal_looks_ahead(seq_q, seq_k):
    i = torch.arange(seq_q)[:, None] + (seq_k - seq_q)
    return torch.arange(seq_k)[None, :] >= i


def _decoder_mask_as(inverted=False, padding=True, causal=True, on_queries=False):
    def decoder_mask(ids, pad_id):
        seq = ids.shape[1]
        mask = torch.ones(ids.shape[0], seq, seq, dtype=torch.bool)
        if causal:
            mask = mask & torch.ones(seq, seq, dtype=torch.bool).tril()
        real = ids != pad_id
        if padding:
            mask = mask & real[:, None, :]
        if on_queries:
            mask = mask & real[:, :, None]
        return ~mask if inverted else mask

    return decoder_mask


def _split_view_only(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, n_heads, seq, d_model // n_heads)  # no transpose: positions and heads mixed


def _split_head_fastest(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, d_model // n_heads, n_heads).permute(0, 3, 1, 2)  # head = column % n_heads


def _merge_reshape_only(x):
    batch, head, seq, depth = x.shape
    return x.reshape(batch, seq, head * depth)


def _merge_interleaved(x):
    batch, head, seq, depth = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, seq, depth * head)  # seq, depth, head: head varies fastest


def _positions_as(swap=False, per_column=False, concatenate=False, first=0):
    def sinusoidal_positions(max_len, d_model):
        pos = torch.arange(first, first + max_len, dtype=torch.float64)[:, None]
        if per_column:
            j = torch.arange(d_model, dtype=torch.float64)
            angle = pos / 10000 ** (2 * j / d_model)  # the column j in the exponent
            return torch.stack([torch.sin(angle[:, c]) if c % 2 == 0 else torch.cos(angle[:, c])
                                for c in range(d_model)], dim=1)
        angle = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
        sin, cos = torch.sin(angle), torch.cos(angle)
        if swap:
            sin, cos = cos, sin
        if concatenate:
            return torch.cat([sin, cos], dim=1)
        return torch.stack([sin, cos], dim=-1).reshape(max_len, d_model)  # sin, cos, sin, cos, ...

    return sinusoidal_positions


def _layer_as(**options):
    def decoder_layer(x, weights, n_heads):
        return _decoder_layer_as(x, weights, n_heads, **options)

    return decoder_layer


def _step_as(**options):
    def cached_attention_step(x, k_cache, v_cache, weights, n_heads):
        if options.get("position") == "t+1":
            return _cached_step_as(x, k_cache, v_cache, weights, n_heads, position=k_cache.shape[2] + 1)
        return _cached_step_as(x, k_cache, v_cache, weights, n_heads, **options)

    return cached_attention_step


PLANTED = {
    "06.1": {
        "unscaled": _attention_with(lambda d: 1.0),
        "divided-by-d_k": _attention_with(lambda d: d),
        "mask-inverted": _attention_with(math.sqrt, fill_where_true=True),
        "mask-ignored": _attention_with(math.sqrt, use_mask=False),
        "softmax-over-queries": _attention_with(math.sqrt, axis=-2),
    },
    "06.2": {
        "mask-inverted": _causal_inverted,
        "diagonal-excluded": _causal_strict,
        "top-left": _causal_top_left,
        "looks-ahead": _causal_looks_ahead,
    },
    "06.3": {
        "mask-inverted": _decoder_mask_as(inverted=True),
        "padding-ignored": _decoder_mask_as(padding=False),
        "causal-ignored": _decoder_mask_as(causal=False),
        "padding-on-queries": _decoder_mask_as(on_queries=True),
    },
    "06.4": {"no-transpose": _split_view_only, "heads-from-wrong-end": _split_head_fastest},
    "06.5": {"no-transpose": _merge_reshape_only, "heads-interleaved": _merge_interleaved},
    "06.6": {
        "sin-cos-swapped": _positions_as(swap=True),
        "exponent-per-column": _positions_as(per_column=True),
        "concatenated": _positions_as(concatenate=True),
        "positions-from-1": _positions_as(first=1),
    },
    "06.7": {
        "post-norm": _layer_as(norm="post"),
        "sublayer-norm": _layer_as(norm="sublayer"),
        "causal-mask-missing": _layer_as(causal=False),
        "residual-missing": _layer_as(residual=False),
        "relu-not-gelu": _layer_as(activation=torch.relu),
    },
    "06.8": {
        "new-key-not-appended": _step_as(append_first=False),
        "positions-restart": _step_as(position=0),
        "position-off-by-one": _step_as(position="t+1"),
        "cache-replaced": _step_as(keep_cache=False),
    },
}
