"""The warning issued when a precision or recall had a zero denominator (:mod:`seqlab.metrics.ner`).

It subclasses ``sklearn.exceptions.UndefinedMetricWarning``, the class seqeval warns with, so a filter written for
seqeval silences seqlab too; without scikit-learn it subclasses UserWarning. A module of its own, imported where a
warning is issued (and re-exported lazily by :mod:`seqlab.metrics.ner`), so that importing the metrics does not
import scikit-learn (over a second here).
"""

try:
    from sklearn.exceptions import UndefinedMetricWarning as _Base
except ImportError:
    _Base = UserWarning


class UndefinedMetricWarning(_Base):
    """A precision or recall had a zero denominator and was set by ``zero_division`` ('warn' -> 0.0)."""
