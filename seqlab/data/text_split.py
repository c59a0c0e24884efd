"""Deterministic splits of one text into train, valid and test: contiguous pieces in order, sized by fractions
(``data.split``, default :data:`DEFAULT_SPLIT`)."""

from __future__ import annotations

from collections.abc import Sequence

from seqlab.base.errors import SeqlabError

DEFAULT_SPLIT = (0.9, 0.05, 0.05)  # train, valid, test


def split_text(text: str, fractions: Sequence[float] = DEFAULT_SPLIT) -> tuple[str, str, str]:
    """Cut ``text`` into (train, valid, test): contiguous pieces in order, sizes by character
    fractions (boundaries ``round(n * f_train)`` and ``round(n * (f_train + f_valid))``), deterministic."""
    a, b = split_points(len(text), fractions)
    return text[:a], text[a:b], text[b:]


def split_points(n: int, fractions: Sequence[float] = DEFAULT_SPLIT) -> tuple[int, int]:
    """The two cut points (character indices) of :func:`split_text` for a text of ``n`` characters; a split
    with a positive fraction that would be empty is an error."""
    fractions = _check_fractions(fractions)
    a = min(n, round(n * fractions[0]))
    b = max(a, min(n, round(n * (fractions[0] + fractions[1]))))
    for size, fraction, split in zip((a, b - a, n - b), fractions, ("train", "valid", "test")):
        if fraction > 0 and not size:
            raise SeqlabError(
                f"the corpus ({n} characters) is too short for a {split} split of {fraction:g}; "
                "give more text or change data.split"
            )
    return a, b


def _check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    try:
        values = tuple(float(f) for f in fractions)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float
        values = ()
    fix = "give three fractions for train, valid, test, e.g. data.split = [0.9, 0.05, 0.05]"
    if len(values) != 3:
        raise SeqlabError(f"split fractions must be three numbers, got {fractions!r}; {fix}")
    if any(not (v >= 0) for v in values):  # also catches NaN
        raise SeqlabError(f"split fractions must be non-negative, got {list(values)}; {fix}")
    if abs(sum(values) - 1.0) > 1e-6:
        raise SeqlabError(f"split fractions must sum to 1, got {list(values)} (sum {sum(values):g}); {fix}")
    if values[0] <= 0:
        raise SeqlabError(f"the train fraction must be > 0, got {values[0]:g}; {fix}")
    return values
