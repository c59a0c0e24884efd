"""Recurrent cells and layers from their equations (notes: Recurrent neural networks): Elman RNN, GRU, LSTM; deep,
bidirectional, variable-length stacks. The step functions carry the notes' equations as tags.

Equations. The notes write one matrix on a concatenation, W [a_{t-1}, x_t]; here it is split into its two
halves, W [a, x] = W_hh a + W_ih x, and the bias into b_ih + b_hh, as PyTorch stores them (two biases
whose sum is the notes' b):

- Elman RNN (notes: Recurrent neural networks › Elman RNN):  a_t = g(W1 x_t + W3 a_{t-1} + b),  g = tanh | relu
  (W1 = weight_ih, W3 = weight_hh, b = bias_ih + bias_hh; the output ŷ_t = g2(W2 a_t + b2) is the model's).
- Simplified GRU (notes: Recurrent neural networks › Gated recurrent unit):
      c~_t = tanh(W_c [c_{t-1}, x_t] + b_c),  Γu = σ(W_u [c_{t-1}, x_t] + b_u),
      c_t = Γu * c~_t + (1 - Γu) * c_{t-1}
  Gates stacked (u, c~). No reset gate; the update gate weights the *candidate*.
- GRU as PyTorch defines it (Cho et al. 2014, the default, so weights interchange with torch.nn.GRU):
      r   = σ(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)                      reset gate (not in the notes)
      z   = σ(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)                      update gate
      n   = tanh(W_in x_t + b_in + r * (W_hn h_{t-1} + b_hn))            candidate (the notes' c~)
      h_t = (1 - z) * n + z * h_{t-1}
  Differences from the notes: the reset gate r, applied *after* the hidden projection (r * (W_hn h + b_hn),
  not W_hn (r * h) as in Cho et al.), and z weights the *previous* state, so z plays the part of 1 - Γu.
  Gates stacked (r, z, n).
- LSTM (notes: › Long short-term memory; Hochreiter & Schmidhuber 1997 with the forget gate of Gers et al.):
      i_t = σ(W_i [a_{t-1}, x_t] + b_i)   input gate: how much of the candidate joins the long-term memory
      f_t = σ(W_f [a_{t-1}, x_t] + b_f)   forget gate: what fraction of the long-term memory is kept
      g_t = tanh(W_c [a_{t-1}, x_t] + b_c)  candidate c~_t
      o_t = σ(W_o [a_{t-1}, x_t] + b_o)   output gate
      c_t = f_t * c_{t-1} + i_t * g_t     long-term memory (no weights on this path)
      a_t = o_t * tanh(c_t)               short-term memory / hidden state
  Gates stacked (i, f, g, o), PyTorch's order.
- Bidirectional (notes: Recurrent neural networks › Bidirectional RNNs): the per-token state is [→a_t, ←a_t];
  the reverse direction reads each sequence from its last real token back to the first.
- Deep (notes: Recurrent neural networks › Deep RNNs): layer k reads layer k-1's per-token states, with dropout
  between layers (not after the last), as torch.nn.LSTM.

Parameters are laid out and named as PyTorch's, so a torch.nn.RNN/GRU/LSTM state_dict loads directly:
``weight_ih_l{k}[_reverse]`` (gates*hidden, in), ``weight_hh_l{k}[_reverse]`` (gates*hidden, hidden),
``bias_ih_l{k}[_reverse]`` and ``bias_hh_l{k}[_reverse]`` (gates*hidden,); a single cell has ``weight_ih``,
``weight_hh``, ``bias_ih``, ``bias_hh`` as torch.nn.RNNCell/GRUCell/LSTMCell. Initialisation is PyTorch's:
every parameter U(-1/sqrt(hidden), 1/sqrt(hidden)).

Variable lengths: ``lengths`` (batch,) or a padding mask (batch, seq) with True = real token
(:mod:`seqlab.nn.masks`), padding at the end. Padded positions never change any output or final state, and
the outputs there are zero.

Two paths, chosen by ``impl``: "fused" (default) runs torch.nn.RNN/GRU/LSTM on this module's own parameters
(``torch.func.functional_call``; packed sequences for variable lengths); "equations" runs the step functions
below in a Python loop over time. Tests prove they agree to 1e-10 in float64. The simplified GRU has no
PyTorch kernel, so it has only the equations path (``impl="fused"`` is refused for it).

Shapes: batch; seq; input (input_size); hidden (hidden_size); gates (1 rnn, 2 simple-gru, 3 gru, 4 lstm);
dirs (1, or 2 when bidirectional); layers (n_layers). A state is a tuple of tensors: ``(h,)`` for the RNN
and the GRUs, ``(h, c)`` for the LSTM; in a cell each is (batch, hidden), in a stack (layers*dirs, batch,
hidden), ordered layer 0 forward, layer 0 reverse, layer 1 forward, ... as PyTorch orders h_n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqlab.base.errors import SeqlabError
from seqlab.nn.dropout import dropout

State = tuple[Tensor, ...]
IMPLS = ("fused", "equations")
NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


# ------------------------------------------------------------------------------------------------------
# one time step of each cell: xw = W_ih x_t + b_ih (batch, gates*hidden), computed for all t at once


def elman_step(xw: Tensor, state: State, w_hh: Tensor, b_hh: Tensor, g: Callable = torch.tanh) -> State:
    r"""a_t = g(W1 x_t + W3 a_{t-1} + b) (notes: Recurrent neural networks › Elman RNN); ``xw`` holds W1 x_t + b_ih.

    !!! equation "Recurrent neural networks › Elman RNN"
        $a_t = g_1(W_1 x_t + W_3 a_{t-1} + b_1)$: one step of the simple recurrent cell, $g_1$ = tanh or ReLU;
        $W_1 x_t$ is computed for all $t$ at once, and $b_1$ is stored as two biases.

    !!! departure "Recurrent neural networks › Elman RNN (notation)"
        notes: $a_t = g_1(w_1 x_t + w_3 a_{t-1} + b_1)$, $\hat{y}_t = g_2(w_2 a_t + b_2)$ in one lecture, and
        $a_t = \tanh(w_1 x_t + w_2 a_{t-1} + b_1)$, $\hat{y}_t = \sigma(w_3 a_t + b_2)$ in the next ($w_2$ and
        $w_3$ swap).
        seqlab: the first: $W_1$ the input weights (``weight_ih``), $W_3$ the recurrent ones (``weight_hh``),
        $W_2$ the output layer (the model's head); $b_1$ = ``bias_ih + bias_hh``.

    !!! departure "Recurrent neural networks › Elman RNN (notation)"
        notes: column vectors, a batch as columns: $x_t \in \mathbb{R}^{5000 \times 5}$, $W_1 \in
        \mathbb{R}^{231 \times 5000}$, $a_t = W_1 x_t + \dots \in \mathbb{R}^{231 \times 5}$.
        seqlab: batch first, one example a row: $x_t$ is (batch, input), and with $W_1$ stored as the notes have
        it (hidden × input) the step computes $x_t W_1^\top$, (batch, hidden)."""
    (a,) = state
    return (g(xw + F.linear(a, w_hh, b_hh)),)  # batch, hidden


def simple_gru_step(xw: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    r"""The notes' GRU (Recurrent neural networks › Gated recurrent unit): no reset gate, gates stacked (u, c~).

    !!! equation "Recurrent neural networks › Gated recurrent unit"
        $\tilde{c}_t = \tanh(W_c [c_{t-1}, x_t] + b_c)$: the candidate memory, from the previous memory and the
        input.

    !!! equation "Recurrent neural networks › Gated recurrent unit"
        $\Gamma_u = \sigma(W_u [c_{t-1}, x_t] + b_u)$: the update gate, one value in (0, 1) per memory unit.

    !!! equation "Recurrent neural networks › Gated recurrent unit"
        $c_t = \Gamma_u \odot \tilde{c}_t + (1 - \Gamma_u) \odot c_{t-1}$: the new memory; where the gate is
        near 0 the old memory passes unchanged, which keeps the gradient from vanishing."""
    (c,) = state
    u, cand = (xw + F.linear(c, w_hh, b_hh)).chunk(2, dim=-1)  # batch, hidden each: W[c, x] + b per gate
    u, cand = torch.sigmoid(u), torch.tanh(cand)
    return (u * cand + (1 - u) * c,)


def gru_step(xw: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    r"""PyTorch's GRU: r, z = σ(...), n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h_t = (1 - z) n + z h.

    !!! equation "Recurrent neural networks › Gated recurrent unit (beyond the notes)"
        $n_t = \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn}))$: the candidate of Cho et al.'s GRU
        as PyTorch computes it, with a reset gate $r_t = \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr})$.

    !!! equation "Recurrent neural networks › Gated recurrent unit (beyond the notes)"
        $h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1}$: the new state; the update gate $z_t$ weights the
        previous state, so it plays the part of the notes' $1 - \Gamma_u$.

    !!! departure "Recurrent neural networks › Gated recurrent unit"
        notes: $c_t = \Gamma_u \odot \tilde{c}_t + (1 - \Gamma_u) \odot c_{t-1}$, the update gate $\Gamma_u$
        weighting the candidate, and no reset gate.
        seqlab: ``cell = "gru"`` (the default of the GRU models) is PyTorch's GRU: $z_t = 1 - \Gamma_u$ weights
        the previous state, $n_t$ is the candidate $\tilde{c}_t$, $h_t$ the memory $c_t$ ($= a_t$), and a reset
        gate $r_t$ scales $W_{hn} h_{t-1} + b_{hn}$; ``cell = "simple-gru"`` is the notes' cell
        (``simple_gru_step``, the equations path only)."""
    (h,) = state
    hw = F.linear(h, w_hh, b_hh)  # batch, 3*hidden: W_h{r,z,n} h + b_h{r,z,n}
    x_r, x_z, x_n = xw.chunk(3, dim=-1)  # batch, hidden each
    h_r, h_z, h_n = hw.chunk(3, dim=-1)  # batch, hidden each
    r = torch.sigmoid(x_r + h_r)
    z = torch.sigmoid(x_z + h_z)
    n = torch.tanh(x_n + r * h_n)  # the reset gate after the hidden projection
    return ((1 - z) * n + z * h,)


def lstm_step(xw: Tensor, state: State, w_hh: Tensor, b_hh: Tensor) -> State:
    r"""LSTM (notes: Recurrent neural networks › Long short-term memory); gates stacked (i, f, g, o).

    !!! equation "Recurrent neural networks › Long short-term memory"
        $f_t = \sigma(W_f [a_{t-1}, x_t] + b_f)$: the forget gate, the fraction of the long-term memory kept.

    !!! equation "Recurrent neural networks › Long short-term memory"
        $i_t = \sigma(W_i [a_{t-1}, x_t] + b_i),\ o_t = \sigma(W_o [a_{t-1}, x_t] + b_o)$: the input gate (how much
        of the candidate joins the memory) and the output gate (how much of the memory is shown).

    !!! equation "Recurrent neural networks › Long short-term memory"
        $\tilde{c}_t = \tanh(W_c [a_{t-1}, x_t] + b_c)$: the candidate memory.

    !!! equation "Recurrent neural networks › Long short-term memory"
        $c_t = f_t \odot c_{t-1} + i_t \odot \tilde{c}_t$: the long-term memory; its path has no weights,
        only a product and a sum.

    !!! equation "Recurrent neural networks › Long short-term memory"
        $a_t = o_t \odot \tanh(c_t)$: the short-term memory, the hidden state the next layer reads.

    !!! departure "Recurrent neural networks › Long short-term memory (notation)"
        notes: $a_t$ the hidden state (short-term memory), $c_t$ the LSTM's long-term memory, $c_t = a_t$ in the
        GRU; the self-attention lecture writes $h_t$ for a state and $c_t$ for an input word.
        seqlab: PyTorch's names in the code and the state dicts: ``h`` for the notes' $a_t$ and ``c`` for
        $c_t$; a state is ``(h,)`` or ``(h, c)``. The gates are stacked $(i, f, g, o)$, $g$ the candidate
        $\tilde{c}_t$."""
    h, c = state
    i, f, g, o = (xw + F.linear(h, w_hh, b_hh)).chunk(4, dim=-1)  # batch, hidden each
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # forget part of the memory, add the candidate
    return torch.sigmoid(o) * torch.tanh(c), c


@dataclass(frozen=True)
class CellKind:
    gates: int  # weight blocks stacked in weight_ih / weight_hh
    n_state: int  # tensors in a state: 1 (h) or 2 (h, c)
    torch_class: type[nn.RNNBase] | None  # the fused kernel, if PyTorch has one


CELLS = {
    "rnn": CellKind(1, 1, nn.RNN),
    "simple-gru": CellKind(2, 1, None),
    "gru": CellKind(3, 1, nn.GRU),
    "lstm": CellKind(4, 2, nn.LSTM),
}


def step_function(cell: str, nonlinearity: str = "tanh") -> Callable[[Tensor, State, Tensor, Tensor], State]:
    """The step function of a cell kind: (xw, state, w_hh, b_hh) -> state."""
    if cell == "rnn":
        return partial(elman_step, g=NONLINEARITIES[nonlinearity])
    return {"simple-gru": simple_gru_step, "gru": gru_step, "lstm": lstm_step}[cell]


def check_cell(cell: str, nonlinearity: str = "tanh", impl: str = "equations") -> None:
    """Refuse an unknown cell, nonlinearity or impl, and the fused path for the simplified GRU."""
    if cell not in CELLS:
        raise SeqlabError(f"unknown cell {cell!r}; use one of {', '.join(CELLS)}")
    if nonlinearity not in NONLINEARITIES:
        raise SeqlabError(f"unknown nonlinearity {nonlinearity!r}; use one of {', '.join(NONLINEARITIES)}")
    if nonlinearity != "tanh" and cell != "rnn":
        raise SeqlabError(f"nonlinearity={nonlinearity!r} applies to the rnn cell only; "
                          f"leave it at 'tanh' for cell={cell!r}")
    if impl not in IMPLS:
        raise SeqlabError(f"unknown impl {impl!r}; use one of {', '.join(IMPLS)}")
    if impl == "fused" and CELLS[cell].torch_class is None:
        raise SeqlabError(f"cell={cell!r} (the notes' GRU) has no fused PyTorch kernel; set impl='equations' "
                          "or use cell='gru'")


def _init_uniform(params, hidden_size: int) -> None:
    """PyTorch's initialisation: every weight and bias U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    bound = 1.0 / math.sqrt(hidden_size)
    for p in params:
        nn.init.uniform_(p, -bound, bound)


class RecurrentCell(nn.Module):
    """One time step of a cell (``cell``: rnn | simple-gru | gru | lstm), parameters named and shaped as
    torch.nn.RNNCell / GRUCell / LSTMCell (weight_ih (gates*hidden, input), weight_hh (gates*hidden,
    hidden), bias_ih, bias_hh (gates*hidden,)). The equations are the step functions above."""

    def __init__(self, cell: str, input_size: int, hidden_size: int, nonlinearity: str = "tanh") -> None:
        super().__init__()
        check_cell(cell, nonlinearity)
        self.cell, self.hidden_size = cell, hidden_size
        gates = CELLS[cell].gates
        self.weight_ih = nn.Parameter(torch.empty(gates * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(gates * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(gates * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(gates * hidden_size))
        self.step = step_function(cell, nonlinearity)
        _init_uniform(self.parameters(), hidden_size)

    def forward(self, x: Tensor, state: State | None = None) -> State:
        """x (batch, input), state: tuple of (batch, hidden) (zeros if None) -> the next state."""
        if state is None:
            zeros = x.new_zeros(x.shape[0], self.hidden_size)  # batch, hidden
            state = (zeros,) * CELLS[self.cell].n_state
        xw = F.linear(x, self.weight_ih, self.bias_ih)  # batch, gates*hidden
        return self.step(xw, state, self.weight_hh, self.bias_hh)


# ------------------------------------------------------------------------------------------------------
# the layer: deep, bidirectional, variable lengths


@dataclass(frozen=True, kw_only=True)
class RecurrentConfig:
    """A stack of recurrent layers."""

    cell: str = "lstm"  # rnn (Elman) | simple-gru (the notes' GRU, equations path only) | gru | lstm
    input_size: int  # width of x_t
    hidden_size: int  # width of a_t (and c_t) per direction
    n_layers: int = 1  # stacked layers (notes: Recurrent neural networks › Deep RNNs)
    bidirectional: bool = False  # add a right-to-left direction; per-token states [→a_t, ←a_t]
    dropout: float = 0.0  # dropout on the states between stacked layers (not after the last), training only
    nonlinearity: str = "tanh"  # g of the Elman cell: tanh | relu (rnn cell only)
    impl: str = "fused"  # fused (torch.nn.RNN/GRU/LSTM kernels) | equations (the step functions, a loop)

    def __post_init__(self) -> None:
        check_cell(self.cell, self.nonlinearity, self.impl)
        for name in ("input_size", "hidden_size", "n_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise SeqlabError(f"{name}={value!r} must be a positive whole number; set it to 1 or more")
        if not 0.0 <= self.dropout < 1.0:
            raise SeqlabError(f"dropout={self.dropout} is outside [0, 1); use e.g. 0.2, or 0 to turn it off")

    @property
    def dirs(self) -> int:
        return 2 if self.bidirectional else 1


def lengths_from(batch: int, seq: int, lengths: Tensor | None, padding: Tensor | None,
                 device: torch.device) -> Tensor | None:
    """Sequence lengths (batch,) from ``lengths`` or a padding mask (True = real token, padding at the end);
    None when every sequence fills the whole ``seq``."""
    if lengths is not None and padding is not None:
        raise SeqlabError("give lengths or a padding mask, not both")
    if padding is not None:
        if tuple(padding.shape) != (batch, seq) or padding.dtype != torch.bool:
            raise SeqlabError(f"padding mask must be a bool tensor of shape ({batch}, {seq}) with True = real "
                              f"token; got {padding.dtype} {tuple(padding.shape)}")
        lengths = padding.sum(dim=1)  # batch
        prefix = torch.arange(seq, device=padding.device)[None, :] < lengths[:, None]  # batch, seq
        if not torch.equal(prefix, padding):
            raise SeqlabError("padding mask has a real token after a padded one; put the padding at the end "
                              "of each sequence")
    if lengths is None:
        return None
    lengths = torch.as_tensor(lengths, device=device).long()
    if tuple(lengths.shape) != (batch,):
        raise SeqlabError(f"lengths must have shape ({batch},), one per sequence; got {tuple(lengths.shape)}")
    if bool(((lengths < 0) | (lengths > seq)).any()):
        raise SeqlabError(f"lengths must lie in [0, {seq}] (the padded length); got {lengths.tolist()}")
    return None if bool((lengths == seq).all()) else lengths


class RecurrentStack(nn.Module):
    r"""``n_layers`` recurrent layers, optionally bidirectional, over padded batches (batch-first).

    Parameters as torch.nn.RNN/GRU/LSTM name them (``weight_ih_l0``, ``weight_hh_l1_reverse``, ...), so
    ``stack.load_state_dict(torch_lstm.state_dict())`` works. ``impl`` ("fused" | "equations") can be
    changed on an instance, as MultiHeadAttention.impl.

    !!! equation "Recurrent neural networks › Bidirectional RNNs"
        $a_t = [\overrightarrow{a}_t ; \overleftarrow{a}_t]$: the per-token state of a bidirectional layer, one
        direction reading left to right and the other right to left, so a token's state sees the whole sentence.

    !!! equation "Recurrent neural networks › Deep RNNs"
        $a^{[l]}_t = \mathrm{cell}(a^{[l-1]}_t, a^{[l]}_{t-1}),\ a^{[0]}_t = x_t$: stacked layers, layer $l$
        reading the per-token states of layer $l-1$.

    !!! equation "Recurrent neural networks › Backpropagation through time"
        $\frac{\partial L}{\partial W} = \sum_{t} \frac{\partial L}{\partial a_t} \frac{\partial a_t}{\partial W}$:
        the loss's gradient flows back through every time step of the unrolled stack (autograd through the
        step loop of the equations path, or through PyTorch's fused kernel).

    !!! equation "Recurrent neural networks › Vanishing and exploding gradients (beyond the notes)"
        $\frac{\partial a_n}{\partial a_1} = \prod_{s=2}^{n} \mathrm{diag}(g_1'(z_s))\, W_3$: what backpropagation
        multiplies to cross $n - 1$ steps of an Elman layer ($z_s$ the argument of $g_1$); for the notes' linear
        RNN ($g_1$ the identity) it is $W_h^{n-1}$, the factor of $h_1$ in their $h_n = W_h^{n-1} h_1$, and over
        $n$ steps a scalar weight gives their $w^n$ ($2^{80}$, $0.5^{80}$): it explodes for $\vert w \vert > 1$
        and vanishes for $\vert w \vert < 1$.

    !!! departure "Recurrent neural networks › Vanishing and exploding gradients (slip in the notes)"
        notes: for $h_t = W_h h_{t-1} + W_c c_t$ they write $h_3 = W_h W_h h_1$ and $h_n = W_h^{n-1} h_1$,
        leaving out the inputs' terms, and "Vanishing gradients (NaN)".
        seqlab: (as tutorial 3) the inputs add to $h_n$ but not to its derivative in $h_1$, so the exact
        statement is $\partial h_n / \partial h_1 = W_h^{n-1}$ (with a nonlinearity, a product of
        $\mathrm{diag}(g_1'(z_s)) W_3$); a vanishing gradient goes to 0, an exploding one overflows to inf and
        then NaN.
    """

    def __init__(self, cfg: RecurrentConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.impl = cfg.impl
        self.kind = CELLS[cfg.cell]
        self.step = step_function(cfg.cell, cfg.nonlinearity)
        gates, hidden = self.kind.gates, cfg.hidden_size
        for layer in range(cfg.n_layers):
            width = cfg.input_size if layer == 0 else cfg.dirs * hidden
            for d in range(cfg.dirs):
                sfx = self._suffix(layer, d)
                self.register_parameter(f"weight_ih{sfx}", nn.Parameter(torch.empty(gates * hidden, width)))
                self.register_parameter(f"weight_hh{sfx}", nn.Parameter(torch.empty(gates * hidden, hidden)))
                self.register_parameter(f"bias_ih{sfx}", nn.Parameter(torch.empty(gates * hidden)))
                self.register_parameter(f"bias_hh{sfx}", nn.Parameter(torch.empty(gates * hidden)))
        _init_uniform(self.parameters(), hidden)
        # The fused kernel: a torch.nn.RNN/GRU/LSTM without storage (meta device) that functional_call runs
        # on this module's parameters. Kept in a tuple so that it is not a submodule (.to() and state_dict
        # never see it).
        self._torch_rnn = (None,) if self.kind.torch_class is None else (self._torch_template(cfg),)

    @staticmethod
    def _suffix(layer: int, d: int) -> str:
        return f"_l{layer}" + ("_reverse" if d else "")

    def _torch_template(self, cfg: RecurrentConfig) -> nn.RNNBase:
        kwargs = {"nonlinearity": cfg.nonlinearity} if cfg.cell == "rnn" else {}
        return self.kind.torch_class(cfg.input_size, cfg.hidden_size, cfg.n_layers, bias=True, batch_first=True,
                                     dropout=cfg.dropout if cfg.n_layers > 1 else 0.0,
                                     bidirectional=cfg.bidirectional, device="meta", **kwargs)

    def weights(self, layer: int, d: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(weight_ih, weight_hh, bias_ih, bias_hh) of one layer and direction (0 forward, 1 reverse)."""
        sfx = self._suffix(layer, d)
        return tuple(getattr(self, f"{name}{sfx}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))

    def zero_state(self, batch: int, device=None, dtype=None) -> State:
        """The initial state a_0 = 0 (notes: Recurrent neural networks › Elman RNN): (layers*dirs, batch, hidden)
        per state tensor."""
        p = self.weight_ih_l0
        shape = (self.cfg.n_layers * self.cfg.dirs, batch, self.cfg.hidden_size)
        return tuple(torch.zeros(shape, device=device or p.device, dtype=dtype or p.dtype)
                     for _ in range(self.kind.n_state))

    def forward(self, x: Tensor, lengths: Tensor | None = None, padding: Tensor | None = None,
                state: State | None = None) -> tuple[Tensor, State]:
        """x (batch, seq, input) -> (outputs (batch, seq, dirs*hidden), final state).

        ``lengths`` (batch,) or ``padding`` (batch, seq), True = real token: the final state of each
        sequence is taken at its last real token and the outputs at padded positions are zero.
        ``state``: the initial state, a tuple of (layers*dirs, batch, hidden) (zeros if None).
        """
        batch, seq, _ = x.shape
        lengths = lengths_from(batch, seq, lengths, padding, x.device)
        if state is None:
            state = self.zero_state(batch, x.device, x.dtype)
        if self.impl == "fused":
            return self._fused(x, lengths, state)
        if self.impl == "equations":
            return self._equations(x, lengths, state)
        raise SeqlabError(f"unknown impl {self.impl!r}; use one of {', '.join(IMPLS)}")

    # -- the equations path ------------------------------------------------------------------------------

    def _equations(self, x: Tensor, lengths: Tensor | None, state: State) -> tuple[Tensor, State]:
        seq = x.shape[1]
        real = None if lengths is None else torch.arange(seq, device=x.device)[None, :] < lengths[:, None]  # batch,seq
        finals: list[State] = []
        for layer in range(self.cfg.n_layers):
            outs = []
            for d in range(self.cfg.dirs):
                s0 = tuple(s[layer * self.cfg.dirs + d] for s in state)  # batch, hidden each
                out, s = self._direction(x, real, s0, layer, d)
                outs.append(out)
                finals.append(s)
            x = torch.cat(outs, dim=-1)  # batch, seq, dirs*hidden: [→a_t, ←a_t]
            if layer < self.cfg.n_layers - 1:
                x = dropout(x, self.cfg.dropout, self.training)
        # each state tensor (layers*dirs, batch, hidden), in PyTorch's order of h_n
        final = tuple(torch.stack([f[i] for f in finals]) for i in range(self.kind.n_state))
        return x, final

    def _direction(self, x: Tensor, real: Tensor | None, s: State, layer: int, d: int) -> tuple[Tensor, State]:
        """One layer, one direction: the step function over time (reversed for d = 1)."""
        w_ih, w_hh, b_ih, b_hh = self.weights(layer, d)
        xw = F.linear(x, w_ih, b_ih)  # batch, seq, gates*hidden: W_ih x_t + b_ih for every t at once
        seq = x.shape[1]
        outs: list[Tensor | None] = [None] * seq  # filled with (batch, hidden) outputs, in either order
        for t in (range(seq - 1, -1, -1) if d else range(seq)):
            new = self.step(xw[:, t], s, w_hh, b_hh)
            if real is None:
                s, outs[t] = new, new[0]
            else:  # a padded step leaves the state as it was and outputs zero
                keep = real[:, t, None]  # batch, 1
                s = tuple(torch.where(keep, n, old) for n, old in zip(new, s))
                outs[t] = torch.where(keep, new[0], torch.zeros_like(new[0]))
        return torch.stack(outs, dim=1), s  # batch, seq, hidden

    # -- the fused path ----------------------------------------------------------------------------------

    def _fused(self, x: Tensor, lengths: Tensor | None, state: State) -> tuple[Tensor, State]:
        (module,) = self._torch_rnn
        if module is None:
            raise SeqlabError(f"cell={self.cfg.cell!r} has no fused PyTorch kernel; set impl='equations'")
        module.train(self.training)  # torch applies the between-layer dropout in training mode only
        params = dict(self.named_parameters(recurse=False))  # the names torch.nn.RNNBase uses
        hx = state if self.kind.n_state == 2 else state[0]
        if lengths is None:
            out, h = functional_call(module, params, (x, hx))  # batch, seq, dirs*hidden
        else:
            # pack_padded_sequence refuses empty sequences: run them on one step, then restore below
            packed = pack_padded_sequence(x, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
            out, h = functional_call(module, params, (packed, hx))
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # zeros when padded
        final = h if self.kind.n_state == 2 else (h,)
        if lengths is not None:
            empty = lengths == 0  # batch
            if bool(empty.any()):
                out = out.masked_fill(empty[:, None, None], 0.0)
                final = tuple(torch.where(empty[None, :, None], s0, s) for s0, s in zip(state, final))
        return out, tuple(final)


def set_forget_bias(stack: RecurrentStack, value: float) -> None:
    """Set the LSTM forget-gate bias b_f (bias_ih's f block; bias_hh's f block to 0) of every layer, so
    f_t = σ(b_f + ...) starts near σ(value): the memory path c_t = f_t c_{t-1} + ... is kept open
    (Gers et al. 2000; Jozefowicz et al. 2015 recommend 1)."""
    if stack.cfg.cell != "lstm":
        raise SeqlabError(f"a forget-gate bias needs cell='lstm', got {stack.cfg.cell!r}")
    hidden = stack.cfg.hidden_size
    with torch.no_grad():
        for name, p in stack.named_parameters(recurse=False):
            if name.startswith("bias_"):
                p[hidden:2 * hidden] = value if name.startswith("bias_ih") else 0.0  # gates (i, f, g, o)
