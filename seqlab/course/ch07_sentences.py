"""Chapter 7, pretrained encoders, 07.5-07.7: the additive padding mask, mean pooling and the cosines of sentence
vectors (docs/tutorials/07-pretrained-encoders.md).

The references are :mod:`seqlab.nn.masks`, :func:`~seqlab.models.pretrained.mean_pool` and
:class:`seqlab.models.sentence.SentenceEncoder`'s normalisation; shapes are batch-first, an attention mask is True
(or 1) for a real token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.pretrained import mean_pool
from seqlab.nn.masks import key_padding_to_attn, to_additive

# ------------------------------------------------------------------------------------------------------
# 07.5 the padding mask in additive form


def _additive(attention_mask):
    return to_additive(key_padding_to_attn(attention_mask.bool()), torch.float64)


def _padding_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq) in enumerate([(3, 5), (2, 4), (4, 6)]):
        g = generator(seed)
        lengths = torch.randint(1, seq, (batch,), generator=g)
        lengths[-1] = seq  # one sentence without padding, the others padded at the end
        cases.append(Case((torch.arange(seq)[None, :] < lengths[:, None],), {"batch": batch, "seq": seq}, seed=seed))
    return cases


ADDITIVE = Exercise(
    id="07.5",
    name="additive_mask",
    title="The padding mask, in additive form",
    section="Transformer › Masked attention",
    signature="additive_mask(attention_mask)",
    statement=r"""Turn a padding mask into the additive mask $M$ that the attention adds to its scores,
$\mathrm{softmax}(Q K^\top / \sqrt{d_k} + M)$.

`attention_mask` is a (batch, seq) bool tensor, **True for a real token**, False for padding. Return a float64
tensor of shape (batch, 1, 1, seq), broadcastable over the heads and the queries: $M = 0$ where the key is a
real token and $-\infty$ where it is padding.""",
    reference=_additive,
    cases=_padding_cases,
    mistakes=(
        Mistake("polarity-inverted", "your mask's polarity is inverted: True marks a REAL token, whose M is 0; "
                "padding gets -inf (Transformer › Masked attention).", lambda m: _additive(~m)),
        Mistake("finite-fill", "padding gets -10000, not -inf: the notes' M is -inf, so that a padded key's "
                "weight after the softmax is exactly 0 (Transformer › Masked attention).",
                lambda m: _additive(m).clamp(min=-10000.0)),
        Mistake("query-axis", "your mask is laid along the queries, (batch, 1, seq, 1): padding hides KEYS, so it "
                "runs along the last axis, (batch, 1, 1, seq) (Transformer › Masked attention).",
                lambda m: _additive(m).transpose(-1, -2)),
    ),
    tolerance=exact,
    follows="seqlab and the notes: -inf. Hugging Face's BERT fills with the dtype's lowest finite value (older "
            "versions with -10000), which differs from -inf only where a whole row is padding.",
)

# ------------------------------------------------------------------------------------------------------
# 07.6 mean pooling


def _hidden_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, d) in enumerate([(3, 5, 4), (4, 6, 3), (5, 4, 7)]):
        g = generator(seed)
        hidden = randn(g, batch, seq, d)
        lengths = torch.randint(1, seq, (batch,), generator=g)
        lengths[0] = seq  # one sentence without padding
        lengths[1] = 1  # one of a single token
        mask = torch.arange(seq)[None, :] < lengths[:, None]  # True = real token
        cases.append(Case((hidden, mask), {"batch": batch, "seq": seq, "d_model": d}, seed=seed, n=max(seq, d),
                          magnitude=float(hidden.abs().max())))
    return cases


def _mean_pool(hidden, attention_mask):
    return mean_pool(hidden, attention_mask)


MEAN_POOL = Exercise(
    id="07.6",
    name="mean_pool",
    title="Mean pooling over the real tokens",
    section="Pretrained encoders › Fine-tuning (beyond the notes)",
    signature="mean_pool(hidden, attention_mask)",
    statement=r"""Average each sentence's token vectors over its real tokens: $u = \frac{\sum_t m_t h_t}{\sum_t m_t}$.

`hidden` is (batch, seq, d_model) float64, the encoder's last hidden states; `attention_mask` is (batch, seq)
bool, True ($m_t = 1$) for a real token and False for padding (every sentence has at least one real token).
Return (batch, d_model).""",
    reference=_mean_pool,
    cases=_hidden_cases,
    mistakes=(
        Mistake("mean-over-padding", "your mean includes the padding: only the real tokens (m_t = 1) count, "
                "u = sum_t m_t h_t / sum_t m_t (Pretrained encoders › Fine-tuning).",
                lambda hidden, mask: hidden.mean(dim=1)),
        Mistake("divided-by-seq", "you divided by the padded length seq = {seq}: divide the masked sum by the "
                "number of real tokens, sum_t m_t (Pretrained encoders › Fine-tuning).",
                lambda hidden, mask: _mean_pool(hidden, mask) * mask.sum(1, keepdim=True) / mask.shape[1]),
        Mistake("sum-not-mean", "you returned the sum over the real tokens: divide it by their number, sum_t m_t, "
                "so that long and short sentences compare (Pretrained encoders › Fine-tuning).",
                lambda hidden, mask: _mean_pool(hidden, mask) * mask.sum(1, keepdim=True)),
    ),
    # one sum over seq and a division
    tolerance=rounding(products=2),
)

# ------------------------------------------------------------------------------------------------------
# 07.7 the cosines of sentence vectors


def _sentence_cosines(hidden, attention_mask):
    # SentenceEncoder.embed_batch's vectors (mean_pool, then F.normalize) and their dot products, the cosines
    # SentenceEncoder.similarity gives (it has no public function from hidden states)
    unit = F.normalize(mean_pool(hidden, attention_mask), p=2, dim=-1)  # batch, d_model
    return unit @ unit.T  # batch, batch


def _cosines_of(vectors):
    return _sentence_cosines(vectors[:, None, :], torch.ones(vectors.shape[:1] + (1,), dtype=torch.bool))


COSINES = Exercise(
    id="07.7",
    name="sentence_cosines",
    title="Sentence vectors and their cosine similarities",
    section="Word embeddings › Cosine similarity",
    signature="sentence_cosines(hidden, attention_mask)",
    statement=r"""Embed each sentence as the unit-length mean of its real tokens' vectors,
$\hat u = u / \lVert u \rVert_2$ with $u = \frac{\sum_t m_t h_t}{\sum_t m_t}$, and return the cosine similarity
of every pair, $\mathrm{sim}(u, v) = \hat u^\top \hat v$.

`hidden` is (batch, seq, d_model) float64 and `attention_mask` (batch, seq) bool, True for a real token; return
the (batch, batch) matrix of cosines (ones on its diagonal).""",
    reference=_sentence_cosines,
    cases=_hidden_cases,
    mistakes=(
        Mistake("not-normalised", "your matrix holds the dot products of the mean vectors: scale each to unit "
                "length first (or divide by both norms), sim(u, v) = u^T v / (||u||_2 ||v||_2) (Word embeddings › "
                "Cosine similarity).", lambda hidden, mask: (lambda u: u @ u.T)(mean_pool(hidden, mask))),
        Mistake("cls-pooling", "your sentence vectors are the first token's ([CLS]) states: the sentence "
                "embedding is the mean over the real tokens (Sentence-BERT's pooling; Pretrained encoders › "
                "Fine-tuning).", lambda hidden, mask: _cosines_of(hidden[:, 0])),
        Mistake("mean-over-padding", "your mean includes the padding: only the real tokens (m_t = 1) count in "
                "u = sum_t m_t h_t / sum_t m_t (Pretrained encoders › Fine-tuning).",
                lambda hidden, mask: _cosines_of(hidden.mean(dim=1))),
        Mistake("normalised-tokens", "you scaled each token's vector to unit length and did not normalise the "
                "mean: the sentence vector is the mean of the raw states, then divided by its own norm (Pretrained "
                "encoders › Fine-tuning).", lambda hidden, mask: (lambda u: u @ u.T)(
                    mean_pool(F.normalize(hidden, p=2, dim=-1), mask))),
    ),
    # the sum over seq, the norm and the dot product over d_model (unit vectors: magnitude 1 after the norm)
    tolerance=rounding(products=3),
)

EXERCISES: tuple[Exercise, ...] = (ADDITIVE, MEAN_POOL, COSINES)
