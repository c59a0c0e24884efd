"""Singleton replacement (Lample et al. 2016, section 4: singletons are replaced by the unknown word's embedding
with probability 0.5 while training): while a tagger trains, each occurrence of a word seen exactly once in the
training split reads as <unk> with probability ``train.singleton_unk``, so that <unk>'s embedding is learned from
rare words like the ones a test set brings, and the tagger learns to read such words from their context and
characters. Validation, evaluation and prediction never replace.

The vocabulary orders words by frequency (ties by first occurrence, :class:`~seqlab.text.vocab.Vocab`), so the
words seen once are one run of ids at the end of the training words, [first, end): ``RUN/singletons.json``
keeps it, written with the vocabulary and read again on ``--resume``. ``data.min_freq`` must be 1: a larger one
leaves those words out of the vocabulary, where they read as <unk> every time already.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError, spelled
from seqlab.base.io import read_json, write_json_atomic
from seqlab.text.vocab import UNK, Vocab

SINGLETONS = "singletons.json"


@dataclass(frozen=True)
class Singletons:
    """The ids [first, end) of the words seen once in training, replaced by ``unk`` with probability ``p``."""

    p: float
    first: int
    end: int
    unk: int

    def apply(self, ids: Tensor) -> Tensor:
        """ids (batch, seq) with each singleton's id replaced by <unk> with probability p, drawn from the default
        generator of the ids' device (a checkpoint keeps its state: a resumed run draws what the straight one
        would)."""
        draw = torch.rand(ids.shape, device=ids.device)  # batch, seq
        return ids.masked_fill((ids >= self.first) & (ids < self.end) & (draw < self.p), self.unk)


def check(cfg: RunConfig, pretrained: bool) -> None:
    """Refuse ``train.singleton_unk`` where it cannot act: a fine-tuned encoder's sub-words, or words seen once
    already left out of the vocabulary by ``data.min_freq``."""
    p = cfg.train.singleton_unk
    if not p:
        return
    if pretrained:
        raise SeqlabError(f"train.singleton_unk={p} replaces whole words of the run's own vocabulary; a pretrained "
                          "encoder reads sub-words: set train.singleton_unk=0")
    if cfg.data.min_freq != 1:
        raise SeqlabError(f"train.singleton_unk={p} replaces words seen once, but data.min_freq="
                          f"{cfg.data.min_freq} leaves them out of the vocabulary (they read as <unk> every time); "
                          "set data.min_freq=1")


def save(run_dir: Path, vocab: Vocab, counts: Counter[str]) -> None:
    """Write the id run of the words seen once in training (``counts``, as the vocabulary was built from)."""
    ids = sorted(vocab.stoi(word) for word, n in counts.items() if n == 1 and word in vocab)
    if ids and ids[-1] - ids[0] + 1 != len(ids):  # the vocabulary is ordered by frequency
        raise AssertionError(f"the words seen once are not one run of ids: {ids[:5]} ... {ids[-5:]}")
    first, end = (ids[0], ids[-1] + 1) if ids else (0, 0)
    write_json_atomic(run_dir / SINGLETONS, {"first": first, "end": end})


def load(cfg: RunConfig, run_dir: Path, vocab: Vocab) -> Singletons | None:
    """The replacement of a run with ``train.singleton_unk`` > 0 (None without)."""
    if not cfg.train.singleton_unk:
        return None
    path = run_dir / SINGLETONS
    if not path.exists():
        raise SeqlabError(f"{run_dir} was prepared without train.singleton_unk, so it does not know its words seen "
                          f"once; train it into a new directory (or with {spelled('force')})")
    ids = read_json(path, "singleton ids", "train the run again", expect=dict)
    if not all(isinstance(ids.get(k), int) for k in ("first", "end")):
        raise SeqlabError(f"{path} holds no first/end ids of the words seen once; train the run again")
    return Singletons(cfg.train.singleton_unk, ids["first"], ids["end"], vocab.stoi(UNK))
