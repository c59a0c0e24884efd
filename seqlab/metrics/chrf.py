"""chrF (Popović 2015), bit-identical to sacreBLEU 2.6.0's ``CHRF()`` defaults: chrF2, nc 6, nw 0, space no.

A character n-gram F-score, a companion to the notes' BLEU that needs no tokenizer. For each order
n = 1..nc, with whitespace removed from both sides:

    chrP_n = matched n-grams / hypothesis n-grams        chrR_n = matched n-grams / reference n-grams

matches clipped as in BLEU (min of the two counts). Per segment the reference with the best F-score
is kept; statistics are summed over the corpus; the precisions and recalls of the orders that both
sides have are averaged (sacreBLEU's "effective order", ``eff:yes``), and

    chrF_β = 100 · (1 + β²) · chrP · chrR / (β² · chrP + chrR),   β = 2 (recall weighs 4x).

β = 0 gives chrF0 = 100 · chrP, precision only (as sacreBLEU's ``CHRF(beta=0)``; chrP and chrR are
zero together, so the denominator never is).

The arithmetic follows sacreBLEU's ``CHRF._compute_f_score`` line for line. chrF++ (word n-grams,
nw > 0) and epsilon smoothing are not implemented. A segment with no reference raises
:class:`SeqlabError` (sacreBLEU fails on it with an IndexError), and so does a negative β (which
sacreBLEU reads as -β).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seqlab.base.version import __version__
from seqlab.base.errors import SeqlabError
from seqlab.metrics.bleu import check_corpus, gc_paused, ngram_multiset


@dataclass
class CHRFScore:
    """A chrF score (0-100, unrounded) and how it was computed."""

    score: float  # 0-100, unrounded
    beta: int  # recall is weighted beta² times precision (0: precision only)
    signature: str = ""  # e.g. nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:0.1.0

    @property
    def name(self) -> str:
        return f"chrF{self.beta}"

    def format(self, width: int = 2, score_only: bool = False, signature: str = "") -> str:
        """sacreBLEU's ``Score.format``: ``chrF2[|signature] = 51.95``, or just the score."""
        score = f"{self.score:.{width}f}"
        if score_only:
            return score
        return f"{self.name}|{signature} = {score}" if signature else f"{self.name} = {score}"

    def __str__(self) -> str:
        return self.format()


def _char_ngrams(line: str, char_order: int, whitespace: bool) -> list[set]:
    """Character n-gram multisets of orders 1..char_order (whitespace removed unless ``whitespace``)."""
    if not whitespace:
        line = "".join(line.split())
    return [ngram_multiset([line[i : i + n] for i in range(len(line) - n + 1)]) for n in range(1, char_order + 1)]


def _f_score(stats: list[int], char_order: int, beta: int) -> float:
    """sacreBLEU's ``_compute_f_score`` without eps smoothing; ``stats`` = [hyp, ref, match] per order."""
    eps = 1e-16
    factor = beta**2
    avg_prec, avg_rec, effective_order = 0.0, 0.0, 0
    for i in range(char_order):
        n_hyp, n_ref, n_match = stats[3 * i : 3 * i + 3]
        prec = n_match / n_hyp if n_hyp > 0 else eps
        rec = n_match / n_ref if n_ref > 0 else eps
        if n_hyp > 0 and n_ref > 0:  # average only the orders both sides have
            avg_prec += prec
            avg_rec += rec
            effective_order += 1
    if effective_order == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        score = (1 + factor) * avg_prec * avg_rec
        score /= (factor * avg_prec) + avg_rec
        return 100 * score
    return 0.0


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str | None]], *, char_order: int = 6,
                beta: int = 2, lowercase: bool = False, whitespace: bool = False) -> CHRFScore:
    """Corpus chrF with sacreBLEU's defaults; ``references[k][i]`` is the k-th reference of segment i."""
    for name, value, least in (("char_order", char_order, 1), ("beta", beta, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SeqlabError(f"{name} must be an integer >= {least}, got {value!r}")
    streams = check_corpus(hypotheses, references)
    total = [0] * (3 * char_order)
    nrefs = set()
    with gc_paused():
        for i, hyp in enumerate(hypotheses):
            refs = [s[i] for s in streams if s[i] is not None]  # at least one (check_corpus)
            nrefs.add(len(refs))
            if lowercase:
                hyp, refs = hyp.lower(), [r.lower() for r in refs]
            hyp_sets = _char_ngrams(hyp, char_order, whitespace)
            best_stats, best_f = [], -1.0
            for ref in refs:
                stats = []
                for hyp_set, ref_set in zip(hyp_sets, _char_ngrams(ref, char_order, whitespace)):
                    # [hypothesis n-grams (0 if the reference has none), reference n-grams, clipped matches]
                    stats += [len(hyp_set) if ref_set else 0, len(ref_set), len(hyp_set & ref_set)]
                f = _f_score(stats, char_order, beta) if len(refs) > 1 else 0.0
                if f > best_f:  # the first of equally good references wins, as in sacreBLEU
                    best_stats, best_f = stats, f
            total = [a + b for a, b in zip(total, best_stats)]
    nref = nrefs.pop() if len(nrefs) == 1 else "var"
    signature = (f"nrefs:{nref}|case:{'lc' if lowercase else 'mixed'}|eff:yes|nc:{char_order}|nw:0|"
                 f"space:{'yes' if whitespace else 'no'}|version:{__version__}")
    return CHRFScore(_f_score(total, char_order, beta), beta, signature)
