"""Chapter 3, recurrent networks, 03.1-03.4: the Elman, GRU (the notes' and PyTorch's) and LSTM steps
(docs/tutorials/03-recurrent-networks.md).

The references are the step functions and the cell of :mod:`seqlab.nn.recurrent` (weights laid out as
torch.nn.RNN/GRU/LSTM store them: ``weight_ih`` (gates*hidden, input), ``weight_hh`` (gates*hidden, hidden), two
biases); shapes are batch-first. Each mistake is computed with the same seqlab code, fed rearranged weights or
inputs (or its output rearranged); the two that seqlab has no switch for (03.3's reset gate before the hidden
product, 03.4's σ and tanh swapped) are written out on the pre-activations seqlab computes. The weights a case
draws and the bound of a step's pre-activations live here; :mod:`seqlab.course.ch03_sequences` (03.5-03.8) uses
them too.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.nn.recurrent import RecurrentCell, elman_step, gru_step, simple_gru_step

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

EXERCISES: tuple[Exercise, ...] = (ELMAN, NOTES_GRU, GRU, LSTM)
