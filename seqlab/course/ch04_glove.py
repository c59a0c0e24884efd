"""Chapter 4, word embeddings, 04.5-04.7: GloVe's weighting function and loss, 3CosAdd analogies
(docs/tutorials/04-word-embeddings.md).

The references are :class:`seqlab.models.glove_torch.GloVe` and :class:`seqlab.vectors.keyed.KeyedVectors`
(analogy). The word vectors the analogy cases draw come from :mod:`seqlab.course.ch04_word2vec` (04.1-04.4).
"""

from __future__ import annotations

import numpy as np
import torch

from seqlab.course.ch04_word2vec import _scaled_rows
from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.glove import GloVeConfig
from seqlab.models.glove_torch import GloVe
from seqlab.vectors.keyed import KeyedVectors

# ------------------------------------------------------------------------------------------------------
# 04.5 GloVe's weighting function


def _glove(x_max: float, alpha: float, vocab: int = 1, dim: int = 1) -> GloVe:
    return GloVe(GloVeConfig(dim=dim, vocab_size=vocab, x_max=x_max, alpha=alpha)).double()


def _glove_weight(x, x_max, alpha):
    with torch.no_grad():
        return _glove(x_max, alpha).weight(x)


def _weight_cases() -> list[Case]:
    cases = []
    for seed, (entries, x_max, alpha) in enumerate([(5, 10.0, 0.75), (8, 100.0, 0.5), (6, 4.0, 0.6)]):
        g = generator(seed)
        x = x_max * torch.exp(1.5 * randn(g, entries))  # around x_max, on both sides of it
        cases.append(Case((x, x_max, alpha), {"entries": entries}, seed=seed, n=2))
    return cases


WEIGHT = Exercise(
    id="04.5",
    name="glove_weight",
    title="GloVe's weighting function",
    section="Word embeddings › GloVe",
    signature="glove_weight(x, x_max, alpha)",
    statement=r"""Compute GloVe's weight of co-occurrence counts, $f(x) = \min\bigl(1, (x / x_{\max})^{\alpha}\bigr)$.

`x` is a float64 tensor of counts (all > 0, any shape); `x_max` and `alpha` are floats. Return a tensor of
`x`'s shape.""",
    reference=_glove_weight,
    cases=_weight_cases,
    mistakes=(
        Mistake("no-cap", "your weight goes above 1: f(x) = min(1, (x / x_max)^alpha) stops at 1 for x >= x_max, "
                "so frequent pairs do not dominate (Word embeddings › GloVe).",
                lambda x, x_max, alpha: _glove_weight(x, x_max, alpha) * torch.clamp(x / x_max, min=1.0) ** alpha),
        Mistake("ratio-inverted", "your ratio is upside down: f(x) = min(1, (x / x_max)^alpha) is small for rare "
                "pairs (x < x_max) and 1 for frequent ones (Word embeddings › GloVe).",
                lambda x, x_max, alpha: _glove_weight(x_max * x_max / x, x_max, alpha)),
        Mistake("exponent-on-x-only", "the exponent applies to the ratio: f(x) = min(1, (x / x_max)^alpha), not "
                "x^alpha / x_max (Word embeddings › GloVe).",
                # x^alpha / x_max = (x / x_max^(1/alpha))^alpha: the reference at x_max^(1/alpha)
                lambda x, x_max, alpha: _glove_weight(x, x_max ** (1 / alpha), alpha)),
    ),
    # a division and a power: a few roundings of a value <= 1
    tolerance=rounding(products=2),
)

# ------------------------------------------------------------------------------------------------------
# 04.6 GloVe's loss


def _glove_loss(theta, e, b, b_tilde, rows, cols, x, x_max, alpha):
    vocab, dim = theta.shape
    model = _glove(x_max, alpha, vocab, dim)
    with torch.no_grad():
        for param, value in ((model.word, theta), (model.context, e), (model.word_bias, b[:, None]),
                             (model.context_bias, b_tilde[:, None])):
            param.weight.copy_(value)
        return float(model(rows, cols, x).sum())


def _glove_no_log(theta, e, b, b_tilde, rows, cols, x, x_max, alpha):
    # the reference fed exp(X) in the log's place would change f too: written out, with f from GloVe.weight
    with torch.no_grad():
        f = _glove(x_max, alpha).weight(x)
    diff = (theta[rows] * e[cols]).sum(-1) + b[rows] + b_tilde[cols] - x
    return float((0.5 * f * diff * diff).sum())


def _loss_cases() -> list[Case]:
    cases = []
    for seed, (vocab, dim, entries) in enumerate([(5, 3, 7), (6, 4, 9), (4, 6, 5)]):
        g = generator(seed)
        theta, e = randn(g, vocab, dim) * 0.5, randn(g, vocab, dim) * 0.5
        b, b_tilde = randn(g, vocab) * 0.3, randn(g, vocab) * 0.3
        pairs = torch.randperm(vocab * vocab, generator=g)[:entries]  # distinct (i, j) pairs
        rows, cols = pairs // vocab, pairs % vocab
        x = torch.exp(2 * torch.rand(entries, generator=g, dtype=torch.float64) + 0.5)  # 1.6 to 12
        x_max = 5.0
        terms = ((theta[rows] * e[cols]).abs().sum(-1) + b[rows].abs() + b_tilde[cols].abs() + x.log().abs())
        cases.append(Case((theta, e, b, b_tilde, rows, cols, x, x_max, 0.75),
                          {"words": vocab, "dim": dim, "entries": entries}, seed=seed, n=max(dim + 3, entries),
                          magnitude=float((terms * terms).sum())))
    return cases


LOSS = Exercise(
    id="04.6",
    name="glove_loss",
    title="GloVe's loss",
    section="Word embeddings › GloVe",
    signature="glove_loss(theta, e, b, b_tilde, rows, cols, x, x_max, alpha)",
    statement=r"""Compute GloVe's weighted least-squares loss over the co-occurrence entries that are given,
$\frac{1}{2} J = \frac{1}{2} \sum_{n} f(X_n)\,
\bigl(\theta_{i_n}^\top e_{j_n} + b_{i_n} + \tilde b_{j_n} - \log X_n\bigr)^2$,
with $f(x) = \min(1, (x / x_{\max})^{\alpha})$.

`theta` and `e` are (V, dim) float64 (the word and context vectors), `b` and `b_tilde` (V,) their biases; the
entries are `rows[n]`, `cols[n]` (int64, (N,)) with counts `x[n] > 0` (float64, (N,)); `x_max`, `alpha` floats.
Return the loss as a float (**halved**, as GloVe's tool and seqlab halve it).""",
    reference=_glove_loss,
    cases=_loss_cases,
    mistakes=(
        Mistake("not-halved", "your loss is twice seqlab's: it halves J, as GloVe's reference tool does (the same "
                "minimiser, half the gradient; the notes' J has no 1/2: Word embeddings › GloVe).",
                lambda *args: 2.0 * _glove_loss(*args)),
        Mistake("unweighted", "your terms are not weighted: each squared error is multiplied by f(X_ij) = "
                "min(1, (X_ij / x_max)^alpha), which damps rare pairs (the notes' sum has no weight; seqlab's has: "
                "Word embeddings › GloVe).",
                lambda theta, e, b, b_tilde, rows, cols, x, x_max, alpha: _glove_loss(
                    theta, e, b, b_tilde, rows, cols, x, float(x.min()) / 2, alpha)),
        Mistake("one-bias", "you used one bias vector for both roles: the word's bias b_i and the context's "
                "b~_j are different parameters (Word embeddings › GloVe).",
                lambda theta, e, b, b_tilde, rows, cols, x, x_max, alpha: _glove_loss(
                    theta, e, b, b, rows, cols, x, x_max, alpha)),
        Mistake("no-log", "your model fits the count X_ij itself: GloVe fits its logarithm, theta_i^T e_j + b_i + "
                "b~_j ~ log X_ij (Word embeddings › GloVe).", _glove_no_log),
    ),
    # the dot product over dim and the sum over the N entries; magnitude: the sum of the squared terms
    tolerance=rounding(products=3),
    follows="seqlab: (1/2) sum over the pairs seen, weighted by f. The notes sum every pair unweighted, without 1/2.",
)

# ------------------------------------------------------------------------------------------------------
# 04.7 3CosAdd analogies


def _keyed(vectors) -> KeyedVectors:
    return KeyedVectors([str(i) for i in range(len(vectors))], vectors.numpy())


def _analogy(vectors, a, b, c, topn):
    return [int(w) for w, _ in _keyed(vectors).analogy(str(a), str(b), str(c), topn=topn)]


def _ranked(vectors, query, exclude, topn, cosine=True):
    """The topn rows by cosine (or dot product) with ``query``, ``exclude`` left out (for the mistakes)."""
    v = vectors.double()
    scores = v @ query / (torch.linalg.vector_norm(v, dim=-1) if cosine else 1.0)
    order = [int(i) for i in torch.argsort(scores, descending=True)]
    return [i for i in order if i not in exclude][:topn]


def _unit(vectors, i):
    return vectors[i].double() / torch.linalg.vector_norm(vectors[i].double())


def _analogy_kept(vectors, a, b, c, topn):
    kv = _keyed(vectors)
    return _ranked(vectors, torch.from_numpy(kv._mean([b, c], [a]).astype(np.float64)), set(), topn)


def _analogy_cases() -> list[Case]:
    cases = []
    # seeds where the right answer and every mistake differ, and the topn + 1 best scores lie >= 0.005 apart (no
    # near-tie that float32 rounding could swap)
    for seed, (words, dim, topn) in [(10, (12, 4, 3)), (11, (15, 5, 4)), (14, (10, 3, 2))]:
        g = generator(seed)
        vectors = _scaled_rows(g, words, dim).float()
        a, b, c = (int(i) for i in torch.randperm(words, generator=g)[:3])
        cases.append(Case((vectors, a, b, c, topn), {"words": words, "dim": dim, "topn": topn}, seed=seed))
    return cases


ANALOGY = Exercise(
    id="04.7",
    name="analogy",
    title="3CosAdd analogies",
    section="Word embeddings › Analogies",
    signature="analogy(vectors, a, b, c, topn)",
    statement=r"""Answer "$a$ is to $b$ as $c$ is to ?" by 3CosAdd:
$d^\ast = \arg\max_{w \notin \{a, b, c\}} \operatorname{sim}\bigl(e_w,\; \hat e_b - \hat e_a + \hat e_c\bigr)$,
$\hat e = e / \lVert e \rVert$.

`vectors` is a (V, dim) float32 tensor, one row per word; `a`, `b`, `c` are word ids (rows); return the ids of
the `topn` best answers, best first, as a list of ints. Normalise the three query vectors before combining
them; rank every other word by its cosine with the combination.""",
    reference=_analogy,
    cases=_analogy_cases,
    mistakes=(
        Mistake("query-words-kept", "your answers include the query words: 3CosAdd leaves a, b and c out of the "
                "candidates (the offset lands near b and c themselves; Word embeddings › Analogies).",
                _analogy_kept),
        Mistake("offset-reversed", "your offset is e_a - e_b + e_c: 'a is to b as c is to d' means e_b - e_a ~ "
                "e_d - e_c, so the query is e_b - e_a + e_c (Word embeddings › Analogies).",
                lambda vectors, a, b, c, topn: _analogy(vectors, b, a, c, topn)),
        Mistake("not-normalised", "you combined the raw vectors: 3CosAdd adds the unit vectors, e_b/||e_b|| - "
                "e_a/||e_a|| + e_c/||e_c||, so that no query word weighs more for being long (Word embeddings › "
                "Analogies).",
                lambda vectors, a, b, c, topn: _ranked(
                    vectors, vectors[b].double() - vectors[a].double() + vectors[c].double(), {a, b, c}, topn)),
        Mistake("dot-product", "you ranked the candidates by their dot product with the query: rank them by the "
                "cosine, sim(e_w, q) = e_w^T q / (||e_w|| ||q||), or long vectors win (Word embeddings › "
                "Analogies).",
                lambda vectors, a, b, c, topn: _ranked(
                    vectors, _unit(vectors, b) - _unit(vectors, a) + _unit(vectors, c), {a, b, c}, topn,
                    cosine=False)),
    ),
    tolerance=exact,
    follows="seqlab (as gensim): the mean of the unit vectors (+1 for b and c, -1 for a), which ranks the words "
            "the same as their sum e^_b - e^_a + e^_c.",
)

EXERCISES: tuple[Exercise, ...] = (WEIGHT, LOSS, ANALOGY)
