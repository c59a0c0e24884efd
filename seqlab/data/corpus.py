"""A tokenised corpus of words in gensim's layout, as the word2vec and GloVe kernels read it.

Words are counted, the vocabulary is ordered as gensim orders it (descending count, ties by later first
occurrence first), and the in-vocabulary ids are laid out sentence after sentence in one int32 array, with the
sentences grouped into chunks of at most ``MAX_WORDS_IN_CHUNK`` raw words (gensim's jobs): the unit of work
of a Hogwild thread and the position that word2vec's learning rate is a function of.

A corpus is built in one streaming pass over its sentences (:meth:`Corpus.stream`; or over consecutive parts of
them at once, a process per part: :meth:`Corpus.stream_parts`), which writes each word's key (first-occurrence
order) and counts them, then a vectorised pass that maps the keys to the vocabulary's ids, in
memory or to files in a directory that are then memory-mapped (so a large corpus costs
its vocabulary and index arrays, not its text; :meth:`Corpus.release` drops the mapped pages after each step).

Shapes: V words in the vocabulary; tokens (in-vocabulary words of the corpus); sentences; chunks.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seqlab.base.errors import SeqlabError
from seqlab.base.forked import Forked
from seqlab.base.io import drop_pages, map_array, replace_atomic

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
        """Vocabulary (words seen >= min_freq times; at most max_size words if > 0) and id arrays, from one pass
        over ``sentences()``: each word gets a key when first seen, and the sentences' keys are written as they
        come (to ``keys.bin`` in ``directory``, else kept in memory); the keys' counts then give the vocabulary,
        and a vectorised pass over the keys maps them to vocabulary ids. With ``directory``, ids and sentence
        offsets go to ``ids.bin`` and ``sentence_starts.bin`` there and are memory-mapped (a pass holds a buffer,
        never the corpus); the words and counts are the vocabulary's, the chunk arrays one entry per
        MAX_WORDS_IN_CHUNK words.

        The order is gensim's: descending count, ties broken by *later* first occurrence first
        (``KeyedVectors.sort_by_descending_frequency``); ``max_size`` raises the count threshold as gensim's
        ``max_final_vocab`` does, so tied words are kept or dropped together.
        """
        return cls.stream_parts([sentences], min_freq, max_size, directory)

    @classmethod
    def stream_parts(cls, parts: Sequence[Callable[[], Iterable[Sequence[str]]]], min_freq: int = 5,
                     max_size: int = 0, directory: Path | None = None) -> Corpus:
        """:meth:`stream` over a text given as consecutive parts (``parts[k]()`` yields part k's sentences), the
        first pass over every part at once: part 0 in this process, each other one in a forked worker process
        (where the system forks; else one after another here). The corpus is :meth:`stream`'s over all the
        sentences in order, to the bit: each part keys its words in its own first-occurrence order, and the
        parts' word lists, read in order, give every word its global key (a part's new words follow the words
        of the parts before it, as in one pass)."""
        with contextlib.ExitStack() as stack:
            passes = _first_passes(parts, directory, stack)
            keys = _FirstSeen()  # word -> key in first-occurrence order over the whole text
            remaps = [np.fromiter(map(keys.__getitem__, p.words), np.int64, len(p.words)) for p in passes]
            counts = np.zeros(len(keys), np.int64)
            for p, remap in zip(passes, remaps):
                counts[remap] += p.count  # a part's keys are distinct words: no repeats in remap
            kept, threshold = _vocabulary(counts, min_freq, max_size)
            if len(kept) < 2:
                raise SeqlabError(f"the corpus has {len(kept)} distinct word(s) seen at least {threshold} times "
                                  f"({len(keys)} distinct words in all); embeddings need at least 2: lower "
                                  "data.min_freq or give a larger corpus")
            first_seen = list(keys)
            del keys
            vocab_id = np.full(len(first_seen), -1, dtype=np.int32)  # key -> vocabulary id, -1 = dropped
            vocab_id[kept] = np.arange(len(kept), dtype=np.int32)
            with _Layout(directory) as layout:
                for p, remap in zip(passes, remaps):
                    part_id = vocab_id[remap]  # the part's key -> vocabulary id
                    for block, lengths in p.blocks():
                        layout.add(part_id[block], lengths)
                return cls([first_seen[k] for k in kept], counts[kept], *layout.arrays())


def _first_pass(sentences: Callable[[], Iterable[Sequence[str]]], directory: Path | None, part: int) -> _Keys:
    """The first pass over one part: its sentences' keys (the part's own first-occurrence order) and lengths,
    kept by a :class:`_Keys` that holds the part's words in key order (``words``) and their counts."""
    keys = _FirstSeen()
    raw = _Keys(directory, part)
    try:
        for sentence in sentences():
            for s in range(0, len(sentence), MAX_WORDS_IN_CHUNK):
                raw.add(map(keys.__getitem__, sentence[s:s + MAX_WORDS_IN_CHUNK]))
        raw.finish(list(keys))
    except BaseException:
        raw.remove()
        raise
    return raw


def _first_passes(parts: Sequence[Callable[[], Iterable[Sequence[str]]]], directory: Path | None,
                  stack: contextlib.ExitStack) -> list[_Keys]:
    """Every part's :func:`_first_pass`, part 0 here while the others run in forked workers
    (:class:`~seqlab.base.forked.Forked`); each pass's files are removed when ``stack`` closes, and a worker still
    running then is ended."""
    for k in range(len(parts)):  # whatever becomes of the passes (an error, a worker ended), no file stays
        stack.callback(_remove, _part_files(directory, k))
    workers = []
    for k in range(1, len(parts)):
        workers.append(Forked(_first_pass, parts[k], directory, k, what=f"reading part {k + 1} of the text"))
        stack.callback(workers[-1].close)
    return [_first_pass(parts[0], directory, 0), *(worker.result() for worker in workers)]


class _FirstSeen(dict):
    """word -> key: a word not seen before gets the next key (0, 1, ...), so keys follow first occurrence. Looked
    up with ``map(keys.__getitem__, words)``: a C loop, Python only for a new word."""

    def __missing__(self, word: str) -> int:
        self[word] = key = len(self)
        return key


def _vocabulary(counts: np.ndarray, min_freq: int, max_size: int) -> tuple[np.ndarray, int]:
    """The keys of the kept words in gensim's order, from the counts of the keys (first-occurrence order), and
    the count threshold applied."""
    if not len(counts):
        raise SeqlabError("empty corpus: no words to train on; give a text with words in it")
    threshold = min_freq
    if max_size and max_size < len(counts):
        threshold = max(threshold, int(np.sort(counts)[::-1][max_size]) + 1)
    kept = np.flatnonzero(counts >= threshold)
    order = np.lexsort((-kept, -counts[kept]))  # descending count, ties: later first occurrence first
    return kept[order], threshold


class _Keys:
    """One part's first pass: every sentence's word keys (int32) and its length, in memory or in
    ``keys-K.bin`` / ``lengths-K.bin`` in a directory (K the part; :meth:`remove` deletes them); the keys' counts
    kept as they are added, and at the end the part's words in key order. Sent from a worker process as it is
    (its files closed)."""

    FLUSH_WORDS = 1 << 20

    def __init__(self, directory: Path | None, part: int = 0):
        """A pass writing to ``directory`` (None: memory), its files named for ``part``."""
        self.directory = directory
        self.buffer = array("i")  # keys of the words since the last flush
        self.lengths = array("q")  # words of the sentences since the last flush
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # in memory: the flushed (keys, lengths)
        self.count = np.zeros(0, np.int64)  # occurrences of each key
        self.words: list[str] = []  # the part's words in key order (first occurrence), set by finish
        self.paths = _part_files(directory, part)
        self.files = []
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            self.files = [open(path, "wb") for path in self.paths]

    def add(self, keys: Iterable[int]) -> None:
        start = len(self.buffer)
        self.buffer.extend(keys)
        self.lengths.append(len(self.buffer) - start)
        if len(self.buffer) >= self.FLUSH_WORDS:
            self.flush()

    def flush(self) -> None:
        keys, lengths = np.frombuffer(self.buffer, np.int32), np.frombuffer(self.lengths, np.int64)
        counts = np.bincount(keys)
        if len(counts) > len(self.count):
            self.count = np.concatenate([self.count, np.zeros(len(counts) - len(self.count), np.int64)])
        self.count[:len(counts)] += counts
        if self.directory is None:
            self.parts.append((keys, lengths))
        else:
            keys.tofile(self.files[0])
            lengths.tofile(self.files[1])
        self.buffer, self.lengths = array("i"), array("q")

    def finish(self, words: list[str]) -> None:
        """The pass is over: the last keys written, the files closed, ``words`` (the part's words in key order)
        kept, and ``count`` one entry per word."""
        self.flush()
        self.close()
        self.words = words
        self.count = np.concatenate([self.count, np.zeros(len(words) - len(self.count), np.int64)])

    def close(self) -> None:
        for f in self.files:
            f.close()
        self.files = []

    def remove(self) -> None:
        self.close()
        _remove(self.paths)

    def blocks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(keys of whole sentences, their lengths) in blocks of about FLUSH_WORDS words."""
        if self.directory is None:
            yield from self.parts
            return
        lengths = np.fromfile(self.paths[1], np.int64)
        ends = np.cumsum(lengths)
        with open(self.paths[0], "rb") as f:
            first = 0
            while first < len(lengths):
                before = int(ends[first - 1]) if first else 0
                last = max(first + 1, int(np.searchsorted(ends, before + self.FLUSH_WORDS, side="right")))
                yield np.fromfile(f, np.int32, int(ends[last - 1]) - before), lengths[first:last]
                first = last


def _part_files(directory: Path | None, part: int) -> list[Path]:
    """Where a part's first pass keeps its keys and sentence lengths in ``directory`` (none in memory)."""
    return [] if directory is None else [directory / f"{name}-{part}.bin" for name in ("keys", "lengths")]


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


class _Layout:
    """Takes blocks of whole sentences' ids (-1 = out of vocabulary) and appends the in-vocabulary ids and the
    sentence ends to memory or to files; chunks are cut as sentences arrive (gensim's job producer: a sentence
    joins the chunk if it fits)."""

    def __init__(self, directory: Path | None):
        self.directory = directory
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

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Whole sentences: their ids (raw words, -1 = out of vocabulary) and their lengths in raw words."""
        for n in lengths.tolist():
            if self.size + n > MAX_WORDS_IN_CHUNK and self.size:
                self.chunk_starts.append(self.n_sentences)
                self.raw_before.append(self.words_before)
                self.size = 0
            self.size += n
            self.words_before += n
            self.n_sentences += 1
        known = ids >= 0
        kept_before = np.concatenate([[0], np.cumsum(known)])  # (raw words + 1,) in-vocabulary ids before each
        ends = kept_before[np.cumsum(lengths)]  # (sentences,) in-vocabulary ids before each sentence's end
        ids, starts = ids[known], self.n_ids + ends.astype(np.int64)  # (tokens,), (sentences,)
        self.n_ids += len(ids)
        if self.directory is None:
            self.ids.append(ids)
            self.starts.append(starts)
        else:
            ids.tofile(self.files[0])
            starts.tofile(self.files[1])

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
        chunk_starts = np.asarray([*self.chunk_starts, self.n_sentences], dtype=np.int64)
        raw_before = np.asarray([*self.raw_before, self.words_before], dtype=np.int64)
        if self.directory is None:
            ids = np.concatenate(self.ids) if self.ids else np.zeros(0, np.int32)
            return ids, np.concatenate(self.starts), chunk_starts, raw_before
        for f in self.files:
            f.close()
        arrays, maps = [], []
        for name, dtype in (("ids.bin", np.int32), ("sentence_starts.bin", np.int64)):
            replace_atomic(self.directory / f"{name}.tmp", self.directory / name)
            array, m = map_array(self.directory / name, dtype)
            arrays.append(array)
            maps += [m] if m is not None else []
        return *arrays, chunk_starts, raw_before, tuple(maps)

