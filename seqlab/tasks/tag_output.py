"""The tagging task's output layer: per-token softmax, or with ``model.crf = true`` a linear-chain CRF
(:mod:`seqlab.nn.crf`) over the scored positions (every word; a sub-word tagger's first sub-words), gathered
into a compact (batch, words, labels) tensor.

Loss: the softmax tagger sums the token NLL over the scored words; the CRF tagger sums -log p(y | x) over the
sentences. The task divides either by the number of scored words (:class:`seqlab.tasks.tag.TagTask`), so the
CRF's training and validation loss is its negative log-likelihood per token. Predictions: the argmax at each
word, or the CRF's Viterbi path.

The CRF's transitions are constrained by the tagging scheme of the run's labels (``labels.json``): BIOES when
some label is an E- or S- tag, else IOB2 (:func:`seqlab.nn.crf.label_scheme`; labels without a prefix, such as
POS tags, are unconstrained). The masks are set once when training starts and are saved in the checkpoint, so
loading the run gives the same ones.

Shapes: batch; seq (tokens or sub-words); words (scored positions); labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch import Tensor, nn

from seqlab.data.indexed import lengths_of
from seqlab.metrics.lm import nll_sum
from seqlab.nn.crf import CRF, gather_scored, label_scheme, transition_constraints


def crf_of(model: nn.Module) -> CRF | None:
    """The tagger's CRF (``model.crf = true``; through DDP's ``module``), or None."""
    return getattr(getattr(model, "module", model), "crf", None)


def loss_sum(model: nn.Module, logits: Tensor, tags: Tensor, scored: Tensor, label_smoothing: float = 0.0) -> Tensor:
    r"""The batch's summed loss: logits (batch, seq, labels), tags and scored (batch, seq). Token NLL over the
    scored positions, or with a CRF -Σ log p(y | x) over the sentences (``label_smoothing`` must then be 0).

    !!! equation "Recurrent neural networks › Many to many"
        $L = \sum_{t} -\log \hat{y}_{t, y_t},\ \hat{y}_t = \mathrm{softmax}(W_2 a_t + b_2)$: the per-token
        cross-entropy of the tagger, summed over the scored words (the task divides by their number); with two
        labels, $\hat{y}_t = \sigma(w_3 a_t + b_2)$ for "name", it is the notes' binary cross-entropy
        $L = \sum_i -y_i \log \hat{y}_i - (1 - y_i) \log(1 - \hat{y}_i)$.
        default: model.crf = false; presets: ner-bilstm-crf = true, ner-lample = true

    !!! departure "Recurrent neural networks › Many to many"
        notes: for NER, one sigmoid per token and the binary cross-entropy $L_i = -y_i \log \hat{y}_i - (1 - y_i)
        \log(1 - \hat{y}_i)$, summed over the tokens: is the token (part of) a name or not.
        seqlab: a softmax over the tag set (``B-PER``, ``I-LOC``, ..., ``O``) and its cross-entropy per word,
        which with two labels is the notes' loss; with ``model.crf = true`` (``ner-bilstm-crf``) the CRF's
        sentence NLL $-\log p(y \mid x)$ instead.
        default: model.crf = false; presets: ner-bilstm-crf = true, ner-lample = true"""
    crf = crf_of(model)
    if crf is None:
        return nll_sum(logits, tags, scored, label_smoothing)[0]
    words, (emissions, gold) = gather_scored(scored, logits, tags)  # batch, words; (batch, words, labels), tags
    return -crf.log_likelihood(emissions, gold, words).sum()


def best_tags(model: nn.Module, logits: Tensor, scored: Tensor) -> list[list[int]]:
    """Each row's predicted tag ids, one per scored position in order: the argmax, or the CRF's Viterbi path."""
    crf = crf_of(model)
    if crf is not None:
        words, (emissions,) = gather_scored(scored, logits)  # batch, words; batch, words, labels
        return crf.decode(emissions, words)
    best, scored = logits.argmax(dim=-1).cpu(), scored.cpu()  # batch, seq
    return [best[row][scored[row]].tolist() for row in range(len(best))]


def constrain(model: nn.Module, names: Sequence[str], train_tags: Sequence[Sequence[int]], log) -> None:
    """With a CRF: constrain its transitions by the scheme of the label ``names``, and log how many training
    sentences (their tag ids ``train_tags``) break it (each forbidden step adds 10^4 to their loss)."""
    crf = crf_of(model)
    if crf is None:
        return
    scheme = label_scheme(names)
    constraints = transition_constraints(names, scheme)
    crf.constrain(constraints)
    broken = forbidden_sentences(train_tags, *(m.numpy() for m in constraints))
    if broken:
        log(f"warning: {broken:,} training sentences have tags that {scheme} forbids (e.g. I-X after O); the CRF "
            "gives them probability 0 and a loss it cannot lower: fix their tags, or train with model.crf=false")


def forbidden_sentences(tags: Sequence[Sequence[int]], allowed: np.ndarray, allowed_start: np.ndarray,
                        allowed_end: np.ndarray) -> int:
    """How many tag sequences have a transition, start or end the masks forbid (vectorised over all tags)."""
    lengths = lengths_of(tags)  # sentences
    if not len(lengths):
        return 0
    flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in tags])  # tags of every sentence, in order
    ends = np.cumsum(lengths)  # sentences: one past each sentence's last tag
    starts = ends - lengths
    bad = np.zeros(len(flat), dtype=bool)  # tags: forbidden step into it (or start / end)
    bad[1:] = ~allowed[flat[:-1], flat[1:]]
    bad[starts] = ~allowed_start[flat[starts]]  # not a step: each sentence's first tag
    bad[ends - 1] |= ~allowed_end[flat[ends - 1]]
    return int(np.count_nonzero(np.add.reduceat(bad, starts)))
