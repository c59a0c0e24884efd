"""A tokenised corpus of words in gensim's layout, as the word2vec and GloVe kernels read it.

Words are counted, the vocabulary is ordered as gensim orders it (descending count, ties by later first
occurrence first), and the in-vocabulary ids are laid out sentence after sentence in one int32 array, with the
sentences grouped into chunks of at most ``MAX_WORDS_IN_CHUNK`` raw words (gensim's jobs): the unit of work
of a Hogwild thread and the position that word2vec's learning rate is a function of.

Shapes: V words in the vocabulary; tokens (in-vocabulary words of the corpus); sentences; chunks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from seqlab.errors import SeqlabError

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

    @property
    def raw_words(self) -> int:
        return int(self.raw_before[-1])

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_starts) - 1

    @classmethod
    def build(cls, sentences: Sequence[Sequence[str]], min_freq: int = 5, max_size: int = 0) -> Corpus:
        """Vocabulary (words seen >= min_freq times; at most max_size words if > 0) and id arrays.

        The order is gensim's: descending count, ties broken by *later* first occurrence first
        (``KeyedVectors.sort_by_descending_frequency``); ``max_size`` raises the count threshold as gensim's
        ``max_final_vocab`` does, so tied words are kept or dropped together.
        """
        raw = Counter()  # insertion order = first occurrence, as gensim's raw_vocab
        for sentence in sentences:
            raw.update(sentence)
        if not raw:
            raise SeqlabError("empty corpus: no words to train on; give a text with words in it")
        threshold = min_freq
        if max_size and max_size < len(raw):
            by_count = sorted(raw, key=raw.__getitem__, reverse=True)
            threshold = max(threshold, raw[by_count[max_size]] + 1)
        kept = [(w, n) for w, n in raw.items() if n >= threshold]
        if len(kept) < 2:
            raise SeqlabError(f"the corpus has {len(kept)} distinct word(s) seen at least {threshold} times "
                              f"({len(raw)} distinct words in all); embeddings need at least 2: lower "
                              "data.min_freq or give a larger corpus")
        counts = np.array([n for _, n in kept], dtype=np.int64)
        order = np.lexsort((-np.arange(len(kept)), -counts))
        words = [kept[i][0] for i in order]
        counts = counts[order]
        index = {w: i for i, w in enumerate(words)}

        ids, sentence_starts, raw_lengths = [], [0], []
        for sentence in sentences:
            for s in range(0, len(sentence), MAX_WORDS_IN_CHUNK):
                piece = sentence[s:s + MAX_WORDS_IN_CHUNK]
                ids.extend(i for i in map(index.get, piece) if i is not None)
                sentence_starts.append(len(ids))
                raw_lengths.append(len(piece))
        chunk_starts, raw_before, size, words_before = [0], [0], 0, 0
        for s, n in enumerate(raw_lengths):  # gensim's job producer: add the sentence if it fits
            if size + n > MAX_WORDS_IN_CHUNK and size:
                chunk_starts.append(s)
                raw_before.append(words_before)
                size = 0
            size += n
            words_before += n
        chunk_starts.append(len(raw_lengths))
        raw_before.append(words_before)
        return cls(words, counts, np.asarray(ids, dtype=np.int32), np.asarray(sentence_starts, dtype=np.int64),
                   np.asarray(chunk_starts, dtype=np.int64), np.asarray(raw_before, dtype=np.int64))

