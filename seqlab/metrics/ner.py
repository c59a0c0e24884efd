"""Entity-level precision, recall and F1 for sequence tagging, identical to seqeval 1.2.2.

The tagger of the notes ("Named Entity Representation", many-to-many) emits one tag per token;
it is scored on *entities*, spans of tokens with a type, not on tokens. An entity counts as found
only when its type, start and end all match a gold entity exactly.

Two ways of reading entities out of a tag sequence (../shared/specs/metrics.md §2; in
:mod:`seqlab.metrics.entities`):

* default mode (§2.3): the conlleval-compatible chunker. It handles IOB1, IOB2, IOE and IOBES
  without being told the scheme and repairs ill-formed input (an ``I-`` after ``O`` opens an entity).
* strict mode (§2.4): a scheme (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU) says which prefix pairs start,
  continue and end an entity; spans that do not start and end legally are dropped, and prefixes
  foreign to the scheme are an error.

Scoring (§2.6), per entity type t with tp = |gold_t ∩ pred_t|:
    P_t = tp / |pred_t|        R_t = tp / |gold_t|        F_t = (1 + β²)·P_t·R_t / (β²·P_t + R_t)
micro averages sum tp, |pred| and |gold| over types before dividing; macro is the unweighted mean
of the per-type scores, weighted the mean weighted by support. The arithmetic follows seqeval's
numpy expressions operation for operation (including numpy's pairwise summation in the means), so
every number is bit-identical.

Deliberate deviations from seqeval, all on inputs seqeval mishandles:
* ``mode='strict'`` without a scheme raises :class:`SeqlabError` (seqeval's score functions silently
  fall back to default mode, and its ``classification_report`` silently auto-detects). Pass
  ``scheme='auto'`` to auto-detect the scheme from ``y_true`` as seqeval's report does.
* Bad input (mismatched lengths, an unparsable tag) raises :class:`SeqlabError` naming the
  sentence, instead of TypeError/KeyError/IndexError.
* Default mode does not warn about tags that do not look like NE tags.
* ``classification_report`` with no entities at all returns the (empty) report instead of failing,
  and token ``accuracy_score`` of no tokens raises SeqlabError instead of ZeroDivisionError.

Schemes may be given by name (``"IOB2"``) or as seqeval's scheme classes (their ``__name__`` is used).
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from seqlab.base.errors import SeqlabError
from seqlab.base.lazy import lazy_exports
from seqlab.metrics.entities import SCHEMES, Scheme, Tags, get_entities, get_entities_strict, resolve_scheme

AVERAGES = (None, "micro", "macro", "weighted")


# UndefinedMetricWarning, this module's attribute: imported on first use, since it imports scikit-learn
__getattr__, __dir__ = lazy_exports(__name__, {"UndefinedMetricWarning": "seqlab.metrics.undefined_metric"},
                                    globals())


# --------------------------------------------------------------------------------------------
# Counting and scoring (§2.6)


def _check_inputs(y_true: Sequence[Tags], y_pred: Sequence[Tags]) -> None:
    """Refuse anything but two equally shaped lists of tag sequences."""
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if isinstance(y, str) or any(isinstance(tags, str) for tags in y):
            raise SeqlabError(f"{name} must be a list of tag sequences, one per sentence, not a flat list of "
                              "tags; wrap a single sentence in a list")
    if len(y_true) != len(y_pred):
        raise SeqlabError(f"y_true has {len(y_true)} sentences but y_pred has {len(y_pred)}; "
                          "pass one predicted tag sequence per gold sentence")
    for i, (gold, pred) in enumerate(zip(y_true, y_pred)):
        if len(gold) != len(pred):
            raise SeqlabError(f"sentence {i} has {len(gold)} gold tags but {len(pred)} predicted tags; "
                              "predict exactly one tag per token")


def _strict_scheme(mode: str | None, scheme: Any, y_true: Sequence[Tags], suffix: bool) -> Scheme | None:
    """The scheme strict mode runs with, or None for default mode."""
    if mode in (None, "default"):
        if scheme is not None and getattr(scheme, "__name__", scheme) != "auto":
            resolve_scheme(scheme)  # refuse a misspelt name; default mode itself needs no scheme (as in seqeval)
        return None
    if mode != "strict":
        raise SeqlabError(f"unknown mode {mode!r}; use 'default' (conlleval-compatible, also None) or 'strict'")
    if scheme is None:
        raise SeqlabError("mode='strict' needs a scheme; pass scheme= one of "
                          f"{', '.join(SCHEMES)}, or 'auto' to detect it from y_true")
    return resolve_scheme(scheme, y_true, suffix)


@dataclass(frozen=True)
class EntityCounts:
    """Per-type entity counts, types in sorted order (the rows of the report)."""

    types: list[str]  # entity types seen in gold or predicted entities, sorted
    pred_sum: np.ndarray  # (types,) number of predicted entities
    tp_sum: np.ndarray  # (types,) predicted entities that exactly match a gold one
    true_sum: np.ndarray  # (types,) number of gold entities (the support)


def count_entities(
    y_true: Sequence[Tags], y_pred: Sequence[Tags], *, mode: str | None = None, scheme: Any = None,
    suffix: bool = False,
) -> EntityCounts:
    """Extract gold and predicted entities (same mode and scheme) and count them per type."""
    _check_inputs(y_true, y_pred)
    strict = _strict_scheme(mode, scheme, y_true, suffix)
    sets: list[dict[str, set]] = []
    for y in (y_true, y_pred):
        by_type: dict[str, set] = defaultdict(set)
        if strict is None:
            for type_, start, end in get_entities(y, suffix):
                by_type[type_].add((start, end))
        else:
            for sentence, type_, start, end in get_entities_strict(y, strict, suffix):
                by_type[type_].add((sentence, start, end))
        sets.append(by_type)
    true, pred = sets
    types = sorted(set(true) | set(pred))
    return EntityCounts(
        types=types,
        pred_sum=np.array([len(pred.get(t, ())) for t in types], dtype=np.int64),
        tp_sum=np.array([len(true.get(t, set()) & pred.get(t, set())) for t in types], dtype=np.int64),
        true_sum=np.array([len(true.get(t, ())) for t in types], dtype=np.int64),
    )


def _zero_division_value(zero_division: Any) -> float:
    if zero_division not in ("warn", 0, 1):
        raise SeqlabError(f"zero_division must be 'warn', 0 or 1, got {zero_division!r}")
    return 0.0 if zero_division in ("warn", 0) else 1.0


def _warn_prf(average: str | None, modifier: str, msg_start: str, result_size: int) -> None:
    """sklearn's / seqeval's UndefinedMetricWarning text."""
    from seqlab.metrics.undefined_metric import UndefinedMetricWarning  # a module __getattr__ serves no own code

    where = "due to" if result_size == 1 else "in labels with"
    warnings.warn(f"{msg_start} ill-defined and being set to 0.0 {where} no {modifier} samples. "
                  "Use `zero_division` parameter to control this behavior.", UndefinedMetricWarning,
                  stacklevel=3)


def _prf_divide(numerator: np.ndarray, denominator: np.ndarray, metric: str, modifier: str,
                average: str | None, warn_for: Sequence[str], zero_division: Any) -> np.ndarray:
    """numerator / denominator elementwise; 0/0 becomes the zero_division value (seqeval ``_prf_divide``)."""
    mask = denominator == 0.0
    denominator = denominator.copy()
    denominator[mask] = 1
    result = numerator / denominator
    if not np.any(mask):
        return result
    result[mask] = _zero_division_value(zero_division)
    if zero_division == "warn" and metric in warn_for:
        msg_start = f"{metric.title()} and F-score are" if "f-score" in warn_for else f"{metric.title()} is"
        _warn_prf(average, modifier, msg_start, len(result))
    return result


def scores_from_counts(
    counts: EntityCounts, *, average: str | None = None, warn_for: Sequence[str] = ("precision", "recall", "f-score"),
    beta: float = 1.0, zero_division: Any = "warn",
) -> tuple[Any, Any, Any, Any]:
    """(precision, recall, f_beta, support), per type (arrays) or averaged; seqeval's arithmetic exactly."""
    if beta < 0:
        raise SeqlabError(f"beta must be >= 0, got {beta}")
    if average not in AVERAGES:
        raise SeqlabError(f"average must be one of {AVERAGES}, got {average!r}")
    _zero_division_value(zero_division)
    pred_sum, tp_sum, true_sum = counts.pred_sum, counts.tp_sum, counts.true_sum
    if average == "micro":  # sum the counts over types first, then divide once
        tp_sum, pred_sum, true_sum = (np.array([a.sum()]) for a in (tp_sum, pred_sum, true_sum))
    beta2 = beta**2
    precision = _prf_divide(tp_sum, pred_sum, "precision", "predicted", average, warn_for, zero_division)
    recall = _prf_divide(tp_sum, true_sum, "recall", "true", average, warn_for, zero_division)
    if zero_division == "warn" and tuple(warn_for) == ("f-score",) and (pred_sum[true_sum == 0] == 0).any():
        _warn_prf(average, "true nor predicted", "F-score is", len(true_sum))
    if np.isposinf(beta):
        f_score = recall
    else:
        denom = beta2 * precision + recall
        denom[denom == 0.0] = 1  # P = R = 0 gives F = 0
        f_score = (1 + beta2) * precision * recall / denom  # F_beta = (1+β²)·P·R / (β²·P + R)
    weights = None
    if average == "weighted":
        weights = true_sum
        if weights.sum() == 0:  # no gold entities at all: seqeval's special case
            zd = 0.0 if zero_division in ("warn", 0) else 1.0
            no_pred = pred_sum.sum() == 0
            return (zd if no_pred else 0.0, zd, zd if no_pred else 0.0, sum(true_sum))
    if average is None:
        return precision, recall, f_score, true_sum
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # macro over zero types is nan, as in seqeval
        return (np.average(precision, weights=weights), np.average(recall, weights=weights),
                np.average(f_score, weights=weights), sum(true_sum))


# --------------------------------------------------------------------------------------------
# seqeval-compatible entry points


def precision_recall_fscore_support(
    y_true: Sequence[Tags], y_pred: Sequence[Tags], *, average: str | None = None,
    warn_for: Sequence[str] = ("precision", "recall", "f-score"), beta: float = 1.0, sample_weight: Any = None,
    zero_division: Any = "warn", suffix: bool = False, mode: str | None = None, scheme: Any = None,
) -> tuple[Any, Any, Any, Any]:
    """(precision, recall, f_beta, support) as seqeval returns them; ``sample_weight`` has no effect there either."""
    counts = count_entities(y_true, y_pred, mode=mode, scheme=scheme, suffix=suffix)
    return scores_from_counts(counts, average=average, warn_for=warn_for, beta=beta, zero_division=zero_division)


def f1_score(y_true: Sequence[Tags], y_pred: Sequence[Tags], *, average: str | None = "micro", suffix: bool = False,
             mode: str | None = None, sample_weight: Any = None, zero_division: Any = "warn",
             scheme: Any = None) -> Any:
    """Entity F1 (micro by default), seqeval's ``f1_score``."""
    return precision_recall_fscore_support(y_true, y_pred, average=average, warn_for=("f-score",), beta=1,
                                           zero_division=zero_division, suffix=suffix, mode=mode, scheme=scheme)[2]


def precision_score(y_true: Sequence[Tags], y_pred: Sequence[Tags], *, average: str | None = "micro",
                    suffix: bool = False, mode: str | None = None, sample_weight: Any = None,
                    zero_division: Any = "warn", scheme: Any = None) -> Any:
    """Entity precision (micro by default), seqeval's ``precision_score``."""
    return precision_recall_fscore_support(y_true, y_pred, average=average, warn_for=("precision",),
                                           zero_division=zero_division, suffix=suffix, mode=mode, scheme=scheme)[0]


def recall_score(y_true: Sequence[Tags], y_pred: Sequence[Tags], *, average: str | None = "micro",
                 suffix: bool = False, mode: str | None = None, sample_weight: Any = None,
                 zero_division: Any = "warn", scheme: Any = None) -> Any:
    """Entity recall (micro by default), seqeval's ``recall_score``."""
    return precision_recall_fscore_support(y_true, y_pred, average=average, warn_for=("recall",),
                                           zero_division=zero_division, suffix=suffix, mode=mode, scheme=scheme)[1]


def accuracy_score(y_true: Sequence[Tags] | Tags, y_pred: Sequence[Tags] | Tags) -> float:
    """Token-level accuracy, ``O`` tags included (seqeval's ``accuracy_score``)."""
    if any(not isinstance(tags, str) for tags in y_true):
        _check_inputs(y_true, y_pred)
        y_true = [tag for tags in y_true for tag in tags]
        y_pred = [tag for tags in y_pred for tag in tags]
    if len(y_true) != len(y_pred):
        raise SeqlabError(f"{len(y_true)} gold tags but {len(y_pred)} predicted; predict exactly one tag per token")
    if not y_true:
        raise SeqlabError("accuracy of an empty tag list is undefined; pass at least one tagged token")
    return sum(t == p for t, p in zip(y_true, y_pred)) / len(y_true)


def classification_report(
    y_true: Sequence[Tags], y_pred: Sequence[Tags], digits: int = 2, suffix: bool = False, output_dict: bool = False,
    mode: str | None = None, sample_weight: Any = None, zero_division: Any = "warn", scheme: Any = None,
) -> str | dict[str, dict[str, Any]]:
    """Per-type rows then micro, macro and weighted averages, laid out exactly as seqeval prints them."""
    counts = count_entities(y_true, y_pred, mode=mode, scheme=scheme, suffix=suffix)
    rows = list(zip(counts.types, *scores_from_counts(counts, average=None, zero_division=zero_division)))
    averages = [(f"{average} avg", *scores_from_counts(counts, average=average, zero_division=zero_division))
                for average in ("micro", "macro", "weighted")]
    if output_dict:
        return {name: {"precision": p, "recall": r, "f1-score": f, "support": s}
                for name, p, r, f, s in rows + averages}
    width = max(max((len(t) for t in counts.types), default=0), len("weighted avg"), digits)
    row_fmt = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}"
    lines = [row_fmt.format(*row, width=width, digits=digits) for row in rows] + [""]
    lines += [row_fmt.format(*row, width=width, digits=digits) for row in averages] + [""]
    header = ("{:>{width}s} " + " {:>9}" * 4).format("", "precision", "recall", "f1-score", "support", width=width)
    return header + "\n\n" + "\n".join(lines)


def entity_f1(y_true: Sequence[Tags], y_pred: Sequence[Tags], mode: str | None = None,
                  scheme: Any = None) -> dict[str, Any]:
    """What ``seqlab eval`` prints for a tagger: micro precision, recall, f1, and per-type scores.

    ``mode``: None or 'default' (conlleval-compatible) or 'strict' (needs ``scheme``). Undefined ratios
    (no predicted or no gold entities) are 0.0, without a warning. Values are Python floats, bit-equal
    to seqeval's.
    """
    counts = count_entities(y_true, y_pred, mode=mode, scheme=scheme)
    precision, recall, f1, _ = scores_from_counts(counts, average="micro", zero_division=0)
    per_p, per_r, per_f, support = scores_from_counts(counts, average=None, zero_division=0)
    per_type = {
        name: {"precision": float(per_p[i]), "recall": float(per_r[i]), "f1": float(per_f[i]),
               "support": int(support[i])}
        for i, name in enumerate(counts.types)
    }
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1), "per_type": per_type}
