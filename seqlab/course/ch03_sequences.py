"""Chapter 3, recurrent networks, 03.5-03.8: over whole sequences, a bidirectional layer, the CRF's
log-partition and its Viterbi path, max pooling for a sentence's label (docs/tutorials/03-recurrent-networks.md).

The references are the stack of :mod:`seqlab.nn.recurrent`, the :class:`~seqlab.nn.crf.CRF` of
:mod:`seqlab.nn.crf` and the classifier's :func:`~seqlab.models.classifier.pool`; shapes are batch-first, the
padding at the end of each sequence. Each mistake is computed with the same seqlab code, fed rearranged weights or
inputs (or its output rearranged). A cell's weights are drawn as in :mod:`seqlab.course.ch03_cells` (03.1-03.4).
"""

from __future__ import annotations

import torch

from seqlab.course.ch03_cells import _step_magnitude, _weights
from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.classifier import pool
from seqlab.nn.crf import CRF
from seqlab.nn.recurrent import RecurrentConfig, RecurrentStack

# ------------------------------------------------------------------------------------------------------
# 03.5 a bidirectional layer (Elman cells) over a padded batch


def _stack(x, forward, backward) -> RecurrentStack:
    """seqlab's bidirectional one-layer Elman stack, float64, holding the two directions' weights."""
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    stack = RecurrentStack(RecurrentConfig(cell="rnn", input_size=x.shape[2], hidden_size=forward[1].shape[0],
                                           bidirectional=True)).double()
    stack.load_state_dict({**{f"{n}_l0": w for n, w in zip(names, forward)},
                           **{f"{n}_l0_reverse": w for n, w in zip(names, backward)}})
    return stack


def _bidirectional(x, lengths, forward, backward):
    return _stack(x, forward, backward)(x, lengths=lengths)[0]


def _real(x, lengths) -> torch.Tensor:
    return torch.arange(x.shape[1])[None, :, None] < lengths[:, None, None]  # batch, seq, 1: True = real token


def _bidirectional_concatenated_backwards(x, lengths, forward, backward):
    out = _bidirectional(x, lengths, forward, backward)
    hidden = out.shape[2] // 2
    return torch.cat([out[..., hidden:], out[..., :hidden]], dim=-1)  # [←a_t, →a_t]


def _bidirectional_not_reversed_back(x, lengths, forward, backward):
    out = _bidirectional(x, lengths, forward, backward).clone()
    hidden = out.shape[2] // 2
    for b, n in enumerate(lengths.tolist()):  # each row's backward states left in reading order (last token first)
        out[b, :n, hidden:] = out[b, :n, hidden:].flip(0)
    return out


def _bidirectional_over_padding(x, lengths, forward, backward):
    # the backward direction started at the padded end: seqlab's stack run on every position, the padding
    # then zeroed (the forward direction's real positions do not depend on what follows them)
    return _stack(x, forward, backward)(x)[0] * _real(x, lengths)


def _bidirectional_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, input_size, hidden) in enumerate([(2, 5, 3, 4), (3, 4, 5, 2), (4, 6, 2, 3)]):
        g = generator(seed)
        x = randn(g, batch, seq, input_size)  # the padded positions hold values too: they must not be read
        lengths = torch.randint(2, seq, (batch,), generator=g)  # 2 tokens at least, and padding after them
        lengths[0] = seq  # but one row with no padding
        fwd, bwd = _weights(g, 1, input_size, hidden), _weights(g, 1, input_size, hidden)
        # ||W_hh||_inf <= 0.9 in both directions: an error in a state shrinks at each later step (tanh' <= 1)
        fwd, bwd = ((w_ih, 0.9 * w_hh / w_hh.abs().sum(1).max(), b_ih, b_hh) for w_ih, w_hh, b_ih, b_hh in (fwd, bwd))
        ones = torch.ones(1, hidden, dtype=x.dtype)  # |a| <= 1: the largest state a step can read
        magnitude = max(_step_magnitude(x.reshape(-1, input_size), ones, *w) for w in (fwd, bwd))
        cases.append(Case((x, lengths, fwd, bwd), {"batch": batch, "seq": seq, "input": input_size,
                                                   "hidden": hidden}, seed=seed, n=input_size + hidden + 2,
                          magnitude=magnitude))
    return cases


BIDIRECTIONAL = Exercise(
    id="03.5",
    name="bidirectional_rnn",
    title="A bidirectional Elman layer over a padded batch",
    section="Recurrent neural networks › Bidirectional RNNs",
    signature="bidirectional_rnn(x, lengths, forward, backward)",
    statement=r"""Run a bidirectional layer of Elman cells, $a_t = \tanh(W_1 x_t + W_3 a_{t-1} + b_1)$ from
$a_0 = 0$ in each direction, and return each position's states $[\overrightarrow{a}_t ; \overleftarrow{a}_t]$.

`x` is (batch, seq, input), batch-first, padded at the end: row $b$ holds `lengths[b]` real tokens (`lengths`, a
(batch,) integer tensor, at least 1) followed by padding whose values must not affect any output. `forward` and
`backward` are each a tuple `(w_ih, w_hh, b_ih, b_hh)` as in exercise 03.1: `w_ih` (hidden, input), `w_hh`
(hidden, hidden), two biases (hidden,). The forward direction reads each row left to right; the backward one
reads it right to left, **from its last real token** back to the first, and its state for token $t$ is the one
after reading tokens $T, \dots, t$. Return (batch, seq, 2·hidden): at each real position the forward state then
the backward state, and zeros at the padded positions.""",
    reference=_bidirectional,
    cases=_bidirectional_cases,
    mistakes=(
        Mistake("concatenated-backwards", "the two directions are concatenated in the wrong order: each position "
                "holds [→a_t ; ←a_t], the forward state in the first {hidden} columns (Recurrent neural networks "
                "› Bidirectional RNNs).", _bidirectional_concatenated_backwards),
        Mistake("not-reversed-back", "the backward states are in reading order: after running the backward "
                "direction on the reversed tokens, reverse its outputs back, so that position t holds ←a_t, the "
                "state after reading tokens T .. t (Recurrent neural networks › Bidirectional RNNs).",
                _bidirectional_not_reversed_back),
        Mistake("reversed-over-padding", "the backward direction starts at the padded end of the row, so it reads "
                "the padding before the real tokens; reverse each row's first lengths[b] tokens only, and start "
                "from a_0 = 0 at its last real token (Recurrent neural networks › Bidirectional RNNs).",
                _bidirectional_over_padding),
        Mistake("backward-with-forward-weights", "the backward direction uses the forward direction's weights; "
                "each direction has its own W_1, W_3 and biases (Recurrent neural networks › Bidirectional RNNs).",
                lambda x, lengths, forward, backward: _bidirectional(x, lengths, forward, forward)),
    ),
    # one reduction per step (n = input + hidden + 2 terms, |a| <= 1 so magnitude bounds every step's terms); with
    # ||W_3||_inf <= 0.9 and tanh' <= 1 the errors of earlier steps shrink as they pass on, so they add to at most
    # seq <= 6 steps' bounds
    tolerance=rounding(products=6, gain=1.0),
)

# ------------------------------------------------------------------------------------------------------
# 03.6 the CRF's log-partition and 03.7 its Viterbi path


def _crf(transitions, start, end) -> CRF:
    """seqlab's CRF in float64 with these scores and no constraints (every transition allowed)."""
    crf = CRF(transitions.shape[0]).double()
    with torch.no_grad():
        crf.transitions.copy_(transitions)
        crf.start.copy_(start)
        crf.end.copy_(end)
    return crf


def _log_partition(emissions, mask, transitions, start, end):
    return _crf(transitions, start, end).log_partition(emissions, mask)


def _best_path_score(emissions, mask, transitions, start, end):
    # max in place of logsumexp: the score of the best path, seqlab's Viterbi path scored by seqlab's CRF.score
    crf = _crf(transitions, start, end)
    tags = torch.zeros(mask.shape, dtype=torch.long)  # batch, seq: the path, 0 on the padding (not scored)
    for b, path in enumerate(crf.decode(emissions, mask)):
        tags[b, :len(path)] = torch.tensor(path)
    return crf.score(emissions, tags, mask)


def _viterbi(emissions, mask, transitions, start, end):
    return _crf(transitions, start, end).decode(emissions, mask)


def _crf_cases(seeds: tuple[int, int, int]) -> list[Case]:
    """(batch, seq, labels) all different within each case; the transitions, start and end scores as large as
    the emissions, so that the best path is not each token's best tag."""
    cases = []
    for seed, (batch, seq, labels) in zip(seeds, [(2, 5, 4), (3, 4, 6), (4, 6, 3)]):
        g = generator(seed)
        emissions, transitions = randn(g, batch, seq, labels), 1.5 * randn(g, labels, labels)
        start, end = 1.5 * randn(g, labels), 1.5 * randn(g, labels)
        lengths = torch.randint(2, seq, (batch,), generator=g)
        lengths[0] = seq
        mask = torch.arange(seq)[None, :] < lengths[:, None]  # batch, seq: True = real token
        # |α_t| <= |start| + Σ_s (max|e_s| + max|A| + log labels): a bound on every term of every step
        magnitude = (start.abs().max() + end.abs().max() + seq * (emissions.abs().max() + transitions.abs().max()
                                                                  + torch.log(torch.tensor(float(labels))))).item()
        cases.append(Case((emissions, mask, transitions, start, end), {"batch": batch, "seq": seq, "labels": labels},
                          seed=seed, n=labels + 3, magnitude=magnitude))
    return cases


_CRF_STATEMENT = r"""`emissions` is (batch, seq, labels), the scores $e_t(j)$ of tag $j$ at token $t$; `mask`
(batch, seq) is True at the real tokens, which come first in each row (at least one; the padding after them
must not count). `transitions` (labels, labels) holds $A_{ij}$, the score of tag $j$ **right after** tag $i$
(row: the previous tag, column: the next one); `start` and `end` (labels,) score the first and the last tag of
a row. A tag sequence of the $n$ real tokens scores
$\mathrm{start}_{y_1} + \sum_{t=1}^{n} e_t(y_t) + \sum_{t=2}^{n} A_{y_{t-1} y_t} + \mathrm{end}_{y_n}$."""

LOG_PARTITION = Exercise(
    id="03.6",
    name="crf_log_partition",
    title="The CRF's log-partition by the forward algorithm",
    section="Sequence labelling › Linear-chain CRF (beyond the notes)",
    signature="crf_log_partition(emissions, mask, transitions, start, end)",
    statement=r"""Compute $\log Z(x)$, the log of the sum of $\exp(\mathrm{score})$ over every tag sequence, by the
forward algorithm: $\alpha_1(j) = \mathrm{start}_j + e_1(j)$,
$\alpha_t(j) = \log\sum_i \exp(\alpha_{t-1}(i) + A_{ij}) + e_t(j)$,
$\log Z = \log\sum_j \exp(\alpha_n(j) + \mathrm{end}_j)$, $n$ the row's real tokens.

""" + _CRF_STATEMENT + """ Return $\\log Z$ for each row, (batch,).""",
    reference=_log_partition,
    cases=lambda: _crf_cases((0, 1, 2)),
    mistakes=(
        Mistake("max-for-logsumexp", "you took the max where the forward algorithm sums: that is the best path's "
                "score (Viterbi), not log Z; α_t(j) = logsumexp_i(α_(t-1)(i) + A_ij) + e_t(j) and log Z = "
                "logsumexp_j(α_n(j) + end_j) (Sequence labelling › Linear-chain CRF).", _best_path_score),
        Mistake("no-start-end", "the start and end scores are missing: α_1(j) = start_j + e_1(j) and log Z = "
                "logsumexp_j(α_n(j) + end_j) (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _log_partition(e, m, a, torch.zeros_like(start), torch.zeros_like(end))),
        Mistake("transitions-transposed", "the transitions are read the wrong way: A_ij scores tag j right after "
                "tag i, so α_t(j) sums α_(t-1)(i) + A[i, j] over the previous tag i, the rows of A (Sequence "
                "labelling › Linear-chain CRF).", lambda e, m, a, start, end: _log_partition(e, m, a.T, start, end)),
        Mistake("padding-counted", "the padding is counted: each row's recursion stops at its last real token "
                "(mask True), and log Z adds end_j to α_n of that token (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _log_partition(e, torch.ones_like(m), a, start, end)),
    ),
    # one logsumexp (n = labels terms, plus the additions α + A + e) per step, logsumexp passing errors on with
    # gain 1 (its gradient sums to 1), over at most seq + 1 <= 7 steps; magnitude bounds |α_t| and every term
    tolerance=rounding(products=7, gain=1.0),
)

VITERBI = Exercise(
    id="03.7",
    name="viterbi",
    title="The CRF's best tag sequence by Viterbi",
    section="Sequence labelling › Linear-chain CRF (beyond the notes)",
    signature="viterbi(emissions, mask, transitions, start, end)",
    statement=r"""Find each row's highest-scoring tag sequence by the Viterbi algorithm:
$\delta_1(j) = \mathrm{start}_j + e_1(j)$, $\delta_t(j) = \max_i(\delta_{t-1}(i) + A_{ij}) + e_t(j)$ with
back-pointers $\psi_t(j) = \arg\max_i(\delta_{t-1}(i) + A_{ij})$, then $y_n = \arg\max_j(\delta_n(j) +
\mathrm{end}_j)$ and $y_{t-1} = \psi_t(y_t)$.

""" + _CRF_STATEMENT + """ Return a list with one list of tag ids (Python ints) per row, as long as its real
tokens. The cases have no ties.""",
    reference=_viterbi,
    cases=lambda: _crf_cases((3, 4, 1)),  # seeds on which the five paths (right and the mistakes') all differ
    mistakes=(
        Mistake("transitions-transposed", "the transitions are indexed the wrong way: A_ij scores tag j right "
                "after tag i, so δ_t(j) maximises δ_(t-1)(i) + A[i, j] over the previous tag i, the rows of A "
                "(Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _viterbi(e, m, a.T, start, end)),
        Mistake("no-start-end", "the start and end scores are missing: δ_1(j) = start_j + e_1(j) and "
                "y_n = argmax_j(δ_n(j) + end_j) (Sequence labelling › Linear-chain CRF).",
                lambda e, m, a, start, end: _viterbi(e, m, a, torch.zeros_like(start), torch.zeros_like(end))),
        Mistake("greedy", "each token got its own best tag, argmax_j e_t(j): the path must maximise the whole "
                "score, transitions A_ij and start and end scores included (Sequence labelling › Linear-chain "
                "CRF).", lambda e, m, a, start, end: _viterbi(e, m, torch.zeros_like(a), torch.zeros_like(start),
                                                               torch.zeros_like(end))),
        Mistake("padding-counted", "the padding is counted: each row's path ends at its last real token, where "
                "end_j is added, and the padded positions' emissions play no part (Sequence labelling › "
                "Linear-chain CRF).", lambda e, m, a, start, end: [
                    path[:n] for path, n in zip(_viterbi(e, torch.ones_like(m), a, start, end), m.sum(1).tolist())]),
    ),
    tolerance=exact,
)

# ------------------------------------------------------------------------------------------------------
# 03.8 max pooling over the real tokens (sentiment: many to one)


def _max_pool(states, padding):
    return pool(states, padding, "max")


def _pool_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, width) in enumerate([(2, 5, 7), (3, 6, 4), (4, 3, 5)]):
        g = generator(seed)
        states = randn(g, batch, seq, width)  # the padded positions hold values too: they must not count
        lengths = torch.randint(1, seq, (batch,), generator=g)
        lengths[0] = seq
        padding = torch.arange(seq)[None, :] < lengths[:, None]  # batch, seq: True = real token
        cases.append(Case((states, padding), {"batch": batch, "seq": seq, "width": width}, seed=seed, n=seq,
                          magnitude=seq * states.abs().max().item()))
    return cases


MAX_POOL = Exercise(
    id="03.8",
    name="max_pool",
    title="Max pooling over the real tokens (many to one)",
    section="Recurrent neural networks › Many to one (beyond the notes)",
    signature="max_pool(states, padding)",
    statement=r"""Pool a sentence's per-token states into one vector by an element-wise maximum over its $T$ real
tokens, $s_k = \max_{t \le T} a_{t,k}$, as seqlab's `sentiment-lstm` does before its softmax layer.

`states` is (batch, seq, width), batch-first; `padding` (batch, seq) is True at the real tokens, which come first
in each row (at least one). The states at padded positions hold arbitrary values and must not count. Return
(batch, width).""",
    reference=_max_pool,
    cases=_pool_cases,
    mistakes=(
        Mistake("padding-included", "the padded positions take part in the maximum: take it over the real tokens "
                "only, s_k = max over t <= T of a_(t,k) (Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states, None, "max")),
        Mistake("padding-as-zero", "the padding was set to 0 before the maximum, so a feature whose real values "
                "are all negative pools to 0; fill the padding with -inf (or the dtype's lowest value) instead "
                "(Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states * padding[:, :, None], None, "max")),
        Mistake("mean-for-max", "you averaged the states: this exercise pools by the element-wise maximum over "
                "the real tokens, s_k = max_t a_(t,k), not their mean (Recurrent neural networks › Many to one).",
                lambda states, padding: pool(states, padding, "mean")),
    ),
    # the maximum is exact; the mean mistake's sum (n = seq terms) is what the bound is there for
    tolerance=rounding(products=1, gain=1.0),
)

EXERCISES: tuple[Exercise, ...] = (BIDIRECTIONAL, LOG_PARTITION, VITERBI, MAX_POOL)
