"""Recurrent models (notes: Recurrent neural networks): the shared encoder (embeddings -> (bi)RNN/GRU/LSTM stack ->
per-token states) and the recurrent language model.

Equations (notes: Recurrent neural networks; Word embeddings › Embedding matrix):
    x_t = E · I_t                        the token's row of the embedding matrix (E · o_j = e_j)
    a_t = cell(x_t, a_{t-1}), a_0 = 0    per layer; Elman, GRU or LSTM (:mod:`seqlab.nn.recurrent`); deep and,
                                         for encoders, bidirectional: a_t = [→a_t, ←a_t]
    ŷ_t = softmax(W2 a_t + b2)          the next-token distribution over the vocabulary (› Elman RNN, with
                                         the softmax over the vocabulary); logits returned, softmax in the loss
With ``tie_embeddings`` W2 is E (Press & Wolf 2017; needs hidden_size == d_model). Dropout (Zaremba et al.
2014) on the embeddings, between stacked layers and on the top layer's states.

The language model has the interface of :class:`seqlab.models.transformer.TransformerLM` so the LM task
(:mod:`seqlab.tasks.lm`) and the decoder (:mod:`seqlab.decoding.decode`) use it unchanged: ``cfg.max_len``,
``forward(ids, cache=None)``, ``new_cache(batch, device, dtype)`` and ``num_params()``. An RNN needs no
window limit, but it keeps the Transformer's rule (docs/manual.md, "Rules of the code"): a forward pass sees at
most ``max_len`` positions, cached ones included, so generation slides the same window and cached equals uncached.

Shapes: batch; seq; d_model (embedding width); hidden (hidden_size); dirs (1 or 2); layers; vocab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_positive, check_size
from seqlab.nn.dropout import Dropout
from seqlab.nn.positions import check_positions
from seqlab.nn.recurrent import CELLS, RecurrentConfig, RecurrentStack, State, set_forget_bias


@dataclass(frozen=True, kw_only=True)
class RecurrentModelConfig:
    """The fields every recurrent model shares (language model; tagger and classifier)."""

    vocab_size: int | None = None  # tokens in the vocabulary (from the data: None in a run config until read)
    cell: str = "lstm"  # rnn (Elman) | simple-gru (the notes' GRU, impl="equations" only) | gru | lstm
    nonlinearity: str = "tanh"  # g of the Elman cell: tanh | relu (rnn cell only)
    n_layers: int = 2  # stacked recurrent layers (notes: Recurrent neural networks › Deep RNNs)
    d_model: int = 256  # embedding width, the input x_t of the first layer
    hidden_size: int = 256  # width of a_t (and the LSTM's c_t) per direction
    dropout: float = 0.2  # on embeddings, between layers and on the top layer's states (training only)
    impl: str = "fused"  # fused (torch.nn.RNN/GRU/LSTM kernels) | equations (the cell equations, a loop)

    arch_cells: ClassVar[tuple[str, ...]] = tuple(CELLS)  # the cells this config's model.arch accepts

    def __post_init__(self) -> None:
        check_size("vocab_size", self.vocab_size)
        check_positive("d_model", self.d_model)
        if self.cell not in self.arch_cells:
            raise SeqlabError(f"cell={self.cell!r} does not fit this model.arch; use cell = "
                              + " or ".join(repr(c) for c in self.arch_cells) + " (or change model.arch)")
        self.stack_config()  # validates cell, nonlinearity, impl, sizes and dropout

    def unused_keys(self) -> dict[str, str]:
        """The keys this combination leaves unused, each with why and the fix (seqlab.tasks.registry.resolve_run)."""
        if self.cell != "rnn":
            return {"nonlinearity": f"while model.cell = {self.cell!r} (it is the Elman rnn cell's g only); "
                                    "remove model.nonlinearity"}
        return {}

    def stack_config(self, bidirectional: bool = False) -> RecurrentConfig:
        """The recurrent stack's config: d_model in, hidden_size per direction."""
        return RecurrentConfig(cell=self.cell, input_size=self.d_model, hidden_size=self.hidden_size,
                               n_layers=self.n_layers, bidirectional=bidirectional, dropout=self.dropout,
                               nonlinearity=self.nonlinearity, impl=self.impl)


@dataclass(frozen=True, kw_only=True)
class RecurrentLMConfig(RecurrentModelConfig):
    """Recurrent language model (left to right, so never bidirectional)."""

    max_len: int = 128  # training window length; also the most tokens one forward (and generation) sees
    tie_embeddings: bool = True  # W2 = E (needs hidden_size == d_model)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("max_len", self.max_len)
        if self.tie_embeddings and self.hidden_size != self.d_model:
            raise SeqlabError(f"tie_embeddings needs hidden_size == d_model (got {self.hidden_size} and "
                              f"{self.d_model}); make them equal or set tie_embeddings=false")


@dataclass(frozen=True, kw_only=True)
class LSTMLMConfig(RecurrentLMConfig):
    """model.arch = "lstm"."""

    cell: str = "lstm"  # lstm
    arch_cells: ClassVar[tuple[str, ...]] = ("lstm",)


@dataclass(frozen=True, kw_only=True)
class GRULMConfig(RecurrentLMConfig):
    """model.arch = "gru"."""

    cell: str = "gru"  # gru (PyTorch's) | simple-gru (the notes', impl="equations" only)
    arch_cells: ClassVar[tuple[str, ...]] = ("gru", "simple-gru")


@dataclass(frozen=True, kw_only=True)
class RNNLMConfig(RecurrentLMConfig):
    """model.arch = "rnn" (Elman)."""

    cell: str = "rnn"  # rnn
    arch_cells: ClassVar[tuple[str, ...]] = ("rnn",)


LM_CONFIGS = {"lstm": LSTMLMConfig, "gru": GRULMConfig, "rnn": RNNLMConfig}  # model.arch -> config class


class RecurrentEncoder(nn.Module):
    r"""Token ids -> per-token states: x_t = E · I_t, dropout, the (bi)directional stack, dropout.

    Shared by the language model (left to right) and the tagger / classifier (bidirectional).

    !!! equation "Word embeddings › Embedding matrix"
        $e_j = E\, o_j$: a token's vector, the embedding matrix $E \in \mathbb{R}^{d \times V}$ times its one-hot
        vector $o_j$, i.e. column $j$ of $E$; seqlab stores $E^\top$ (``nn.Embedding``'s weight, $V \times d$) and
        looks up its row $j$ by the id $j$.

    !!! departure "Word embeddings › Embedding matrix (notation)"
        notes: $E \in \mathbb{R}^{d \times V}$, one column per word, and $E\, o_j = e_j$ picks column $j$.
        seqlab: the table is $E^\top$, one row per word (``nn.Embedding``, $V \times d$): $e_j$ is row $j$,
        looked up by the id $j$ without forming $o_j$.
    """

    def __init__(self, cfg: RecurrentModelConfig, bidirectional: bool = False, padding_idx: int | None = None) -> None:
        super().__init__()
        check_positive("vocab_size", cfg.vocab_size)  # a model needs the sizes read from the data
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=padding_idx)  # E: vocab, d_model
        self.rnn = RecurrentStack(cfg.stack_config(bidirectional))
        self.dropout = Dropout(cfg.dropout)
        self.out_size = cfg.hidden_size * (2 if bidirectional else 1)  # width of a per-token state
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)  # as PyTorch's word_language_model example
        if padding_idx is not None:
            with torch.no_grad():
                self.embed.weight[padding_idx].zero_()

    def forward(self, ids: Tensor, padding: Tensor | None = None, state: State | None = None) -> tuple[Tensor, State]:
        """ids (batch, seq) -> (states (batch, seq, dirs*hidden), final state (layers*dirs, batch, hidden) each).

        ``padding`` (batch, seq), True = real token, padding at the end: padded positions change nothing and
        their states are zero. ``state``: the initial state (zeros if None).
        """
        x = self.dropout(self.embed(ids))  # batch, seq, d_model
        h, state = self.rnn(x, padding=padding, state=state)  # batch, seq, dirs*hidden
        return self.dropout(h), state


class RecurrentCache:
    """What a recurrent LM carries between incremental forward calls (its counterpart of a KV cache): the
    stack's ``state`` after the ``pos`` tokens consumed so far. Passed explicitly; forward advances it."""

    def __init__(self, state: State) -> None:
        self.state = state  # tuple of (layers, batch, hidden)
        self.pos = 0  # tokens consumed


class RecurrentLM(nn.Module):
    r"""Recurrent language model: logits_t = W2 a_t + b2 over the top layer's a_t (notes: Recurrent neural networks).

    !!! equation "Recurrent neural networks › Elman RNN"
        $\hat{y}_t = \mathrm{softmax}(W_2 a_t + b_2)$: the output at step $t$, here the distribution of the next
        token over the vocabulary ($W_2 = E$ with tied embeddings); the model returns the logits."""

    def __init__(self, cfg: RecurrentLMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = RecurrentEncoder(cfg)
        self.head = nn.Linear(cfg.hidden_size, cfg.vocab_size)  # W2: hidden -> vocab, b2
        nn.init.zeros_(self.head.bias)
        if cfg.tie_embeddings:
            self.head.weight = self.encoder.embed.weight  # one (vocab, d_model) matrix
        else:
            nn.init.uniform_(self.head.weight, -0.1, 0.1)
        if cfg.cell == "lstm":
            set_forget_bias(self.encoder.rnn, 1.0)

    def forward(self, ids: Tensor, cache: RecurrentCache | None = None) -> Tensor:
        """ids (batch, seq) -> logits (batch, seq, vocab).

        With a cache the tokens continue the sequence the cache has consumed (positions cache.pos ..
        cache.pos + seq - 1); its state and pos are advanced. At most max_len positions in all.
        """
        batch, seq = ids.shape
        start = 0 if cache is None else cache.pos
        check_positions(start + seq, self.cfg.max_len, start)
        h, state = self.encoder(ids, state=None if cache is None else cache.state)  # batch, seq, hidden
        if cache is not None:
            cache.state, cache.pos = state, start + seq
        return self.head(h)  # batch, seq, vocab

    def new_cache(self, batch: int, device=None, dtype=None) -> RecurrentCache:
        """An empty cache (a_0 = 0) for ``batch`` sequences (default: the model's device and dtype)."""
        return RecurrentCache(self.encoder.rnn.zero_state(batch, device, dtype))

    def num_params(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())


def build_lm(cfg: RecurrentLMConfig) -> RecurrentLM:
    """The language model for a recurrent LM config (``model.arch`` lstm, gru or rnn)."""
    if not isinstance(cfg, RecurrentLMConfig):
        raise SeqlabError(f"build_lm needs a RecurrentLMConfig, got {type(cfg).__name__}; "
                          f"use model.arch = {' | '.join(LM_CONFIGS)}")
    return RecurrentLM(cfg)
