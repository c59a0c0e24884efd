"""Parity of seqlab.nn.recurrent with torch.nn.RNN/GRU/LSTM (and their cells), with copied weights.

Everything runs in float64 and must agree to TOL (max abs difference, a rounding bound: see TOL): cells step by
step, stacks (incl. 2-layer bidirectional with variable lengths) against torch.nn.* on pack_padded_sequence,
outputs, final h (and c) and gradients; the equations path against the fused path; padding invariance.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqlab.base.bounds import chain_bound, u
from seqlab.base.errors import SeqlabError
from seqlab.nn.recurrent import RecurrentCell, RecurrentConfig, RecurrentStack

F64 = torch.float64
# Each output (and gradient) is a chain of <= 84 reductions (7 steps × 3 layers × 2 directions × input and hidden
# products) of length <= 12 (hidden 4 + a bidirectional layer's input 8), their terms summing to <= 16 in absolute
# value (torch's U(±1/√4) weights, N(0, 1) inputs and initial states, tanh/σ outputs <= 1, LSTM cells <= 12); an
# error is carried through the remaining steps with a gain <= 2^7 (‖|W_hh|‖∞ <= 4 · 1/2, tanh' <= 1, σ' <= 1/4).
# 84·γ_12·16·128 = 2.3e-10, twice that for a gradient (the backward pass is a chain as long): 4.6e-10.
TOL = 2 * chain_bound(products=84, n=12, magnitude=16, dtype=F64, gain=2**7)

# (cell, nonlinearity, torch layer class, torch cell class)
TORCH_CELLS = [
    ("rnn", "tanh", nn.RNN, nn.RNNCell),
    ("rnn", "relu", nn.RNN, nn.RNNCell),
    ("gru", "tanh", nn.GRU, nn.GRUCell),
    ("lstm", "tanh", nn.LSTM, nn.LSTMCell),
]
IDS = [f"{c}-{g}" for c, g, _, _ in TORCH_CELLS]
# sizes that all differ: batch 5, seq 7, input 3, hidden 4
BATCH, SEQ, INPUT, HIDDEN = 5, 7, 3, 4
LENGTHS = torch.tensor([7, 3, 1, 5, 7])


def maxdiff(a, b) -> float:
    if isinstance(a, (tuple, list)):
        return max(maxdiff(x, y) for x, y in zip(a, b, strict=True))
    return (a - b).abs().max().item()


def torch_kwargs(cell: str, nonlinearity: str) -> dict:
    return {"nonlinearity": nonlinearity} if cell == "rnn" else {}


def as_tuple(state) -> tuple:
    return tuple(state) if isinstance(state, tuple) else (state,)


# ------------------------------------------------------------------------------------------------------
# cells


@pytest.mark.parametrize("cell,nonlinearity,_layer,torch_cell", TORCH_CELLS, ids=IDS)
def test_cell_matches_torch_cell(cell, nonlinearity, _layer, torch_cell):
    torch.manual_seed(0)
    ref = torch_cell(INPUT, HIDDEN, dtype=F64, **torch_kwargs(cell, nonlinearity))
    ours = RecurrentCell(cell, INPUT, HIDDEN, nonlinearity).double()
    ours.load_state_dict(ref.state_dict())  # same names and shapes
    xs = torch.randn(SEQ, BATCH, INPUT, dtype=F64)
    s_ref, s_ours = None, None
    for x in xs:  # several steps, the state fed back
        s_ref = ref(x, s_ref)
        s_ours = ours(x, s_ours)
        assert maxdiff(s_ours, as_tuple(s_ref)) <= TOL
    # backward through the whole unrolled sequence
    sum(s.sum() for s in as_tuple(s_ref)).backward()
    sum(s.sum() for s in s_ours).backward()
    for name, p in ours.named_parameters():
        assert maxdiff(p.grad, dict(ref.named_parameters())[name].grad) <= TOL, name


def test_elman_cell_hand_computed():
    """a_t = tanh(W1 x_t + W3 a_{t-1} + b), one unit: a_1 = tanh(0.5*2 + 0.1) = tanh(1.1),
    a_2 = tanh(0.5*(-1) + 0.8*tanh(1.1) + 0.1)."""
    cell = RecurrentCell("rnn", 1, 1).double()
    with torch.no_grad():
        cell.weight_ih.fill_(0.5)
        cell.weight_hh.fill_(0.8)
        cell.bias_ih.fill_(0.04)
        cell.bias_hh.fill_(0.06)  # b = 0.1
    (a1,) = cell(torch.tensor([[2.0]], dtype=F64))
    (a2,) = cell(torch.tensor([[-1.0]], dtype=F64), (a1,))
    # each side: the pre-activation's roundings (3 of a value <= 1.1, tanh' <= 1) and tanh itself (torch's vectorised
    # tanh <= 3.5 ulp, libm's <= 1 ulp, of a value <= 0.81), the second step also a1's error times 0.8
    tol = u(F64) * (2 * 3 * 1.1 + 2 * (3.5 + 1) * 0.81)
    assert a1.item() == pytest.approx(math.tanh(1.1), abs=tol)
    assert a2.item() == pytest.approx(math.tanh(-0.5 + 0.8 * math.tanh(1.1) + 0.1), abs=(1 + 0.8) * tol)


def test_simple_gru_cell_is_the_lecture_equations():
    """The notes' GRU with one matrix on the concatenation [c_{t-1}, x_t], written independently here."""
    torch.manual_seed(1)
    cell = RecurrentCell("simple-gru", INPUT, HIDDEN).double()
    w_u = torch.cat([cell.weight_hh[:HIDDEN], cell.weight_ih[:HIDDEN]], dim=1)  # hidden, hidden+input
    w_c = torch.cat([cell.weight_hh[HIDDEN:], cell.weight_ih[HIDDEN:]], dim=1)
    b = cell.bias_ih + cell.bias_hh
    b_u, b_c = b[:HIDDEN], b[HIDDEN:]
    c = torch.zeros(BATCH, HIDDEN, dtype=F64)
    state = None
    for x in torch.randn(SEQ, BATCH, INPUT, dtype=F64):
        cx = torch.cat([c, x], dim=1)  # [c_{t-1}, x_t]
        cand = torch.tanh(cx @ w_c.T + b_c)  # c~_t
        gamma_u = torch.sigmoid(cx @ w_u.T + b_u)  # Γu
        c = gamma_u * cand + (1 - gamma_u) * c
        state = cell(x, state)
        assert maxdiff(state[0], c) <= TOL


def test_simple_gru_hand_computed():
    """One unit, zero biases, W_u = [0, 0] (Γu = 0.5), W_c = [0, 1]: c_1 = 0.5 tanh(x_1)."""
    cell = RecurrentCell("simple-gru", 1, 1).double()
    with torch.no_grad():
        for p in cell.parameters():
            p.zero_()
        cell.weight_ih[1] = 1.0  # the candidate's input weight
    (c1,) = cell(torch.tensor([[0.7]], dtype=F64))
    # tanh(0.7) (torch's vectorised tanh <= 3.5 ulp, libm's <= 1 ulp) halved; Γu = σ(0) = 0.5 exactly
    assert c1.item() == pytest.approx(0.5 * math.tanh(0.7), abs=u(F64) * (3.5 + 1 + 2) * 0.61)


# ------------------------------------------------------------------------------------------------------
# stacks vs torch.nn.RNN/GRU/LSTM


def make_pair(cell, nonlinearity, torch_layer, n_layers, bidirectional, seed=0):
    torch.manual_seed(seed)
    ref = torch_layer(INPUT, HIDDEN, n_layers, batch_first=True, bidirectional=bidirectional, dtype=F64,
                      **torch_kwargs(cell, nonlinearity))
    cfg = RecurrentConfig(cell=cell, input_size=INPUT, hidden_size=HIDDEN, n_layers=n_layers,
                          bidirectional=bidirectional, nonlinearity=nonlinearity)
    ours = RecurrentStack(cfg).double()
    ours.load_state_dict(ref.state_dict())  # torch's names: weight_ih_l0, weight_hh_l1_reverse, ...
    return ref, ours


def run_torch(ref, x, lengths, state):
    hx = None if state is None else (state if len(state) == 2 else state[0])
    if lengths is None:
        out, h = ref(x, hx)
    else:
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = ref(packed, hx)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out, as_tuple(h)


@pytest.mark.parametrize("impl", ["fused", "equations"])
@pytest.mark.parametrize("n_layers,bidirectional,lengths", [
    (1, False, None), (2, True, LENGTHS), (3, False, LENGTHS), (1, True, None)])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("cell,nonlinearity,torch_layer,_cell", TORCH_CELLS, ids=IDS)
def test_stack_matches_torch(cell, nonlinearity, torch_layer, _cell, n_layers, bidirectional, lengths, with_state,
                             impl):
    ref, ours = make_pair(cell, nonlinearity, torch_layer, n_layers, bidirectional)
    ours.impl = impl
    x = torch.randn(BATCH, SEQ, INPUT, dtype=F64, requires_grad=True)
    state = None
    if with_state:
        n_state = 2 if cell == "lstm" else 1
        state = tuple(torch.randn(n_layers * (2 if bidirectional else 1), BATCH, HIDDEN, dtype=F64)
                      for _ in range(n_state))
    out_ref, h_ref = run_torch(ref, x, lengths, state)
    out, h = ours(x, lengths=lengths, state=state)
    assert out.shape == (BATCH, SEQ, HIDDEN * (2 if bidirectional else 1))
    assert maxdiff(out, out_ref) <= TOL
    assert maxdiff(h, h_ref) <= TOL
    # gradients of a loss over the outputs and the final state: parameters and input
    w_out = torch.randn_like(out)
    w_h = [torch.randn_like(s) for s in h]

    def loss(o, hs):
        return (o * w_out).sum() + sum((s * w).sum() for s, w in zip(hs, w_h))

    g_ref = torch.autograd.grad(loss(out_ref, h_ref), [x, *ref.parameters()])
    g_ours = torch.autograd.grad(loss(out, h), [x, *ours.parameters()])
    assert maxdiff(g_ours, g_ref) <= TOL


def test_state_dict_keys_are_torch_keys():
    ref, ours = make_pair("lstm", "tanh", nn.LSTM, 2, True)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert all(ours.state_dict()[k].shape == v.shape for k, v in ref.state_dict().items())


# ------------------------------------------------------------------------------------------------------
# equations path == fused path, padding


ALL_FUSED = ["rnn", "gru", "lstm"]


def stack(cell, impl="fused", n_layers=2, bidirectional=True, dropout=0.0, seed=3):
    torch.manual_seed(seed)
    cfg = RecurrentConfig(cell=cell, input_size=INPUT, hidden_size=HIDDEN, n_layers=n_layers,
                          bidirectional=bidirectional, dropout=dropout, impl=impl)
    return RecurrentStack(cfg).double()


@pytest.mark.parametrize("cell", ALL_FUSED)
def test_equations_equal_fused_including_empty_sequences(cell):
    """Zero-length sequences (torch cannot pack them): state unchanged, outputs zero, both paths agree."""
    s = stack(cell, dropout=0.3).eval()  # dropout off in eval mode
    x = torch.randn(BATCH, SEQ, INPUT, dtype=F64)
    lengths = torch.tensor([7, 0, 2, 5, 0])
    state = tuple(torch.randn(4, BATCH, HIDDEN, dtype=F64) for _ in range(2 if cell == "lstm" else 1))
    out_f, h_f = s(x, lengths=lengths, state=state)
    s.impl = "equations"
    out_e, h_e = s(x, lengths=lengths, state=state)
    assert maxdiff(out_e, out_f) <= TOL
    assert maxdiff(h_e, h_f) <= TOL
    assert torch.equal(out_f[1], torch.zeros_like(out_f[1])) and torch.equal(out_f[4], torch.zeros_like(out_f[4]))
    assert all(torch.equal(hf[:, [1, 4]], s0[:, [1, 4]]) for hf, s0 in zip(h_f, state))


@pytest.mark.parametrize("impl", ["fused", "equations"])
@pytest.mark.parametrize("cell", ALL_FUSED)
def test_padding_never_changes_outputs_or_state(cell, impl):
    s = stack(cell, impl)
    x = torch.randn(BATCH, SEQ, INPUT, dtype=F64)
    real = torch.arange(SEQ)[None, :] < LENGTHS[:, None]  # batch, seq: True = real token
    out, h = s(x, padding=real)
    # the same through lengths
    out_l, h_l = s(x, lengths=LENGTHS)
    assert torch.equal(out, out_l) and all(torch.equal(a, b) for a, b in zip(h, h_l))
    # garbage at padded positions changes nothing
    x2 = torch.where(real[..., None], x, torch.randn_like(x) * 100)
    out2, h2 = s(x2, padding=real)
    assert torch.equal(out, out2) and all(torch.equal(a, b) for a, b in zip(h, h2))
    # outputs at padded positions are exactly zero
    assert torch.equal(out[~real], torch.zeros_like(out[~real]))
    # each sequence alone, unpadded, gives the same outputs and final state
    for b in range(BATCH):
        n = int(LENGTHS[b])
        out_b, h_b = s(x[b:b + 1, :n])
        assert maxdiff(out_b[0], out[b, :n]) <= TOL
        assert maxdiff(tuple(t[:, b] for t in h), tuple(t[:, 0] for t in h_b)) <= TOL


def test_simple_gru_stack_has_equations_path_only():
    with pytest.raises(SeqlabError, match="no fused PyTorch kernel; set impl='equations'"):
        RecurrentConfig(cell="simple-gru", input_size=3, hidden_size=4)
    s = stack("simple-gru", "equations")
    out, (h,) = s(torch.randn(BATCH, SEQ, INPUT, dtype=F64), lengths=LENGTHS)
    assert out.shape == (BATCH, SEQ, 2 * HIDDEN) and h.shape == (4, BATCH, HIDDEN)
    s.impl = "fused"
    with pytest.raises(SeqlabError, match="no fused PyTorch kernel"):
        s(torch.randn(BATCH, SEQ, INPUT, dtype=F64))


def test_dropout_between_layers_only_in_training():
    s = stack("lstm", dropout=0.5)
    x = torch.randn(BATCH, SEQ, INPUT, dtype=F64)
    s.eval()
    a, _ = s(x)
    b, _ = s(x)
    assert torch.equal(a, b)
    s.train()
    c, _ = s(x)
    assert maxdiff(a, c) > 1e-3  # layer 1 read dropped-out states


@pytest.mark.parametrize("kwargs,message", [
    ({"cell": "lstm", "nonlinearity": "relu"}, "rnn cell only"),
    ({"cell": "elman"}, "unknown cell"),
    ({"cell": "gru", "impl": "loop"}, "unknown impl"),
    ({"cell": "gru", "dropout": 1.0}, "outside"),
    ({"cell": "gru", "n_layers": 0}, "positive"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(SeqlabError, match=message):
        RecurrentConfig(input_size=3, hidden_size=4, **kwargs)


def test_bad_lengths_and_masks():
    s = stack("gru")
    x = torch.randn(2, 4, INPUT, dtype=F64)
    with pytest.raises(SeqlabError, match="padding at the end"):
        s(x, padding=torch.tensor([[True, False, True, True], [True] * 4]))
    with pytest.raises(SeqlabError, match=r"lie in \[0, 4\]"):
        s(x, lengths=torch.tensor([5, 2]))
    with pytest.raises(SeqlabError, match="not both"):
        s(x, lengths=torch.tensor([4, 2]), padding=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(SeqlabError, match="bool tensor of shape"):
        s(x, padding=torch.ones(2, 3, dtype=torch.bool))
