"""Classification metrics for the many-to-one tasks of the notes (sentiment): accuracy, macro F1,
confusion matrix; identical to scikit-learn's ``accuracy_score``, ``f1_score(average='macro',
zero_division=0)`` and ``confusion_matrix``.

Per class c, with tp_c the examples of class c predicted as c:
    F1_c = 2·tp_c / (|gold = c| + |pred = c|)          (0 when both counts are 0)
    macro F1 = mean over the classes seen in gold or predictions
This is sklearn's (1 + β²)·tp / ((1 + β²)·tp + β²·fn + fp) at β = 1, evaluated in the same order,
so the numbers are bit-identical.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from seqlab.base.errors import SeqlabError


def _check(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> None:
    if len(y_true) != len(y_pred):
        raise SeqlabError(f"{len(y_true)} gold labels but {len(y_pred)} predictions; predict one label per example")
    if len(y_true) == 0:
        raise SeqlabError("no examples to score; pass at least one gold label and prediction")


def class_labels(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> list:
    """The sorted union of the labels in gold and predictions (sklearn's ``unique_labels``)."""
    try:
        return sorted(set(y_true) | set(y_pred))
    except TypeError as err:
        raise SeqlabError(f"labels mix types that cannot be ordered ({err}); use one type, e.g. strings") from None


def confusion_matrix(y_true: Sequence[Hashable], y_pred: Sequence[Hashable],
                     labels: Sequence[Hashable] | None = None) -> tuple[list, np.ndarray]:
    """(labels, counts): counts[i, j] = examples of gold class labels[i] predicted as labels[j]."""
    _check(y_true, y_pred)
    labels = class_labels(y_true, y_pred) if labels is None else list(labels)
    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)  # (gold class, predicted class)
    for gold, pred in zip(y_true, y_pred):
        if gold in index and pred in index:  # as sklearn: pairs outside `labels` are left out
            counts[index[gold], index[pred]] += 1
    return labels, counts


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Fraction of examples whose prediction equals the gold label."""
    _check(y_true, y_pred)
    return float(np.mean(np.array([t == p for t, p in zip(y_true, y_pred)], dtype=bool)))


def macro_f1(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Unweighted mean over classes of the per-class F1 (a 0/0 class scores 0)."""
    _, counts = confusion_matrix(y_true, y_pred)
    tp = np.diag(counts).astype(np.float64)  # (classes,)
    denom = 1.0 * counts.sum(axis=1).astype(np.float64) + counts.sum(axis=0)  # β²·|gold| + |pred|, (classes,)
    safe = np.where(denom == 0, 1.0, denom)
    f1 = np.where(denom == 0, 0.0, (1 + 1.0) * tp / safe)
    return float(np.mean(f1))


def classification_scores(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> dict[str, float]:
    """What ``seqlab eval`` prints for a classifier: ``accuracy`` and ``macro_f1``."""
    return {"accuracy": accuracy(y_true, y_pred), "macro_f1": macro_f1(y_true, y_pred)}
