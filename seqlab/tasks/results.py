"""What the trained objects' notebook verbs return (``seqlab.load(run).score(...)``, ``.attention(...)``,
``.entities(...)``, ``.map(...)``): NamedTuples, so they unpack as the tuples these methods returned before
(``tokens, layers = lm.attention(text)``; ``src, tgt, weights = tr.attention(text)``; ``words, coords =
emb.map()``), print readably, and, for the pictures, draw themselves: ``.plot()`` returns a matplotlib Figure
(:mod:`seqlab.views.viz`'s builders) and ``_repr_png_()`` its PNG bytes, so Jupyter shows the result inline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from seqlab.views.viz import attention_figure, embedding_map_figure, figure_png

if TYPE_CHECKING:  # annotations only
    import numpy as np
    from torch import Tensor


class TokenScores(NamedTuple):
    """A text scored by a language model (:meth:`~seqlab.tasks.lm.LanguageModel.score`): the scored
    tokens (every token of the text but the first, which has no context) and log p(token | the tokens before)."""

    tokens: list[str]  # the scored tokens' text, in order (the text's first token is not among them)
    logprobs: list[float]  # natural log of each one's probability
    loss: float  # mean negative log-probability (nats per token)
    perplexity: float  # exp(loss)


class Entity(NamedTuple):
    """A typed span of a tagged sentence (:meth:`~seqlab.tasks.tag.SequenceTagger.entities`)."""

    type: str  # e.g. PER
    start: int  # position of its first token
    end: int  # position after its last token (exclusive: ``tokens[start:end]``)
    text: str  # its tokens joined by one space


class LMAttention(NamedTuple):
    """A language model's self-attention over a text: token strings and one (heads, seq, seq) tensor per layer
    (rows: queries, columns: keys; each row sums to 1)."""

    tokens: list[str]
    layers: list[Tensor]

    def plot(self):
        """One heatmap per layer and head, a row of heads per layer: a matplotlib Figure."""
        maps = [w[h].numpy() for w in self.layers for h in range(w.shape[0])]
        titles = [f"layer {i} head {h}" for i, w in enumerate(self.layers) for h in range(w.shape[0])]
        return attention_figure(self.tokens, self.tokens, maps, titles=titles, cols=self.layers[0].shape[0])

    def _repr_png_(self) -> bytes:
        return figure_png(self.plot())


class TranslationAttention(NamedTuple):
    """A translation's attention: source tokens, output tokens and weights (heads or 1, target, source); row i
    is the step that produced output token i."""

    source: list[str]
    target: list[str]
    weights: Tensor

    def plot(self):
        """One heatmap per head (output tokens down, source tokens across): a matplotlib Figure."""
        heads = self.weights.shape[0]
        titles = [f"head {h}" for h in range(heads)] if heads > 1 else ["attention"]
        return attention_figure(self.target, self.source, self.weights.numpy(), titles=titles)

    def _repr_png_(self) -> bytes:
        return figure_png(self.plot())


class EmbeddingMap(NamedTuple):
    """Words placed in 2-D (:meth:`~seqlab.tasks.word_vectors.Embeddings.map`): the words and their (words, 2)
    coordinates."""

    words: list[str]
    coords: np.ndarray

    def plot(self, title: str | None = None):
        """The words as a labelled scatter plot: a matplotlib Figure."""
        return embedding_map_figure(self.words, self.coords, title)

    def _repr_png_(self) -> bytes:
        return figure_png(self.plot())
