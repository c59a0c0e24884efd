"""What the tagger (:mod:`seqlab.models.tagger`) and the sentence classifier (:mod:`seqlab.models.classifier`) share:
a token encoder, recurrent or Transformer, behind one interface, the fields and per-``model.arch`` config classes
of their configs (the word-vector keys and E's initialisation from them: :mod:`seqlab.vectors.start`), and
:class:`EncoderWithHead`, the encoder with a linear layer over its states that both models
are.

Equations (notes: Recurrent neural networks, Word embeddings):
    x_t = E · I_t                      the token's row of the embedding matrix ("Embedding Matrix", E · o_j = e_j)
    x'_t = [x_t ; char_features(w_t)]  with ``model.char_dim`` > 0 (recurrent taggers): the word's character
                                       BiLSTM feature [→h_m ; ←h_1] appended (Lample et al. 2016,
                                       :mod:`seqlab.nn.char_features`), so the stack reads d_model + 2*char_hidden
    a_t = [→a_t, ←a_t]                 a (bi)directional (deep) LSTM/GRU/RNN, :class:`RecurrentEncoder`
      or X^L = Encoder(embed(I))       a Transformer encoder with a padding mask (notes: Transformer)

Shapes: batch; seq; d_model (embedding width); hidden (hidden_size); dirs (1 or 2); width (dirs*hidden or d_model);
chars (characters per word, padded); char_hidden (char_hidden_size).
Masks: ``padding`` (batch, seq), True = real token, padding after the real tokens (:mod:`seqlab.nn.masks`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_positive
from seqlab.models.recurrent import RecurrentEncoder, RecurrentModelConfig
from seqlab.models.transformer import Embedding, Encoder, TransformerConfig, _init_gpt2
from seqlab.nn.char_features import CharBiLSTM
from seqlab.nn.positions import check_positions
from seqlab.nn.recurrent import RecurrentConfig, State, set_forget_bias
from seqlab.text.vocab import Vocab

PAD_ID = Vocab.pad_id  # <pad> = 0 in every vocabulary and tokenizer (seqlab.text.vocab)
ARCH_CELLS = {"lstm": ("lstm",), "gru": ("gru", "simple-gru"), "rnn": ("rnn",)}  # recurrent model.arch -> cells


# ------------------------------------------------------------------------------------------------------
# configs


@dataclass(frozen=True, kw_only=True)
class CharFeatures:
    """The character-feature fields (Lample et al. 2016, :mod:`seqlab.nn.char_features`) of a tagger config: both
    0 (off) or both positive."""

    char_dim: int = 0  # width of a character's embedding (Lample et al.: 25); 0 = no character features
    char_hidden_size: int = 0  # the character BiLSTM's width per direction (Lample et al.: 25); 0 = off

    @property
    def char_width(self) -> int:
        """Width of a word's character feature [→h_m ; ←h_1]: 2 * char_hidden_size (0 when off)."""
        return 2 * self.char_hidden_size if self.char_dim else 0

    def check_char_features(self) -> None:
        for key, other in (("char_dim", "char_hidden_size"), ("char_hidden_size", "char_dim")):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise SeqlabError(f"model.{key}={value!r} must be 0 (no character features) or a positive whole "
                                  f"number; set model.{key} to 0 or e.g. 25")
            if value and not getattr(self, other):
                raise SeqlabError(f"model.{key}={value} needs model.{other} > 0 too (character features take "
                                  f"both); set model.{other}, e.g. 25, or model.{key}=0")


@dataclass(frozen=True, kw_only=True)
class CharRecurrentConfig(CharFeatures, RecurrentModelConfig):
    """A recurrent token encoder whose input may carry character features: the stack reads
    d_model + 2 * char_hidden_size (x'_t = [E · I_t ; char_features(w_t)])."""

    def __post_init__(self) -> None:
        self.check_char_features()  # before the stack's sizes are checked
        super().__post_init__()

    def stack_config(self, bidirectional: bool = False) -> RecurrentConfig:
        stack = super().stack_config(bidirectional)
        return dataclasses.replace(stack, input_size=stack.input_size + self.char_width)


def no_char_features(cfg: CharFeatures) -> None:
    """A Transformer tagger refuses character features: its layers are all d_model wide, so [E · I_t ; char
    features] would need a projection back to d_model, a different model than Lample et al.'s."""
    cfg.check_char_features()
    if cfg.char_dim:
        raise SeqlabError(f"model.char_dim={cfg.char_dim}: character features are for the recurrent taggers "
                          "(model.arch = lstm | gru | rnn), a Transformer's layers stay d_model wide; set "
                          "model.char_dim=0 and model.char_hidden_size=0, or use model.arch=lstm")


def no_tied_embeddings(cfg: TransformerConfig) -> None:
    if cfg.tie_embeddings:
        raise SeqlabError("model.tie_embeddings has no meaning here (the output is labels, not tokens); "
                          "leave it false")


def arch_configs(recurrent: type, transformer: type) -> dict[str, type]:
    """``model.arch`` -> config class: "lstm" / "gru" / "rnn" are ``recurrent`` with that cell as the default
    and the only cells allowed (as the LM's LSTMLMConfig, GRULMConfig, RNNLMConfig), "transformer" is
    ``transformer``."""
    out: dict[str, type] = {}
    for arch, cells in ARCH_CELLS.items():
        out[arch] = dataclasses.make_dataclass(
            f"{arch.upper()}{recurrent.__name__}", [("cell", str, dataclasses.field(default=cells[0]))],
            bases=(recurrent,), frozen=True, kw_only=True,
            namespace={"arch_cells": cells, "__module__": recurrent.__module__,
                       "__doc__": f'model.arch = "{arch}": {recurrent.__doc__}'})
    out["transformer"] = transformer
    return out


# ------------------------------------------------------------------------------------------------------
# token encoders: ids (batch, seq) + padding -> per-token states (batch, seq, out_size)


class TransformerTokenEncoder(nn.Module):
    """X^0 = E·I + P, then n_layers encoder layers whose attention ignores padded keys (notes: Transformer).

    Same call as :class:`RecurrentEncoder`: ``forward(ids, padding) -> (states, None)``.
    """

    def __init__(self, cfg: TransformerConfig) -> None:  # any TransformerConfig with a vocab_size
        super().__init__()
        self.max_len = cfg.max_len
        self.embed = Embedding(cfg.vocab_size, cfg)  # E: vocab, d_model; P: max_len, d_model
        self.encoder = Encoder(cfg)
        self.out_size = cfg.d_model
        _init_gpt2(self, cfg.n_layers)

    def forward(self, ids: Tensor, padding: Tensor | None = None) -> tuple[Tensor, None]:
        """ids (batch, seq), padding (batch, seq) -> (states (batch, seq, d_model), None)."""
        check_positions(ids.shape[1], self.max_len)
        positions = torch.arange(ids.shape[1], device=ids.device)  # seq
        x = self.embed(ids, positions)  # batch, seq, d_model
        return self.encoder(x, padding), None  # batch, seq, d_model


class CharRecurrentEncoder(RecurrentEncoder):
    """:class:`RecurrentEncoder` whose stack reads x'_t = [E · I_t ; char_features(w_t)] (Lample et al. 2016):
    each word's character BiLSTM feature (:class:`seqlab.nn.char_features.CharBiLSTM`) appended to its
    embedding, dropout on the concatenation (as Lample et al.), the stack, dropout."""

    def __init__(self, cfg: CharRecurrentConfig, n_chars: int, bidirectional: bool = False,
                 padding_idx: int | None = None) -> None:
        super().__init__(cfg, bidirectional, padding_idx)  # its stack reads d_model + 2*char_hidden (stack_config)
        check_positive("n_chars", n_chars)  # the character vocabulary's size, read from the training words
        self.chars = CharBiLSTM(n_chars, cfg.char_dim, cfg.char_hidden_size)

    def forward(self, ids: Tensor, padding: Tensor | None = None, state: State | None = None,
                chars: Tensor | None = None) -> tuple[Tensor, State]:
        """As :meth:`RecurrentEncoder.forward`, with ``chars`` (batch, seq, chars): each word's character ids
        (0 = padding; required)."""
        if chars is None or chars.shape[:2] != ids.shape:
            raise ValueError(f"this encoder reads each word's characters: give chars (batch, seq, chars) for ids "
                             f"{tuple(ids.shape)}, got {None if chars is None else tuple(chars.shape)}")
        x = torch.cat([self.embed(ids), self.chars(chars)], dim=-1)  # batch, seq, d_model + 2*char_hidden
        h, state = self.rnn(self.dropout(x), padding=padding, state=state)  # batch, seq, dirs*hidden
        return self.dropout(h), state


def build_encoder(cfg, n_chars: int | None = None) -> nn.Module:
    """The token encoder of a tagger/classifier config: recurrent (with the LSTM forget-gate bias at 1, as
    the LM; with character features when the config's ``char_dim`` > 0, over ``n_chars`` characters) or
    Transformer."""
    if isinstance(cfg, RecurrentModelConfig):
        if isinstance(cfg, CharRecurrentConfig) and cfg.char_dim:
            if n_chars is None:
                raise ValueError("model.char_dim > 0: build the model with n_chars, the character vocabulary's size")
            encoder: RecurrentEncoder = CharRecurrentEncoder(cfg, n_chars, cfg.bidirectional, PAD_ID)
        else:
            encoder = RecurrentEncoder(cfg, bidirectional=cfg.bidirectional, padding_idx=PAD_ID)
        if cfg.cell == "lstm":
            set_forget_bias(encoder.rnn, 1.0)
        return encoder
    return TransformerTokenEncoder(cfg)


def token_embedding(encoder: nn.Module) -> nn.Embedding:
    """E, the (vocab, d_model) token embedding of an encoder from :func:`build_encoder`."""
    return encoder.embed if isinstance(encoder, RecurrentEncoder) else encoder.embed.tokens


# ------------------------------------------------------------------------------------------------------
# encoder + linear layer: the tagger and the classifier


class EncoderWithHead(nn.Module):
    """A token encoder (:func:`build_encoder`) and ``head``, a linear layer from its states (width) to the
    config's ``n_out`` field (n_labels, n_classes); E is frozen when the config says so. The tagger reads the
    head at every token, the classifier once, over the pooled states."""

    def __init__(self, cfg, n_out: str, n_chars: int | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = build_encoder(cfg, n_chars)
        check_positive(n_out, getattr(cfg, n_out))  # a model needs the sizes read from the data
        self.head = nn.Linear(self.encoder.out_size, getattr(cfg, n_out))  # W: width -> labels | classes, b
        if cfg.freeze_vectors:
            self.token_embedding.weight.requires_grad_(False)

    @property
    def token_embedding(self) -> nn.Embedding:
        return token_embedding(self.encoder)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def states(self, ids: Tensor, padding: Tensor | None, chars: Tensor | None) -> Tensor:
        """The encoder's per-token states (batch, seq, width); ``chars`` (batch, seq, chars), each word's
        character ids, is given exactly when the encoder reads characters (``model.char_dim`` > 0)."""
        if isinstance(self.encoder, CharRecurrentEncoder):
            return self.encoder(ids, padding, chars=chars)[0]
        if chars is not None:
            raise ValueError("this model has no character features (model.char_dim = 0); call it without chars")
        return self.encoder(ids, padding)[0]
