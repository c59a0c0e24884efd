"""Metrics identical to the reference implementations.

BLEU and chrF (sacreBLEU 2.6.0), entity-level F1 (seqeval 1.2.2), accuracy and macro-F1
(scikit-learn; the module `seqlab.metrics.accuracy`), token NLL and perplexity (specs/metrics.md §4).
"""

from seqlab.metrics.accuracy import classification_scores, confusion_matrix, macro_f1
from seqlab.metrics.bleu import BLEU, BLEUScore, corpus_bleu, sentence_bleu
from seqlab.metrics.chrf import corpus_chrf
from seqlab.metrics.lm import nll_sum, perplexity
from seqlab.metrics.ner import classification_report, entity_f1

__all__ = ["BLEU", "BLEUScore", "corpus_bleu", "sentence_bleu", "corpus_chrf", "entity_f1", "classification_report",
           "macro_f1", "classification_scores", "confusion_matrix", "nll_sum", "perplexity"]
