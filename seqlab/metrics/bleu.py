"""BLEU, bit-identical to sacreBLEU 2.6.0 (../shared/specs/metrics.md §1).

The notes (Sequence to sequence › BLEU: "Bilingual Evaluation Understudy") define it on the example candidate
"the cat is on the mat" against the reference "There is a cat on the mat":

* clipped n-gram precision  p_n = matched n-grams / total candidate n-grams, where a candidate
  n-gram counts at most as often as it occurs in the reference (``the`` 2 vs 1 -> 1; p_1 = 5/6);
* the mean of the logs over orders 1..N (N = 4, "normally people go till P_4");
* the brevity penalty  BP = 1 if c > r else exp(1 - r/c), c and r the candidate and reference lengths;
* BLEU = BP · exp( (1/N) Σ_n log p_n ).

sacreBLEU (and so this module) adds what the notes leave open: a corpus score is computed once
from the summed statistics of all segments (§1.6), not as a mean of sentence scores; precisions
are percentages, so the score is on a 0-100 scale; with several references the n-gram counts are
clipped by the maximum count over the references (§1.4) and r is the reference length closest to
c, the shorter one on ties (§1.5); smoothing (exp, floor, add-k, none) and the effective order
handle zero counts (§1.7). Every step below follows sacreBLEU's order of operations so that score,
precisions, bp, sys_len and ref_len are identical floats.

The fast paths, each with its readable reference beside it and a test that the two agree:
* 13a tokenisation (``bleu_tokenizers.tokenize_13a``) replaces sacreBLEU's four ``re.sub`` (whose per-match template
  expansion runs in Python) by ``re.split`` and padding, scans only the marks . and , for the two
  rules about them, and skips rules that cannot match; ``tokenize_13a_reference`` is the re.sub chain;
* clipped counts (``ngram_multiset``, ``clipped_counts``) are sizes of set intersections instead of
  a loop over Counter items; ``clipped_counts_reference`` is the Counter loop;
* each distinct set of references is tokenised and counted once per call (several systems scored
  against one reference file), and the cyclic garbage collector is paused meanwhile (``gc_paused``).

Deliberate deviations from sacreBLEU's API (same numbers, stricter input): a hypothesis list and a
reference stream of different lengths raise :class:`SeqlabError` (sacreBLEU silently truncates,
§1.6); so do an empty corpus, unknown options, references not given as a list of streams, and a
segment whose references are all None (sacreBLEU fails on it with a TypeError; scoring it would
count its reference length as -1, §1.5).
Signatures carry seqlab's version after ``version:``.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from seqlab.base.version import __version__
from seqlab.base.errors import SeqlabError
from seqlab.metrics.bleu_tokenizers import TOKENIZERS

MAX_NGRAM_ORDER = 4
# Default smoothing values (§1.8); None = the method takes no value.
SMOOTH_DEFAULTS: dict[str, float | None] = {"exp": None, "floor": 0.1, "add-k": 1, "none": None}

# --------------------------------------------------------------------------------------------
# N-gram statistics (§1.4, §1.5)
# --------------------------------------------------------------------------------------------


def ngram_multiset(grams: list, distinct: set | None = None) -> set:
    """A multiset of n-grams as a set of occurrences: g for the first, (g, k) for the (k+1)-th.

    Then |H ∩ R| = Σ_g min(count_H(g), count_R(g)), the clipped count of the notes' BLEU, and H ∪ R
    holds each n-gram max(count_H, count_R) times, the merged count of several references (§1.4).
    (g, k) pairs a gram with an int and so never equals a gram, which holds strings only.
    ``distinct``, if given, is ``set(grams)`` already built; it is extended in place.
    """
    occurrences = set(grams) if distinct is None else distinct
    if len(occurrences) != len(grams):  # some n-gram repeats: add its 2nd, 3rd, ... occurrences
        for gram, count in Counter(grams).items():
            if count > 1:
                occurrences.update((gram, k) for k in range(1, count))
    return occurrences


def _occurrences(tokens: list[str], max_order: int) -> Iterator[set | Iterator]:
    """For n = 1..max_order, the n-gram multiset of ``tokens`` (unigrams as strings, n-grams as tuples).

    An n-gram can only repeat if its (n-1)-gram prefix does, so once an order has no repeats the
    higher orders are yielded as plain iterators over their n-grams, each of which occurs once.
    """
    shifted = [tokens[i:] for i in range(max_order)]  # tokens[i:] for the i-th word of each n-gram
    repeats = True  # whether this order may repeat an n-gram
    for n in range(1, max_order + 1):
        grams = tokens if n == 1 else zip(*shifted[:n])
        if not repeats:
            yield grams
            continue
        grams = list(grams)
        distinct = set(grams)
        repeats = len(distinct) != len(grams)
        yield ngram_multiset(grams, distinct) if repeats else distinct


def extract_ngrams(tokens: list[str], max_order: int) -> list[set]:
    """The n-gram multisets of orders 1..max_order, as sets of occurrences (:func:`ngram_multiset`)."""
    return [grams if isinstance(grams, set) else set(grams) for grams in _occurrences(tokens, max_order)]


def clipped_counts(tokens: list[str], ref_sets: list[set]) -> list[int]:
    r"""correct_n = Σ_g min(count_hyp(g), max_ref count(g)), n = 1..N, given the merged reference multisets.

    !!! equation "Sequence to sequence › BLEU"
        $\mathrm{correct}_n = \sum_{g \in n\text{-grams}(C)} \min(\mathrm{count}_C(g), \max_R \mathrm{count}_R(g))$:
        the clipped matches, a candidate n-gram counting at most as often as it occurs in a reference ("the"
        twice against once counts once)."""
    return [len(ref.intersection(grams)) for grams, ref in zip(_occurrences(tokens, len(ref_sets)), ref_sets)]


def clipped_counts_reference(hyp: list[str], refs: list[list[str]], max_order: int) -> tuple[list[int], list[int]]:
    """Correct and total n-gram counts as sacreBLEU computes them (Counter, max over refs, min)."""

    def counts(tokens):
        return Counter(tuple(tokens[i : i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1))

    merged = Counter()
    for ref in refs:
        for gram, count in counts(ref).items():
            merged[gram] = max(merged[gram], count)
    correct, total = [0] * max_order, [0] * max_order
    for gram, count in counts(hyp).items():
        total[len(gram) - 1] += count
        correct[len(gram) - 1] += min(count, merged[gram])
    return correct, total


def closest_ref_len(hyp_len: int, ref_lens: list[int]) -> int:
    """The reference length closest to the hypothesis length; the shorter one on ties (§1.5)."""
    closest_diff, closest_len = -1, -1
    for ref_len in ref_lens:
        diff = abs(hyp_len - ref_len)
        if closest_diff == -1 or diff < closest_diff:
            closest_diff, closest_len = diff, ref_len
        elif diff == closest_diff and ref_len < closest_len:
            closest_len = ref_len
    return closest_len


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of acyclic n-gram tuples and sets.

    They are freed by reference counting as usual; the collector would only rescan them again and
    again (about 3x the counting time on the WMT17 benchmark). Restores the previous state.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _log(p: float) -> float:
    """sacreBLEU's my_log: natural log, with log(0) floored to -9999999999."""
    return -9999999999 if p == 0.0 else math.log(p)


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


@dataclass
class BLEUScore:
    """A BLEU score with the statistics it was computed from (nothing rounded, §1.9)."""

    score: float  # 0-100, unrounded
    counts: list  # matched (clipped) n-grams per order 1..N; add-k adds k for n >= 2
    totals: list  # hypothesis n-grams per order 1..N; add-k adds k for n >= 2
    precisions: list[float]  # percentages per order; 0.0 after an early stop
    bp: float  # brevity penalty
    sys_len: int  # hypothesis tokens (corpus sum)
    ref_len: int  # closest-reference tokens (corpus sum)
    signature: str = ""  # how it was computed, e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:0.1.0
    name: str = field(default="BLEU", init=False)

    @property
    def ratio(self) -> float:
        return self.sys_len / self.ref_len if self.ref_len else 0

    @property
    def verbose_score(self) -> str:
        """sacreBLEU's verbose part: ``83.3/40.0/25.0/16.7 (BP = 0.846 ratio = 0.857 hyp_len = 6 ref_len = 7)``."""
        precisions = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"{precisions} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
                f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})")

    def format(self, width: int = 2, score_only: bool = False, signature: str = "") -> str:
        """sacreBLEU's ``Score.format``: ``BLEU[|signature] = 29.06 83.3/40.0/...``, or just the score."""
        score = f"{self.score:.{width}f}"
        if score_only:
            return score
        head = f"{self.name}|{signature}" if signature else self.name
        return f"{head} = {score} {self.verbose_score}"

    def to_dict(self) -> dict:
        """The CLI's JSON object: sacreBLEU's keys (score unrounded) plus the statistics and signature fields."""
        out = {"name": self.name, "score": self.score, "signature": self.signature,
               "verbose_score": self.verbose_score, "precisions": self.precisions, "bp": self.bp,
               "sys_len": self.sys_len, "ref_len": self.ref_len, "counts": self.counts,
               "totals": self.totals, "ratio": self.ratio}
        for pair in self.signature.split("|") if self.signature else ():
            key, value = pair.split(":", 1)
            out[key] = value
        return out

    def __str__(self) -> str:
        return self.format()


def compute_bleu(correct: list, total: list, sys_len: int, ref_len: int, smooth_method: str = "none",
                 smooth_value: float | None = None, effective_order: bool = False) -> BLEUScore:
    r"""The score from summed statistics, in sacreBLEU's exact order of operations (§1.7).

    ``correct`` and ``total`` have one entry per order; add-k mutates them as sacreBLEU does.

    !!! equation "Sequence to sequence › BLEU"
        $p_n = \frac{\text{matched } n\text{-grams}}{\text{total candidate } n\text{-grams}}$: the modified
        precision of order $n$ (its matches clipped, ``clipped_counts``); $p_1 = 5/6$ in the notes' example.

    !!! equation "Sequence to sequence › BLEU"
        $\mathrm{BP} = 1 \text{ if } c > r, \text{ else } \exp(1 - r/c)$: the brevity penalty, for a candidate of
        $c$ words shorter than its reference of $r$ words.

    !!! equation "Sequence to sequence › BLEU"
        $\mathrm{BLEU} = \mathrm{BP} \cdot \exp\left(\frac{1}{N} \sum_{n=1}^{N} \log p_n\right)$: the geometric
        mean of the precisions up to $N = 4$, penalised for brevity (×100 here, as sacreBLEU reports it).

    !!! departure "Sequence to sequence › BLEU (slip in the notes)"
        notes: "Bleu Score: $\mathrm{BP} \cdot \frac{1}{2} \sum_{i=1}^{2} \log p_i$", without the exponential (a
        negative number).
        seqlab: $\mathrm{BP} \cdot \exp(\frac{1}{N} \sum_n \log p_n)$, the geometric mean of the precisions; the
        notes' example with $N = 2$ scores $0.846 \cdot \sqrt{5/6 \cdot 2/5} = 0.489$ (48.87 as sacreBLEU
        prints it).

    !!! departure "Sequence to sequence › BLEU (slip in the notes)"
        notes: $\exp\{1 - \frac{7}{6}\} = \frac{1}{6}^{-1}$ for the brevity penalty, and $\frac{1}{2} \log 0.83 +
        \frac{1}{2} \log 0.4 = 3T$.
        seqlab: $\mathrm{BP} = \exp(1 - 7/6) = e^{-1/6} = 0.846$, and $\frac{1}{2} \ln \frac{5}{6} + \frac{1}{2}
        \ln 0.4 = -0.549$.

    !!! departure "Sequence to sequence › BLEU"
        notes: one sentence, n-grams up to $N = 2$ in the worked example.
        seqlab: sacreBLEU's corpus BLEU: $N = 4$, the n-gram counts and lengths of all the sentences summed
        before the precisions and the brevity penalty are computed, and sacreBLEU's "exp" smoothing of an order
        with no match (its default, as ``seqlab bleu``'s).
    """
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS[smooth_method]
    max_order = len(correct)
    # BP = exp(1 - r/c) when c < r (the notes' brevity penalty), 0 for an empty hypothesis
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * max_order
    if not any(correct):  # no match of any order: 0, checked before add-k (sacreBLEU #141)
        return BLEUScore(0.0, correct, total, precisions, bp, sys_len, ref_len)

    mteval_factor = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth_method == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:  # the hypothesis has no n-grams of this order
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":  # mteval-v13a: the k-th zero order gets 100 / (2^k total)
                mteval_factor *= 2
                precisions[n - 1] = 100.0 / (mteval_factor * total[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]  # p_n, in percent
    # BLEU = BP · exp(mean_n log p_n); sum() left to right as sacreBLEU does
    score = bp * math.exp(sum([_log(p) for p in precisions[:eff_order]]) / eff_order)
    return BLEUScore(score, correct, total, precisions, bp, sys_len, ref_len)


def check_corpus(hypotheses, references) -> list[list[str | None]]:
    """Validate the API input; return the reference streams as lists."""
    if isinstance(hypotheses, str) or not isinstance(hypotheses, Sequence):
        raise SeqlabError("hypotheses must be a list of strings, one per segment; wrap a single sentence in a list")
    if not hypotheses:
        raise SeqlabError("no hypotheses to score; give at least one segment")
    if (isinstance(references, str) or not isinstance(references, Sequence) or not references
            or any(isinstance(s, str) or not isinstance(s, Sequence) for s in references)):
        raise SeqlabError("references must be a list of reference streams, each a list of strings aligned with "
                          "the hypotheses; for one reference per segment pass [refs]")
    for k, stream in enumerate(references):
        if len(stream) != len(hypotheses):
            raise SeqlabError(f"reference stream {k + 1} has {len(stream)} segments but there are "
                              f"{len(hypotheses)} hypotheses; give one reference line per hypothesis line")
    streams = [list(s) for s in references]
    for what, segments, allowed in [("hypothesis", hypotheses, ()), *(("reference", s, (None,)) for s in streams)]:
        bad = next((x for x in segments if not isinstance(x, str) and x not in allowed), "")
        if bad != "":
            raise SeqlabError(f"every {what} must be a string, got {type(bad).__name__}; convert segments with str()")
    if any(None in stream for stream in streams):  # None = fewer references here (§1.5), but not none at all
        for i, refs in enumerate(zip(*streams)):
            if all(ref is None for ref in refs):
                raise SeqlabError(f"segment {i + 1} has no reference (None in every reference stream); "
                                  "give at least one reference per segment")
    return streams


@dataclass(frozen=True)
class BLEU:
    """BLEU with sacreBLEU's options and defaults (``sacrebleu.metrics.BLEU``, §1.1).

    ``corpus_score(hyps, refs)`` with ``refs[k][i]`` the k-th reference of segment i;
    ``sentence_score(hyp, [ref, ...])``; ``sentence_scores(hyps, refs)`` for error analysis.
    """

    lowercase: bool = False  # score case-insensitively (Python str.lower)
    tokenize: str = "13a"  # one of TOKENIZERS: 13a, intl, char, none
    smooth_method: str = "exp"  # exp, floor, add-k or none (§1.8)
    smooth_value: float | None = None  # floor / add-k value; None = SMOOTH_DEFAULTS
    max_ngram_order: int = MAX_NGRAM_ORDER  # N, the highest n-gram order
    effective_order: bool = False  # stop at the first order the hypothesis has no n-grams of
    signature_version: str = ""  # what the signature prints after version:; "" = seqlab's version

    def __post_init__(self):
        if self.tokenize not in TOKENIZERS:
            raise SeqlabError(f"unknown tokenizer {self.tokenize!r}; choose one of {', '.join(TOKENIZERS)}")
        if self.smooth_method not in SMOOTH_DEFAULTS:
            raise SeqlabError(f"unknown smoothing method {self.smooth_method!r}; "
                              f"choose one of {', '.join(SMOOTH_DEFAULTS)}")
        value = self.smooth_value
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise SeqlabError(f"smooth_value must be a finite number >= 0, got {value!r}; "
                              "or leave it unset for the method's default")
        if isinstance(self.max_ngram_order, bool) or not isinstance(self.max_ngram_order, int) \
                or self.max_ngram_order < 1:
            raise SeqlabError(f"max_ngram_order must be an integer >= 1, got {self.max_ngram_order!r}")

    # ---- signature (§1.10)

    def signature(self, nrefs: int | str = 1, short: bool = False) -> str:
        """``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:X`` (``short``: ``#:1|c:mixed|...``)."""
        smooth = self.smooth_method
        if SMOOTH_DEFAULTS[smooth] is not None:
            value = SMOOTH_DEFAULTS[smooth] if self.smooth_value is None else self.smooth_value
            smooth += f"[{value:.2f}]"
        fields = [("nrefs", "#", nrefs), ("case", "c", "lc" if self.lowercase else "mixed"),
                  ("eff", "e", "yes" if self.effective_order else "no"), ("tok", "tok", self.tokenize),
                  ("smooth", "s", smooth), ("version", "v", self.signature_version or __version__)]
        return "|".join(f"{abbr if short else key}:{value}" for key, abbr, value in fields)

    # ---- statistics

    def _tokens(self, line: str) -> list[str]:
        """Preprocessing (§1.2): optional lowercasing, right strip, tokenizer."""
        return TOKENIZERS[self.tokenize]((line.lower() if self.lowercase else line).rstrip())

    def _reference_ngrams(self, refs: tuple[str, ...]) -> tuple[list[int], list[set]]:
        """The references' lengths and their merged n-gram multisets (max count over references, §1.4)."""
        tokens = [self._tokens(ref) for ref in refs]
        sets = [extract_ngrams(t, self.max_ngram_order) for t in tokens]
        if len(sets) == 1:
            merged = sets[0]
        else:  # the union of occurrence sets holds each n-gram max_k count_k times
            merged = [set().union(*(s[n] for s in sets)) for n in range(self.max_ngram_order)]
        return [len(t) for t in tokens], merged

    def _statistics(self, hypotheses: Sequence[str], references) -> tuple[list[tuple], int | str]:
        """Per-segment (hyp_len, ref_len, correct_1..N, total_1..N) and the signature's nrefs (§1.4-1.5).

        Call it with the garbage collector paused (see :func:`gc_paused`).
        """
        streams = check_corpus(hypotheses, references)
        max_order = self.max_ngram_order
        ref_cache: dict[tuple[str, ...], tuple[list[int], list[set]]] = {}  # a segment's references -> n-grams
        nrefs = set()
        stats = []
        for i, hyp in enumerate(hypotheses):
            refs = tuple(stream[i] for stream in streams if stream[i] is not None)  # None: fewer refs here
            nrefs.add(len(refs))
            cached = ref_cache.get(refs)
            if cached is None:
                cached = ref_cache[refs] = self._reference_ngrams(refs)
            ref_lens, ref_sets = cached
            hyp_tokens = self._tokens(hyp)
            hyp_len = len(hyp_tokens)
            # clipped counts: |hyp ∩ ref| per order; the hypothesis has L - n + 1 n-grams of order n
            correct = clipped_counts(hyp_tokens, ref_sets)
            total = [max(hyp_len - n, 0) for n in range(max_order)]
            stats.append((hyp_len, closest_ref_len(hyp_len, ref_lens), correct, total))
        return stats, (nrefs.pop() if len(nrefs) == 1 else "var")

    def _score(self, correct: list, total: list, sys_len: int, ref_len: int, nrefs) -> BLEUScore:
        result = compute_bleu(correct, total, sys_len, ref_len, self.smooth_method, self.smooth_value,
                              self.effective_order)
        result.signature = self.signature(nrefs)
        return result

    # ---- public scoring

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]) -> BLEUScore:
        """Corpus BLEU: statistics summed over segments, then one score (§1.6)."""
        with gc_paused():
            stats, nrefs = self._statistics(hypotheses, references)
        hyp_lens, ref_lens, corrects, totals = zip(*stats)  # integers: the order of the sums is immaterial
        correct = [sum(column) for column in zip(*corrects)]
        total = [sum(column) for column in zip(*totals)]
        return self._score(correct, total, sum(hyp_lens), sum(ref_lens), nrefs)

    def sentence_scores(self, hypotheses: Sequence[str],
                        references: Sequence[Sequence[str | None]]) -> list[BLEUScore]:
        """One score per segment (each a corpus of one), for error analysis."""
        with gc_paused():
            stats, nrefs = self._statistics(hypotheses, references)
        return [self._score(correct, total, hyp_len, ref_len, nrefs) for hyp_len, ref_len, correct, total in stats]

    def sentence_score(self, hypothesis: str, references: Sequence[str | None]) -> BLEUScore:
        """The score of one segment against its references ``[ref1, ref2, ...]``."""
        if not isinstance(hypothesis, str) or isinstance(references, str):
            raise SeqlabError("sentence_score takes one hypothesis string and a list of its reference strings")
        return self.corpus_score([hypothesis], [[r] for r in references])


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], *,
                smooth_method: str = "exp", smooth_value: float | None = None, lowercase: bool = False,
                tokenize: str = "13a", effective_order: bool = False) -> BLEUScore:
    """Corpus BLEU with sacreBLEU's defaults (``sacrebleu.corpus_bleu``); ``references[k][i]``."""
    return BLEU(lowercase=lowercase, tokenize=tokenize, smooth_method=smooth_method, smooth_value=smooth_value,
                effective_order=effective_order).corpus_score(hypotheses, references)


def sentence_bleu(hypothesis: str, references: Sequence[str | None], *, smooth_method: str = "exp",
                  smooth_value: float | None = None, lowercase: bool = False, tokenize: str = "13a",
                  effective_order: bool = True) -> BLEUScore:
    """Sentence BLEU with sacreBLEU's defaults (``sacrebleu.sentence_bleu``: effective order on)."""
    return BLEU(lowercase=lowercase, tokenize=tokenize, smooth_method=smooth_method, smooth_value=smooth_value,
                effective_order=effective_order).sentence_score(hypothesis, references)
