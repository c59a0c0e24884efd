"""The worked example of seed 002 (`seqlab explain`): every step checked, and the CLI's output contract."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.base.bounds import chain_bound, gamma, matmul_bound, u
from seqlab.views import explain
from seqlab.nn.masks import key_padding_to_attn


@pytest.fixture(scope="module")
def tr():
    return explain.trace(seed=0)


def test_shapes_and_dimension_names(tr):
    expected = {
        "x": ((3, 4, 4), ("batch", "seq", "d_model")),
        "q_heads": ((3, 2, 4, 2), ("batch", "head", "seq", "depth")),
        "k_heads": ((3, 2, 4, 2), ("batch", "head", "seq", "depth")),
        "v_heads": ((3, 2, 4, 2), ("batch", "head", "seq", "depth")),
        "weights": ((3, 2, 4, 4), ("batch", "head", "seq_q", "seq_k")),
        "merged": ((3, 4, 4), ("batch", "seq", "d_model")),
        "output": ((3, 4, 4), ("batch", "seq", "d_model")),
        "pe": ((4, 4), ("seq", "d_model")),
    }
    for name, (shape, dims) in expected.items():
        t, names = tr[name]
        assert tuple(t.shape) == shape and names == dims, name
    for t, names in tr.values():
        assert t.dim() == len(names)


def test_vocabulary_and_embeddings_follow_the_notes(tr):
    vocab = explain.vocabulary()
    assert vocab[0] == "<pad>" and vocab[1] == "you"  # the only word seen twice comes first
    ids = tr["ids"][0]
    assert [vocab[i] for i in ids[1].tolist()] == ["how", "old", "are", "you"]
    assert ids[2].tolist()[2:] == [0, 0]  # "Hey you" padded to max_len 4
    emb = tr["embeddings"][0]
    assert emb[0, 0].tolist() == [1, 3, 4, 1]  # hello
    assert emb[1, 2].tolist() == [1, 10, 20, 10]  # are
    assert emb[2, 3].tolist() == [-1, -1, -1, -1]  # padding
    assert torch.equal(tr["x"][0], emb + tr["pe"][0])


def test_pe_values_match_the_formula(tr):
    pe = tr["pe"][0]
    for pos in range(4):
        for i in range(2):
            angle = pos / 10000 ** (2 * i / 4)
            # float64: the angle <= 3 within 3 roundings, sin/cos within 1 ulp in torch and in libm
            tol = gamma(3, torch.float64) * 3 + 4 * u(torch.float64)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=tol)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=tol)
    assert pe[1].tolist() == pytest.approx([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], abs=tol)


def test_heads_are_slices_of_the_projections(tr):
    x, w_q = tr["x"][0], tr["w_q"][0]
    # two float64 orders of one product: twice γ_4 |x||W| apart (Higham §3.5)
    assert ((tr["q"][0] - x @ w_q).abs() <= 2 * torch.from_numpy(matmul_bound(x, w_q, torch.float64))).all()
    q, qh = tr["q"][0], tr["q_heads"][0]
    for h in range(2):
        assert torch.equal(qh[:, h], q[:, :, 2 * h : 2 * h + 2])  # head h = depth columns 2h, 2h+1
    assert torch.equal(tr["merged"][0], tr["attended"][0].transpose(1, 2).reshape(3, 4, 4))


def test_weights_rows_sum_to_one_and_ignore_padding(tr):
    w, pad = tr["weights"][0], tr["padding"][0]
    # <= 4 softmax weights (exp, sum, divide: γ_6 each) summed: |Σw - 1| <= γ_10
    assert torch.allclose(w.sum(-1), torch.ones(3, 2, 4, dtype=w.dtype), rtol=0, atol=gamma(10, torch.float64))
    keys_padded = ~pad[:, None, None, :].expand_as(w)  # batch, head, seq_q, seq_k
    assert (w[keys_padded] == 0).all() and keys_padded.sum() == 2 * 4 * 3  # 3 padding keys, 2 heads, 4 queries
    assert (w[~keys_padded] > 0).all()
    scores = tr["scores"][0]
    expected = torch.softmax(scores.masked_fill(keys_padded, float("-inf")), dim=-1)
    # two float64 softmaxes of the same scores: s - max rounds by u|s - max| <= 2u max|s| (scores up to ~120), which
    # exp turns into a relative error, plus exp, sum and divide (γ_6): per weight, twice that apart
    live = scores.masked_fill(keys_padded, 0.0)
    assert torch.allclose(w, expected, rtol=0, atol=2 * (2 * u(torch.float64) * 2 * live.abs().max().item()
                                                          + gamma(6, torch.float64)))


def test_weights_are_printed_exactly_and_drive_the_library_module(tr):
    for name in ("w_q", "w_k", "w_v", "w_o"):
        w = tr[name][0]
        assert torch.equal(w, (w * 10).round() / 10)  # one decimal: what is printed is what is used
    mha = explain.attention_module(seed=0)
    mask = key_padding_to_attn(tr["padding"][0])
    # float64, the trace against the module: <= 5 chained products of length 4 (q, k, v, scores, weights·v, W^O);
    # the largest terms are the scores' (Σ|q_i k_i| / √2, from the trace), an error in a score reaches the output with a
    # gain <= 2 max|v| · seq · ‖|W^O|‖∞ (softmax: |Δw| <= 2w max|Δs|)
    q, k, v, w_o = (tr[name][0] for name in ("q_heads", "k_heads", "v", "w_o"))
    magnitude = (q.abs() @ k.abs().transpose(-1, -2)).max().item() / math.sqrt(q.shape[-1])
    gain = 2 * v.abs().max().item() * v.shape[1] * max(w_o.abs().sum(0).max().item(), w_o.abs().sum(1).max().item())
    tol = chain_bound(products=5, n=4, magnitude=magnitude, dtype=torch.float64, gain=gain)
    for impl in ("fused", "equations"):
        mha.impl = impl
        assert torch.allclose(mha(tr["x"][0], mask=mask), tr["output"][0], rtol=0, atol=tol)
    assert not torch.equal(explain.trace(seed=1)["w_q"][0], tr["w_q"][0])


def test_cli_prints_the_trace(capsys):
    from seqlab.cli import main

    assert main(["explain"]) == 0
    out = capsys.readouterr().out
    assert "(3, 2, 4, 4)  batch, head, seq_q, seq_k" in out
    assert "(3, 2, 4, 2)  batch, head, seq, depth" in out
    assert "(3, 4, 4)  batch, seq, d_model" in out
    assert "hello" in out and "<pad>" in out and "manual_seed(0)" in out
