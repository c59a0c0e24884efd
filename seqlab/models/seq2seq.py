"""RNN encoder-decoder with additive attention (seq2seq; Bahdanau et al. 2015).

The notes (Sequence to sequence › Encoder-decoder, › Bahdanau attention): the input
x_1..x_m is read by a bidirectional RNN, the output ŷ_1..ŷ_n (n != m) is produced between <sos> and
<eos>, and each output step attends over the input:

    a_{t'}       = (→a_{t'}, ←a_{t'})                          bidirectional GRU/LSTM over E_src x   (notes)
    s_0          = tanh(W_b [→a_m ; ←a_1])                     per layer, from the final states (the bridge)
    e_{t,t'}     = v^T tanh(W_s s_{t-1} + W_h a_{t'})         :class:`~seqlab.nn.additive.AdditiveAttention`
    alpha_{t,t'} = softmax_{t'}(e_{t,t'}),  c_t = sum_{t'} alpha_{t,t'} a_{t'}                  (notes)
    s_t          = GRU/LSTM([E_tgt y_{t-1} ; c_t], s_{t-1})    the decoder state (top layer's is the query)
    p(y_t | y_<t, x) = softmax(W_o tanh(W_r [s_t ; c_t ; E_tgt y_{t-1}]))                  (logits returned)

Training feeds the reference y_{t-1} (teacher forcing): decoder input <sos> y_1 .. y_n, targets
y_1 .. y_n <eos>. With ``tie_embeddings`` W_o is E_tgt (the readout has width d_model). The encoder runs
torch.nn.GRU/LSTM on packed sequences, so padding never reaches it and the final states are those of each
sentence's last real token; attention masks the padding, so a sentence's output does not depend on what
else is in its batch. Dropout on the embeddings, between stacked layers and on the readout.

Decoding (greedy, beam search) lives in :mod:`seqlab.decoding.beam`; it calls :meth:`Seq2SeqAttention.encode`
once and :meth:`Seq2SeqAttention.step` once per output token, reordering :class:`DecoderState` rows.

Shapes: batch; src, tgt (source and target positions); d_model (embedding width); hidden (per
direction); layers; vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqlab.base.errors import SeqlabError
from seqlab.base.errors import check_positive, check_size
from seqlab.nn.additive import AdditiveAttention
from seqlab.nn.attention import Attended
from seqlab.nn.dropout import Dropout
from seqlab.vectors.start import TranslationVectors

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}


@dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig(TranslationVectors):
    """Bidirectional recurrent encoder, attentive recurrent decoder."""

    src_vocab_size: int | None = None  # tokens in the source vocabulary (from the data; None until read)
    tgt_vocab_size: int | None = None  # tokens in the target vocabulary (from the data; None until read)
    cell: str = "gru"  # gru | lstm (torch.nn.GRU / torch.nn.LSTM), encoder and decoder
    n_layers: int = 1  # stacked recurrent layers in the encoder and in the decoder
    d_model: int = 256  # embedding width (source and target) and readout width
    hidden_size: int = 512  # encoder state per direction (a_t' has 2 * hidden_size) and decoder state s_t
    attn_size: int = 512  # hidden width of the additive attention (length of v)
    dropout: float = 0.3  # on embeddings, between stacked layers and on the readout (training only)
    max_len: int = 256  # most tokens in a source sentence (with its <eos>) and in a translation
    tie_embeddings: bool = True  # W_o is the target embedding matrix

    def __post_init__(self) -> None:
        check_size("src_vocab_size", self.src_vocab_size)
        check_size("tgt_vocab_size", self.tgt_vocab_size)
        for name in ("n_layers", "d_model", "hidden_size", "attn_size", "max_len"):
            check_positive(name, getattr(self, name))
        if self.cell not in CELLS:
            raise SeqlabError(f"unknown cell {self.cell!r}; use one of {', '.join(CELLS)}")
        if not 0.0 <= self.dropout < 1.0:
            raise SeqlabError(f"dropout={self.dropout} is outside [0, 1); use e.g. 0.3, or 0 to turn it off")
        self.check_vectors()


@dataclass
class EncoderOutput:
    """What the decoder reads at every step: the annotations a, their projection W_h a and the mask."""

    memory: Tensor  # batch, src, 2 * hidden: a_{t'} = [→a ; ←a]
    keys: Tensor  # batch, src, attn: W_h a_{t'}, computed once per sentence
    mask: Tensor  # batch, src: True = real source token (may attend)

    def select(self, rows: Tensor) -> EncoderOutput:
        """Keep / repeat / reorder sentences: ``rows`` (new_batch,) indexes the batch."""
        return EncoderOutput(self.memory[rows], self.keys[rows], self.mask[rows])


@dataclass
class DecoderState:
    """The decoder's recurrent state: ``h`` (layers, batch, hidden) and, for the LSTM, its cell ``c``."""

    h: Tensor  # layers, batch, hidden
    c: Tensor | None = None  # layers, batch, hidden (LSTM only)

    def rnn_state(self) -> Tensor | tuple[Tensor, Tensor]:
        return self.h if self.c is None else (self.h, self.c)

    @classmethod
    def from_rnn(cls, state: Tensor | tuple[Tensor, Tensor]) -> DecoderState:
        return cls(*state) if isinstance(state, tuple) else cls(state)

    def select(self, rows: Tensor) -> DecoderState:
        """Keep / repeat / reorder sentences: ``rows`` (new_batch,) indexes the batch axis (dim 1)."""
        return DecoderState(self.h[:, rows], None if self.c is None else self.c[:, rows])


class Encoder(nn.Module):
    r"""Embedding, dropout, bidirectional GRU/LSTM on packed sequences, bridge to the decoder's s_0.

    !!! equation "Sequence to sequence › Bahdanau attention"
        $a_{t'} = (\overrightarrow{a}_{t'}, \overleftarrow{a}_{t'})$: the annotation of input word $x_{t'}$, the
        states of a bidirectional RNN over the source sentence, which the attention reads.

    !!! equation "Sequence to sequence › Encoder-decoder (beyond the notes)"
        $s_0 = \tanh(W_b [\overrightarrow{a}_m ; \overleftarrow{a}_1])$: the decoder's first state, from the
        encoder's final states (the bridge, one per layer)."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model)  # E_src: vocab, d_model
        self.dropout = Dropout(cfg.dropout)
        self.rnn = CELLS[cfg.cell](cfg.d_model, cfg.hidden_size, cfg.n_layers, batch_first=True,
                                   bidirectional=True, dropout=cfg.dropout if cfg.n_layers > 1 else 0.0)
        self.bridge_h = nn.Linear(2 * cfg.hidden_size, cfg.hidden_size)  # W_b: [→a_m ; ←a_1] -> s_0
        self.bridge_c = nn.Linear(2 * cfg.hidden_size, cfg.hidden_size) if cfg.cell == "lstm" else None
        self.n_layers, self.hidden = cfg.n_layers, cfg.hidden_size

    def _bridge(self, final: Tensor, linear: nn.Linear) -> Tensor:
        """final (layers * 2, batch, hidden) in torch's (layer, direction) order -> (layers, batch, hidden)."""
        batch = final.shape[1]
        both = final.view(self.n_layers, 2, batch, self.hidden)  # layers, dirs, batch, hidden
        both = both.permute(0, 2, 1, 3).reshape(self.n_layers, batch, 2 * self.hidden)  # layers, batch, 2*hidden
        return torch.tanh(linear(both))  # layers, batch, hidden

    def forward(self, src: Tensor, mask: Tensor) -> tuple[Tensor, DecoderState]:
        """src (batch, src), mask (batch, src) True = real -> a (batch, src, 2*hidden), s_0."""
        lengths = mask.sum(dim=1)  # batch
        if bool((lengths == 0).any()):
            raise SeqlabError("a source sentence has no tokens; give every sentence at least one token")
        x = self.dropout(self.embed(src))  # batch, src, d_model
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, final = self.rnn(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # batch, src, 2*hidden
        if isinstance(final, tuple):  # LSTM: (h_n, c_n)
            return memory, DecoderState(self._bridge(final[0], self.bridge_h), self._bridge(final[1], self.bridge_c))
        return memory, DecoderState(self._bridge(final, self.bridge_h))


class AttentionDecoder(nn.Module):
    r"""One step: attend with s_{t-1}, update s_t from [E y_{t-1} ; c_t], read out the next-token logits.

    !!! equation "Sequence to sequence › Encoder-decoder (beyond the notes)"
        $s_t = \mathrm{RNN}([E\, y_{t-1} ; c_t], s_{t-1})$: the decoder's state, fed the previous output word and
        the context of the attention.

    !!! equation "Sequence to sequence › Encoder-decoder (beyond the notes)"
        $p(y_t \mid y_{<t}, x) = \mathrm{softmax}(W_o \tanh(W_r [s_t ; c_t ; E\, y_{t-1}]))$: the next word's
        distribution, read out from the state, the context and the previous word."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        memory = 2 * cfg.hidden_size  # width of a_{t'} and c_t
        self.embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)  # E_tgt: vocab, d_model
        self.dropout = Dropout(cfg.dropout)
        self.attention = AdditiveAttention(cfg.hidden_size, memory, cfg.attn_size)
        self.rnn = CELLS[cfg.cell](cfg.d_model + memory, cfg.hidden_size, cfg.n_layers, batch_first=True,
                                   dropout=cfg.dropout if cfg.n_layers > 1 else 0.0)
        self.readout = nn.Linear(cfg.hidden_size + memory + cfg.d_model, cfg.d_model)  # W_r
        self.head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)  # W_o: d_model -> vocab
        if cfg.tie_embeddings:
            self.head.weight = self.embed.weight  # one (vocab, d_model) matrix

    def recur(self, prev: Tensor, state: DecoderState, enc: EncoderOutput):
        """prev y_{t-1} (batch,), s_{t-1} -> readout inputs [s_t ; c_t ; E y_{t-1}] (batch, hidden + 2*hidden +
        d_model), s_t, alpha_t (batch, src)."""
        e = self.dropout(self.embed(prev))  # batch, d_model
        context, alpha = self.attention(state.h[-1], enc.memory, enc.mask, enc.keys)  # (batch, 2*hidden), (batch, src)
        rnn_in = torch.cat([e, context], dim=-1)[:, None, :]  # batch, 1, d_model + 2*hidden
        out, new = self.rnn(rnn_in, state.rnn_state())  # out: batch, 1, hidden
        features = torch.cat([out[:, 0], context, e], dim=-1)  # batch, hidden + 2*hidden + d_model
        return features, DecoderState.from_rnn(new), alpha

    def logits(self, features: Tensor) -> Tensor:
        """W_o tanh(W_r [s_t ; c_t ; E y_{t-1}]): features (..., hidden + 2*hidden + d_model) -> (..., vocab)."""
        return self.head(self.dropout(torch.tanh(self.readout(features))))

    def forward(self, prev: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, DecoderState, Tensor]:
        """prev y_{t-1} (batch,), s_{t-1}, encoder output -> logits (batch, vocab), s_t, alpha_t (batch, src)."""
        features, state, alpha = self.recur(prev, state, enc)
        return self.logits(features), state, alpha


class Seq2SeqAttention(nn.Module):
    r"""Encoder-decoder with additive attention; ``forward`` is teacher-forced, ``step`` decodes one token.

    !!! equation "Sequence to sequence › Encoder-decoder"
        $p(y \mid x) = \prod_{t=1}^{n} p(y_t \mid y_{<t}, x)$: an output sentence of its own length $n \ne m$,
        word by word between $\langle sos \rangle$ and $\langle eos \rangle$; training feeds the reference
        $y_{<t}$ (teacher forcing)."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        self.cfg = cfg
        for name in ("src_vocab_size", "tgt_vocab_size"):  # a model needs the sizes read from the data
            check_positive(name, getattr(cfg, name))
        self.encoder = Encoder(cfg)
        self.decoder = AttentionDecoder(cfg)
        for embed in (self.encoder.embed, self.decoder.embed):  # N(0, 1/d_model): unit-scale tied logits
            nn.init.normal_(embed.weight, std=cfg.d_model ** -0.5)

    def _check_length(self, seq: int, what: str) -> None:
        if seq > self.cfg.max_len:
            raise SeqlabError(f"{what} of {seq} tokens exceeds max_len={self.cfg.max_len}; shorten it or raise "
                              "model.max_len")

    def encode(self, src: Tensor, src_padding: Tensor | None = None) -> tuple[EncoderOutput, DecoderState]:
        """src (batch, src), src_padding (batch, src) True = real -> (encoder output, decoder state s_0)."""
        self._check_length(src.shape[1], "a source sentence")
        mask = torch.ones_like(src, dtype=torch.bool) if src_padding is None else src_padding  # batch, src
        memory, state = self.encoder(src, mask)
        keys = self.decoder.attention.project_keys(memory)  # batch, src, attn
        return EncoderOutput(memory, keys, mask), state

    def step(self, prev: Tensor, state: DecoderState, enc: EncoderOutput) -> tuple[Tensor, DecoderState, Tensor]:
        """One decoder step: prev (batch,) -> logits (batch, vocab), next state, alpha (batch, src)."""
        return self.decoder(prev, state, enc)

    def forward(self, src: Tensor, tgt: Tensor, src_padding: Tensor | None = None,
                tgt_padding: Tensor | None = None) -> Tensor:
        """Teacher forcing: src (batch, src), tgt = <sos> y_1 .. (batch, tgt) -> logits (batch, tgt, vocab).
        Positions after a target's end compute values the loss masks out, so ``tgt_padding`` is accepted
        for the Transformer's signature and not needed."""
        return self.forward_with_weights(src, tgt, src_padding).output

    def forward_with_weights(self, src: Tensor, tgt: Tensor, src_padding: Tensor | None = None,
                             tgt_padding: Tensor | None = None) -> Attended:
        """As ``forward``: Attended(output = logits (batch, tgt, vocab), weights = alpha (batch, tgt, src)).
        The recurrence computes alpha at every step either way; ``forward`` drops it."""
        self._check_length(tgt.shape[1], "a target sentence")
        enc, state = self.encode(src, src_padding)
        features, alphas = [], []
        for t in range(tgt.shape[1]):  # the recurrence is sequential; the readout runs once on all steps
            step_features, state, alpha = self.decoder.recur(tgt[:, t], state, enc)  # (batch, ...), (batch, src)
            features.append(step_features)
            alphas.append(alpha)
        out = self.decoder.logits(torch.stack(features, dim=1))  # batch, tgt, vocab
        return Attended(out, torch.stack(alphas, dim=1))  # alpha: batch, tgt, src

    @torch.no_grad()
    def attention_maps(self, src: Tensor, tgt: Tensor, src_padding: Tensor | None = None) -> Tensor:
        """alpha (batch, tgt, src) of a teacher-forced pass, for visualisation."""
        return self.forward_with_weights(src, tgt, src_padding).weights

    def num_params(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())
