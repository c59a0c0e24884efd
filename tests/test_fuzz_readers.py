"""Property-based fuzzing of every reader and parser (issue #14, "Reliability").

Each reader gets arbitrary bytes (invalid UTF-8, NUL, byte order marks, CRLF and lone CR, empty and huge lines,
every Unicode category) and structured-but-wrong input (CoNLL lines with the wrong number of columns, TSV rows
without a label, CSV cells that are not numbers, JSON of the wrong shape, ...), 250 examples each in the suite
(SEQLAB_FUZZ_EXAMPLES for a deeper run, tests/fuzzing.py). The property (docs/manual.md, "Rules of the code":
errors): the reader returns, or raises :class:`SeqlabError` with a non-empty one-line message; any
other exception is a bug. Each crash hypothesis found is pinned with ``@example`` on its property and as a plain
regression test at the end of this file.

Config files and ``--set`` values are fuzzed in test_fuzz_config.py.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fuzzing import (ANY_BYTES, ANY_CHAR, ANY_TEXT, FUZZ, JSON_VALUE, RARELY, corrupted, cwd, explained, file_bytes,
                     scratch_folder, text_file, weighted, write)
from hypothesis import example, given
from hypothesis import strategies as st

from seqlab.data.conll import read_conll
from seqlab.data.labelled import read_labelled
from seqlab.data.parallel import read_parallel, read_splits
from seqlab.data.series import read_series, split_tail
from seqlab.data.sources import read_text, read_text_file, source_names, split_text
from seqlab.base.errors import SeqlabError
from seqlab.metrics.bleu import BLEU
from seqlab.metrics.bleu_tokenizers import TOKENIZERS, tokenize_13a_reference
from seqlab.models.autoregressive import AR, ARConfig
from seqlab.text.tokenizers import BPETokenizer, CharTokenizer, WordTokenizer, load_tokenizer
from seqlab.text.vocab import Vocab


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    """One folder for the module: every example overwrites its test's files (hypothesis runs examples in turn)."""
    with scratch_folder() as path:
        yield path


# printable text without whitespace (Z, Cc), brackets or lone surrogates: a word in any of the formats
WORD = st.text(st.characters(codec=None, exclude_categories=("Z", "Cc", "Cs"), exclude_characters="()"),
               min_size=1, max_size=6)
PLAIN_WORD = weighted((1, WORD), (3, st.sampled_from(["the", "cat", "sat", ".", ",", "EU", "German", "1990", "é", "😀"])))
# Sentences mostly from a pool of scripts and symbols (one draw each: a file of them stays cheap to generate), else
# built from words
SENTENCE_POOL = ["A dog runs .", "Ein Hund läuft .", "Un chien court !", "Собака бежит .", "一只狗在跑。", "犬が走る",
                 "الكلب يجري .", "כלב רץ", "ΑΒΓ δ'ε", "naïve café", "é combining", "tab nbsp", "emoji 😀 👍🏽",
                 "x", "1990 , 3.5 %", "it 's a charming journey .", "a \\ b / c", '"quoted" \'single\'', "- DOCSTART -"]
SENTENCE_TEXT = weighted((4, st.sampled_from(SENTENCE_POOL)), (1, st.lists(PLAIN_WORD, min_size=1, max_size=4).map(" ".join)))


# ---------------------------------------------------------------------------------------------------------
# plain text


@FUZZ
@given(data=ANY_BYTES)
def test_read_text_file_bytes(folder, data):
    path = write(folder / "plain.txt", data)
    text = explained(read_text_file, path)
    if text is not None:
        assert isinstance(text, str) and text.strip()
        assert explained(read_text, str(path)) == text


LONG_NAME = st.builds(lambda n, end: "a" * n + end, st.integers(250, 5000), st.sampled_from(["", ".txt", "/x"]))
SOURCE_NAME = st.one_of(st.builds(str.__add__, st.sampled_from(["", "", "~", "~/", "./", "a/", "sub/"]), ANY_TEXT),
                        LONG_NAME)


@FUZZ
@given(name=SOURCE_NAME)
@example(name="~0")  # RuntimeError from Path.expanduser (no such user)
@example(name="~\x00")  # ValueError: embedded null byte
@example(name="~/\r")  # a message split by the line break in the path
@example(name="a" * 252 + ".txt")  # OSError: File name too long
def test_read_text_any_source_name(folder, name):
    """``data.source`` as a user may type it: a corpus name, a path, or anything else (run in an empty folder)."""
    if name in source_names() or os.path.isabs(name):
        return  # a corpus name (reads or downloads a corpus) or an absolute path (outside the sandbox)
    here = folder / "empty"
    here.mkdir(exist_ok=True)
    with cwd(here):
        explained(read_text, name)


PATH_READERS = {
    "read_text_file": read_text_file,
    "read_parallel": lambda path: read_parallel(path, "de", "en"),
    "read_conll": read_conll,
    "read_labelled": read_labelled,
    "read_series": read_series,
    "load_tokenizer": load_tokenizer,
    "Vocab.load": Vocab.load,
}
PRINTABLE_NAME = st.one_of(st.text(st.characters(codec="utf-8", exclude_categories=("C", "Zl", "Zp")), max_size=30),
                           LONG_NAME)


@FUZZ
@given(name=PRINTABLE_NAME)
@example(name="a" * 252 + ".txt")  # OSError: File name too long
def test_readers_take_any_path(folder, name):
    """Every reader given a path that is missing, a folder, too long, ... (relative, in an empty folder)."""
    if os.path.isabs(name) or name.startswith("~"):
        return
    here = folder / "empty"
    here.mkdir(exist_ok=True)
    with cwd(here):
        for reader in PATH_READERS.values():  # each reader gets every example
            explained(reader, name)


FRACTIONS = st.sampled_from([(0.9, 0.05, 0.05), [1, 0, 0], (0.5, 0.25, 0.25), (0.98, 0.01, 0.01)])
FRACTION = st.one_of(st.floats(), st.integers(), st.integers(10**300, 10**400), st.text(max_size=3), st.none(),
                     st.sampled_from([0.9, 0.05, 0.05, 0.0, 1.0, 0.5]))


@FUZZ
@given(text=st.one_of(ANY_TEXT, st.text(min_size=20, max_size=200)), fractions=st.one_of(FRACTIONS, st.lists(FRACTION, max_size=4),
                                          st.tuples(FRACTION, FRACTION, FRACTION), FRACTION))
@example(text="abc", fractions=[10**400, 0, 0])  # OverflowError
def test_split_text(text, fractions):
    parts = explained(split_text, text, fractions)
    if parts is not None:
        assert "".join(parts) == text


# ---------------------------------------------------------------------------------------------------------
# parallel text

SENTENCE = st.one_of(SENTENCE_TEXT, st.sampled_from(["", " ", "\t", "\u3000", "a\x00b"]), ANY_TEXT)
SPLITS = st.sampled_from([(0.9, 0.05, 0.05), (1.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.2, 0.3, 0.5)])


PAIRS = list(zip(SENTENCE_POOL, reversed(SENTENCE_POOL)))


@st.composite
def parallel_files(draw) -> tuple[bytes, bytes]:
    """Two aligned files of sentences, now and then with lines missing, added or blank on one side."""
    pairs = draw(st.lists(st.sampled_from(PAIRS), max_size=14))  # one draw a pair: cheap to generate
    sides = [[pair[k] for pair in pairs] for k in (0, 1)]
    wrong = st.sampled_from(["", " ", "\t"]) | SENTENCE
    files = [draw(text_file(corrupted(st.just(side), wrong))) for side in sides]
    if draw(RARELY):
        files[draw(st.integers(0, 1))] = draw(ANY_BYTES)
    return files[0], files[1]


@FUZZ
@given(files=parallel_files(), split=SPLITS, explicit_valid=st.booleans())
def test_read_parallel(folder, files, split, explicit_valid):
    prefix = folder / "pair"
    write(folder / "pair.de", files[0])
    write(folder / "pair.en", files[1])
    corpus = explained(read_parallel, prefix, "de", "en")
    if corpus is None:
        return  # read_splits reads the same files
    assert len(corpus.src) == len(corpus.tgt) > 0
    assert all(s.strip() and t.strip() for s, t in zip(corpus.src, corpus.tgt))
    data = SimpleNamespace(train=str(prefix), valid=str(prefix) if explicit_valid else "", test="", src="de",
                           tgt="en", split=split, source="")
    splits = explained(read_splits, data)
    if splits is not None:
        assert set(splits) == {"train", "valid", "test"}


# ---------------------------------------------------------------------------------------------------------
# CoNLL

SCHEMES = {  # tag prefixes of each scheme; a file mostly uses one (mixing IOBES and BILOU is refused)
    "IOB": ["B", "I", "I"], "IOBES": ["B", "I", "E", "S"], "BILOU": ["B", "I", "L", "U"],
}
BAD_TAG = st.sampled_from(["B-", "I", "X", "b-per", "B-\u00a0", "0", "-", "E-", "O-PER", "B_PER"])


@st.composite
def conll_lines(draw) -> list[str]:
    """CoNLL-2003 layout: word, 0-2 middle columns (POS, chunk), NER tag; blank lines between sentences."""
    middle = ["NNP", "B-NP"][:draw(st.integers(0, 2))]  # the POS and chunk columns, the same on every line
    prefixes = SCHEMES[draw(st.sampled_from(sorted(SCHEMES)))]
    tags = ["O", "O", *(f"{p}-{t}" for p in prefixes for t in ("PER", "LOC", "MISC"))]
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    lines = ["-DOCSTART- -X- -X- O", ""] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 3))):
        for _ in range(draw(st.integers(1, 4))):
            lines.append(sep.join([draw(PLAIN_WORD), *middle, draw(st.sampled_from(tags))]))
        lines.append("")
        if draw(RARELY):
            lines += ["-DOCSTART- -X- -X- O", ""]
    return lines


CONLL_WRONG = st.one_of(
    st.just("-DOCSTART-"), st.just("EU"), st.just("EU NNP B-NP I-ORG extra"),
    st.builds(lambda words, tag: " ".join([*words, tag]), st.lists(PLAIN_WORD, max_size=3), BAD_TAG),
    st.builds("{} S-PER U-LOC".format, PLAIN_WORD),  # IOBES and BILOU in one file
)


@FUZZ
@given(data=file_bytes(conll_lines(), CONLL_WRONG), iob2=st.booleans())
def test_read_conll(folder, data, iob2):
    sentences = explained(read_conll, write(folder / "ner.conll", data), iob2=iob2)
    if sentences is not None:
        assert sentences
        for s in sentences:
            assert len(s.tokens) == len(s.tags) > 0
            assert all(len(column) == len(s.tokens) for column in s.columns)


# ---------------------------------------------------------------------------------------------------------
# labelled sentences (TSV, fastText, PTB trees, label-first)

LABEL = st.sampled_from(["0", "1", "2", "3", "4", "pos", "neg"])
TREE = st.recursive(
    st.builds("({} {})".format, LABEL, PLAIN_WORD),
    lambda kids: st.builds(lambda label, ks: f"({label} {' '.join(ks)})", LABEL, st.lists(kids, min_size=1, max_size=3)),
    max_leaves=6)


@st.composite
def labelled_lines(draw) -> list[str]:
    """A file in one of the four formats, now and then with blank lines."""
    fmt = draw(st.sampled_from(["tsv", "fasttext", "tree", "label-first"]))
    lines = []
    if fmt == "tsv":
        columns = draw(st.permutations(["sentence", "label", "idx"]).map(lambda c: c[:draw(st.integers(2, 3))]))
        lines.append("\t".join(c.title() if draw(RARELY) else c for c in columns))
    for _ in range(draw(st.integers(0, 6))):
        label, text = draw(LABEL), draw(SENTENCE_TEXT)
        if fmt == "tsv":
            cells = {"sentence": text + draw(st.sampled_from(["", " "])), "label": label, "idx": "7"}
            lines.append("\t".join(cells[c] for c in columns))
        elif fmt == "fasttext":
            lines.append(f"__label__{label}" + draw(st.sampled_from(["\t", " "])) + text)
        elif fmt == "tree":
            lines.append(draw(TREE))
        else:
            lines.append(f"{label} {text}")
        if draw(RARELY):
            lines.append(draw(st.sampled_from(["", " ", "\t"])))
    return lines


LABELLED_WRONG = st.one_of(
    st.sampled_from(["sentence", "text\tlabel", "sentence\t", "\tsentence\tlabel", "__label__", "__label__1",
                     "__label__1\t", "(3", "(3 (2 a)", "(3 (2 a)))", "(3 (2 a) b)", "(3 ())", "(3 (2))", "()", ")",
                     "(3 (2 a)) (1 b)", "(3 (2 a (1 b)))", "1", "1 ", "\t1", "a\tb\tc\td"]),
    st.builds(lambda tree, cut: tree[:cut], TREE, st.integers(0, 40)),  # a tree cut short
    st.text("() 3ab\t", max_size=30),  # bracket soup
    st.lists(st.sampled_from(["a film", "1", "", " "]), max_size=4).map("\t".join),  # TSV rows, label or not
)


@FUZZ
@given(data=file_bytes(labelled_lines(), LABELLED_WRONG))
def test_read_labelled(folder, data):
    read = explained(read_labelled, write(folder / "labelled.txt", data))
    if read is not None:
        sentences, labels = read
        assert len(sentences) == len(labels) > 0
        assert all(s.strip() for s in sentences) and all(label.strip() for label in labels)


# ---------------------------------------------------------------------------------------------------------
# CSV series, the held-out tail and AR(p) fitted to what was read

NAMES = ["Date", "Temp", "value", "x"]
NUMBER = st.one_of(st.floats(-1e3, 1e3).map(lambda x: f"{x:.2f}"), st.integers(-10**6, 10**6).map(str),
                   st.floats(allow_nan=False, allow_infinity=False).map(repr))


@st.composite
def csv_lines(draw) -> list[str]:
    """A series file: optional (quoted) header, optional date column, rows of numbers: 1-13 drawn one by one,
    or (one time in four) 20-300 from a seeded random walk. Columns besides the drawn one hold derived numbers."""
    n_cols = draw(st.integers(1, 3))
    names = draw(st.permutations(NAMES))[:n_cols]
    quote = '"' if draw(st.booleans()) else ""
    lines = [",".join(f"{quote}{n}{quote}" for n in names)] if draw(st.booleans()) else []
    date_col = draw(st.sampled_from([-1, -1, 0, n_cols - 1]))  # -1: none
    if draw(RARELY):
        rng = random.Random(draw(st.integers(0, 2**32)))
        values = list(itertools.accumulate(rng.gauss(0, 1) for _ in range(rng.randint(20, 300))))
        values = [f"{v:.{rng.randint(0, 6)}f}" for v in values]
    else:
        values = [draw(NUMBER) for _ in range(draw(st.sampled_from([1, 2, 3, 5, 8, 13])))]
    for i, value in enumerate(values):
        cells = [value if j == n_cols - 1 else str(i * j) for j in range(n_cols)]
        if date_col >= 0:
            cells[date_col] = f'"{1981 + i // 365}-01-{i % 28 + 1:02d}"'
        lines.append(",".join(cells))
    return lines


CELL = st.one_of(NUMBER, st.floats().map(repr), st.text(ANY_CHAR, max_size=5), st.sampled_from(
    ["", " ", "nan", "inf", "-inf", "1e999", "1e308", "-1e308", "1_000", "0x10", "abc", '"1981-01-01"', '"', '"a""b"',
     '"1,5"', "  2.5 ", "\ufeff1", "\u0661", "1.5.2", "NaN", '"3"']))
CSV_WRONG = st.one_of(st.lists(CELL, max_size=4).map(",".join), st.just("a,b,c,d,e"), st.just('"Date","Temp"'))
COLUMN = weighted((4, st.none()), (1, st.integers(-3, 2)), (1, st.sampled_from(NAMES)), (1, st.integers()),
                  (1, st.text(ANY_CHAR, max_size=4)),
                  (1, st.sampled_from(["0", "1", "-1", "-0", "--1", "²", "٣", "9" * 5000, "", " 1", "1 ", "1.0"])))


@FUZZ
@given(data=file_bytes(csv_lines(), CSV_WRONG), column=COLUMN, date_column=weighted((3, st.none()), (1, COLUMN)),
       p=st.integers(1, 4), max_p=st.sampled_from([0, 0, 1, 3]),
       tail=st.one_of(st.integers(-2, 30), st.booleans(), st.floats()))
@example(data=b"0", column=None, date_column="--0", p=1, max_p=0, tail=0)  # ValueError from int()
@example(data=b"\x00\n,0", column=None, date_column=None, p=1, max_p=0, tail=0)  # IndexError
def test_read_series_and_fit_ar(folder, data, column, date_column, p, max_p, tail):
    read = explained(read_series, write(folder / "series.csv", data), column, date_column)
    if read is None:
        return
    values, dates = read
    assert values.dtype == np.float64 and values.ndim == 1 and np.isfinite(values).all()
    assert dates is None or len(dates) == len(values)
    explained(split_tail, values, tail)
    with np.errstate(over="ignore", invalid="ignore"):  # values near 1e308 overflow the least squares: not a crash
        fitted = explained(AR(ARConfig(p=p, max_p=max_p)).fit, values)
        if fitted is not None:
            explained(fitted.forecast, 3)


@FUZZ
@given(data=file_bytes(csv_lines(), CSV_WRONG), column=COLUMN.map(lambda c: "" if c is None else str(c)),
       split=SPLITS, horizon=st.integers(0, 40))
def test_forecast_splits(folder, data, column, split, horizon):
    """The forecast task's cut of the series into train, valid and the held-out tail (too short, constant, ...)."""
    from seqlab.tasks.forecast import read_splits as read_series_splits

    path = write(folder / "forecast.csv", data)
    cfg = SimpleNamespace(data=SimpleNamespace(train=str(path), source="", valid="", test="", split=split,
                                               column=column, date_column="", horizon=horizon))
    with np.errstate(over="ignore"):  # values near 1e308 overflow the mean and std: not a crash
        series = explained(read_series_splits, cfg)
    if series is not None:
        assert series.n_train >= 2 and series.std > 0
        assert series.n_train + series.n_valid + series.n_test == len(series.values)


# ---------------------------------------------------------------------------------------------------------
# BLEU tokenizers: they take any str and never raise

BLEU_TEXT = st.one_of(ANY_TEXT, st.lists(st.sampled_from(["&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "-\n", "\n",
                                                          ".", ",", "-", "1", "a", " ", "\u00a0", "'", "$", "é", "\t"]),
                                         max_size=14).map("".join))


@FUZZ
@given(line=BLEU_TEXT)
def test_bleu_tokenizers_take_any_text(line):
    for name, tokenize in TOKENIZERS.items():  # each tokenizer gets every example
        tokens = tokenize(line)
        assert isinstance(tokens, list), name
        assert all(isinstance(t, str) and t.split() == [t] for t in tokens), name  # non-empty, no blank inside
    assert TOKENIZERS["13a"](line) == tokenize_13a_reference(line)


@FUZZ
@given(hyps=st.lists(BLEU_TEXT, min_size=0, max_size=3), refs=st.lists(BLEU_TEXT, min_size=0, max_size=3),
       tokenize=st.sampled_from(sorted(TOKENIZERS)), lowercase=st.booleans())
def test_corpus_bleu_takes_any_text(hyps, refs, tokenize, lowercase):
    score = explained(BLEU(tokenize=tokenize, lowercase=lowercase).corpus_score, hyps, [refs])
    if score is not None:
        assert 0.0 <= score.score <= 100.0 or math.isclose(score.score, 100.0)


# ---------------------------------------------------------------------------------------------------------
# tokenizers and vocabularies loaded from JSON


@functools.cache
def saved_tokenizers() -> tuple[dict, ...]:
    """What save() writes for each kind, as dicts: the shapes the mutations below start from."""
    text = ["the cat sat on the mat", "a dog . the end"]
    bpe = BPETokenizer.train(text, vocab_size=270)
    return (CharTokenizer.train(text).to_dict(), WordTokenizer.train(text).to_dict(), bpe.to_dict(),
            json.loads(bpe.to_json()), Vocab.build("the cat sat".split()).to_dict())


def _paths(doc, prefix=()):
    """Every (container path, key) in a JSON document, depth first."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _mutate(doc, which: int, action: str, value):
    """``doc`` with the value at its ``which``-th path replaced by ``value``, or removed."""
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    if not paths:
        return value
    *parents, key = paths[which % len(paths)]
    container = functools.reduce(lambda d, k: d[k], parents, doc)
    if action == "remove":
        del container[key]
    else:
        container[key] = value
    return doc


def _wrap(doc, how: str) -> bytes:
    """The JSON text as written: plain, or (an HF document) inside {"kind": "bpe", "tokenizer": ...}."""
    if how == "bpe-string" and isinstance(doc, dict) and "model" in doc:
        doc = {"kind": "bpe", "tokenizer": json.dumps(doc)}
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def json_bytes(docs: list[int]) -> st.SearchStrategy[bytes]:
    """JSON files for a loader: arbitrary bytes, arbitrary JSON, nesting 100,000 deep, a ``"kind"`` with random
    fields, and ``saved_tokenizers()[i]`` for i in ``docs``, as saved or with one value replaced or removed."""
    doc = st.sampled_from(docs).map(lambda i: saved_tokenizers()[i])
    mutated = st.builds(_mutate, doc, st.integers(0, 10**6), st.sampled_from(["replace", "remove"]), st.one_of(
        JSON_VALUE, st.sampled_from(["char", "word", "bpe", "vocab", "<pad>", "<unk>", "a", 0, -1, 2**70, [], {},
                                     ["<pad>", "<unk>", "<sos>", "<eos>", "<pad>"]])))
    how = st.sampled_from(["plain", "plain", "bpe-string"])  # bpe-string: inside {"kind": "bpe", "tokenizer": ...}
    deep = st.builds(lambda n, kind: (("[" * n + "]" * n) if kind else ('{"a":' * n + "1" + "}" * n)).encode(),
                     st.integers(1, 100_000), st.booleans())
    kind = st.builds(lambda kind, extra: json.dumps({"kind": kind, **extra}).encode(),
                     st.one_of(st.sampled_from(["char", "word", "bpe", "vocab"]), JSON_VALUE),
                     st.dictionaries(st.sampled_from(["vocab", "tokens", "tokenizer", "pattern", "lowercase", "model"]),
                                     JSON_VALUE, max_size=3))
    saved, changed = st.builds(_wrap, doc, how), st.builds(_wrap, mutated, how)
    return weighted((1, ANY_BYTES), (1, JSON_VALUE.map(lambda v: json.dumps(v).encode())), (1, deep), (1, kind),
                    (2, saved), (4, changed))


@FUZZ
@given(data=json_bytes([0, 1, 2, 3]))
@example(data=b'{"kind":[]}')  # TypeError: unhashable type
@example(data=b'{"a":' * 1988 + b"1" + b"}" * 1988)  # RecursionError
def test_load_tokenizer_json(folder, data):
    tokenizer = explained(load_tokenizer, write(folder / "tokenizer.json", data))
    if tokenizer is not None:  # a tokenizer that loads also works
        assert tokenizer.vocab_size >= 2
        ids = explained(tokenizer.encode, "the cat, <eos> é \U0001f600")
        if ids is not None:
            assert all(0 <= i < tokenizer.vocab_size for i in ids)
            explained(tokenizer.decode, ids)


@FUZZ
@given(data=json_bytes([4]))
@example(data=b'{"a":' * 1988 + b"1" + b"}" * 1988)  # RecursionError
def test_vocab_load_json(folder, data):
    vocab = explained(Vocab.load, write(folder / "vocab.json", data))
    if vocab is not None:
        assert vocab.tokens[:4] == ["<pad>", "<unk>", "<sos>", "<eos>"]


# ---------------------------------------------------------------------------------------------------------
# BERT's WordPiece tokenizer from a model directory: tokenizer.json, or vocab.txt + tokenizer_config.json

WORDPIECE_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "##at", "c", "s", "a"]


@functools.cache
def wordpiece_doc() -> dict:
    """The tokenizer.json of a small BERT vocabulary, as a dict."""
    import tempfile

    from seqlab.text.wordpiece import WordPieceTokenizer

    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "vocab.txt").write_text("\n".join(WORDPIECE_VOCAB) + "\n", encoding="utf-8")
        return json.loads(WordPieceTokenizer.from_directory(Path(directory), 16).to_json())


WORDPIECE_JSON = weighted((1, ANY_BYTES), (1, st.just(0).map(lambda _: _wrap(wordpiece_doc(), "plain"))), (3, st.builds(
    lambda which, action, value: _wrap(_mutate(wordpiece_doc(), which, action, value), "plain"),
    st.integers(0, 10**6), st.sampled_from(["replace", "remove"]),
    st.one_of(JSON_VALUE, st.sampled_from(["BPE", "WordPiece", "[UNK]", "##", 0, -1, 2**70, None, [], {}])))))
VOCAB_TXT = file_bytes(st.permutations(WORDPIECE_VOCAB).map(list), st.sampled_from(["[UNK]", "[CLS]", "##", "", " "]))
BERT_CONFIG = weighted((2, st.fixed_dictionaries({}, optional={
    "do_lower_case": JSON_VALUE, "strip_accents": JSON_VALUE, "tokenize_chinese_chars": JSON_VALUE}).map(
    lambda d: json.dumps(d).encode())), (1, ANY_BYTES))


@st.composite
def bert_files(draw) -> dict[str, bytes]:
    """The tokenizer files of a BERT-style directory: tokenizer.json, or vocab.txt (+ tokenizer_config.json), or none."""
    layout = draw(st.sampled_from(["tokenizer.json", "vocab.txt", "vocab.txt+config", "none"]))
    if layout == "tokenizer.json":
        return {"tokenizer.json": draw(WORDPIECE_JSON)}
    if layout == "vocab.txt":
        return {"vocab.txt": draw(VOCAB_TXT)}
    if layout == "vocab.txt+config":
        return {"vocab.txt": draw(VOCAB_TXT), "tokenizer_config.json": draw(BERT_CONFIG)}
    return {}


@FUZZ
@given(files=bert_files(), max_length=st.sampled_from([3, 16, 128]))
def test_wordpiece_from_directory(folder, files, max_length):
    from seqlab.text.wordpiece import WordPieceTokenizer

    directory = folder / "bert"
    directory.mkdir(exist_ok=True)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        (directory / name).unlink(missing_ok=True)
    for name, data in files.items():
        write(directory / name, data)
    tokenizer = explained(WordPieceTokenizer.from_directory, directory, max_length)
    if tokenizer is not None:  # a tokenizer that loads also works
        ids = explained(tokenizer.encode, "The cats sat, é \U0001f600")
        if ids is not None:
            assert len(ids) <= max_length
            explained(tokenizer.decode, ids)


# ---------------------------------------------------------------------------------------------------------
# regression tests: the crashes hypothesis found, each now a one-line SeqlabError


def one_line_error(call, *args, match: str, **kwargs) -> str:
    with pytest.raises(SeqlabError, match=match) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert message.splitlines() == [message]
    return message


def test_read_text_home_of_unknown_user():
    # was RuntimeError("Could not determine home directory.") from Path.expanduser
    one_line_error(read_text, "~no-such-user-0/corpus.txt", match=r"cannot expand '~no-such-user-0/corpus.txt'.*full path")
    one_line_error(read_text, "~\x00", match=r"cannot expand '~\\x00'")  # was ValueError: embedded null byte


def test_read_text_file_name_too_long(tmp_path):
    # was OSError: [Errno 36] File name too long, from Path.exists
    one_line_error(read_text, str(tmp_path / ("a" * 300 + ".txt")), match=r"cannot read .*aaa\.txt: File name too long")


def test_read_text_path_with_a_line_break_stays_one_line(tmp_path):
    # the message showed the path as is, so a '\r' or '\n' in it split the one-line error
    message = one_line_error(read_text, str(tmp_path / "a\nb.txt"), match="file not found")
    assert repr(str(tmp_path / "a\nb.txt")) in message  # shown quoted, with the escape


def test_split_text_fraction_too_large_for_a_float():
    # was OverflowError: int too large to convert to float
    one_line_error(split_text, "abc", [10**400, 0, 0], match="split fractions must be three numbers")


@pytest.mark.parametrize("column", ["--0", "²", "9" * 5000])
def test_read_series_column_that_int_refuses(tmp_path, column):
    # str.isdigit() accepted these, then int() raised ValueError
    path = write(tmp_path / "s.csv", b"1\n2\n3\n")
    one_line_error(read_series, path, column, match=r"no column .*; the columns are indices 0\.\.0")
    one_line_error(read_series, path, None, column, match=r"no date column")


def test_read_series_data_row_wider_than_header(tmp_path):
    # the default column was picked from the data row, past the header's names: IndexError
    path = write(tmp_path / "s.csv", b"\x00\n,0\n")
    one_line_error(read_series, path, match="no column holds a number")
    values, _ = read_series(write(tmp_path / "t.csv", b"value\n1,9\n2,9\n"))
    assert values.tolist() == [1.0, 2.0]  # the named column, not the unnamed one beside it


@pytest.mark.parametrize("reader", ["read_conll", "read_labelled", "read_series", "load_tokenizer", "Vocab.load"])
def test_readers_name_too_long(tmp_path, reader):
    # was OSError: [Errno 36] File name too long, from read_bytes / open / Path.exists
    one_line_error(PATH_READERS[reader], tmp_path / ("a" * 300 + ".txt"), match="(cannot read|not found)")


@pytest.mark.parametrize("load", [load_tokenizer, Vocab.load])
def test_json_nested_too_deep(tmp_path, load):
    # was RecursionError from json.loads
    path = write(tmp_path / "deep.json", b'{"a":' * 5000 + b"1" + b"}" * 5000)
    one_line_error(load, path, match="is not a valid .* JSON file .*recursion")


@pytest.mark.parametrize("kind", [[], {}, ["char"]])
def test_load_tokenizer_kind_not_a_string(tmp_path, kind):
    # was TypeError: unhashable type: 'list' from the KINDS lookup
    one_line_error(load_tokenizer, write(tmp_path / "t.json", json.dumps({"kind": kind}).encode()),
                   match="unknown tokenizer kind")


def _bert_dir(tmp_path: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        write(tmp_path / name, data)
    return tmp_path


def test_wordpiece_template_naming_a_missing_token(tmp_path):
    # tokenizers loaded the file, then panicked on the first encode (pyo3 PanicException: no entry found for key)
    from seqlab.text.wordpiece import WordPieceTokenizer

    doc = copy.deepcopy(wordpiece_doc())
    doc["post_processor"]["single"][2]["SpecialToken"]["id"] = "##"
    directory = _bert_dir(tmp_path, {"tokenizer.json": json.dumps(doc).encode()})
    one_line_error(WordPieceTokenizer.from_directory, directory, 16, match="fails to encode a test word")


def test_wordpiece_model_without_unk(tmp_path):
    # [UNK] only among the added tokens: an unknown word raised tokenizers' plain Exception at encode time
    from seqlab.text.wordpiece import WordPieceTokenizer

    doc = copy.deepcopy(wordpiece_doc())
    del doc["model"]["vocab"]["[UNK]"]
    directory = _bert_dir(tmp_path, {"tokenizer.json": json.dumps(doc).encode()})
    one_line_error(WordPieceTokenizer.from_directory, directory, 16, match=r"fails to encode a test word .*\[UNK\]")


def test_wordpiece_vocab_txt_not_utf8(tmp_path):
    # was UnicodeDecodeError from read_text
    from seqlab.text.wordpiece import WordPieceTokenizer

    one_line_error(WordPieceTokenizer.from_directory, _bert_dir(tmp_path, {"vocab.txt": b"[UNK]\n\x80\n"}), 16,
                   match=r"vocab\.txt is not UTF-8 \(invalid start byte at byte 6\)")


@pytest.mark.parametrize("flags", ['{"do_lower_case": null}', '{"strip_accents": []}', '{"tokenize_chinese_chars": 1}'])
def test_wordpiece_config_flags_not_booleans(tmp_path, flags):
    # was TypeError from BertNormalizer ("'None' is not an instance of 'bool'")
    from seqlab.text.wordpiece import WordPieceTokenizer

    vocab = ("\n".join(WORDPIECE_VOCAB) + "\n").encode()
    directory = _bert_dir(tmp_path, {"vocab.txt": vocab, "tokenizer_config.json": flags.encode()})
    key = json.loads(flags).popitem()[0]
    one_line_error(WordPieceTokenizer.from_directory, directory, 16, match=rf"tokenizer_config\.json: {key} must be true or false")
    write(directory / "tokenizer_config.json", b'{"strip_accents": null, "do_lower_case": false}')  # null: follow lowercasing
    assert WordPieceTokenizer.from_directory(directory, 16).encode("The cat") == [2, 1, 6, 3]
