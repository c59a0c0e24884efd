"""Additive (Bahdanau) attention and the RNN seq2seq model with attention."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.base.bounds import chain_bound, gamma
from seqlab.decoding.beam import greedy_search
from seqlab.data.batching import pad_batch
from seqlab.base.errors import SeqlabError
from seqlab.models.seq2seq import Seq2SeqAttention, Seq2SeqConfig
from seqlab.nn.additive import AdditiveAttention
from seqlab.nn.masks import masked_softmax

PAD, SOS, EOS = 0, 2, 3


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_seq2seq(cell="gru", n_layers=1, seed=0, dtype=torch.float64, **kw) -> Seq2SeqAttention:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(src_vocab_size=13, tgt_vocab_size=11, cell=cell, n_layers=n_layers, d_model=8,
                        hidden_size=6, attn_size=5, dropout=0.0, max_len=24, **kw)
    return Seq2SeqAttention(cfg).to(dtype).eval()


# Two float64 evaluations of tiny_seq2seq (batched and padded, or alone, or step by step): each output is <= 60
# chained reductions (8 source + 4 target steps × 2 layers × input and hidden products, attention) of length <= 20,
# terms <= 10 in absolute value (torch's U(±1/√6) weights, tanh/σ outputs <= 1, embeddings N(0, 1)), an error
# carried through the remaining steps with a gain <= 2.5 per step (‖|W_hh|‖∞ <= 6/√6, tanh' <= 1): 60·γ_20·10·2.5^12
# = 8e-9 (Higham §3.1, §3.3). A padding leak moves outputs by >= 1e-3.
SEQ_TOL = chain_bound(products=60, n=20, magnitude=10, dtype=torch.float64, gain=2.5**12)


# --- additive attention ---

def test_additive_attention_hand_computed():
    attn = AdditiveAttention(query_size=1, key_size=1, attn_size=1).double()
    with torch.no_grad():
        attn.W_s.weight.fill_(1.0)
        attn.W_h.weight.fill_(2.0)
        attn.v.weight.fill_(-1.5)
    query = torch.tensor([[0.5]], dtype=torch.float64)  # s_{t-1}: batch 1, query 1
    keys = torch.tensor([[[1.0], [-1.0], [0.0]]], dtype=torch.float64)  # a_{t'}: batch 1, src 3, key 1
    context, alpha = attn(query, keys)
    e = [-1.5 * math.tanh(0.5 + 2.0 * a) for a in (1.0, -1.0, 0.0)]  # v^T tanh(W_s s + W_h a)
    z = sum(math.exp(x) for x in e)
    expected = [math.exp(x) / z for x in e]
    # each score: 2 roundings of a pre-activation <= 2.5, tanh (torch's vectorised <= 3.5 ulp, libm's <= 1 ulp),
    # ×1.5: <= 16u; softmax: twice a score's error plus exp, sum and divide: <= 36u <= γ_40 per weight
    tol = gamma(40, torch.float64)
    assert alpha[0].tolist() == pytest.approx(expected, abs=tol)
    # the context: the weights' errors times |key| <= 1, and a 3-term sum
    assert float(context[0, 0].detach()) == pytest.approx(expected[0] * 1.0 + expected[1] * -1.0,
                                                          abs=3 * tol + gamma(3, torch.float64))


def test_additive_attention_rows_sum_to_one_and_padding_gets_zero():
    torch.manual_seed(0)
    attn = AdditiveAttention(query_size=3, key_size=5, attn_size=7).double()
    query = torch.randn(4, 3, dtype=torch.float64)  # batch 4
    keys = torch.randn(4, 6, 5, dtype=torch.float64)  # batch 4, src 6
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5, [1, 0, 1, 0, 1, 0]], dtype=torch.bool)
    context, alpha = attn(query, keys, mask)
    assert context.shape == (4, 5) and alpha.shape == (4, 6)
    # <= 6 softmax weights (exp, sum, divide: γ_8 each) summed: |Σα - 1| <= γ_14
    assert torch.allclose(alpha.sum(-1), torch.ones(4, dtype=torch.float64), rtol=0, atol=gamma(14, torch.float64))
    assert bool((alpha[~mask] == 0).all())
    assert alpha[2].tolist() == [1.0, 0, 0, 0, 0, 0]
    # masked keys do not change anything: replace them with garbage
    garbage = keys.masked_fill(~mask[:, :, None], 1e3)
    context2, alpha2 = attn(query, garbage, mask)
    # the masked keys' projections and scores are dropped before any sum: the same operations on the same values
    assert torch.equal(alpha, alpha2) and torch.equal(context, context2)
    # precomputed key projection = the same result
    context3, _ = attn(query, keys, mask, projected_keys=attn.project_keys(keys))
    assert torch.equal(context, context3)


def test_fully_masked_row_is_zero_not_nan():
    scores = torch.randn(2, 3)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    alpha = masked_softmax(scores, mask)
    assert alpha[1].tolist() == [0.0, 0.0, 0.0]
    assert float(alpha[0].sum()) == pytest.approx(1.0, abs=gamma(8, torch.float32))  # 2 weights: γ_{2·2+4}


# --- the model ---

@pytest.mark.parametrize("cell,n_layers", [("gru", 1), ("lstm", 2)])
def test_padding_never_changes_outputs(cell, n_layers):
    model = tiny_seq2seq(cell, n_layers)
    short = [5, 6, 7, EOS]
    src, src_mask = pad_batch([short, [4, 5, 6, 7, 8, 9, 10, EOS], [11, EOS]], PAD)  # batch 3, src 8
    tgt = torch.tensor([[SOS, 4, 5, 6], [SOS, 7, 8, 9], [SOS, 10, 4, 4]])  # batch 3, tgt 4
    batched, alphas = model.forward_with_weights(src, tgt, src_mask)
    alone, alone_alphas = model.forward_with_weights(torch.tensor([short]), tgt[:1])
    assert type(model(src, tgt, src_mask)) is torch.Tensor
    assert torch.equal(model(src, tgt, src_mask), batched)
    assert batched.shape == (3, 4, 11) and alphas.shape == (3, 4, 8)
    assert torch.allclose(batched[0], alone[0], rtol=0, atol=SEQ_TOL)
    assert torch.allclose(alphas[0, :, :4], alone_alphas[0], rtol=0, atol=SEQ_TOL)
    assert bool((alphas[0, :, 4:] == 0).all()) and bool((alphas[2, :, 2:] == 0).all())
    # the teacher-forced pass equals step-by-step decoding
    enc, state = model.encode(src, src_mask)
    for t in range(4):
        logits, state, _ = model.step(tgt[:, t], state, enc)
        assert torch.allclose(logits, batched[:, t], rtol=0, atol=SEQ_TOL)


def test_config_validation_and_tied_embeddings():
    with pytest.raises(SeqlabError, match="unknown cell"):
        Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=5, cell="rnn")
    with pytest.raises(SeqlabError, match="hidden_size"):
        Seq2SeqConfig(src_vocab_size=5, tgt_vocab_size=5, hidden_size=0)
    model = tiny_seq2seq()
    assert model.decoder.head.weight is model.decoder.embed.weight
    untied = tiny_seq2seq(tie_embeddings=False)
    assert untied.num_params() == model.num_params() + 11 * 8
    with pytest.raises(SeqlabError, match="max_len=24"):
        model(torch.ones(1, 25, dtype=torch.long), torch.full((1, 2), SOS))


def reverse_batch(generator: torch.Generator, n: int, symbols: int = 6, vocab_offset: int = 4):
    """Random source sequences of 3-6 symbols and their reversal (the classic seq2seq toy task)."""
    sources, targets = [], []
    for _ in range(n):
        length = int(torch.randint(3, 7, (1,), generator=generator))
        seq = (torch.randint(symbols, (length,), generator=generator) + vocab_offset).tolist()
        sources.append(seq + [EOS])
        targets.append(seq[::-1])
    return sources, targets


@pytest.mark.heavy
def test_seq2seq_learns_to_reverse():
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=32, hidden_size=64, attn_size=32,
                        dropout=0.0, max_len=16)
    model = Seq2SeqAttention(cfg)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(1)
    for _ in range(300):
        sources, targets = reverse_batch(g, 32)
        src, src_mask = pad_batch(sources, PAD)
        tgt_in, tgt_mask = pad_batch([[SOS] + t for t in targets], PAD)
        tgt_out, _ = pad_batch([t + [EOS] for t in targets], PAD)
        logits = model(src, tgt_in, src_mask)  # batch, tgt, vocab
        loss = torch.nn.functional.cross_entropy(logits[tgt_mask], tgt_out[tgt_mask])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    model.eval()
    sources, targets = reverse_batch(torch.Generator().manual_seed(99), 100)
    src, src_mask = pad_batch(sources, PAD)
    hyps = greedy_search(model, src, src_mask, sos_id=SOS, eos_id=EOS, pad_id=PAD)
    exact = sum(h.tokens == t and h.finished for h, t in zip(hyps, targets)) / len(targets)
    assert exact >= 0.9, exact
