"""Unit tests of the Transformer blocks and models: shapes (all sizes different), hand-computed values,
the equations of positions and norm placement, masks, bad input, tying, learning, dropout."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.base.bounds import chain_bound, gamma, u
from seqlab.base.errors import SeqlabError
from seqlab.models.transformer import (
    AttendedLayers,
    EncoderDecoder,
    EncoderDecoderConfig,
    TransformerConfig,
    TransformerLM,
    TransformerLMConfig,
)
from seqlab.nn.attention import (
    Attended,
    MultiHeadAttention,
    attention_equations,
    attention_fused,
    set_attention_impl,
)
from seqlab.nn.masks import (
    causal_mask,
    causal_mask_at,
    combine,
    key_padding_to_attn,
    padding_mask,
    to_additive,
    to_torch_key_padding_mask,
)
from seqlab.nn.norm import Residual
from seqlab.nn.positions import SinusoidalPositions

# batch 2, seq 5, vocab 13, d_model 12, n_heads 3 (depth 4), d_ff 20, n_layers 2, max_len 7
SMALL = dict(vocab_size=13, n_layers=2, n_heads=3, d_model=12, d_ff=20, max_len=7, dropout=0.0)
# Two paths through one float64 model (fused SDPA against the equations, with and without weights or a cache): the
# rounding bound of tests/test_parity_nn.py's TOL at the same sizes (<= 20 reductions of length <= 20, terms
# <= 85, gain <= 200; these default-initialised models are smaller in every term): 7.5e-10. A path that drops a
# mask or a scale moves outputs by >= 1e-2.
PATHS_TOL = chain_bound(products=20, n=20, magnitude=85, dtype=torch.float64, gain=200)


def lm(**overrides) -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(TransformerLMConfig(**{**SMALL, **overrides})).eval()


# ---------------------------------------------------------------- shapes


def test_lm_shapes_and_attention_maps():
    model = lm()
    ids = torch.randint(0, 13, (2, 5))
    assert model(ids).shape == (2, 5, 13)  # batch, seq, vocab
    maps = model.attention_maps(ids)
    assert len(maps) == 2 and all(m.shape == (2, 3, 5, 5) for m in maps)  # batch, head, seq, seq
    # float32 softmax rows: <= 5 weights, each within γ_{5+2} (exp, sum, divide), summed: |Σw - 1| <= γ_12
    assert torch.allclose(maps[0].sum(-1), torch.ones(2, 3, 5), rtol=0, atol=gamma(12, torch.float32))
    assert (maps[1].triu(diagonal=1) == 0).all()  # causal: no weight on the future
    model.double()
    logits, self_attn, cross_attn = model.forward_with_weights(ids)
    assert torch.allclose(logits, model(ids), rtol=0, atol=PATHS_TOL) and len(self_attn) == 2 and cross_attn == []


def test_encoder_decoder_shapes():
    torch.manual_seed(0)
    shared = {k: v for k, v in SMALL.items() if k != "vocab_size"}
    cfg = EncoderDecoderConfig(src_vocab_size=11, tgt_vocab_size=13, **shared)
    model = EncoderDecoder(cfg).eval()
    src, tgt = torch.randint(0, 11, (2, 6)), torch.randint(0, 13, (2, 5))
    memory, enc_w, no_cross = model.encode_with_weights(src)
    assert memory.shape == (2, 6, 12) and enc_w[0].shape == (2, 3, 6, 6) and no_cross == []
    logits, dec_self, dec_cross = model.decode_with_weights(tgt, memory)
    assert logits.shape == (2, 5, 13)
    assert dec_self[0].shape == (2, 3, 5, 5) and dec_cross[0].shape == (2, 3, 5, 6)
    assert model(src, tgt).shape == (2, 5, 13)


def test_mha_cross_attention_shapes():
    mha = MultiHeadAttention(12, 3, cross=True)
    out, w = mha.forward_with_weights(torch.randn(2, 5, 12), context=torch.randn(2, 7, 12))
    assert out.shape == (2, 5, 12) and w.shape == (2, 3, 5, 7)


def test_forward_returns_a_tensor_and_forward_with_weights_a_named_tuple_of_the_same_output():
    # batch 2, tgt 5, src 6, d_model 12, head 3, tgt vocab 13, src vocab 11, layers 2: all differ
    torch.manual_seed(0)  # everything in float64: the paths are compared within PATHS_TOL
    x, context = torch.randn(2, 5, 12, dtype=torch.float64), torch.randn(2, 6, 12, dtype=torch.float64)
    for mha, kw, keys in [(MultiHeadAttention(12, 3, causal=True).double(), {}, 5),
                          (MultiHeadAttention(12, 3, cross=True).double(), {"context": context}, 6)]:
        out = mha(x, **kw)
        attended = mha.forward_with_weights(x, **kw)
        assert type(out) is torch.Tensor and isinstance(attended, Attended)
        assert attended.output.shape == (2, 5, 12) and attended.weights.shape == (2, 3, 5, keys)
        assert torch.allclose(attended.output, out, rtol=0, atol=PATHS_TOL)  # equations path vs fused SDPA

    model = lm().double()
    ids = torch.randint(0, 13, (2, 5))
    logits, run = model(ids), model.forward_with_weights(ids)
    assert type(logits) is torch.Tensor and isinstance(run, AttendedLayers)
    assert [w.shape for w in run.self_attn] == [(2, 3, 5, 5)] * 2 and run.cross_attn == []
    assert torch.allclose(run.output, logits, rtol=0, atol=PATHS_TOL)

    shared = {k: v for k, v in SMALL.items() if k != "vocab_size"}
    model = EncoderDecoder(EncoderDecoderConfig(src_vocab_size=11, tgt_vocab_size=13, **shared)).eval().double()
    src, tgt = torch.randint(0, 11, (2, 6)), torch.randint(0, 13, (2, 5))
    src_padding = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # batch, src
    memory, encoded = model.encode(src, src_padding), model.encode_with_weights(src, src_padding)
    assert type(memory) is torch.Tensor and isinstance(encoded, AttendedLayers)
    assert [w.shape for w in encoded.self_attn] == [(2, 3, 6, 6)] * 2 and encoded.cross_attn == []
    assert torch.allclose(encoded.output, memory, rtol=0, atol=PATHS_TOL)
    logits, decoded = model.decode(tgt, memory, src_padding), model.decode_with_weights(tgt, memory, src_padding)
    assert type(logits) is torch.Tensor and isinstance(decoded, AttendedLayers)
    assert [w.shape for w in decoded.self_attn] == [(2, 3, 5, 5)] * 2
    assert [w.shape for w in decoded.cross_attn] == [(2, 3, 5, 6)] * 2
    assert (decoded.cross_attn[0][1, :, :, 4:] == 0).all()  # padded source keys get no weight
    assert torch.allclose(decoded.output, logits, rtol=0, atol=PATHS_TOL)

    # with a KV cache: the keys are the filled slots and the new tokens' (pos + seq, not all max_len = 7), and
    # the cache advances once per call
    cache_a, cache_b = model.new_cache(2), model.new_cache(2)
    step = model.decode(tgt[:, :3], memory, src_padding, cache=cache_a)
    cached = model.decode_with_weights(tgt[:, :3], memory, src_padding, cache=cache_b)
    assert cache_a.pos == cache_b.pos == 3 and cached.self_attn[0].shape == (2, 3, 3, 3)
    assert torch.allclose(cached.output, step, rtol=0, atol=PATHS_TOL)
    more = model.decode_with_weights(tgt[:, 3:5], memory, src_padding, cache=cache_b)
    assert cache_b.pos == 5 and more.self_attn[0].shape == (2, 3, 2, 5)
    assert torch.allclose(more.output, model.decode(tgt[:, :5], memory, src_padding)[:, 3:], rtol=0, atol=PATHS_TOL)


def test_with_weights_outputs_are_forward_outputs_to_the_bit_on_the_equations_path():
    """Each ``*_with_weights`` method computes its output as ``forward`` does on the equations path (impl =
    "equations"): the same tensor to the bit, for MultiHeadAttention (self, causal, cross, with a cache), every
    layer and stack, the LM (with and without a cache) and the encoder-decoder; float32, padding and dropout off."""
    # batch 2, tgt 5, src 6, d_model 12, head 3, tgt vocab 13, src vocab 11, layers 2, max_len 7: all differ
    torch.manual_seed(0)
    x, context = torch.randn(2, 5, 12), torch.randn(2, 6, 12)
    src_padding = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # batch, src
    memory_mask = key_padding_to_attn(src_padding)  # batch, 1, 1, src
    for mha, kw in [(MultiHeadAttention(12, 3, impl="equations"), {}),
                    (MultiHeadAttention(12, 3, impl="equations", causal=True), {}),
                    (MultiHeadAttention(12, 3, impl="equations", cross=True),
                     {"context": context, "mask": memory_mask})]:
        assert torch.equal(mha.forward_with_weights(x, **kw).output, mha(x, **kw))

    model = lm(impl="equations")
    ids = torch.randint(0, 13, (2, 5))
    assert torch.equal(model.forward_with_weights(ids).output, model(ids))
    layer = model.decoder.layers[0]
    assert torch.equal(layer.forward_with_weights(x).output, layer(x))
    assert torch.equal(model.decoder.forward_with_weights(x).output, model.decoder(x))
    cache_a, cache_b = model.new_cache(2), model.new_cache(2)
    for part in (ids[:, :3], ids[:, 3:4]):  # a prompt, then one decoding step against the cache
        assert torch.equal(model.forward_with_weights(part, cache=cache_b).output, model(part, cache=cache_a))

    shared = {k: v for k, v in SMALL.items() if k != "vocab_size"}
    torch.manual_seed(0)
    cfg = EncoderDecoderConfig(src_vocab_size=11, tgt_vocab_size=13, impl="equations", **shared)
    model = EncoderDecoder(cfg).eval()
    src, tgt = torch.randint(0, 11, (2, 6)), torch.randint(0, 13, (2, 5))
    memory = model.encode(src, src_padding)  # batch, src, d_model
    assert torch.equal(model.encode_with_weights(src, src_padding).output, memory)
    assert torch.equal(model.decode_with_weights(tgt, memory, src_padding).output,
                       model.decode(tgt, memory, src_padding))
    enc_layer, dec_layer = model.encoder.layers[0], model.decoder.layers[0]
    assert torch.equal(enc_layer.forward_with_weights(context).output, enc_layer(context))
    assert torch.equal(dec_layer.forward_with_weights(x, memory, None, memory_mask).output,
                       dec_layer(x, memory, None, memory_mask))
    assert torch.equal(model.encoder.forward_with_weights(context, src_padding).output,
                       model.encoder(context, src_padding))


# ---------------------------------------------------------------- hand-computed values


def test_attention_hand_computed_value():
    # q = (1, 0); keys (1, 0), (0, 1): scores (1/sqrt 2, 0); softmax -> w0 = 1 / (1 + e^(-1/sqrt 2)) = 0.66976155
    q = torch.tensor([[[[1.0, 0.0]]]], dtype=torch.float64)  # batch, head, seq_q=1, depth=2
    k = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]], dtype=torch.float64)  # batch, head, seq_k=2, depth
    v = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=torch.float64)
    out, w = attention_equations(q, k, v)
    w0 = 1 / (1 + math.exp(-1 / math.sqrt(2)))
    # float64 softmax of the scores (1/√2: two roundings; exp, sum, divide): <= γ_6 in each weight (σ' <= 1/4)
    assert w.flatten().tolist() == pytest.approx([w0, 1 - w0], abs=gamma(6, torch.float64))
    # out = 0.66976155 * (1, 2) + 0.33023845 * (3, 4) = (1.6604769, 2.6604769): the weights' error times |v| <= 4,
    # and the 2-term sum (γ_2 of Σ|w v| <= 4)
    want = [w0 * 1 + (1 - w0) * 3, w0 * 2 + (1 - w0) * 4]
    tol = gamma(8, torch.float64) * 4
    assert out.flatten().tolist() == pytest.approx(want, abs=tol)
    assert attention_fused(q, k, v).flatten().tolist() == pytest.approx(want, abs=tol)


def test_softmax_examples_of_seed_000():
    # eq 23: (a, a, a) -> (1, 1, 1)/3 ; eq 22: (10, 0, 0) -> about (1, 0, 0); via attention with equal keys
    q = torch.ones(1, 1, 1, 1)
    _, w = attention_equations(q * 0, torch.randn(1, 1, 3, 1), torch.randn(1, 1, 3, 1))
    # exp(0) = 1 three times, summed to 3, divided: fl(1/3) on both sides but for one rounding each
    assert torch.allclose(w, torch.full((1, 1, 1, 3), 1 / 3), rtol=0, atol=2 * u(torch.float32) / 3)
    _, w = attention_equations(q, torch.tensor([[[[10.0], [0.0], [0.0]]]]), torch.randn(1, 1, 3, 1))
    assert w[0, 0, 0, 0] > 0.9999


def test_sinusoidal_positions_match_the_formula():
    for d_model in (6, 7):
        pe = SinusoidalPositions(d_model, 9)(torch.arange(9))  # seq, d_model
        for pos in range(9):
            for j in range(d_model):
                two_i = j - j % 2
                angle = pos / 10000 ** (two_i / d_model)
                expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
                # the table is float64 (angle <= 8: a few roundings, sin/cos within 1 ulp) cast to float32 (u)
                assert pe[pos, j].item() == pytest.approx(expected, abs=u(torch.float32) + gamma(8, torch.float64) * 8)


# ---------------------------------------------------------------- masks


def test_mask_helpers():
    assert causal_mask(2, 4).tolist() == [[True, True, True, False], [True, True, True, True]]
    assert (causal_mask(3) == torch.ones(3, 3, dtype=torch.bool).tril()).all()
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pad = padding_mask(ids, 0)
    assert pad.tolist() == [[True, True, False], [True, False, False]]
    assert key_padding_to_attn(pad).shape == (2, 1, 1, 3)
    assert (to_torch_key_padding_mask(pad) == (ids == 0)).all()
    assert combine(None, None) is None
    both = combine(causal_mask(3), None, key_padding_to_attn(pad))
    assert both.shape == (2, 1, 3, 3)
    assert both[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert to_additive(torch.tensor([True, False])).tolist() == [0.0, float("-inf")]


@settings(max_examples=40, deadline=None)
@given(seq_q=st.integers(1, 8), extra=st.integers(0, 8))
def test_causal_mask_at_positions_equals_aligned_causal_mask(seq_q, extra):
    seq_k = seq_q + extra  # queries are the last seq_q of seq_k positions
    positions = torch.arange(extra, seq_k)
    assert (causal_mask_at(positions, seq_k) == causal_mask(seq_q, seq_k)).all()
    assert causal_mask(seq_q, seq_k).sum().item() == sum(extra + i + 1 for i in range(seq_q))


@pytest.mark.parametrize("impl", ["fused", "equations"])
def test_fully_masked_row_gives_zeros_not_nan(impl):
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3, impl=impl)
    x = torch.randn(2, 5, 12, requires_grad=True)
    pad = torch.tensor([[True] * 5, [False] * 5])  # the second sequence is all padding
    out = mha(x, mask=key_padding_to_attn(pad))
    assert torch.isfinite(out).all()
    assert torch.equal(out[1], mha.out.bias.expand(5, 12))  # attention output 0 -> 0·W^O + b: exactly b
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[1] == 0).all()
    model = lm()
    logits = model(torch.randint(1, 13, (2, 5)), padding=pad)
    assert torch.isfinite(logits).all()


# ---------------------------------------------------------------- bad input


def test_d_model_not_divisible_by_n_heads():
    with pytest.raises(SeqlabError, match=r"d_model=10 is not divisible by n_heads=3.*\[1, 2, 5, 10\]"):
        TransformerLMConfig(**{**SMALL, "d_model": 10})
    with pytest.raises(SeqlabError, match="not divisible"):
        MultiHeadAttention(10, 4)


@pytest.mark.parametrize(
    "field, value, pattern",
    [
        ("n_layers", 0, "n_layers=0 must be a positive"),
        ("vocab_size", -3, "vocab_size=-3 must be a positive"),
        ("norm", "middle", "unknown norm 'middle'; use one of pre, post, sublayer"),
        ("positions", "rotary", "unknown positions 'rotary'; use one of sinusoidal, learned"),
        ("activation", "tanh", "unknown activation 'tanh'"),
        ("dropout", 1.5, r"dropout=1.5 is outside \[0, 1\)"),
    ],
)
def test_bad_config_values(field, value, pattern):
    with pytest.raises(SeqlabError, match=pattern):
        TransformerLMConfig(**{**SMALL, field: value})


def test_too_many_positions():
    model = lm()
    with pytest.raises(SeqlabError, match=r"8 positions exceed max_len=7"):
        model(torch.zeros(1, 8, dtype=torch.long))
    cache = model.new_cache(1)
    model(torch.zeros(1, 5, dtype=torch.long), cache=cache)
    with pytest.raises(SeqlabError, match=r"9 positions \(5 cached \+ 4 new\) exceed max_len=7"):
        model(torch.zeros(1, 4, dtype=torch.long), cache=cache)
    assert cache.pos == 5  # a refused call leaves the cache as it was


def test_config_is_frozen():
    cfg = TransformerLMConfig(**SMALL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 24  # type: ignore[misc]


# ---------------------------------------------------------------- norm placement formulas


@pytest.mark.parametrize("placement", ["pre", "post", "sublayer"])
def test_residual_placement_formulas(placement):
    torch.manual_seed(0)  # float64: LayerNorm's and the formula's rounding are then far below a misplaced norm
    res = Residual(6, placement, eps=1e-5).double()
    with torch.no_grad():
        res.norm.weight.normal_()
        res.norm.bias.normal_()
    f = torch.nn.Linear(6, 6).double()
    x = torch.randn(2, 3, 6, dtype=torch.float64)

    def ln(t):  # lnorm of seed 001, written out
        mean, var = t.mean(-1, keepdim=True), t.var(-1, unbiased=False, keepdim=True)
        return (t - mean) / torch.sqrt(var + 1e-5) * res.norm.weight + res.norm.bias

    expected = {"pre": x + f(ln(x)), "post": ln(x + f(x)), "sublayer": ln(f(x)) + x}[placement]
    # <= 6 reductions of length 6 (mean, variance, the linear map, twice), terms <= m in absolute value, LayerNorm's
    # gain max|γ|/σ on what precedes it (σ the smallest std of a normalised row)
    rows = torch.cat([x, f(x), f(ln(x))])
    m = max(rows.abs().sum(-1).max().item(), (x.abs() @ f.weight.abs().T + f.bias.abs()).max().item())
    gain = 1 + res.norm.weight.abs().max().item() / torch.cat([x, x + f(x), f(x)]).std(-1, unbiased=False).min().item()
    assert torch.allclose(res(x, f), expected, rtol=0, atol=chain_bound(6, 6, m, torch.float64, gain))


# ---------------------------------------------------------------- embeddings, init, training


def test_tied_embeddings_share_storage():
    tied, untied = lm(tie_embeddings=True), lm(tie_embeddings=False)
    assert tied.head.weight.data_ptr() == tied.embed.tokens.weight.data_ptr()
    assert untied.head.weight.data_ptr() != untied.embed.tokens.weight.data_ptr()
    assert untied.num_params() - tied.num_params() == 13 * 12
    torch.manual_seed(0)
    cfg = EncoderDecoderConfig(src_vocab_size=13, tgt_vocab_size=13, share_embeddings=True,
                               **{k: v for k, v in SMALL.items() if k != "vocab_size"})
    mt = EncoderDecoder(cfg)
    assert mt.src_embed.tokens.weight is mt.tgt_embed.tokens.weight is mt.head.weight


def test_scale_embeddings_multiplies_by_sqrt_d_model():
    plain, scaled = lm(scale_embeddings=False), lm(scale_embeddings=True)
    ids, pos = torch.tensor([[3, 4]]), torch.arange(2)
    pe = plain.embed.positions(pos)
    for model, scale in ((plain, 1.0), (scaled, math.sqrt(12))):
        tokens = model.embed.tokens(ids) * scale
        # float32: the scaling, + pe, - pe: three roundings of values <= |e·s| + |pe|
        tol = gamma(3, torch.float32) * (tokens.abs() + pe.abs())
        assert ((model.embed(ids, pos) - pe - tokens).abs() <= tol).all()


def test_gpt2_init_scales_residual_projections():
    torch.manual_seed(0)
    model = TransformerLM(TransformerLMConfig(vocab_size=50, n_layers=4, n_heads=4, d_model=64, d_ff=256, max_len=8))
    block = model.decoder.layers[0]
    # a sampling bound: the std of n normal draws is within 5/√(2n) (5 of its standard deviations) of σ but in 6e-7
    # of seeds; a missing 1/√(2·n_layers) is off by a factor 2.8
    for w, sigma in ((block.self_attn.qkv.weight, 0.02), (block.self_attn.out.weight, 0.02 / math.sqrt(8)),
                     (block.ff.w2.weight, 0.02 / math.sqrt(8))):
        assert w.std().item() == pytest.approx(sigma, rel=5 / math.sqrt(2 * w.numel()))
    assert (block.self_attn.qkv.bias == 0).all()


def test_switching_attention_impl_keeps_the_output():
    model = lm().double()
    ids = torch.randint(0, 13, (2, 6))
    fused = model(ids)
    set_attention_impl(model, "equations")
    assert all(m.impl == "equations" for m in model.modules() if isinstance(m, MultiHeadAttention))
    assert torch.allclose(model(ids), fused, rtol=0, atol=PATHS_TOL)
    with pytest.raises(SeqlabError, match="unknown attention impl"):
        set_attention_impl(model, "flash")


def test_dropout_off_in_eval_on_in_train():
    model = lm(dropout=0.5)
    ids = torch.randint(0, 13, (2, 6))
    assert torch.equal(model(ids), model(ids))
    model.train()
    assert not torch.equal(model(ids), model(ids))


def test_tiny_lm_learns_a_repeated_pattern(one_thread):
    torch.manual_seed(0)
    cfg = TransformerLMConfig(vocab_size=5, n_layers=1, n_heads=2, d_model=32, d_ff=64, max_len=16, dropout=0.0)
    model = TransformerLM(cfg)
    data = torch.arange(17).remainder(5)[None].repeat(4, 1)  # 0 1 2 3 4 0 1 ...
    x, y = data[:, :-1], data[:, 1:]  # LM window: predict the next token
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        loss = F.cross_entropy(model(x).reshape(-1, 5), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 1.3 and losses[-1] < 0.1, losses[::8]


def test_cache_reset_and_dtype():
    model = lm()
    cache = model.new_cache(3)
    # max_len = 7 slots and one spare, so the attended window is never all of the storage
    assert cache.k[0].shape == (3, 3, 8, 4) and cache.k[0].dtype == torch.float32 and len(cache.v) == 2
    model(torch.zeros(3, 2, dtype=torch.long), cache=cache)
    assert cache.pos == 2 and cache.pos_tensor.item() == 2 and cache.window.tolist() == [0, 1, 2] and cache.keys(1) == 3
    cache.reset()
    assert cache.pos == 0 and cache.pos_tensor.item() == 0 and cache.keys(1) == 1


@pytest.mark.heavy
def test_a_compiled_step_is_one_graph_over_the_filled_slots():
    """The compiled decode step attends the filled slots only (cache.window is marked dynamic): one graph serves
    every position, from a one-token prompt's to the last (pos = max_len - 1), with guard checks skipped after the first step, and
    each step's logits equal the uncompiled forward's to float64 rounding: the same products summed in another
    order, each sum of at most 16 terms of magnitude below 10 within 16·u·10 ≈ 2e-14 (Higham §3.1), through two
    layers and the head whose weights (N(0, 0.02)) do not amplify it; 1e-12 is that with room for 50 such sums."""
    from seqlab.decoding.decode import decode_step

    model = lm().double()
    with torch.inference_mode():
        cache, reference = model.new_cache(2), model.new_cache(2)
        ids = torch.randint(0, 11, (2, 1), generator=torch.Generator().manual_seed(0))  # one-token prompts
        model(ids, cache=cache), model(ids, cache=reference)
        step = decode_step(model, compile=True)
        token = ids[:, -1:]
        while cache.pos < model.cfg.max_len:  # positions 1 .. 6: the window grows to all 7 slots
            logits = step(token, cache)
            assert torch.allclose(logits, model(token, cache=reference), rtol=0, atol=1e-12)
            assert cache.pos == reference.pos


def test_base_config_defaults_follow_the_paper():
    cfg = TransformerConfig()
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_ff) == (6, 8, 512, 2048)
