"""Sequence tagger (notes: Recurrent neural networks › Many to many, NER: "a Many to Many model & size of inputs
& output were same"): one label per token, read off a token encoder that sees the whole sentence.

Equations (notes: Recurrent neural networks):
    x_t = E · I_t                      the token's row of the embedding matrix ("Embedding Matrix", E · o_j = e_j)
    x'_t = [x_t ; [→h_m ; ←h_1]]       with model.char_dim > 0 (recurrent archs): the word's character BiLSTM
                                       feature appended (Lample et al. 2016, :mod:`seqlab.nn.char_features`)
    a_t = [→a_t, ←a_t]                 a bidirectional (deep) LSTM/GRU/RNN, :class:`RecurrentEncoder` (the notes:
                                       "to decide the NER we need to look toward future words")
      or X^L = Encoder(embed(I))       a Transformer encoder with a padding mask (notes: Transformer)
    a_t <- tanh(W_h a_t + b_h)         with model.tanh_hidden_size = N > 0 (recurrent taggers): a tanh layer of N
                                       between the states and W2 (Lample et al. 2016's released code, glample/tagger)
    ŷ_t = softmax(W2 a_t + b2)         one distribution per token (the notes' ŷ_t = g2(w2 · a_t + b2));
                                       logits returned, the softmax is in the loss
    L = Σ_t -log ŷ_t[y_t]              over real tokens only: the cross-entropy that generalises the notes' binary
                                       L = Σ_i L_i(ŷ_i, y_i) to many labels; the task divides the sum
                                       by the number of real tokens
    with model.crf = true              a linear-chain CRF over the logits as emission scores
                                       (:mod:`seqlab.nn.crf`, Lample et al. 2016): L = -Σ_sentences log p(y | x),
                                       predictions by Viterbi; its transitions are constrained by the tagging
                                       scheme the task reads off the labels (IOB2 or BIOES)

The token encoders, the per-``model.arch`` config classes and the initialisation of E from word vectors are
shared with the classifier (:mod:`seqlab.models.token_encoder`); the tagger adds its configs and reads the
linear layer at every token.

Shapes: batch; seq; d_model (embedding width); hidden (hidden_size); dirs (1 or 2); N (tanh_hidden_size);
labels (n_labels); chars (characters per word, padded).
Masks: ``padding`` (batch, seq), True = real token, padding after the real tokens (:mod:`seqlab.nn.masks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_size
from seqlab.models.token_encoder import CharFeatures, CharRecurrentConfig, EncoderWithHead, \
    arch_configs, no_char_features, no_tied_embeddings
from seqlab.models.transformer import TransformerConfig
from seqlab.nn.crf import CRF
from seqlab.vectors.start import EmbeddingInit


# ------------------------------------------------------------------------------------------------------
# configs


@dataclass(frozen=True, kw_only=True)
class RecurrentTaggerConfig(EmbeddingInit, CharRecurrentConfig):
    """Embeddings (with char_dim > 0: and each word's character features) -> (bi)directional recurrent stack ->
    per-token linear layer."""

    n_labels: int | None = None  # tags in the label vocabulary (from the training data; None until read)
    crf: bool = False  # a linear-chain CRF output layer (seqlab.nn.crf): sequence NLL, Viterbi predictions
    bidirectional: bool = True  # per-token states [→a_t, ←a_t] (notes: › Bidirectional RNNs)
    tanh_hidden_size: int = 0  # width N of a tanh layer between the states and the output layer (Lample: 100); 0 = none

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("n_labels", self.n_labels)
        if not isinstance(self.tanh_hidden_size, int) or isinstance(self.tanh_hidden_size, bool) \
                or self.tanh_hidden_size < 0:
            raise SeqlabError(f"model.tanh_hidden_size={self.tanh_hidden_size!r} must be 0 (no tanh layer) or a "
                              "positive whole number; set it to 0 or e.g. 100")
        self.check_vectors()


@dataclass(frozen=True, kw_only=True)
class TransformerTaggerConfig(EmbeddingInit, CharFeatures, TransformerConfig):
    """Embeddings + positions -> Transformer encoder (padding mask) -> per-token linear layer."""

    vocab_size: int | None = None  # tokens in the vocabulary (from the data: None in a run config until read)
    n_labels: int | None = None  # tags in the label vocabulary (from the training data; None until read)
    crf: bool = False  # a linear-chain CRF output layer (seqlab.nn.crf): sequence NLL, Viterbi predictions
    tie_embeddings: bool = False  # unused (no output vocabulary to tie); must stay false
    # char_dim, char_hidden_size: must stay 0 (character features are the recurrent taggers')

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("vocab_size", self.vocab_size)
        check_size("n_labels", self.n_labels)
        no_tied_embeddings(self)
        no_char_features(self)
        self.check_vectors()


TAGGER_CONFIGS = arch_configs(RecurrentTaggerConfig, TransformerTaggerConfig)  # model.arch -> config class


# ------------------------------------------------------------------------------------------------------
# the tagger


class Tagger(EncoderWithHead):
    r"""logits_t = W2 a_t + b2 over the encoder's per-token states a_t (notes: NER, many to many); with
    ``cfg.crf`` also ``crf``, the CRF that reads the logits as emission scores (its constraints are set by the
    task from the label names and saved in the checkpoint). With ``cfg.char_dim`` > 0 the encoder also reads
    each word's characters, ``n_chars`` of them in the run's character vocabulary.

    !!! equation "Recurrent neural networks › Many to many"
        $\hat{y}_t = \mathrm{softmax}(W_2 a_t + b_2)$: one label distribution per token (NER), read off the
        per-token states $a_t = [\overrightarrow{a}_t ; \overleftarrow{a}_t]$ of a bidirectional encoder."""

    def __init__(self, cfg: RecurrentTaggerConfig | TransformerTaggerConfig, n_chars: int | None = None) -> None:
        super().__init__(cfg, "n_labels", n_chars)  # head W2: dirs*hidden | d_model -> labels, b2
        width = getattr(cfg, "tanh_hidden_size", 0)  # the recurrent taggers' option
        self.hidden = None
        if width:  # Lample et al.'s tanh layer (glample/tagger's tanh_layer): the head reads its N outputs instead
            self.hidden = nn.Linear(self.encoder.out_size, width)  # W_h: dirs*hidden -> N, b_h
            self.head = nn.Linear(width, cfg.n_labels)  # W2: N -> labels, b2
        self.crf = CRF(cfg.n_labels) if cfg.crf else None  # transitions: labels, labels

    def forward(self, ids: Tensor, padding: Tensor | None = None, chars: Tensor | None = None) -> Tensor:
        """ids (batch, seq), padding (batch, seq) True = real, chars (batch, seq, chars) each word's character
        ids (with char features only) -> logits (batch, seq, labels).

        Real positions do not depend on the padding (the recurrent stack stops at each sequence's last
        real token; attention never looks at padded keys); padded positions hold junk the loss ignores.
        """
        h = self.states(ids, padding, chars)  # batch, seq, dirs*hidden | d_model
        if self.hidden is not None:  # model.tanh_hidden_size = N
            h = torch.tanh(self.hidden(h))  # batch, seq, N
        return self.head(h)  # batch, seq, labels
