"""Sentence classifier (notes: Recurrent neural networks › Many to one: a review -> its number of stars; sentiment
analysis: very offensive .. very good, 5 classes): one label per sentence.

Equations (notes: Recurrent neural networks):
    x_t = E · I_t                          token embeddings (notes: Word embeddings › Embedding matrix)
    a_t = RNN/GRU/LSTM(x_t, a_{t-1})       (bi)directional, deep (:class:`RecurrentEncoder`), or
    X^L = Encoder(embed(I))                a Transformer encoder with a padding mask (notes: Transformer)
    s   = pool(a_1 .. a_T)                 over the T real tokens only:
          last  s = a_T (bidirectional: [→a_T, ←a_1], each direction's state after reading the whole sentence)
          mean  s = (1/T) Σ_t a_t
          max   s_k = max_t a_t,k
    ŷ   = softmax(W s + b)                 (the notes' ŷ = g2(w2 · a + b2) read once, at the end); logits returned
    L   = -log ŷ[y]                        per sentence; the task sums over sentences and divides by their count

The token encoders, the per-arch config classes and the word-vector initialisation are shared with the
tagger (:mod:`seqlab.models.token_encoder`); the classifier adds the pooling before the output layer.

Shapes: batch; seq; d_model; hidden (hidden_size); dirs (1 or 2); width (dirs*hidden or d_model); classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError, check_size
from seqlab.models.recurrent import RecurrentModelConfig
from seqlab.models.token_encoder import EncoderWithHead, arch_configs, no_tied_embeddings
from seqlab.models.transformer import TransformerConfig
from seqlab.vectors.start import EmbeddingInit

RECURRENT_POOLING = ("last", "mean", "max")
TRANSFORMER_POOLING = ("mean", "max")  # "last" would single out one position of an order-free encoder


def _check_pooling(pooling: str, options: tuple[str, ...]) -> None:
    if pooling not in options:
        raise SeqlabError(f"model.pooling={pooling!r} is not available for this model.arch; use one of "
                          f"{', '.join(options)}")


@dataclass(frozen=True, kw_only=True)
class RecurrentClassifierConfig(EmbeddingInit, RecurrentModelConfig):
    """Embeddings -> recurrent stack -> pooling over the real tokens -> linear layer."""

    n_classes: int | None = None  # classes in the label vocabulary (from the training data; None until read)
    bidirectional: bool = False  # add a right-to-left direction ("last" pools [→a_T, ←a_1])
    pooling: str = "last"  # last | mean | max, over real tokens only

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("n_classes", self.n_classes)
        _check_pooling(self.pooling, RECURRENT_POOLING)
        self.check_vectors()


@dataclass(frozen=True, kw_only=True)
class TransformerClassifierConfig(EmbeddingInit, TransformerConfig):
    """Embeddings + positions -> Transformer encoder (padding mask) -> pooling -> linear layer."""

    vocab_size: int | None = None  # tokens in the vocabulary (from the data: None in a run config until read)
    n_classes: int | None = None  # classes in the label vocabulary (from the training data; None until read)
    pooling: str = "mean"  # mean | max, over real tokens only
    tie_embeddings: bool = False  # unused (no output vocabulary to tie); must stay false

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("vocab_size", self.vocab_size)
        check_size("n_classes", self.n_classes)
        _check_pooling(self.pooling, TRANSFORMER_POOLING)
        no_tied_embeddings(self)
        self.check_vectors()


CLASSIFIER_CONFIGS = arch_configs(RecurrentClassifierConfig, TransformerClassifierConfig)  # model.arch -> class


def pool(h: Tensor, padding: Tensor | None, how: str, dirs: int = 1) -> Tensor:
    r"""Pool per-token states h (batch, seq, width) over the real tokens (padding (batch, seq), True = real,
    None = all real) -> (batch, width). ``dirs`` = 2 for a bidirectional recurrent stack, whose "last"
    state is [→a_T, ←a_1].

    !!! equation "Recurrent neural networks › Many to one (beyond the notes)"
        $s = a_T,\ s = \frac{1}{T} \sum_{t=1}^{T} a_t \text{ or } s_k = \max_t a_{t,k}$: one vector for the whole
        sentence from its $T$ real tokens' states (last, mean or max pooling)."""
    batch, seq, width = h.shape
    if padding is None:
        padding = torch.ones(batch, seq, dtype=torch.bool, device=h.device)
    real = padding[:, :, None]  # batch, seq, 1
    if how == "mean":
        count = real.sum(dim=1).clamp(min=1)  # batch, 1
        return (h * real).sum(dim=1) / count  # batch, width
    if how == "max":
        return h.masked_fill(~real, torch.finfo(h.dtype).min).amax(dim=1)  # batch, width
    if how == "last":
        last = (padding.sum(dim=1) - 1).clamp(min=0)  # batch: index of the last real token
        forward = h[torch.arange(batch, device=h.device), last]  # batch, width: a_T
        if dirs == 1:
            return forward
        hidden = width // 2
        return torch.cat([forward[:, :hidden], h[:, 0, hidden:]], dim=-1)  # batch, 2*hidden: [→a_T, ←a_1]
    raise SeqlabError(f"unknown pooling {how!r}; use one of {', '.join(RECURRENT_POOLING)}")


class Classifier(EncoderWithHead):
    r"""logits = W · pool(a_1 .. a_T) + b (notes: Recurrent neural networks › Many to one).

    !!! equation "Recurrent neural networks › Many to one"
        $\hat{y} = \mathrm{softmax}(W s + b),\ s = \mathrm{pool}(a_1, \dots, a_T)$: one label distribution per
        sentence (sentiment), the notes' output layer read once, after the whole sentence."""

    def __init__(self, cfg: RecurrentClassifierConfig | TransformerClassifierConfig) -> None:
        super().__init__(cfg, "n_classes")  # head W: width -> classes, b
        self.dirs = 2 if getattr(cfg, "bidirectional", False) else 1

    def forward(self, ids: Tensor, padding: Tensor | None = None) -> Tensor:
        """ids (batch, seq), padding (batch, seq) True = real -> logits (batch, classes); padding changes nothing."""
        h, _ = self.encoder(ids, padding)  # batch, seq, width
        return self.head(pool(h, padding, self.cfg.pooling, self.dirs))  # batch, classes
