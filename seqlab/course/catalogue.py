"""The course's chapters, one per tutorial of the site, and their exercises in order.

Each chapter's exercises live in two modules, split by topic (``ch06_attention``: 06.1-06.5, ``ch06_layers``:
06.6-06.8), each with a tuple ``EXERCISES``; a chapter's tuple here is theirs joined in id order. Ids are
"CHAPTER.NUMBER" ("06.2"), numbered in the order the tutorial teaches them.
"""

from __future__ import annotations

from seqlab.course import (ch01_fit, ch01_forecast, ch02_batching, ch02_vocabularies, ch03_cells, ch03_sequences,
                           ch04_glove, ch04_word2vec, ch05_attention, ch05_bleu, ch06_attention, ch06_layers,
                           ch07_encoder, ch07_sentences)
from seqlab.course.exercise import Exercise

# chapter -> (title, the tutorial's page under docs/tutorials/, its exercises)
CHAPTERS: dict[str, tuple[str, str, tuple[Exercise, ...]]] = {
    "01": ("Time series and AR(p)", "01-time-series-ar", ch01_fit.EXERCISES + ch01_forecast.EXERCISES),
    "02": ("Tokens and vocabularies", "02-tokens-and-vocabularies",
           ch02_vocabularies.EXERCISES + ch02_batching.EXERCISES),
    "03": ("RNN, GRU and LSTM", "03-recurrent-networks", ch03_cells.EXERCISES + ch03_sequences.EXERCISES),
    "04": ("Word embeddings", "04-word-embeddings", ch04_word2vec.EXERCISES + ch04_glove.EXERCISES),
    "05": ("Seq2seq with attention", "05-seq2seq-attention", ch05_attention.EXERCISES + ch05_bleu.EXERCISES),
    "06": ("The Transformer", "06-transformer", ch06_attention.EXERCISES + ch06_layers.EXERCISES),
    "07": ("Pretrained encoders", "07-pretrained-encoders", ch07_encoder.EXERCISES + ch07_sentences.EXERCISES),
}


def exercises(chapter: str | int | None = None) -> list[Exercise]:
    """Every exercise, or one chapter's ("06" or 6), in the order the chapters teach them."""
    if chapter is None:
        return [exercise for _, _, listed in CHAPTERS.values() for exercise in listed]
    key = f"{int(chapter):02d}" if str(chapter).isdigit() else str(chapter)
    if key not in CHAPTERS:
        from seqlab.base.errors import SeqlabError

        raise SeqlabError(f"there is no chapter {chapter!r}; the chapters are {', '.join(CHAPTERS)}")
    return list(CHAPTERS[key][2])


def find(exercise_id: str) -> Exercise | None:
    """The exercise with this id ("06.2"), or None."""
    return next((exercise for exercise in exercises() if exercise.id == str(exercise_id).strip()), None)
