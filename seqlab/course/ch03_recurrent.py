"""Chapter 3, recurrent networks: the Elman, GRU and LSTM steps, a bidirectional layer, the CRF's log-partition
and its Viterbi path, max pooling for a sentence's label (docs/tutorials/03-recurrent-networks.md).

The references are the step functions and the stack of :mod:`seqlab.nn.recurrent` (weights laid out as
torch.nn.RNN/GRU/LSTM store them: ``weight_ih`` (gates*hidden, input), ``weight_hh`` (gates*hidden, hidden), two
biases), the :class:`~seqlab.nn.crf.CRF` of :mod:`seqlab.nn.crf` and the classifier's
:func:`~seqlab.models.classifier.pool`; shapes are batch-first, the padding at the end of each sequence. Each
mistake is computed with the same seqlab code, fed rearranged weights or inputs (or its output rearranged); the two
that seqlab has no switch for (03.3's reset gate before the hidden product, 03.4's σ and tanh swapped) are written
out on the pre-activations seqlab computes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.classifier import pool
from seqlab.nn.crf import CRF
from seqlab.nn.recurrent import RecurrentCell, RecurrentConfig, RecurrentStack, elman_step, gru_step, \
    simple_gru_step

# ------------------------------------------------------------------------------------------------------
# shared: a cell's weights drawn for a case, and the blocks of stacked gates


def _weights(g, gates: int, input_size: int, hidden: int) -> tuple[torch.Tensor, ...]:
    """(w_ih (gates*hidden, input), w_hh (gates*hidden, hidden), b_ih, b_hh (gates*hidden,)), standard normal
    scaled by 1/2 so that the gates stay away from saturation (the mistakes then differ clearly)."""
    return (0.5 * randn(g, gates * hidden, input_size), 0.5 * randn(g, gates * hidden, hidden),
            0.5 * randn(g, gates * hidden), 0.5 * randn(g, gates * hidden))


def _blocks(tensor: torch.Tensor, gates: int, order: tuple[int, ...]) -> torch.Tensor:
    """The gate blocks of a stacked weight or bias (dim 0) rearranged: block k of the result is block order[k]."""
    parts = tensor.chunk(gates, dim=0)
    return torch.cat([parts[k] for k in order], dim=0)


def _negate_block(tensor: torch.Tensor, gates: int, k: int) -> torch.Tensor:
    """Block k of a stacked weight or bias negated: σ(-s) = 1 - σ(s), so that gate becomes one minus itself."""
    parts = list(tensor.chunk(gates, dim=0))
    parts[k] = -parts[k]
    return torch.cat(parts, dim=0)


def _cell(cell: str, w_ih, w_hh, b_ih, b_hh, nonlinearity: str = "tanh") -> RecurrentCell:
    """seqlab's RecurrentCell in float64 holding these weights (its state dict is torch.nn.*Cell's)."""
    module = RecurrentCell(cell, w_ih.shape[1], w_hh.shape[1], nonlinearity).double()
    module.load_state_dict({"weight_ih": w_ih, "weight_hh": w_hh, "bias_ih": b_ih, "bias_hh": b_hh})
    return module


def _step_magnitude(x, h, w_ih, w_hh, b_ih, b_hh) -> float:
    """The largest sum of |terms| of one pre-activation W_ih x + b_ih + W_hh h + b_hh."""
    terms = x.abs() @ w_ih.abs().T + h.abs() @ w_hh.abs().T + b_ih.abs() + b_hh.abs()  # batch, gates*hidden
    return max(terms.max().item(), 1.0)


def _step_cases(gates: int, with_c: bool = False) -> list[Case]:
    """Three single-step cases, (batch, input, hidden) all different within each: x, h (and c), the weights."""
    cases = []
    for seed, (batch, input_size, hidden) in enumerate([(2, 3, 4), (3, 5, 2), (4, 2, 3)]):
        g = generator(seed)
        x, h = randn(g, batch, input_size), randn(g, batch, hidden).tanh()  # a state lies in (-1, 1)
        w = _weights(g, gates, input_size, hidden)
        state = (h, randn(g, batch, hidden).clamp(-3.0, 3.0)) if with_c else (h,)
        cases.append(Case((x, *state, *w), {"batch": batch, "input": input_size, "hidden": hidden}, seed=seed,
                          n=input_size + hidden + 2, magnitude=_step_magnitude(x, h, *w)))
    return cases


# ------------------------------------------------------------------------------------------------------
# 03.1 the Elman step


def _elman(x, h, w_ih, w_hh, b_ih, b_hh):
    return _cell("rnn", w_ih, w_hh, b_ih, b_hh)(x, (h,))[0]


def _elman_sigmoid(x, h, w_ih, w_hh, b_ih, b_hh):
    # seqlab's Elman step takes g as an argument: the same step with σ for g_1
    return elman_step(F.linear(x, w_ih, b_ih), (h,), w_hh, b_hh, g=torch.sigmoid)[0]


ELMAN = Exercise(
    id="03.1",
    name="elman_step",
    title="One step of the Elman RNN",
    section="Recurrent neural networks › Elman RNN",
    signature="elman_step(x, h, w_ih, w_hh, b_ih, b_hh)",
    statement=r"""Compute one step of the simple recurrent cell, $a_t = \tanh(W_1 x_t + W_3 a_{t-1} + b_1)$.

`x` is the input $x_t$, (batch, input); `h` the previous state $a_{t-1}$, (batch, hidden); `w_ih` is $W_1$,
(hidden, input), and `w_hh` is $W_3$, (hidden, hidden), stored as the notes write them (and as
`torch.nn.RNNCell` does); the bias $b_1$ is stored as two vectors, `b_ih` and `b_hh`, (hidden,) each, whose sum
is $b_1$. Batch-first: one example per row, so $W_1 x_t$ is `x @ w_ih.T`. Return the new state $a_t$,
(batch, hidden).""",
    reference=_elman,
    cases=lambda: _step_cases(gates=1),
    mistakes=(
        Mistake("sigmoid-for-tanh", "your state went through a sigmoid; the Elman cell's g_1 is tanh, so a_t lies "
                "in (-1, 1) and is 0 where its argument is 0: a_t = tanh(W_1 x_t + W_3 a_(t-1) + b_1) "
                "(Recurrent neural networks › Elman RNN).", _elman_sigmoid),
        Mistake("w_hh-transposed", "the recurrent weights are transposed: with one example per row, "
                "W_3 a_(t-1) is h @ w_hh.T, not h @ w_hh (w_hh is stored (hidden, hidden) = {hidden} x {hidden} "
                "as the notes' W_3; Recurrent neural networks › Elman RNN).",
                lambda x, h, w_ih, w_hh, b_ih, b_hh: _elman(x, h, w_ih, w_hh.T, b_ih, b_hh)),
        Mistake("one-bias", "one of the two biases is missing: the notes' b_1 is stored as b_ih + b_hh, and both "
                "enter the step, a_t = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh) (Recurrent neural networks › "
                "Elman RNN).", lambda x, h, w_ih, w_hh, b_ih, b_hh: _elman(x, h, w_ih, w_hh, b_ih,
                                                                           torch.zeros_like(b_hh))),
    ),
    # one reduction per output (W_1 x + W_3 a + both biases: n = input + hidden + 2 terms) and tanh, whose
    # derivative is at most 1: the error bound of one dot product
    tolerance=rounding(products=1, gain=1.0),
    follows="seqlab's layout (the departures page, Elman RNN notation): the notes' first lecture's names (W_1 the "
            "input weights, W_3 the recurrent ones), one example per row rather than per column (x_t W_1^T), and "
            "b_1 stored as two biases, as torch.nn.RNNCell stores it.",
)

# ------------------------------------------------------------------------------------------------------
# 03.2 the notes' GRU (no reset gate)


def _notes_gru(x, c, w_u, b_u, w_c, b_c, x_first: bool = False):
    """seqlab's simple_gru_step with the notes' W [c_(t-1), x_t] split as seqlab stores it (W_hh c + W_ih x, gates
    stacked (u, c~)); ``x_first``: the matrix read as acting on [x_t, c_(t-1)] instead (a mistake)."""
    hidden, input_size = c.shape[1], x.shape[1]
    w = torch.cat([w_u, w_c], dim=0)  # 2*hidden, hidden+input: the two gates stacked (u, c~)
    w_hh, w_ih = (w[:, input_size:], w[:, :input_size]) if x_first else (w[:, :hidden], w[:, hidden:])
    b = torch.cat([b_u, b_c])  # 2*hidden: the notes' one bias per gate, as b_ih (b_hh = 0)
    return simple_gru_step(F.linear(x, w_ih, b), (c,), w_hh, torch.zeros_like(b))[0]


def _notes_gru_cases() -> list[Case]:
    cases = []
    for seed, (batch, input_size, hidden) in enumerate([(2, 3, 4), (3, 5, 2), (4, 2, 3)]):
        g = generator(seed)
        x, c = randn(g, batch, input_size), randn(g, batch, hidden).tanh()
        w_u, w_c = 0.5 * randn(g, hidden, hidden + input_size), 0.5 * randn(g, hidden, hidden + input_size)
        b_u, b_c = 0.5 * randn(g, hidden), 0.5 * randn(g, hidden)
        joined = torch.cat([c, x], dim=1).abs()  # batch, hidden+input: [c_(t-1), x_t]
        magnitude = max((joined @ torch.cat([w_u, w_c]).abs().T + torch.cat([b_u, b_c]).abs()).max().item(), 1.0)
        cases.append(Case((x, c, w_u, b_u, w_c, b_c), {"batch": batch, "input": input_size, "hidden": hidden},
                          seed=seed, n=input_size + hidden + 1, magnitude=magnitude))
    return cases


NOTES_GRU = Exercise(
    id="03.2",
    name="notes_gru_step",
    title="One step of the notes' GRU (update gate, no reset gate)",
    section="Recurrent neural networks › Gated recurrent unit",
    signature="notes_gru_step(x, c, w_u, b_u, w_c, b_c)",
    statement=r"""Compute one step of the notes' gated recurrent unit:
$\tilde c_t = \tanh(W_c [c_{t-1}, x_t] + b_c)$, $\Gamma_u = \sigma(W_u [c_{t-1}, x_t] + b_u)$,
$c_t = \Gamma_u \odot \tilde c_t + (1 - \Gamma_u) \odot c_{t-1}$.

`x` is $x_t$, (batch, input); `c` the previous memory $c_{t-1}$ (= $a_{t-1}$), (batch, hidden); `w_u` and
`w_c` are (hidden, hidden + input) and act on the concatenation $[c_{t-1}, x_t]$ (the previous memory first);
`b_u`, `b_c` are (hidden,). Batch-first: one example per row. Return $c_t$, (batch, hidden).""",
    reference=_notes_gru,
    cases=_notes_gru_cases,
    mistakes=(
        Mistake("update-gate-swapped", "the update gate weights the wrong term: in the notes Γ_u weights the "
                "candidate, c_t = Γ_u * c~_t + (1 - Γ_u) * c_(t-1), so Γ_u near 0 keeps the old memory "
                "(Recurrent neural networks › Gated recurrent unit); your Γ_u weights c_(t-1) (PyTorch's GRU "
                "does that with its z, exercise 03.3).",
                lambda x, c, w_u, b_u, w_c, b_c: _notes_gru(x, c, -w_u, -b_u, w_c, b_c)),  # σ(-s) = 1 - Γ_u
        Mistake("concat-order", "your W acts on [x_t, c_(t-1)]: the notes' matrices multiply [c_(t-1), x_t], the "
                "previous memory first, so the first {hidden} columns of w_u and w_c meet c_(t-1) and the last "
                "{input} meet x_t (Recurrent neural networks › Gated recurrent unit).",
                lambda x, c, w_u, b_u, w_c, b_c: _notes_gru(x, c, w_u, b_u, w_c, b_c, x_first=True)),
    ),
    # one reduction per gate over [c, x] and the bias (n = hidden + input + 1); an error e in a pre-activation moves
    # c_t by at most σ'·|c~ - c| e <= e/2 (gate) or Γ_u tanh' e <= e (candidate)
    tolerance=rounding(products=2, gain=1.0),
    follows="the notes' cell (seqlab's cell = \"simple-gru\", simple_gru_step): Γ_u weights the candidate and "
            "there is no reset gate; seqlab's default GRU is PyTorch's (exercise 03.3), where z weights the old "
            "state.",
)

# ------------------------------------------------------------------------------------------------------
# 03.3 PyTorch's GRU (Cho et al., with the reset gate after the hidden product)


def _gru(x, h, w_ih, w_hh, b_ih, b_hh):
    return _cell("gru", w_ih, w_hh, b_ih, b_hh)(x, (h,))[0]


def _gru_update_swapped(x, h, w_ih, w_hh, b_ih, b_hh):
    # z's pre-activation negated: σ(-s) = 1 - z, so the step computes z ⊙ n + (1 - z) ⊙ h
    return _gru(x, h, *(_negate_block(w, 3, 1) for w in (w_ih, w_hh, b_ih, b_hh)))


def _gru_reset_before(x, h, w_ih, w_hh, b_ih, b_hh):
    # Cho et al.'s candidate, tanh(W_in x + b_in + W_hn (r ⊙ h) + b_hn): seqlab's gru_step has no switch for it, so
    # its hidden product for n is moved into the input term (zeroed in w_hh, b_hh), with r from seqlab's own
    # pre-activations (the r block of W_ih x + b_ih + W_hh h + b_hh)
    hidden = h.shape[1]
    xw = F.linear(x, w_ih, b_ih)  # batch, 3*hidden
    r = torch.sigmoid(xw[:, :hidden] + F.linear(h, w_hh[:hidden], b_hh[:hidden]))  # batch, hidden
    xw = torch.cat([xw[:, :2 * hidden], xw[:, 2 * hidden:] + F.linear(r * h, w_hh[2 * hidden:], b_hh[2 * hidden:])],
                   dim=1)
    keep = torch.ones(3 * hidden, dtype=torch.bool)
    keep[2 * hidden:] = False
    return gru_step(xw, (h,), w_hh * keep[:, None], b_hh * keep)[0]


GRU = Exercise(
    id="03.3",
    name="gru_step",
    title="One step of the GRU (PyTorch's, with a reset gate)",
    section="Recurrent neural networks › Gated recurrent unit (beyond the notes)",
    signature="gru_step(x, h, w_ih, w_hh, b_ih, b_hh)",
    statement=r"""Compute one step of the GRU as `torch.nn.GRUCell` (and seqlab's default `cell = "gru"`) defines it:

$$r = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}),\quad
z = \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}),$$
$$n = \tanh\bigl(W_{in} x_t + b_{in} + r \odot (W_{hn} h_{t-1} + b_{hn})\bigr),\quad
h_t = (1 - z) \odot n + z \odot h_{t-1}.$$

`x` is (batch, input), `h` is $h_{t-1}$, (batch, hidden). `w_ih` (3·hidden, input) stacks $W_{ir}, W_{iz},
W_{in}$ in that order (r, z, n), `w_hh` (3·hidden, hidden) stacks $W_{hr}, W_{hz}, W_{hn}$, and `b_ih`, `b_hh`
(3·hidden,) the biases in the same order. Batch-first: $W x_t$ is `x @ W.T`. Return $h_t$, (batch, hidden).""",
    reference=_gru,
    cases=lambda: _step_cases(gates=3),
    mistakes=(
        Mistake("update-gate-swapped", "the update gate weights the wrong term: here (PyTorch's GRU, seqlab's "
                "default) z weights the previous state, h_t = (1 - z) * n + z * h_(t-1), so z plays the part of "
                "the notes' 1 - Γ_u; you wrote the notes' form c_t = Γ_u * c~_t + (1 - Γ_u) * c_(t-1) with z for "
                "Γ_u (Recurrent neural networks › Gated recurrent unit).", _gru_update_swapped),
        Mistake("reset-before-product", "the reset gate is applied before the hidden product, W_hn (r * h) + "
                "b_hn, as in Cho et al.'s paper; the GRU of this exercise (PyTorch's) applies it after: "
                "r * (W_hn h + b_hn) (Recurrent neural networks › Gated recurrent unit (beyond the notes)).",
                _gru_reset_before),
        Mistake("gate-order", "the gate blocks are read in the wrong order: the first {hidden} rows of w_ih, w_hh "
                "and the biases are the reset gate r and the next {hidden} the update gate z (stacked r, z, n as "
                "torch.nn.GRU stores them; Keras stacks z, r, n) (Recurrent neural networks › Gated recurrent "
                "unit (beyond the notes)).",
                lambda x, h, w_ih, w_hh, b_ih, b_hh: _gru(x, h, *(_blocks(w, 3, (1, 0, 2))
                                                                   for w in (w_ih, w_hh, b_ih, b_hh)))),
    ),
    # one reduction per pre-activation (n = input + hidden + 2 terms, each error <= γ_n · magnitude); they reach
    # h_t with weights <= 1/2 (z: σ' |n - h|), <= 2 (n's input and hidden terms, tanh' <= 1) and <= magnitude / 4
    # <= 1.5 (r, through |W_hn h + b_hn| σ'; magnitude <= 6 in the cases): 4 in all, within 3 products at gain 2
    tolerance=rounding(products=3, gain=2.0),
    follows="seqlab's (PyTorch's) GRU, not the notes' cell: z weights the previous state (z = 1 - Γ_u) and a reset "
            "gate scales W_hn h + b_hn; the notes' cell is exercise 03.2.",
)

# ------------------------------------------------------------------------------------------------------
# 03.4 the LSTM step


def _lstm(x, h, c, w_ih, w_hh, b_ih, b_hh):
    h_t, c_t = _cell("lstm", w_ih, w_hh, b_ih, b_hh)(x, (h, c))
    return h_t, c_t


def _lstm_nonlinearities_swapped(x, h, c, w_ih, w_hh, b_ih, b_hh):
    # seqlab's lstm_step fixes σ on (i, f, o) and tanh on g, so the swap (σ on the candidate, tanh on the output
    # gate) is written out, on the pre-activations seqlab computes (W_ih x + b_ih + W_hh h + b_hh)
    i, f, g, o = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, dim=-1)  # batch, hidden each
    c_t = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.sigmoid(g)
    return torch.tanh(o) * torch.tanh(c_t), c_t


LSTM = Exercise(
    id="03.4",
    name="lstm_step",
    title="One step of the LSTM",
    section="Recurrent neural networks › Long short-term memory",
    signature="lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh)",
    statement=r"""Compute one step of the LSTM: $i_t, f_t, o_t = \sigma(\cdot)$, $\tilde c_t = \tanh(\cdot)$ of
$W [a_{t-1}, x_t] + b$, then $c_t = f_t \odot c_{t-1} + i_t \odot \tilde c_t$ and $a_t = o_t \odot \tanh(c_t)$.

`x` is $x_t$, (batch, input); `h` is the short-term state $a_{t-1}$ and `c` the long-term memory $c_{t-1}$,
(batch, hidden) each. The notes' $W [a_{t-1}, x_t] + b$ is stored split as `torch.nn.LSTMCell` stores it:
`w_ih` (4·hidden, input) for $x_t$, `w_hh` (4·hidden, hidden) for $a_{t-1}$, `b_ih` and `b_hh` (4·hidden,) two
biases whose sum is $b$; the four blocks of rows are stacked **(i, f, g, o)**: input gate, forget gate, candidate
$\tilde c_t$, output gate. Batch-first: `x @ w_ih.T`. Return the tuple `(h_t, c_t)`, (batch, hidden) each.""",
    reference=_lstm,
    cases=lambda: _step_cases(gates=4, with_c=True),
    mistakes=(
        Mistake("forget-input-swapped", "the forget and input gates are swapped: the forget gate f_t (rows "
                "{hidden} to 2*{hidden} of the stack, the second block) scales the old memory and the input gate "
                "i_t (the first block) the candidate: c_t = f_t * c_(t-1) + i_t * c~_t (Recurrent neural "
                "networks › Long short-term memory).",
                lambda x, h, c, w_ih, w_hh, b_ih, b_hh: _lstm(x, h, c, *(_blocks(w, 4, (1, 0, 2, 3))
                                                                          for w in (w_ih, w_hh, b_ih, b_hh)))),
        Mistake("tanh-sigmoid-swapped", "tanh and σ are swapped: the candidate c~_t = tanh(W_c [a_(t-1), x_t] + "
                "b_c) takes tanh and the output gate o_t = σ(W_o [a_(t-1), x_t] + b_o) takes σ (Recurrent neural "
                "networks › Long short-term memory).", _lstm_nonlinearities_swapped),
        Mistake("state-order", "the two states are returned in the wrong order: return (h_t, c_t), the "
                "short-term state a_t first and the memory c_t second, as torch.nn.LSTMCell does (Recurrent "
                "neural networks › Long short-term memory).",
                lambda *args: _lstm(*args)[::-1]),
    ),
    # one reduction per gate (n = input + hidden + 2 terms); an error e in a pre-activation moves c_t by at most
    # (|c_(t-1)|/4 + 1/4 + 1) e <= 2 e (|c_(t-1)| <= 3 in the cases) and a_t by at most that plus e/4
    tolerance=rounding(products=1, gain=3.0),
)

# ------------------------------------------------------------------------------------------------------
# 03.5 a bidirectional layer (Elman cells) over a padded batch


def _stack(x, forward, backward) -> RecurrentStack:
    """seqlab's bidirectional one-layer Elman stack, float64, holding the two directions' weights."""
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    stack = RecurrentStack(RecurrentConfig(cell="rnn", input_size=x.shape[2], hidden_size=forward[1].shape[0],
                                           bidirectional=True)).double()
    stack.load_state_dict({**{f"{n}_l0": w for n, w in zip(names, forward)},
                           **{f"{n}_l0_reverse": w for n, w in zip(names, backward)}})
    return stack


def _bidirectional(x, lengths, forward, backward):
    return _stack(x, forward, backward)(x, lengths=lengths)[0]


def _real(x, lengths) -> torch.Tensor:
    return torch.arange(x.shape[1])[None, :, None] < lengths[:, None, None]  # batch, seq, 1: True = real token


def _bidirectional_concatenated_backwards(x, lengths, forward, backward):
    out = _bidirectional(x, lengths, forward, backward)
    hidden = out.shape[2] // 2
    return torch.cat([out[..., hidden:], out[..., :hidden]], dim=-1)  # [←a_t, →a_t]


def _bidirectional_not_reversed_back(x, lengths, forward, backward):
    out = _bidirectional(x, lengths, forward, backward).clone()
    hidden = out.shape[2] // 2
    for b, n in enumerate(lengths.tolist()):  # each row's backward states left in reading order (last token first)
        out[b, :n, hidden:] = out[b, :n, hidden:].flip(0)
    return out


def _bidirectional_over_padding(x, lengths, forward, backward):
    # the backward direction started at the padded end: seqlab's stack run on every position, the padding
    # then zeroed (the forward direction's real positions do not depend on what follows them)
    return _stack(x, forward, backward)(x)[0] * _real(x, lengths)


def _bidirectional_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, input_size, hidden) in enumerate([(2, 5, 3, 4), (3, 4, 5, 2), (4, 6, 2, 3)]):
        g = generator(seed)
        x = randn(g, batch, seq, input_size)  # the padded positions hold values too: they must not be read
        lengths = torch.randint(2, seq, (batch,), generator=g)  # 2 tokens at least, and padding after them
        lengths[0] = seq  # but one row with no padding
        fwd, bwd = _weights(g, 1, input_size, hidden), _weights(g, 1, input_size, hidden)
        # ||W_hh||_inf <= 0.9 in both directions: an error in a state shrinks at each later step (tanh' <= 1)
        fwd, bwd = ((w_ih, 0.9 * w_hh / w_hh.abs().sum(1).max(), b_ih, b_hh) for w_ih, w_hh, b_ih, b_hh in (fwd, bwd))
        ones = torch.ones(1, hidden, dtype=x.dtype)  # |a| <= 1: the largest state a step can read
        magnitude = max(_step_magnitude(x.reshape(-1, input_size), ones, *w) for w in (fwd, bwd))
        cases.append(Case((x, lengths, fwd, bwd), {"batch": batch, "seq": seq, "input": input_size,
                                                   "hidden": hidden}, seed=seed, n=input_size + hidden + 2,
                          magnitude=magnitude))
    return cases


BIDIRECTIONAL = Exercise(
    id="03.5",
    name="bidirectional_rnn",
    title="A bidirectional Elman layer over a padded batch",
    section="Recurrent neural networks › Bidirectional RNNs",
    signature="bidirectional_rnn(x, lengths, forward, backward)",
    statement=r"""Run a bidirectional layer of Elman cells, $a_t = \tanh(W_1 x_t + W_3 a_{t-1} + b_1)$ from
$a_0 = 0$ in each direction, and return each position's states $[\overrightarrow{a}_t ; \overleftarrow{a}_t]$.

`x` is (batch, seq, input), batch-first, padded at the end: row $b$ holds `lengths[b]` real tokens (`lengths`, a
(batch,) integer tensor, at least 1) followed by padding whose values must not affect any output. `forward` and
`backward` are each a tuple `(w_ih, w_hh, b_ih, b_hh)` as in exercise 03.1: `w_ih` (hidden, input), `w_hh`
(hidden, hidden), two biases (hidden,). The forward direction reads each row left to right; the backward one
reads it right to left, **from its last real token** back to the first, and its state for token $t$ is the one
after reading tokens $T, \dots, t$. Return (batch, seq, 2·hidden): at each real position the forward state then
the backward state, and zeros at the padded positions.""",
    reference=_bidirectional,
    cases=_bidirectional_cases,
    mistakes=(
        Mistake("concatenated-backwards", "the two directions are concatenated in the wrong order: each position "
                "holds [→a_t ; ←a_t], the forward state in the first {hidden} columns (Recurrent neural networks "
                "› Bidirectional RNNs).", _bidirectional_concatenated_backwards),
        Mistake("not-reversed-back", "the backward states are in reading order: after running the backward "
                "direction on the reversed tokens, reverse its outputs back, so that position t holds ←a_t, the "
                "state after reading tokens T .. t (Recurrent neural networks › Bidirectional RNNs).",
                _bidirectional_not_reversed_back),
        Mistake("reversed-over-padding", "the backward direction starts at the padded end of the row, so it reads "
                "the padding before the real tokens; reverse each row's first lengths[b] tokens only, and start "
                "from a_0 = 0 at its last real token (Recurrent neural networks › Bidirectional RNNs).",
                _bidirectional_over_padding),
        Mistake("backward-with-forward-weights", "the backward direction uses the forward direction's weights; "
                "each direction has its own W_1, W_3 and biases (Recurrent neural networks › Bidirectional RNNs).",
                lambda x, lengths, forward, backward: _bidirectional(x, lengths, forward, forward)),
    ),
    # one reduction per step (n = input + hidden + 2 terms, |a| <= 1 so magnitude bounds every step's terms); with
    # ||W_3||_inf <= 0.9 and tanh' <= 1 the errors of earlier steps shrink as they pass on, so they add to at most
    # seq <= 6 steps' bounds
    tolerance=rounding(products=6, gain=1.0),
)

# ------------------------------------------------------------------------------------------------------
# 03.6 the CRF's log-partition and 03.7 its Viterbi path


def _crf(transitions, start, end) -> CRF:
    """seqlab's CRF in float64 with these scores and no constraints (every transition allowed)."""
    crf = CRF(transitions.shape[0]).double()
    with torch.no_grad():
        crf.transitions.copy_(transitions)
        crf.start.copy_(start)
        crf.end.copy_(end)
    return crf


def _log_partition(emissions, mask, transitions, start, end):
    return _crf(transitions, start, end).log_partition(emissions, mask)


def _best_path_score(emissions, mask, transitions, start, end):
    # max in place of logsumexp: the score of the best path, seqlab's Viterbi path scored by seqlab's CRF.score
    crf = _crf(transitions, start, end)
    tags = torch.zeros(mask.shape, dtype=torch.long)  # batch, seq: the path, 0 on the padding (not scored)
    for b, path in enumerate(crf.decode(emissions, mask)):
        tags[b, :len(path)] = torch.tensor(path)
    return crf.score(emissions, tags, mask)


def _viterbi(emissions, mask, transitions, start, end):
    return _crf(transitions, start, end).decode(emissions, mask)


def _crf_cases(seeds: tuple[int, int, int]) -> list[Case]:
    """(batch, seq, labels) all different within each case; the transitions, start and end scores as large as
    the emissions, so that the best path is not each token's best tag."""
    cases = []
    for seed, (batch, seq, labels) in zip(seeds, [(2, 5, 4), (3, 4, 6), (4, 6, 3)]):
        g = generator(seed)
        emissions, transitions = randn(g, batch, seq, labels), 1.5 * randn(g, labels, labels)
        start, end = 1.5 * randn(g, labels), 1.5 * randn(g, labels)
        lengths = torch.randint(2, seq, (batch,), generator=g)
        lengths[0] = seq
        mask = torch.arange(seq)[None, :] < lengths[:, None]  # batch, seq: True = real token
        # |α_t| <= |start| + Σ_s (max|e_s| + max|A| + log labels): a bound on every term of every step
        magnitude = (start.abs().max() + end.abs().max() + seq * (emissions.abs().max() + transitions.abs().max()
                                                                  + torch.log(torch.tensor(float(labels))))).item()
        cases.append(Case((emissions, mask, transitions, start, end), {"batch": batch, "seq": seq, "labels": labels},
                          seed=seed, n=labels + 3, magnitude=magnitude))
    return cases


_CRF_STATEMENT = r"""`emissions` is (batch, seq, labels), the scores $e_t(j)$ of tag $j$ at token $t$; `mask`
(batch, seq) is True at the real tokens, which come first in each row (at least one; the padding after them
must not count). `transitions` (labels, labels) holds $A_{ij}$, the score of tag $j$ **right after** tag $i$
(row: the previous tag, column: the next one); `start` and `end` (labels,) score the first and the last tag of
a row. A tag sequence of the $n$ real tokens scores
$\mathrm{start}_{y_1} + \sum_{t=1}^{n} e_t(y_t) + \sum_{t=2}^{n} A_{y_{t-1} y_t} + \mathrm{end}_{y_n}$."""

LOG_PARTITION = Exercise(
    id="03.6",
    name="crf_log_partition",
    title="The CRF's log-partition by the forward algorithm",
    section="Sequence labelling › Linear-chain CRF (beyond the notes)",
    signature="crf_log_partition(emissions, mask, transitions, start, end)",
    statement=r"""Compute $\log Z(x)$, the log of the sum of $\exp(\mathrm{score})$ over every tag sequence, by the
forward algorithm: $\alpha_1(j) = \mathrm{start}_j + e_1(j)$,
$\alpha_t(j) = \log\sum_i \exp(\alpha_{t-1}(i) + A_{ij}) + e_t(j)$,
$\log Z = \log\sum_j \exp(\alpha_n(j) + \mathrm{end}_j)$, $n$ the row's real tokens.

""" + _CRF_STATEMENT + """ Return $\\log Z$ for each row, (batch,).""",
    reference=_log_partition,
    cases=lambda: _crf_cases((0, 1, 2)),
    mistakes=(
        Mistake("max-for-logsumexp", "you took the max where the forward algorithm sums: that is the best path's "
                "score (Viterbi), not log Z; α_t(j) = logsumexp_i(α_(t-1)(i) + A_ij) + e_t(j) and log Z = "
                "logsumexp_j(α_n(j) + end_j) (Sequence labelling › Linear-chain CRF).", _best_path_score),
        Mistake("no-start-end", "the start and end scores are missing: α_1(j) = start_j + e_1(j) and log Z = "
                "logsumexp_j(α_n(j) + end_j) (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _log_partition(e, m, a, torch.zeros_like(start), torch.zeros_like(end))),
        Mistake("transitions-transposed", "the transitions are read the wrong way: A_ij scores tag j right after "
                "tag i, so α_t(j) sums α_(t-1)(i) + A[i, j] over the previous tag i, the rows of A (Sequence "
                "labelling › Linear-chain CRF).", lambda e, m, a, start, end: _log_partition(e, m, a.T, start, end)),
        Mistake("padding-counted", "the padding is counted: each row's recursion stops at its last real token "
                "(mask True), and log Z adds end_j to α_n of that token (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _log_partition(e, torch.ones_like(m), a, start, end)),
    ),
    # one logsumexp (n = labels terms, plus the additions α + A + e) per step, logsumexp passing errors on with
    # gain 1 (its gradient sums to 1), over at most seq + 1 <= 7 steps; magnitude bounds |α_t| and every term
    tolerance=rounding(products=7, gain=1.0),
)

VITERBI = Exercise(
    id="03.7",
    name="viterbi",
    title="The CRF's best tag sequence by Viterbi",
    section="Sequence labelling › Linear-chain CRF (beyond the notes)",
    signature="viterbi(emissions, mask, transitions, start, end)",
    statement=r"""Find each row's highest-scoring tag sequence by the Viterbi algorithm:
$\delta_1(j) = \mathrm{start}_j + e_1(j)$, $\delta_t(j) = \max_i(\delta_{t-1}(i) + A_{ij}) + e_t(j)$ with
back-pointers $\psi_t(j) = \arg\max_i(\delta_{t-1}(i) + A_{ij})$, then $y_n = \arg\max_j(\delta_n(j) +
\mathrm{end}_j)$ and $y_{t-1} = \psi_t(y_t)$.

""" + _CRF_STATEMENT + """ Return a list with one list of tag ids (Python ints) per row, as long as its real
tokens. The cases have no ties.""",
    reference=_viterbi,
    cases=lambda: _crf_cases((3, 4, 1)),  # seeds on which the five paths (right and the mistakes') all differ
    mistakes=(
        Mistake("transitions-transposed", "the transitions are indexed the wrong way: A_ij scores tag j right "
                "after tag i, so δ_t(j) maximises δ_(t-1)(i) + A[i, j] over the previous tag i, the rows of A "
                "(Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _viterbi(e, m, a.T, start, end)),
        Mistake("no-start-end", "the start and end scores are missing: δ_1(j) = start_j + e_1(j) and "
                "y_n = argmax_j(δ_n(j) + end_j) (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _viterbi(e, m, a, torch.zeros_like(start), torch.zeros_like(end))),
        Mistake("greedy", "each token got its own best tag, argmax_j e_t(j): the path must maximise the whole "
                "score, transitions A_ij and start and end scores included (Sequence labelling › Linear-chain "
                "CRF).", lambda e, m, a, start, end: _viterbi(e, m, torch.zeros_like(a), torch.zeros_like(start),
                                                               torch.zeros_like(end))),
        Mistake("padding-counted", "the padding is counted: each row's path ends at its last real token, where "
                "end_j is added, and the padded positions' emissions play no part (Sequence labelling › "
                "Linear-chain CRF).", lambda e, m, a, start, end: [
                    path[:n] for path, n in zip(_viterbi(e, torch.ones_like(m), a, start, end), m.sum(1).tolist())]),
    ),
    tolerance=exact,
)

# ------------------------------------------------------------------------------------------------------
# 03.8 max pooling over the real tokens (sentiment: many to one)


def _max_pool(states, padding):
    return pool(states, padding, "max")


def _pool_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, width) in enumerate([(2, 5, 7), (3, 6, 4), (4, 3, 5)]):
        g = generator(seed)
        states = randn(g, batch, seq, width)  # the padded positions hold values too: they must not count
        lengths = torch.randint(1, seq, (batch,), generator=g)
        lengths[0] = seq
        padding = torch.arange(seq)[None, :] < lengths[:, None]  # batch, seq: True = real token
        cases.append(Case((states, padding), {"batch": batch, "seq": seq, "width": width}, seed=seed, n=seq,
                          magnitude=seq * states.abs().max().item()))
    return cases


MAX_POOL = Exercise(
    id="03.8",
    name="max_pool",
    title="Max pooling over the real tokens (many to one)",
    section="Recurrent neural networks › Many to one (beyond the notes)",
    signature="max_pool(states, padding)",
    statement=r"""Pool a sentence's per-token states into one vector by an element-wise maximum over its $T$ real
tokens, $s_k = \max_{t \le T} a_{t,k}$, as seqlab's `sentiment-lstm` does before its softmax layer.

`states` is (batch, seq, width), batch-first; `padding` (batch, seq) is True at the real tokens, which come first
in each row (at least one). The states at padded positions hold arbitrary values and must not count. Return
(batch, width).""",
    reference=_max_pool,
    cases=_pool_cases,
    mistakes=(
        Mistake("padding-included", "the padded positions take part in the maximum: take it over the real tokens "
                "only, s_k = max over t <= T of a_(t,k) (Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states, None, "max")),
        Mistake("padding-as-zero", "the padding was set to 0 before the maximum, so a feature whose real values "
                "are all negative pools to 0; fill the padding with -inf (or the dtype's lowest value) instead "
                "(Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states * padding[:, :, None], None, "max")),
        Mistake("mean-for-max", "you averaged the states: this exercise pools by the element-wise maximum over "
                "the real tokens, s_k = max_t a_(t,k), not their mean (Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states, padding, "mean")),
    ),
    # the maximum is exact; the mean mistake's sum (n = seq terms) is what the bound is there for
    tolerance=rounding(products=1, gain=1.0),
)

EXERCISES: tuple[Exercise, ...] = (ELMAN, NOTES_GRU, GRU, LSTM, BIDIRECTIONAL, LOG_PARTITION, VITERBI, MAX_POOL)
