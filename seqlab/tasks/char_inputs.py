"""The tagger's character inputs (``model.char_dim`` > 0, :mod:`seqlab.nn.char_features`): the run's character
vocabulary and each word's character ids, stored beside the word ids and batched as (batch, words, chars).

Vocabulary: every character of the training split's words (seen at least once), frequency-ordered after the
specials of :class:`seqlab.text.vocab.Vocab` (<pad> = 0 pads words and sentences, <unk> = 1 is any character
the training words never had; <sos> and <eos> are unused). It is built on the run's first pass over the
training split, with the word vocabulary, and saved as ``RUN/chars.json``; ``load`` reads it back. Characters
are taken from the words as written: ``data.lowercase`` lowercases the word ids only (case is what the
characters are for).

A sentence's characters are stored as two rows (:class:`CharRows`): its words' character ids one after another,
and each word's number of characters.

Shapes: batch; words (word positions, padded); chars (characters per word, padded).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError
from seqlab.tasks.labelling import Rows
from seqlab.text.vocab import Vocab

CHARS = "chars.json"  # in the run directory: the character vocabulary
WORD_LENGTH_BOUND = 1 << 31  # characters per word the store holds (uint32)


class CharRows(NamedTuple):
    """The characters of sentences: ``ids[i]`` sentence i's character ids, word after word; ``lengths[i]`` the
    number of characters of each of its words."""

    ids: Rows
    lengths: Rows


class CharBatch(NamedTuple):
    """A tagging batch (:class:`seqlab.tasks.tag.Batch`'s fields) with each word's characters."""

    ids: Tensor  # batch, seq: word ids, padding after the real words
    mask: Tensor  # batch, seq: True = real word
    tags: Tensor  # batch, seq: tag ids (0 where not scored)
    scored: Tensor  # batch, seq: True = a word's tag is read here (the real words)
    chars: Tensor  # batch, seq, chars: each word's character ids (char_batch)


def char_features(model_cfg) -> bool:
    """Whether a model config reads characters (``model.char_dim`` > 0)."""
    return bool(getattr(model_cfg, "char_dim", 0))


Learn = Callable[[Iterator[Sequence[str]]], object]  # reads the training split's sentences (token lists)


def learning_chars(learn: Learn, model_cfg, run_dir: Path) -> Learn:
    """``learn`` (the word vocabulary's pass over the training split's sentences) as is, or, when the model reads
    characters, counting every character of the sentences as they pass to it, then saving the character
    vocabulary (all characters seen) as ``RUN/chars.json``."""
    if not char_features(model_cfg):
        return learn

    def learn_both(sentences: Iterator[Sequence[str]]) -> None:
        counts: Counter[str] = Counter()  # first-occurrence order breaks ties in frequency

        def counted() -> Iterator[Sequence[str]]:
            for tokens in sentences:
                counts.update(itertools.chain.from_iterable(tokens))
                yield tokens

        learn(counted())
        Vocab.from_counts(counts).save(run_dir / CHARS)

    return learn_both


def load_chars(model_cfg, run_dir: Path) -> Vocab | None:
    """The run's character vocabulary when its model reads characters, else None."""
    if not char_features(model_cfg):
        return None
    path = run_dir / CHARS
    if not path.exists():
        raise SeqlabError(f"{path} (the character vocabulary of model.char_dim={model_cfg.char_dim}) is missing; "
                          "train the run again in a new directory")
    return Vocab.load(path)


def encode_chars(tokens: Sequence[str], chars: Vocab) -> dict[str, list[int]]:
    """One sentence's store fields: ``chars`` (its words' character ids, word after word; unknown characters
    read as <unk>) and ``char_lengths`` (characters per word)."""
    return {"chars": chars.encode(itertools.chain.from_iterable(tokens)), "char_lengths": [len(t) for t in tokens]}


def char_bounds(chars: Vocab | None) -> dict[str, int]:
    """The store fields of the character inputs and their value bounds (none without characters)."""
    return {} if chars is None else {"chars": len(chars), "char_lengths": WORD_LENGTH_BOUND}


def char_rows(store: dict, chars: Vocab | None) -> CharRows | None:
    """The character rows of a split's stores (None without characters)."""
    return None if chars is None else CharRows(store["chars"], store["char_lengths"])


def sentence_chars(sentences: Sequence[Sequence[str]], chars: Vocab | None) -> CharRows | None:
    """The character rows of sentences in memory (prediction), or None without characters."""
    if chars is None:
        return None
    fields = [encode_chars(tokens, chars) for tokens in sentences]
    return CharRows([f["chars"] for f in fields], [f["char_lengths"] for f in fields])


def char_batch(rows: CharRows, index: Sequence[int]) -> Tensor:
    """The characters of sentences ``index`` as ids (batch, words, chars): word w of sentence b holds its
    characters from position 0, then 0 (<pad>); padding words are all 0."""
    lengths = [np.asarray(rows.lengths[i], dtype=np.int64) for i in index]  # batch of (words_b,)
    n_words = np.array([len(n) for n in lengths])  # batch
    flat = np.concatenate(lengths)  # all words: characters in each
    width = max(1, int(flat.max(initial=0)))
    out = torch.zeros(len(index), int(n_words.max(initial=0)), width, dtype=torch.long)  # batch, words, chars
    row = np.repeat(np.arange(len(index)), n_words)  # all words: their sentence
    word = np.concatenate([np.arange(n) for n in n_words])  # all words: their position
    starts = np.cumsum(flat) - flat  # all words: their first character's place among all characters
    position = np.arange(int(flat.sum())) - np.repeat(starts, flat)  # all characters: place in their word
    ids = np.concatenate([np.asarray(rows.ids[i], dtype=np.int64) for i in index])  # all characters
    out[np.repeat(row, flat), np.repeat(word, flat), position] = torch.from_numpy(ids)
    return out
