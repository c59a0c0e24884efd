"""A tokenised corpus of words in gensim's layout, as the word2vec and GloVe kernels read it.

Words are counted, the vocabulary is ordered as gensim orders it (descending count, ties by later first
occurrence first), and the in-vocabulary ids are laid out sentence after sentence in one int32 array, with the
sentences grouped into chunks of at most ``MAX_WORDS_IN_CHUNK`` raw words (gensim's jobs): the unit of work
of a Hogwild thread and the position that word2vec's learning rate is a function of.

A corpus is built in two streaming passes over its sentences (:meth:`Corpus.stream`): one counts the words, the
other writes the ids, in memory or to files in a directory that are then memory-mapped (so a large corpus costs
its vocabulary and index arrays, not its text; :meth:`Corpus.release` drops the mapped pages after each step).

Shapes: V words in the vocabulary; tokens (in-vocabulary words of the corpus); sentences; chunks.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path

import numpy as np

from seqlab.errors import SeqlabError
from seqlab.io import drop_pages, map_array

MAX_WORDS_IN_CHUNK = 10_000  # gensim's job size (raw words) and longest sentence


@dataclass(frozen=True)
class Corpus:
    """A tokenised corpus in gensim's layout: in-vocabulary ids sentence after sentence, cut into chunks.

    Out-of-vocabulary tokens are removed (as gensim does: the window then spans them) but counted in the raw
    word totals that drive the learning rate. Sentences longer than MAX_WORDS_IN_CHUNK are split (as
    gensim's LineSentence does); a chunk is a run of whole sentences of at most MAX_WORDS_IN_CHUNK raw words.
    """

    words: list[str]  # the vocabulary, most frequent first (ties as gensim orders them)
    counts: np.ndarray  # (V,) int64: occurrences of each word in the corpus
    ids: np.ndarray  # (tokens,) int32: in-vocabulary tokens, sentence after sentence
    sentence_starts: np.ndarray  # (sentences + 1,) int64 offsets into ids
    chunk_starts: np.ndarray  # (chunks + 1,) int64 offsets into the sentences
    raw_before: np.ndarray  # (chunks + 1,) int64 raw words (out-of-vocabulary included) before each chunk
    maps: tuple = field(default=(), repr=False, compare=False)  # the file mappings behind ids, sentence_starts

    @property
    def raw_words(self) -> int:
        return int(self.raw_before[-1])

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_starts) - 1

    def release(self) -> None:
        """Drop the pages of a corpus on disk from this process's memory (they stay in the page cache and come
        back on the next read): the kernels call it after each step, so the resident size is the index arrays
        and the weights, not the corpus. A corpus in memory is left as it is."""
        drop_pages(self.maps)

    @classmethod
    def build(cls, sentences: Sequence[Sequence[str]], min_freq: int = 5, max_size: int = 0) -> Corpus:
        """The corpus of ``sentences`` (a list of lists of words), held in memory: see :meth:`stream`."""
        return cls.stream(lambda: sentences, min_freq, max_size)

    @classmethod
    def stream(cls, sentences: Callable[[], Iterable[Sequence[str]]], min_freq: int = 5, max_size: int = 0,
               directory: Path | None = None) -> Corpus:
        """Vocabulary (words seen >= min_freq times; at most max_size words if > 0) and id arrays, from two passes
        over ``sentences()``: the first counts the words, the second writes the ids. With ``directory``, ids and
        sentence offsets go to ``ids.bin`` and ``sentence_starts.bin`` there and are memory-mapped (a pass holds a
        buffer, never the corpus); the words and counts are the vocabulary's, the chunk arrays one entry per
        MAX_WORDS_IN_CHUNK words.

        The order is gensim's: descending count, ties broken by *later* first occurrence first
        (``KeyedVectors.sort_by_descending_frequency``); ``max_size`` raises the count threshold as gensim's
        ``max_final_vocab`` does, so tied words are kept or dropped together.
        """
        raw = Counter()  # insertion order = first occurrence, as gensim's raw_vocab
        for sentence in sentences():
            raw.update(sentence)
        words, counts = _vocabulary(raw, min_freq, max_size)
        del raw
        index = {w: i for i, w in enumerate(words)}
        with _Layout(directory) as layout:
            for sentence in sentences():
                for s in range(0, len(sentence), MAX_WORDS_IN_CHUNK):
                    layout.add(map(index.get, sentence[s:s + MAX_WORDS_IN_CHUNK], repeat(-1)))
            return cls(words, counts, *layout.arrays())


def _vocabulary(raw: Counter, min_freq: int, max_size: int) -> tuple[list[str], np.ndarray]:
    """The kept words in gensim's order and their counts, from the raw counts in first-occurrence order."""
    if not raw:
        raise SeqlabError("empty corpus: no words to train on; give a text with words in it")
    threshold = min_freq
    if max_size and max_size < len(raw):
        by_count = sorted(raw.values(), reverse=True)
        threshold = max(threshold, by_count[max_size] + 1)
    kept = [(w, n) for w, n in raw.items() if n >= threshold]
    if len(kept) < 2:
        raise SeqlabError(f"the corpus has {len(kept)} distinct word(s) seen at least {threshold} times "
                          f"({len(raw)} distinct words in all); embeddings need at least 2: lower "
                          "data.min_freq or give a larger corpus")
    counts = np.array([n for _, n in kept], dtype=np.int64)
    order = np.lexsort((-np.arange(len(kept)), -counts))
    return [kept[i][0] for i in order], counts[order]


class _Layout:
    """Collects the sentences' ids (-1 = out of vocabulary) in a buffer of about FLUSH_TOKENS raw words, and at
    each flush appends the in-vocabulary ids and the sentence ends to memory or to files; chunks are cut as
    sentences arrive (gensim's job producer: a sentence joins the chunk if it fits)."""

    FLUSH_TOKENS = 1 << 20

    def __init__(self, directory: Path | None):
        self.directory = directory
        self.buffer = array("i")  # int32 ids of the raw words since the last flush, -1 = out of vocabulary
        self.ends: list[int] = []  # sentence ends in the buffer
        self.ids: list[np.ndarray] = []  # in memory: the flushed parts
        self.starts: list[np.ndarray] = [np.zeros(1, np.int64)]
        self.n_ids, self.n_sentences = 0, 0
        self.chunk_starts, self.raw_before, self.size, self.words_before = [0], [0], 0, 0

    def __enter__(self) -> _Layout:
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.files = [open(self.directory / f"{name}.tmp", "wb") for name in ("ids.bin", "sentence_starts.bin")]
            np.zeros(1, np.int64).tofile(self.files[1])
            self.starts = []
        return self

    def add(self, ids: Iterable[int]) -> None:
        start = len(self.buffer)
        self.buffer.extend(ids)
        n = len(self.buffer) - start
        if self.size + n > MAX_WORDS_IN_CHUNK and self.size:
            self.chunk_starts.append(self.n_sentences)
            self.raw_before.append(self.words_before)
            self.size = 0
        self.size += n
        self.words_before += n
        self.n_sentences += 1
        self.ends.append(len(self.buffer))
        if len(self.buffer) >= self.FLUSH_TOKENS:
            self.flush()

    def flush(self) -> None:
        ids = np.frombuffer(self.buffer, dtype=np.int32)  # (raw words,)
        known = ids >= 0
        ends = np.cumsum(known)[np.array(self.ends, dtype=np.int64) - 1] if self.ends else np.zeros(0, np.int64)
        ids, starts = ids[known], self.n_ids + ends.astype(np.int64)  # (tokens,), (sentences,)
        self.n_ids += len(ids)
        if self.directory is None:
            self.ids.append(ids)
            self.starts.append(starts)
        else:
            ids.tofile(self.files[0])
            starts.tofile(self.files[1])
        self.buffer, self.ends = array("i"), []

    def __exit__(self, *exc) -> None:
        if self.directory is None:
            return
        for f in self.files:
            f.close()
        if exc[0] is not None:
            for name in ("ids.bin", "sentence_starts.bin"):
                (self.directory / f"{name}.tmp").unlink(missing_ok=True)

    def arrays(self) -> tuple:
        """(ids, sentence_starts, chunk_starts, raw_before, maps) as the Corpus fields."""
        self.flush()
        chunk_starts = np.asarray([*self.chunk_starts, self.n_sentences], dtype=np.int64)
        raw_before = np.asarray([*self.raw_before, self.words_before], dtype=np.int64)
        if self.directory is None:
            return np.concatenate(self.ids), np.concatenate(self.starts), chunk_starts, raw_before
        for f in self.files:
            f.close()
        arrays, maps = [], []
        for name, dtype in (("ids.bin", np.int32), ("sentence_starts.bin", np.int64)):
            os.replace(self.directory / f"{name}.tmp", self.directory / name)
            array, m = map_array(self.directory / name, dtype)
            arrays.append(array)
            maps += [m] if m is not None else []
        return *arrays, chunk_starts, raw_before, tuple(maps)

