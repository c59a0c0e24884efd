"""Neural forecasters over the windows of the notes' AR(p): an LSTM/GRU or a Transformer encoder reads the
last ``max_len`` values of a series and predicts the next one.

The notes set AR(p) up as a regression on sliding windows (X rows ``t_0 t_1 t_2``, ``t_1 t_2 t_3``, ...; Y
``t_3``, ``t_4``, ...) and fits a linear map from a window to the value that follows:

    x_t = b + sum_{i=1..p} w_i x_{t-i}                              (notes: Time series › Autoregressive models)

The forecasters here keep those windows ("how much to go back?" is ``max_len`` = L) and replace the linear
map by a sequence model read many-to-one (the notes: "variable length i/p -> fixed length o/p"):

    x_t = f(x_{t-L}, ..., x_{t-1})

- recurrent (``RecurrentForecaster``): each value is the 1-wide input of the cell, a_s = LSTM/GRU(x_s, a_{s-1})
  (notes: Recurrent neural networks; :mod:`seqlab.nn.recurrent`), and the forecast is read off the last state,
  x_hat_t = w_out . a_{t-1} + b_out (the notes' y_hat = g2(W2 a_t + b2) with g2 the identity);
- Transformer (``TransformerForecaster``): each value becomes a d_model vector, e_s = x_s w_in + b_in (a linear
  "embedding" of a number), plus positions (notes: Transformer › Positional encoding), through the encoder
  layers (notes: Transformer; :class:`seqlab.models.transformer.Encoder`); the forecast is read off the
  last position, x_hat_t = w_out . X^L[last] + b_out. Positions are right-aligned: the newest value of a window
  is always at position max_len - 1.

Loss: the squared error (x_hat_t - x_t)^2 summed over windows and divided by their count -- AR's least-squares
loss, now minimised by gradient steps (seqlab.tasks.forecast runs the Trainer). Multi-step forecasts are
recursive, as AR's (specs/metrics.md 3.4): each forecast joins the window of the next step. The models work on
standardised values, z = (x - mean) / std with the training split's statistics (the task does the scaling).

Shapes: batch; seq (window length, at most max_len); hidden (recurrent width); d_model (Transformer width).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_positive
from seqlab.models.transformer import POSITIONS, Encoder, TransformerConfig
from seqlab.nn.dropout import Dropout
from seqlab.nn.positions import check_positions
from seqlab.nn.recurrent import CELLS, RecurrentConfig, RecurrentStack, set_forget_bias


# ------------------------------------------------------------------------------------------------------
# configs (one frozen dataclass per model.arch)


@dataclass(frozen=True, kw_only=True)
class RecurrentForecasterConfig:
    """A recurrent forecaster: the window read by a recurrent stack, the forecast off its last state."""

    cell: str = "lstm"  # rnn (Elman) | gru (PyTorch's) | simple-gru (the notes', impl="equations") | lstm
    max_len: int = 32  # window length L: the model reads the last L values ("how much to go back?" in the notes)
    n_layers: int = 1  # stacked recurrent layers (notes: Recurrent neural networks › Deep RNNs)
    hidden_size: int = 64  # width of a_t (and the LSTM's c_t)
    dropout: float = 0.0  # between stacked layers (training only)
    impl: str = "fused"  # fused (torch.nn.LSTM/GRU kernels) | equations (the cell equations, a loop)

    arch_cells: ClassVar[tuple[str, ...]] = tuple(CELLS)  # the cells this config's model.arch accepts

    def __post_init__(self) -> None:
        check_positive("model.max_len", self.max_len)
        if self.cell not in self.arch_cells:
            raise SeqlabError(f"model.cell={self.cell!r} does not fit this model.arch; use cell = "
                              + " or ".join(repr(c) for c in self.arch_cells) + " (or change model.arch)")
        self.stack_config()  # validates cell, impl, sizes and dropout

    def unused_keys(self) -> dict[str, str]:
        """The keys this combination leaves unused, each with why and the fix (seqlab.tasks.registry.resolve_run)."""
        if self.n_layers == 1:  # dropout acts between stacked layers only (RecurrentStack, as torch.nn.LSTM)
            return {"dropout": "while model.n_layers = 1 (it acts between stacked layers only); set "
                               "model.n_layers >= 2, or remove model.dropout"}
        return {}

    def stack_config(self) -> RecurrentConfig:
        """The recurrent stack: a 1-wide input (one value per step), left to right."""
        return RecurrentConfig(cell=self.cell, input_size=1, hidden_size=self.hidden_size, n_layers=self.n_layers,
                               dropout=self.dropout, impl=self.impl)


@dataclass(frozen=True, kw_only=True)
class LSTMForecasterConfig(RecurrentForecasterConfig):
    """model.arch = "lstm"."""

    cell: str = "lstm"  # lstm
    arch_cells: ClassVar[tuple[str, ...]] = ("lstm",)


@dataclass(frozen=True, kw_only=True)
class GRUForecasterConfig(RecurrentForecasterConfig):
    """model.arch = "gru"."""

    cell: str = "gru"  # gru (PyTorch's) | simple-gru (the notes', impl="equations" only)
    arch_cells: ClassVar[tuple[str, ...]] = ("gru", "simple-gru")


@dataclass(frozen=True, kw_only=True)
class TransformerForecasterConfig:
    """A Transformer-encoder forecaster (model.arch = "transformer"); the encoder's own fields, no vocabulary."""

    max_len: int = 32  # window length L, and the positions the encoder has
    n_layers: int = 2  # encoder layers
    n_heads: int = 4  # attention heads; depth = d_model / n_heads
    d_model: int = 32  # width of the value embedding and the residual stream
    d_ff: int = 64  # hidden width of the feed-forward network
    dropout: float = 0.0  # on the embedding, attention weights, FFN hidden units and residual branches
    norm: str = "pre"  # LayerNorm placement: "pre" | "post" | "sublayer"
    positions: str = "sinusoidal"  # "sinusoidal" (notes: Transformer › Positional encoding) or "learned"
    activation: str = "gelu"  # FFN activation: "gelu" or "relu"

    def __post_init__(self) -> None:
        self.encoder_config()  # validates sizes, heads, norm, positions, activation, dropout

    def encoder_config(self) -> TransformerConfig:
        return TransformerConfig(n_layers=self.n_layers, n_heads=self.n_heads, d_model=self.d_model,
                                 d_ff=self.d_ff, max_len=self.max_len, dropout=self.dropout, norm=self.norm,
                                 positions=self.positions, activation=self.activation, tie_embeddings=False)


FORECASTER_CONFIGS = {"lstm": LSTMForecasterConfig, "gru": GRUForecasterConfig,
                      "transformer": TransformerForecasterConfig}  # model.arch -> config class


# ------------------------------------------------------------------------------------------------------
# the models: window (batch, seq) -> next value (batch,)


class RecurrentForecaster(nn.Module):
    r"""x_hat_t = w_out . a_{t-1} + b_out, a_s = cell(x_s, a_{s-1}) over the window (notes: Recurrent neural networks).

    !!! equation "Time series › Neural forecasters"
        $\hat{x}_t = w_{out} \cdot a_{t-1} + b_{out},\ a_s = \mathrm{cell}(x_s, a_{s-1})$: an LSTM or GRU reads the
        window many-to-one, and the notes' $\hat{y} = g_2(W_2 a + b_2)$, with $g_2$ the identity, reads the
        forecast off its last state."""

    def __init__(self, cfg: RecurrentForecasterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.rnn = RecurrentStack(cfg.stack_config())
        self.head = nn.Linear(cfg.hidden_size, 1)  # w_out: hidden -> 1, b_out
        if cfg.cell == "lstm":
            set_forget_bias(self.rnn, 1.0)  # keep the memory path open at the start (Jozefowicz et al. 2015)

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq) standardised values, oldest first -> forecasts of the next value (batch,)."""
        check_positions(x.shape[1], self.cfg.max_len)
        a, _ = self.rnn(x.unsqueeze(-1))  # (batch, seq, 1) -> (batch, seq, hidden)
        return self.head(a[:, -1]).squeeze(-1)  # (batch, hidden) -> (batch, 1) -> (batch,)


class TransformerForecaster(nn.Module):
    r"""x_hat_t = w_out . Encoder(x w_in + b_in + P)[last] + b_out (notes: Transformer).

    !!! equation "Time series › Neural forecasters (beyond the notes)"
        $\hat{x}_t = w_{out} \cdot \mathrm{Encoder}(x\, w_{in} + b_{in} + P)_{last} + b_{out}$: a Transformer
        encoder over the window, each value embedded linearly; the forecast is read off the last position."""

    def __init__(self, cfg: TransformerForecasterConfig) -> None:
        super().__init__()
        self.cfg = cfg
        enc = cfg.encoder_config()
        self.embed = nn.Linear(1, cfg.d_model)  # w_in, b_in: one value -> d_model
        self.positions = POSITIONS[cfg.positions](cfg.d_model, cfg.max_len)  # P: max_len, d_model
        self.dropout = Dropout(cfg.dropout)
        self.encoder = Encoder(enc)
        self.head = nn.Linear(cfg.d_model, 1)  # w_out: d_model -> 1, b_out

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq) standardised values, oldest first -> forecasts of the next value (batch,)."""
        seq = x.shape[1]
        check_positions(seq, self.cfg.max_len)
        positions = torch.arange(self.cfg.max_len - seq, self.cfg.max_len, device=x.device)  # seq, right-aligned
        e = self.embed(x.unsqueeze(-1))  # (batch, seq, 1) -> (batch, seq, d_model)
        h = self.encoder(self.dropout(e + self.positions(positions)))  # batch, seq, d_model
        return self.head(h[:, -1]).squeeze(-1)  # (batch, d_model) -> (batch, 1) -> (batch,)


def build_forecaster(cfg: RecurrentForecasterConfig | TransformerForecasterConfig) -> nn.Module:
    """The model for a forecaster config (``model.arch`` lstm, gru or transformer)."""
    if isinstance(cfg, RecurrentForecasterConfig):
        return RecurrentForecaster(cfg)
    if isinstance(cfg, TransformerForecasterConfig):
        return TransformerForecaster(cfg)
    raise SeqlabError(f"no neural forecaster for {type(cfg).__name__}; "
                      f"use model.arch = {' | '.join(FORECASTER_CONFIGS)}")


# ------------------------------------------------------------------------------------------------------
# windows and recursive forecasts


def window_matrix(z: np.ndarray, window: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The notes' X / Y: rows z[t-L .. t-1] (oldest first) and targets z[t], for t = start .. stop-1.

    ``start`` must be >= L (every row is a whole window); returns X (rows, L) and Y (rows,).

    !!! equation "Time series › Sliding windows"
        $X_t = [z_{t-L}, \dots, z_{t-1}],\ Y_t = z_t$: the training pairs of a neural forecaster, windows of the
        last $L$ values (oldest first) and the value that follows.
    """
    if start < window:
        raise ValueError(f"start={start} < window={window}: the first window would reach before the series")
    t = np.arange(start, stop)  # rows
    X = z[t[:, None] - window + np.arange(window)[None, :]]  # (rows, 1) + (1, L) -> rows, L
    return X, z[t]


@torch.no_grad()
def recursive_forecast(model: nn.Module, history: Tensor, steps: int) -> Tensor:
    """Forecasts of the ``steps`` values after ``history`` (seq,), each fed back into the next window.

    The window is the last ``max_len`` values (fewer when the history is shorter); returns (steps,).
    """
    window = history[-model.cfg.max_len:].clone()  # seq
    out = torch.empty(steps, dtype=history.dtype, device=history.device)
    for h in range(steps):
        out[h] = model(window[None])[0]  # (1, seq) -> (1,)
        window = torch.cat([window[1:] if window.numel() == model.cfg.max_len else window, out[h:h + 1]])
    return out
