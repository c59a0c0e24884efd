"""Chapter 5, sequence to sequence with attention, 05.4-05.6: BLEU's clipped n-gram precision, brevity penalty
and corpus score (docs/tutorials/05-seq2seq-attention.md).

The reference is :mod:`seqlab.metrics.bleu` (sacreBLEU's numbers). The exercises take token lists: the
tokenisation (sacreBLEU's 13a) is not part of them, the counting is.
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, rounding
from seqlab.metrics.bleu import BLEU, BLEUScore, clipped_counts_reference, closest_ref_len, compute_bleu

# ------------------------------------------------------------------------------------------------------
# BLEU: sentences as token lists (the 13a tokenisation is not part of these exercises)

WORDS = ["the", "cat", "is", "on", "mat", "a", "there", "sat"]


def _sentence(g: torch.Generator, length: int, words: int) -> list[str]:
    return [WORDS[i] for i in torch.randint(0, words, (length,), generator=g).tolist()]


def _inflated(refs: list[list[str]], times: int) -> list[list[str]]:
    """Each reference repeated ``times`` times, with a separator no candidate holds: every n-gram count times
    ``times`` and no new n-gram a candidate can match (what feeds the reference counts that clip nothing)."""
    out = []
    for ref in refs:
        long: list[str] = []
        for k in range(times):
            long += ref + ([f"<sep{k}>"] if k < times - 1 else [])
        out.append(long)
    return out


def _joined(refs: list[list[str]]) -> list[list[str]]:
    """The references as one, with separators: each n-gram counted as the sum over the references."""
    return _inflated([sum(([*r, f"<sep-{i}>"] for i, r in enumerate(refs)), [])], 1)


# ------------------------------------------------------------------------------------------------------
# 05.4 clipped n-gram precision


def _precision_cases() -> list[Case]:
    # (candidate length, references, max_order, words): all different; a small vocabulary makes repeats
    return [_precision_case(seed, *sizes) for seed, sizes in PRECISION_SEEDS]


PRECISION_SEEDS = [(402, (9, 2, 3, 4)), (402, (11, 3, 4, 5)), (408, (8, 4, 2, 3))]


def _precision_case(seed: int, length: int, n_refs: int, order: int, words: int) -> Case:
    g = generator(seed)
    candidate = _sentence(g, length, words)
    refs = [_sentence(g, int(torch.randint(length - 3, length + 3, (1,), generator=g)), words) for _ in range(n_refs)]
    return Case((candidate, refs, order), {"candidate": length, "references": n_refs, "max_order": order}, seed=seed)


def _clipped(candidate, references, max_order):
    return clipped_counts_reference(candidate, references, max_order)  # (matched, total), orders 1..max_order


PRECISION = Exercise(
    id="05.4",
    name="clipped_counts",
    title="Clipped n-gram precision",
    section="Sequence to sequence › BLEU",
    signature="clipped_counts(candidate, references, max_order)",
    statement=r"""Count the matches of BLEU's clipped (modified) n-gram precision $p_n = \text{matched}_n /
\text{total}_n$ for $n = 1, \dots,$ `max_order`.

`candidate` is a list of tokens (strings, already tokenised: compare them as they are); `references` a list of
token lists. $\text{total}_n$ is the number of n-grams of the candidate ($\max(0, L - n + 1)$ for $L$ tokens);
$\text{matched}_n = \sum_g \min(\#_c(g), \max_r \#_r(g))$ over the candidate's distinct n-grams $g$: a candidate
n-gram counts at most as often as it occurs in the reference where it occurs most. Return `(matched, total)`, two
lists of `max_order` ints.""",
    reference=_clipped,
    cases=_precision_cases,
    mistakes=(
        Mistake("not-clipped", "your matches are not clipped: a candidate n-gram counts at most as often as it "
                "occurs in a reference (\"the\" twice in the candidate, once in the reference, counts once: p_1 = "
                "5/6 in the notes' example) (Sequence to sequence › BLEU).",
                lambda c, refs, n: _clipped(c, _inflated(refs, len(c) + 1), n)),
        Mistake("clipped-by-sum", "your matches are clipped by the n-gram's count summed over the references; "
                "the clip is its largest count in any one reference, max_r #_r(g) (Sequence to sequence › BLEU).",
                lambda c, refs, n: _clipped(c, _joined(refs), n)),
        Mistake("first-reference-only", "your matches are counted against the first reference only; with "
                "several references a candidate n-gram is clipped by its largest count in any of them, max_r "
                "#_r(g) (Sequence to sequence › BLEU).", lambda c, refs, n: _clipped(c, refs[:1], n)),
    ),
    tolerance=exact,
    follows="seqlab's (sacreBLEU's) clipping by the maximum count over several references: the notes' example has "
            "one reference, where the two agree.",
)

# ------------------------------------------------------------------------------------------------------
# 05.5 the brevity penalty


def _penalty_cases() -> list[Case]:
    # per sentence: the candidate's length and its references' lengths; each case has a tie (two references as
    # close, one shorter, one longer), a candidate longer than its closest reference, and the corpus shorter
    # than its references: the brevity penalty bites
    data = [
        ([6, 9, 3], [[7, 8], [7, 11], [6, 5]]),
        ([5, 12, 6, 4], [[6, 9, 7], [10, 14, 17], [9, 11, 13], [5, 8, 3]]),
        ([10, 2], [[12, 8, 13, 15], [7, 6, 9, 5]]),
    ]
    return [Case((c, r), {"sentences": len(c), "references": len(r[0])}) for c, r in data]


def _penalty(candidate_lengths, reference_lengths):
    c = sum(candidate_lengths)
    r = sum(closest_ref_len(hyp, refs) for hyp, refs in zip(candidate_lengths, reference_lengths))
    return c, r, compute_bleu([1], [1], c, r).bp  # seqlab's BP of the summed lengths (one dummy order)


def _penalty_swapped(candidate_lengths, reference_lengths):
    c, r, _ = _penalty(candidate_lengths, reference_lengths)
    return c, r, compute_bleu([1], [1], r, c).bp  # the two lengths in each other's place


def _penalty_tie_longer(candidate_lengths, reference_lengths):
    # closest_ref_len takes the shorter on a tie: fed the lengths negated, it takes the longer
    r = sum(-closest_ref_len(-hyp, [-x for x in refs]) for hyp, refs in zip(candidate_lengths, reference_lengths))
    c = sum(candidate_lengths)
    return c, r, compute_bleu([1], [1], c, r).bp


def _penalty_sentence_mean(candidate_lengths, reference_lengths):
    c, r, _ = _penalty(candidate_lengths, reference_lengths)
    bps = [_penalty([hyp], [refs])[2] for hyp, refs in zip(candidate_lengths, reference_lengths)]
    return c, r, sum(bps) / len(bps)


def _penalty_longest(candidate_lengths, reference_lengths):
    return _penalty(candidate_lengths, [[max(refs)] for refs in reference_lengths])


BREVITY = Exercise(
    id="05.5",
    name="brevity_penalty",
    title="The brevity penalty",
    section="Sequence to sequence › BLEU",
    signature="brevity_penalty(candidate_lengths, reference_lengths)",
    statement=r"""Compute a corpus's brevity penalty $\mathrm{BP} = 1$ if $c > r$, else $e^{1 - r/c}$.

`candidate_lengths` is a list of ints, one candidate length per sentence; `reference_lengths` a list (per sentence)
of lists of ints, the lengths of that sentence's references. $c$ is the sum of the candidate lengths; $r$ the sum,
over the sentences, of the reference length **closest** to the candidate's (the shorter one when two are as close).
Return `(c, r, bp)`: two ints and a float.""",
    reference=_penalty,
    cases=_penalty_cases,
    mistakes=(
        Mistake("r-c-swapped", "r and c are swapped: c is the candidates' length, r the references'; BP = 1 if "
                "c > r, else exp(1 - r/c), which is below 1 when the candidates are short (the notes: c = 6, r = 7, "
                "BP = exp(1 - 7/6) = 0.846) (Sequence to sequence › BLEU).", _penalty_swapped),
        Mistake("tie-to-longer", "on a tie your r takes the longer reference; of two references as close to the "
                "candidate, r takes the shorter (sacreBLEU's rule) (Sequence to sequence › BLEU).",
                _penalty_tie_longer),
        Mistake("longest-reference", "your r sums the longest reference of each sentence; r is the reference "
                "length closest to the candidate's (Sequence to sequence › BLEU).", _penalty_longest),
        Mistake("sentence-average", "your BP is the mean of the sentences' penalties; corpus BLEU's penalty is "
                "one exp(1 - r/c) of the summed lengths c and r (Sequence to sequence › BLEU).",
                _penalty_sentence_mean),
    ),
    tolerance=rounding(products=1, gain=1.0),  # one division and one exp: a few units of roundoff
    follows="seqlab's (sacreBLEU's) corpus penalty: the notes' example has one sentence and one reference; with "
            "several, r is the closest reference length (the shorter on a tie), summed over the corpus.",
)

# ------------------------------------------------------------------------------------------------------
# 05.6 corpus BLEU


def _bleu_cases() -> list[Case]:
    # (sentences, references, max_order): all different. Every sentence matches at every order (no smoothing
    # needed, sentence scores > 0), and the corpus is shorter than its references (the brevity penalty bites)
    return [_bleu_case(seed, *sizes) for seed, sizes in BLEU_SEEDS]


BLEU_SEEDS = [(500, (3, 2, 4)), (501, (4, 3, 2)), (529, (2, 4, 3))]


def _bleu_case(seed: int, n_sent: int, n_refs: int, order: int) -> Case:
    g = generator(seed)
    candidates, references = [], []
    for _ in range(n_sent):
        length = int(torch.randint(5, 9, (1,), generator=g))
        ref = _sentence(g, length + 2, 6)
        start = int(torch.randint(0, 3, (1,), generator=g))
        cand = ref[start: start + order] + _sentence(g, length - order, 6)  # an n-gram of every order matches
        candidates.append(cand)
        references.append([ref] + [_sentence(g, length + int(torch.randint(-1, 4, (1,), generator=g)), 6)
                                   for _ in range(n_refs - 1)])
    return Case((candidates, references, order), {"sentences": n_sent, "references": n_refs,
                                                  "max_order": order}, seed=seed, n=order, magnitude=order * 5.0)


def _bleu_score(candidates, references, max_order) -> BLEUScore:
    bleu = BLEU(tokenize="none", smooth_method="none", max_ngram_order=max_order)  # whitespace split only
    streams = [[" ".join(refs[k]) for refs in references] for k in range(len(references[0]))]
    return bleu.corpus_score([" ".join(c) for c in candidates], streams)


def _bleu(candidates, references, max_order):
    return _bleu_score(candidates, references, max_order).score / 100  # seqlab reports 0-100, the notes 0-1


def _bleu_sentence_mean(candidates, references, max_order):
    scores = [_bleu([c], [refs], max_order) for c, refs in zip(candidates, references)]
    return sum(scores) / len(scores)


def _bleu_bp_inverted(candidates, references, max_order):
    s = _bleu_score(candidates, references, max_order)  # the cases have c < r: seqlab's BP is exp(1 - r/c)
    return s.score / 100 / s.bp * math.exp(1 - s.sys_len / s.ref_len)


def _bleu_log_sum(candidates, references, max_order):
    s = _bleu_score(candidates, references, max_order)  # weights 1 instead of 1/N: the product of the precisions
    return s.bp * math.prod(p / 100 for p in s.precisions)


def _bleu_unclipped(candidates, references, max_order):
    s = _bleu_score(candidates, references, max_order)
    matched = [0] * max_order
    for c, refs in zip(candidates, references):
        counts = clipped_counts_reference(c, _inflated(refs, len(c) + 1), max_order)[0]
        matched = [m + k for m, k in zip(matched, counts)]
    return compute_bleu(matched, list(s.totals), s.sys_len, s.ref_len).score / 100


def _bleu_no_penalty(candidates, references, max_order):
    s = _bleu_score(candidates, references, max_order)
    return compute_bleu(list(s.counts), list(s.totals), s.sys_len, s.sys_len).score / 100  # r = c: BP = 1


CORPUS_BLEU = Exercise(
    id="05.6",
    name="corpus_bleu",
    title="Corpus BLEU",
    section="Sequence to sequence › BLEU",
    signature="corpus_bleu(candidates, references, max_order)",
    statement=r"""Compute corpus BLEU, $\mathrm{BP} \cdot \exp\big(\sum_{n=1}^{N} \frac{1}{N} \log p_n\big)$ with
$N =$ `max_order`, as a number in $[0, 1]$.

`candidates` is a list of sentences, each a list of tokens (already tokenised); `references[i]` the list of
sentence $i$'s references, each a list of tokens (every sentence has the same number of references). Corpus BLEU
**sums the statistics over the sentences before dividing**: $p_n$ = (matched n-grams of all sentences, clipped per
sentence as in 05.4) / (candidate n-grams of all sentences); BP as in 05.5 from the summed lengths ($c$ the
candidates', $r$ the closest references', the shorter on a tie). No smoothing: every $p_n$ of the cases is
positive. Return a float.""",
    reference=_bleu,
    cases=_bleu_cases,
    mistakes=(
        Mistake("sentence-average", "your score is the mean of the sentences' BLEU scores; corpus BLEU sums the "
                "matched and total n-grams and the lengths over the {sentences} sentences, then computes one score "
                "(Sequence to sequence › BLEU).", _bleu_sentence_mean),
        Mistake("bp-ratio-inverted", "the brevity penalty's ratio is inverted, exp(1 - c/r): BP = exp(1 - r/c) "
                "when the candidates are shorter than the references, c the candidates' length and r the "
                "references' (the notes: exp(1 - 7/6) = 0.846 for c = 6, r = 7) (Sequence to sequence › BLEU).",
                _bleu_bp_inverted),
        Mistake("weights-not-1/N", "the logs of the precisions are summed, not averaged: each log p_n has weight "
                "1/N = 1/{max_order}, BLEU = BP exp(sum_n log(p_n) / N), the geometric mean (Sequence to sequence "
                "› BLEU).", _bleu_log_sum),
        Mistake("not-clipped", "your matches are not clipped: a candidate n-gram counts at most as often as it "
                "occurs in a reference, its largest count over the references (Sequence to sequence › BLEU).",
                _bleu_unclipped),
        Mistake("no-brevity-penalty", "the brevity penalty is missing: BLEU = BP exp(sum_n log(p_n) / N), BP = "
                "exp(1 - r/c) when the candidates are shorter than the references (Sequence to sequence › BLEU).",
                _bleu_no_penalty),
    ),
    # the logs of N precisions summed (magnitude: N times the largest |log p_n| <= 5), one exp, times BP
    tolerance=rounding(products=3, gain=1.0),
    follows="seqlab's (sacreBLEU's) corpus BLEU with several references (clipped by the max count, r the closest "
            "length) and no smoothing, as a fraction: the notes score one sentence with N = 2, and seqlab reports "
            "the score ×100.",
)

EXERCISES: tuple[Exercise, ...] = (PRECISION, BREVITY, CORPUS_BLEU)
