"""Metrics identical to the reference implementations: BLEU and chrF (sacreBLEU 2.6.0)."""

from seqlab.metrics.bleu import BLEU, BLEUScore, corpus_bleu, sentence_bleu
from seqlab.metrics.chrf import corpus_chrf

__all__ = ["BLEU", "BLEUScore", "corpus_bleu", "sentence_bleu", "corpus_chrf"]
