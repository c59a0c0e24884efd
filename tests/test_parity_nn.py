"""Same-weights parity of seqlab.nn / seqlab.models.transformer against torch.nn.

Every comparison runs in float64 (torch.nn's modules take .double()): a tolerance is then a rounding bound with
room to spare, far below what a mapping slip does (>= 1e-2), where float32's bound, with the gains of the layers
that follow a rounding, would be 0.4. TOL (max absolute difference) is bounds.chain_bound: see TOL.
References: torch.nn.MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer (batch_first=True,
dropout 0); our fused (SDPA) path against our equations path; KV-cached incremental decoding against a full
recompute. Every case records its largest difference; the module prints the largest one seen (run with -s).
Sizes all differ: batch 3, seq 5, src 7, d_model 12, n_heads 3 (depth 4), d_ff 20.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from seqlab.base.bounds import chain_bound, gamma
from seqlab.models.transformer import (
    DecoderLayer,
    EncoderDecoder,
    EncoderDecoderConfig,
    EncoderLayer,
    TransformerConfig,
    TransformerLM,
    TransformerLMConfig,
)
from seqlab.nn.attention import MultiHeadAttention, attention_equations, attention_fused
from seqlab.nn.masks import (
    causal_mask,
    key_padding_to_attn,
    to_torch_attn_mask,
    to_torch_key_padding_mask,
)

BATCH, SEQ, SRC, D_MODEL, N_HEADS, D_FF = 3, 5, 7, 12, 3, 20
# The deepest output here (the 2-layer LM) is <= 20 chained reductions of length <= D_FF = 20. Their terms' absolute
# values sum to <= 85: Σ|w x| + |b| <= 6.1 over every nn.Linear product of these tests (weights N(0, 0.3²) or
# the models' own init, inputs N(0, 1), LayerNorm outputs), and Σ|q_i k_i| <= 4 · 4.6² for a score (head depth 4,
# |q|, |k| <= 4.6). A rounding is passed on with a gain <= 200: ‖|W2||W1|‖∞ <= 14 per feed-forward block, two
# layers; softmax's Jacobian has ∞-norm <= 1/2, and LayerNorm divides an error by the σ it divides its input by, so
# relative errors pass through it (its inputs' σ goes down to 5e-4 in the default-initialised LM, their terms with
# it). 20·γ_20·85·200 = 7.5e-10 (first order, Higham §3.3).
TOL = {torch.float64: chain_bound(products=20, n=D_FF, magnitude=85, dtype=torch.float64, gain=200)}
DIFFS: dict[torch.dtype, dict[str, float]] = {torch.float64: {}}


@pytest.fixture(scope="module", autouse=True)
def largest_diff_report():
    yield
    for dtype, diffs in DIFFS.items():
        if diffs:
            name = max(diffs, key=diffs.get)
            print(f"\nlargest {dtype} parity difference: {diffs[name]:.3g} ({name}; {len(diffs)} cases)")


def check(request, ours: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> float:
    assert ours.shape == ref.shape
    assert not torch.isnan(ours).any()
    diff = (ours - ref).abs().max().item()
    name = request.node.name
    DIFFS[dtype][name] = max(DIFFS[dtype].get(name, 0.0), diff)
    request.node.user_properties.append(("max_abs_diff", diff))
    assert diff <= TOL[dtype], f"{name}: max abs diff {diff:.3g} > {TOL[dtype]:g}"
    return diff


def randomise(module: nn.Module) -> nn.Module:
    """Non-trivial values everywhere (torch zero-initialises biases, which would hide mapping mistakes)."""
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.3)
    return module


def lengths_mask(lengths: list[int], seq: int) -> torch.Tensor:
    """(batch, seq) True = real token; every sequence has at least one (torch gives NaN otherwise)."""
    return torch.arange(seq)[None, :] < torch.tensor(lengths)[:, None]


def copy_mha(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    d = ours.d_model
    with torch.no_grad():
        if ours.cross:
            ours.q.weight.copy_(ref.in_proj_weight[:d])
            ours.q.bias.copy_(ref.in_proj_bias[:d])
            ours.kv.weight.copy_(ref.in_proj_weight[d:])
            ours.kv.bias.copy_(ref.in_proj_bias[d:])
        else:
            ours.qkv.weight.copy_(ref.in_proj_weight)  # packed [W^Q; W^K; W^V] in both
            ours.qkv.bias.copy_(ref.in_proj_bias)
        ours.out.weight.copy_(ref.out_proj.weight)
        ours.out.bias.copy_(ref.out_proj.bias)


def copy_linear(ours: nn.Module, ref: nn.Module) -> None:
    with torch.no_grad():
        ours.weight.copy_(ref.weight)
        ours.bias.copy_(ref.bias)


# ---------------------------------------------------------------- multi-head attention vs nn.MultiheadAttention

MHA_CASES = [
    pytest.param("none", torch.float64, "fused", id="mha-nomask-f64-fused"),
    pytest.param("none", torch.float64, "equations", id="mha-nomask-f64-equations"),
    pytest.param("causal", torch.float64, "fused", id="mha-causal-f64-fused"),
    pytest.param("causal", torch.float64, "equations", id="mha-causal-f64-equations"),
    pytest.param("padding", torch.float64, "fused", id="mha-keypadding-f64-fused"),
    pytest.param("padding", torch.float64, "equations", id="mha-keypadding-f64-equations"),
    pytest.param("causal+padding", torch.float64, "fused", id="mha-causal+keypadding-f64-fused"),
]


@pytest.mark.parametrize("masking, dtype, impl", MHA_CASES)
def test_mha_matches_torch(request, masking, dtype, impl):
    torch.manual_seed(0)
    ref = randomise(nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)).to(dtype).eval()
    causal = masking.startswith("causal")
    ours = MultiHeadAttention(D_MODEL, N_HEADS, impl=impl, causal=causal).to(dtype).eval()
    copy_mha(ours, ref)
    x = torch.randn(BATCH, SEQ, D_MODEL, dtype=dtype)
    pad = lengths_mask([5, 3, 2], SEQ) if "padding" in masking else None
    ref_kw = {
        "attn_mask": to_torch_attn_mask(causal_mask(SEQ)) if causal else None,
        "key_padding_mask": None if pad is None else to_torch_key_padding_mask(pad),
    }
    expected, expected_w = ref(x, x, x, need_weights=True, average_attn_weights=False, **ref_kw)
    mask = None if pad is None else key_padding_to_attn(pad)
    check(request, ours(x, mask=mask), expected, dtype)
    out, weights = ours.forward_with_weights(x, mask=mask)
    check(request, out, expected, dtype)
    check(request, weights, expected_w, dtype)


@pytest.mark.parametrize("dtype", [torch.float64], ids=["f64"])
def test_cross_attention_matches_torch(request, dtype):
    torch.manual_seed(1)
    ref = randomise(nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)).to(dtype).eval()
    ours = MultiHeadAttention(D_MODEL, N_HEADS, cross=True).to(dtype).eval()
    copy_mha(ours, ref)
    x, memory = torch.randn(BATCH, SEQ, D_MODEL, dtype=dtype), torch.randn(BATCH, SRC, D_MODEL, dtype=dtype)
    pad = lengths_mask([7, 4, 1], SRC)
    expected, _ = ref(x, memory, memory, key_padding_mask=to_torch_key_padding_mask(pad))
    check(request, ours(x, context=memory, mask=key_padding_to_attn(pad)), expected, dtype)


# ---------------------------------------------------------------- layers vs nn.TransformerEncoderLayer / DecoderLayer


def layer_config(norm_first: bool, activation: str) -> TransformerConfig:
    return TransformerConfig(
        n_heads=N_HEADS, d_model=D_MODEL, d_ff=D_FF, dropout=0.0, norm="pre" if norm_first else "post",
        activation=activation, n_layers=1, max_len=16,
    )


ENCODER_CASES = [
    pytest.param(nf, act, dt, id=f"encoder-{'pre' if nf else 'post'}-{act}-{'f64' if dt == torch.float64 else 'f32'}")
    for nf, act, dt in [
        (True, "relu", torch.float64), (True, "gelu", torch.float64),
        (False, "relu", torch.float64), (False, "gelu", torch.float64),
    ]
]


@pytest.mark.parametrize("norm_first, activation, dtype", ENCODER_CASES)
def test_encoder_layer_matches_torch(request, norm_first, activation, dtype):
    torch.manual_seed(2)
    ref = nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    ref = randomise(ref).to(dtype).eval()  # params require grad: torch takes its reference (non-fast) path
    ours = EncoderLayer(layer_config(norm_first, activation)).to(dtype).eval()
    copy_mha(ours.self_attn, ref.self_attn)
    copy_linear(ours.ff.w1, ref.linear1)
    copy_linear(ours.ff.w2, ref.linear2)
    copy_linear(ours.self_res.norm, ref.norm1)
    copy_linear(ours.ff_res.norm, ref.norm2)
    x = torch.randn(BATCH, SEQ, D_MODEL, dtype=dtype)
    pad = lengths_mask([5, 2, 4], SEQ)
    expected = ref(x, src_key_padding_mask=to_torch_key_padding_mask(pad))
    check(request, ours(x, mask=key_padding_to_attn(pad)), expected, dtype)


DECODER_CASES = [
    pytest.param(nf, act, dt, id=f"decoder-{'pre' if nf else 'post'}-{act}-{'f64' if dt == torch.float64 else 'f32'}")
    for nf, act, dt in [(True, "gelu", torch.float64), (False, "relu", torch.float64), (True, "relu", torch.float64)]
]


@pytest.mark.parametrize("norm_first, activation, dtype", DECODER_CASES)
def test_decoder_layer_matches_torch(request, norm_first, activation, dtype):
    torch.manual_seed(3)
    ref = nn.TransformerDecoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    ref = randomise(ref).to(dtype).eval()
    ours = DecoderLayer(layer_config(norm_first, activation)).to(dtype).eval()
    copy_mha(ours.self_attn, ref.self_attn)
    copy_mha(ours.cross_attn, ref.multihead_attn)
    copy_linear(ours.ff.w1, ref.linear1)
    copy_linear(ours.ff.w2, ref.linear2)
    for res, norm in [(ours.self_res, ref.norm1), (ours.cross_res, ref.norm2), (ours.ff_res, ref.norm3)]:
        copy_linear(res.norm, norm)
    x, memory = torch.randn(BATCH, SEQ, D_MODEL, dtype=dtype), torch.randn(BATCH, SRC, D_MODEL, dtype=dtype)
    memory_pad = lengths_mask([7, 3, 5], SRC)
    expected = ref(
        x, memory, tgt_mask=to_torch_attn_mask(causal_mask(SEQ)),
        memory_key_padding_mask=to_torch_key_padding_mask(memory_pad),
    )
    check(request, ours(x, memory, memory_mask=key_padding_to_attn(memory_pad)), expected, dtype)


# ---------------------------------------------------------------- fused (SDPA) path == equations path


def fused_cases():
    torch.manual_seed(4)
    rows = torch.rand(BATCH, 1, SEQ, SRC) > 0.5
    rows[0, 0, 1] = False  # a fully-masked query row
    rows[2, 0, 4] = False
    return [
        pytest.param(None, False, SEQ, id="fused-vs-equations-nomask"),
        pytest.param(None, True, SEQ, id="fused-vs-equations-causal"),
        pytest.param(None, True, SRC, id="fused-vs-equations-causal-more-keys"),
        pytest.param(key_padding_to_attn(lengths_mask([7, 1, 4], SRC)), False, SRC, id="fused-vs-equations-keypadding"),
        pytest.param(key_padding_to_attn(lengths_mask([7, 0, 4], SRC)), False, SRC, id="fused-vs-equations-allpadding"),
        pytest.param(rows, False, SRC, id="fused-vs-equations-random-fullymasked-rows"),
        pytest.param(
            key_padding_to_attn(lengths_mask([5, 0, 2], SEQ)), True, SEQ, id="fused-vs-equations-causal+allpadding"
        ),
    ]


@pytest.mark.parametrize("mask, is_causal, seq_k", fused_cases())
def test_fused_matches_equations(request, mask, is_causal, seq_k):
    torch.manual_seed(5)
    q = torch.randn(BATCH, N_HEADS, SEQ, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(BATCH, N_HEADS, seq_k, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(BATCH, N_HEADS, seq_k, 4, dtype=torch.float64, requires_grad=True)
    eq_out, weights = attention_equations(q, k, v, mask, is_causal=is_causal)
    fused_out = attention_fused(q, k, v, mask, is_causal=is_causal)
    check(request, fused_out, eq_out, torch.float64)
    full = torch.ones(SEQ, seq_k, dtype=torch.bool)
    if is_causal:
        full = causal_mask(SEQ, seq_k)
    if mask is not None:
        full = full & mask
    empty = ~full.expand(BATCH, N_HEADS, SEQ, seq_k).any(-1)  # batch, head, seq_q
    assert (eq_out[empty] == 0).all() and (fused_out[empty] == 0).all() and (weights[empty] == 0).all()
    live = weights.sum(-1)[~empty]
    # softmax weights (exp, sum, divide: relative error <= γ_{seq_k+2} each) summed: |Σw - 1| <= γ_{2 seq_k+2}
    assert torch.allclose(live, torch.ones_like(live), rtol=0, atol=gamma(2 * seq_k + 2, torch.float64))
    for out in (eq_out, fused_out):  # no NaN in the gradients either
        grads = torch.autograd.grad(out.square().sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)


# ---------------------------------------------------------------- KV-cached incremental decoding == full recompute

CACHE_CASES = [
    pytest.param("pre", "sinusoidal", "fused", torch.float64, id="kvcache-pre-sinusoidal-fused-f64"),
    pytest.param("post", "learned", "equations", torch.float64, id="kvcache-post-learned-equations-f64"),
    pytest.param("sublayer", "sinusoidal", "equations", torch.float64, id="kvcache-sublayer-sinusoidal-equations-f64"),
    pytest.param("pre", "learned", "fused", torch.float64, id="kvcache-pre-learned-fused-f64"),
]


@pytest.mark.parametrize("norm, positions, impl, dtype", CACHE_CASES)
def test_kv_cache_matches_full_recompute(request, norm, positions, impl, dtype):
    torch.manual_seed(6)
    cfg = TransformerLMConfig(
        vocab_size=17, n_layers=2, n_heads=N_HEADS, d_model=D_MODEL, d_ff=D_FF, max_len=11, dropout=0.1,
        norm=norm, positions=positions, activation="gelu",
    )
    model = TransformerLM(cfg).to(dtype).eval()
    for m in model.modules():
        if isinstance(m, MultiHeadAttention):
            m.impl = impl
    ids = torch.randint(0, 17, (2, 11))
    with torch.inference_mode():
        full = model(ids)  # batch, seq, vocab
        cache = model.new_cache(2)
        steps = [model(ids[:, :4], cache=cache)] + [model(ids[:, t : t + 1], cache=cache) for t in range(4, 11)]
        assert cache.pos == 11
        check(request, torch.cat(steps, dim=1), full, dtype)
        cache.reset()
        chunks = [model(ids[:, t : t + 3], cache=cache) for t in range(0, 9, 3)] + [model(ids[:, 9:], cache=cache)]
        check(request, torch.cat(chunks, dim=1), full, dtype)


def test_encoder_decoder_cache_matches_full_recompute(request):
    torch.manual_seed(7)
    cfg = EncoderDecoderConfig(
        src_vocab_size=19, tgt_vocab_size=17, n_layers=2, n_heads=N_HEADS, d_model=D_MODEL, d_ff=D_FF,
        max_len=9, dropout=0.0, norm="post",
    )
    model = EncoderDecoder(cfg).double().eval()
    src, tgt = torch.randint(0, 19, (2, 7)), torch.randint(0, 17, (2, 6))
    src_pad = lengths_mask([7, 4], 7)
    with torch.inference_mode():
        full = model(src, tgt, src_padding=src_pad)
        memory = model.encode(src, src_pad)
        cache = model.new_cache(2)
        steps = [model.decode(tgt[:, t : t + 1], memory, src_pad, cache=cache) for t in range(6)]
    check(request, torch.cat(steps, dim=1), full, torch.float64)
