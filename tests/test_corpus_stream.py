"""Streaming corpora for embeddings (issue #13): a text read in blocks and lines in bounded pieces, the corpus
built in two passes and memory-mapped, equal token for token to the in-memory reference; GloVe's co-occurrence
counts spilled to shards on disk equal to the counts in memory."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from seqlab.base.config import DataConfig, RunConfig
from seqlab.data import sources
from seqlab.data.corpus import MAX_WORDS_IN_CHUNK, Corpus
from seqlab.data.sources import line_pieces, pydocs_text, read_text, split_text, stream_text
from seqlab.base.errors import SeqlabError
from seqlab.models import glove
from seqlab.tasks.word_vectors import build_corpus, sentences_of, stream_sentences

FIELDS = ("counts", "ids", "sentence_starts", "chunk_starts", "raw_before")


def reference_corpus(sentences, min_freq: int = 5, max_size: int = 0) -> Corpus:
    """Corpus.build as it was before streaming (seqlab 55d7261): everything in lists, in one go."""
    raw = Counter()
    for sentence in sentences:
        raw.update(sentence)
    threshold = min_freq
    if max_size and max_size < len(raw):
        by_count = sorted(raw, key=raw.__getitem__, reverse=True)
        threshold = max(threshold, raw[by_count[max_size]] + 1)
    kept = [(w, n) for w, n in raw.items() if n >= threshold]
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
    for s, n in enumerate(raw_lengths):
        if size + n > MAX_WORDS_IN_CHUNK and size:
            chunk_starts.append(s)
            raw_before.append(words_before)
            size = 0
        size += n
        words_before += n
    chunk_starts.append(len(raw_lengths))
    raw_before.append(words_before)
    return Corpus(words, counts, np.asarray(ids, dtype=np.int32), np.asarray(sentence_starts, dtype=np.int64),
                  np.asarray(chunk_starts, dtype=np.int64), np.asarray(raw_before, dtype=np.int64))


def assert_same_corpus(a: Corpus, b: Corpus) -> None:
    assert a.words == b.words
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


def long_sentences(seed: int = 0) -> list[list[str]]:
    """Sentences around MAX_WORDS_IN_CHUNK words long (cut into pieces; chunks of several)."""
    rng = random.Random(seed)
    lengths = [1, 7, MAX_WORDS_IN_CHUNK - 1, MAX_WORDS_IN_CHUNK, MAX_WORDS_IN_CHUNK + 1, 2 * MAX_WORDS_IN_CHUNK + 3]
    return [[rng.choice("abcdefghijklmnop") + rng.choice("xyz") for _ in range(rng.choice(lengths))]
            for _ in range(25)]


@pytest.mark.parametrize("case", ["pydocs", "pydocs-max-size", "long"])
def test_streamed_corpus_on_disk_equals_the_in_memory_reference(case, tmp_path):
    sentences = long_sentences() if case == "long" else sentences_of(pydocs_text(), lowercase=True)
    min_freq, max_size = {"pydocs": (5, 0), "pydocs-max-size": (1, 1000), "long": (3, 20)}[case]
    want = reference_corpus(sentences, min_freq, max_size)
    assert_same_corpus(want, Corpus.build(sentences, min_freq, max_size))
    on_disk = Corpus.stream(lambda: iter(sentences), min_freq, max_size, tmp_path / "corpus")
    assert on_disk.ids.base.obj is on_disk.maps[0]  # memory-mapped: the ids are a view of the file's mapping ...
    assert on_disk.maps[0].size() == (tmp_path / "corpus" / "ids.bin").stat().st_size
    assert on_disk.ids.flags.writeable  # ... writable (copy-on-write), as the numba kernels' signatures take it
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == ["ids.bin", "sentence_starts.bin"]
    assert_same_corpus(want, on_disk)
    on_disk.release()  # the pages leave the process; the values come back from the file
    assert_same_corpus(want, on_disk)


def split_lines_reference(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize("seed", range(6))
def test_line_pieces_cut_lines_as_splitlines_and_never_inside_a_word(seed):
    rng = random.Random(seed)
    alphabet = ["a", "b", "é", "Σ", " ", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\u2028", "\x85", ".", "longword"]
    text = "".join(rng.choice(alphabet) for _ in range(3000)) + rng.choice(["", "\n", "\r", "x"])
    cuts = sorted(rng.sample(range(1, len(text)), 40))
    blocks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)])]
    lines, current = [], []
    for piece, ends in line_pieces(blocks, max_chars=rng.choice([5, 17, 1000])):
        current.append(piece)
        if ends:
            lines.append("".join(current))
            current = []
    assert not current
    assert lines == text.splitlines()
    # the words of every line, from its pieces, are the words of the line
    sentences = list(stream_sentences(line_pieces(blocks, max_chars=7)))
    assert sentences == sentences_of(text)


def test_stream_sentences_cuts_long_lines_into_chunk_pieces():
    line = " ".join(f"w{i % 97}" for i in range(2 * MAX_WORDS_IN_CHUNK + 5))
    text = f"{line}\nshort line\n{' '.join(['x'] * MAX_WORDS_IN_CHUNK)}\n"
    pieces = list(stream_sentences(line_pieces([text], max_chars=1000)))
    assert [len(p) for p in pieces] == [MAX_WORDS_IN_CHUNK, MAX_WORDS_IN_CHUNK, 5, 2, MAX_WORDS_IN_CHUNK]
    assert sum(pieces[:3], []) == line.split()


def embed_config(source: str, split=(1.0, 0.0, 0.0), **data) -> RunConfig:
    from seqlab.tasks import registry

    cfg = registry.resolve("w2v-sgns", [f"data.source={source}", f"data.split=[{','.join(map(str, split))}]",
                                        *(f"data.{k}={v}" for k, v in data.items())])
    return cfg


@pytest.mark.parametrize("split", [(1.0, 0.0, 0.0), (0.9, 0.05, 0.05), (0.37, 0.6, 0.03)])
def test_build_corpus_from_a_file_in_blocks_equals_the_whole_text(split, tmp_path, monkeypatch):
    rng = random.Random(1)
    words = ["the", "The", "cat", "Σοφία", "naïve", "x", "sat", ",", "."]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) for _ in range(400)]
    text = "\ufeff" + "\r\n".join(lines[:100]) + "\n" + "\x0b".join(lines[100:200]) + "\n" + "\n".join(lines[200:])
    path = tmp_path / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(sources, "BLOCK_CHARS", 101)  # many blocks, cuts inside lines and inside \r\n
    cfg = embed_config(str(path), split, min_freq=2)
    want = reference_corpus(sentences_of(split_text(read_text(path), split)[0], lowercase=True), min_freq=2)
    assert_same_corpus(want, build_corpus(cfg, tmp_path / "run" / "corpus"))
    assert_same_corpus(want, build_corpus(cfg))  # in memory


@pytest.mark.parametrize("seed", range(4))
def test_line_parts_are_the_line_pieces_in_order_cut_between_lines(seed):
    rng = random.Random(seed)
    words = ["a", "b", "é", " ", " ", ".", "longword"]
    text = "".join("".join(rng.choice(words) for _ in range(rng.choice([0, 1, 3, 60])))  # lines across blocks
                   + rng.choice(["\n", "\r\n", "\u2028"]) for _ in range(120))
    stream = sources.TextStream(lambda: (text[i:i + 97] for i in range(0, len(text), 97)), len(text))
    max_chars = [5, 1000][seed % 2]  # 5: long lines in several pieces
    want = list(line_pieces(stream(), max_chars))
    for parts in (1, 2, 3, 7, 200):  # 200: more parts than lines
        runs = [list(run()) for run in sources.line_parts(stream, parts, max_chars)]
        assert sum(runs, []) == want and len(runs) == parts
        for before, run in zip(runs, runs[1:]):
            assert not before or not run or before[-1][1]  # a cut falls after a line's last piece
    assert all(len(list(run())) > 0 for run in sources.line_parts(stream, 3))  # the text shared out


def parts_of(sentences: list, parts: int) -> list:
    cuts = [len(sentences) * k // parts for k in range(parts + 1)]
    return [lambda a=a, b=b: iter(sentences[a:b]) for a, b in zip(cuts, cuts[1:])]


@pytest.mark.parametrize("case", ["pydocs", "pydocs-max-size", "long"])
def test_a_corpus_read_in_parts_by_worker_processes_equals_one_pass(case, tmp_path):
    sentences = long_sentences() if case == "long" else sentences_of(pydocs_text(), lowercase=True)
    min_freq, max_size = {"pydocs": (5, 0), "pydocs-max-size": (1, 1000), "long": (3, 20)}[case]
    want = reference_corpus(sentences, min_freq, max_size)
    for parts in (2, 3, len(sentences) + 2 if case == "long" else 9):  # long: some parts empty
        assert_same_corpus(want, Corpus.stream_parts(parts_of(sentences, parts), min_freq, max_size))
        on_disk = Corpus.stream_parts(parts_of(sentences, parts), min_freq, max_size, tmp_path / f"c{parts}")
        assert_same_corpus(want, on_disk)
        assert sorted(p.name for p in (tmp_path / f"c{parts}").iterdir()) == ["ids.bin", "sentence_starts.bin"]


def test_a_worker_that_fails_or_dies_is_an_error_and_leaves_no_file(tmp_path):
    import os

    def refused():
        raise SeqlabError("part two is unreadable: fix it")
        yield

    def killed():
        os._exit(3)
        yield

    good = lambda: iter([["a", "b"], ["b", "c"]])  # noqa: E731
    with pytest.raises(SeqlabError, match="^part two is unreadable: fix it$"):
        Corpus.stream_parts([good, refused], 1, 0, tmp_path / "refused")
    with pytest.raises(SeqlabError, match="worker process reading part 2 of the text ended without a result .exit code 3."):
        Corpus.stream_parts([good, killed, good], 1, 0, tmp_path / "killed")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_build_corpus_reads_a_large_file_in_parts_with_the_same_result(tmp_path, monkeypatch):
    from seqlab.tasks import word_vectors

    rng = random.Random(2)
    words = ["the", "The", "cat", "Σοφία", "naïve", "x", "sat", ",", "."]
    text = "\n".join(" ".join(rng.choice(words) + rng.choice(["", "s", "ed"]) for _ in range(rng.randint(0, 40)))
                     for _ in range(600))
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    want = reference_corpus(sentences_of(split_text(text, (0.9, 0.05, 0.05))[0], lowercase=True), min_freq=2)
    monkeypatch.setattr(word_vectors, "PART_CHARS", 1000)
    passes, stream_parts = [], Corpus.stream_parts.__func__
    monkeypatch.setattr(Corpus, "stream_parts", classmethod(
        lambda cls, parts, *a, **k: (passes.append(len(parts)), stream_parts(cls, parts, *a, **k))[1]))
    for threads, expected in ((3, 3), (1, 1)):
        cfg = embed_config(str(path), (0.9, 0.05, 0.05), min_freq=2)
        cfg = cfg.__class__(**{**cfg.__dict__, "train": cfg.train.__class__(**{**cfg.train.__dict__,
                                                                              "threads": threads})})
        assert_same_corpus(want, build_corpus(cfg, tmp_path / f"run{threads}" / "corpus"))
        assert passes[-1] == expected


def test_build_corpus_embedded_source_is_unchanged():
    cfg = embed_config("pydocs")
    assert_same_corpus(reference_corpus(sentences_of(pydocs_text(), lowercase=True)), build_corpus(cfg))


def test_stream_text_errors_match_read_text_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "BLOCK_CHARS", 16)
    bad = tmp_path / "bad.txt"
    bad.write_bytes("é".encode() * 20 + b"ab\xffcd")  # the bad byte lies past the first blocks
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n\t\n" * 40, encoding="utf-8")
    cut = tmp_path / "cut.txt"
    cut.write_bytes("ab".encode() * 10 + "é".encode()[:1])  # a sequence cut by the end of the file
    for path in (bad, blank, cut, tmp_path / "missing.txt", tmp_path, "no-such-corpus"):
        with pytest.raises(SeqlabError) as want:
            read_text(path)
        with pytest.raises(SeqlabError) as got:
            stream_text(path)
        assert str(got.value) == str(want.value)
    short = tmp_path / "short.txt"
    short.write_text("ab", encoding="utf-8")
    with pytest.raises(SeqlabError, match="too short for a valid split"):
        stream_text(short, (0.9, 0.1, 0.0))


# ------------------------------------------------------------------------------------------------------
# GloVe counts in bounded memory


def test_glove_counts_spilled_to_shards_equal_the_counts_in_memory(tmp_path, monkeypatch):
    corpus = Corpus.build(sentences_of(pydocs_text(), lowercase=True), min_freq=5)
    want = glove.cooccurrence(corpus, window=10)
    shards = []
    add = glove._Shards.add
    monkeypatch.setattr(glove._Shards, "add", lambda self, k, v: (shards.append(len(k)), add(self, k, v)))
    got = glove.cooccurrence(corpus, window=10, block_pairs=20_000, max_memory_mb=1, scratch=tmp_path)
    assert len(shards) >= 4  # several shards were written and merged
    assert list(tmp_path.iterdir()) == []  # the shards' temporary folder is gone
    for x, y in zip(want, got):
        assert x.dtype == y.dtype and np.array_equal(x, y)  # exactly: the counts are exact integers / lcm
    keys = want[0].astype(np.int64) * len(corpus.words) + want[1]
    assert (np.diff(keys) > 0).all()


def test_glove_weights_exact_unless_they_could_overflow():
    weights, unit = glove.distance_weights(10, tokens=10**9)
    assert unit == 2520 and weights.dtype == np.int64 and list(weights[1:4]) == [2520, 1260, 840]
    weights, unit = glove.distance_weights(40, tokens=10**6)  # lcm(1..40) ~ 5e15: sums could overflow int64
    assert unit == 1 and weights.dtype == np.float64 and weights[3] == 1 / 3


def test_glove_float_weights_sharded_match_in_memory(tmp_path):
    corpus = Corpus.build(sentences_of(pydocs_text()[:200_000], lowercase=True), min_freq=2)
    want = glove.cooccurrence(corpus, window=40)
    got = glove.cooccurrence(corpus, window=40, block_pairs=20_000, max_memory_mb=1, scratch=tmp_path)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-13)  # float sums in another order: last bits only


def test_embed_run_leaves_no_corpus_files(tmp_path):
    from seqlab import api

    text = "\n".join(f"the cat {w} sat on the mat {w}" for w in ["red", "blue", "green"] * 40)
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    run = api.train_run("glove", tmp_path / "run", overrides=[f"data.source={tmp_path / 'c.txt'}", "data.min_freq=1",
                                                          "train.epochs=1", "model.dim=8", "data.max_memory_mb=1"],
                    log=lambda *a, **k: None)
    assert (run / "vectors.txt").exists() and not (run / "corpus").exists()


# ------------------------------------------------------------------------------------------------------
# readers of the other tasks: line by line, the same lines as the whole-file reads they replace


@pytest.mark.parametrize("seed", range(4))
def test_readers_stream_the_same_lines_as_whole_file_reads(seed, tmp_path):
    from seqlab.data.conll import _byte_lines, numbered_lines
    from seqlab.data.sources import read_lines

    rng = random.Random(seed)
    pieces = ["a", "é", " ", "\t", "\n", "\r", "\r\n", "\x0b", "\u2028", "B-PER", "x y"]
    text = "".join(rng.choice(pieces) for _ in range(2000)) + rng.choice(["", "\n", "\r", "z"])
    data = text.encode("utf-8")
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    for block in (1, 2, 7, 64, 1 << 20):  # blocks cut lines, UTF-8 sequences and \r\n
        import io

        assert list(_byte_lines(io.BytesIO(data), block)) == data.splitlines()
    assert [line for _, line in numbered_lines(path)] == [b.decode() for b in data.splitlines()]
    whole = text[:-1] if text.endswith("\n") else text
    if text.strip():
        assert list(read_lines(path)) == whole.split("\n")  # parallel text's reading, as before


def test_read_lines_errors_match_read_text_file(tmp_path):
    from seqlab.data.sources import read_lines, read_text_file

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"good line\nsecond \xc3\nthird")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n", encoding="utf-8")
    for path in (bad, blank, tmp_path / "missing.txt", tmp_path):
        with pytest.raises(SeqlabError) as want:
            read_text_file(path)
        with pytest.raises(SeqlabError) as got:
            list(read_lines(path))
        assert str(got.value) == str(want.value)
