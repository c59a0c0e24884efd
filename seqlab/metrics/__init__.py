"""Metrics identical to the reference implementations.

BLEU and chrF (sacreBLEU 2.6.0), entity-level F1 (seqeval 1.2.2), accuracy and macro-F1
(scikit-learn; the module `seqlab.metrics.accuracy`), token NLL and perplexity (specs/metrics.md §4).

The names below are imported on first use, so that ``import seqlab.metrics.bleu`` (and ``seqlab bleu``)
loads neither torch (``seqlab.metrics.lm``) nor numpy (``accuracy``, ``ner``).
"""

from __future__ import annotations

from seqlab.base.lazy import lazy_exports

# public name -> module that defines it (imported on first attribute access)
_EXPORTS: dict[str, str] = {
    "BLEU": "seqlab.metrics.bleu",
    "BLEUScore": "seqlab.metrics.bleu",
    "corpus_bleu": "seqlab.metrics.bleu",
    "sentence_bleu": "seqlab.metrics.bleu",
    "corpus_chrf": "seqlab.metrics.chrf",
    "entity_f1": "seqlab.metrics.ner",
    "classification_report": "seqlab.metrics.ner",
    "UndefinedMetricWarning": "seqlab.metrics.undefined_metric",
    "macro_f1": "seqlab.metrics.accuracy",
    "classification_scores": "seqlab.metrics.accuracy",
    "confusion_matrix": "seqlab.metrics.accuracy",
    "nll_sum": "seqlab.metrics.lm",
    "perplexity": "seqlab.metrics.lm",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = list(_EXPORTS)
