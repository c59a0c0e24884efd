"""In-memory data spooled to its task's file (seqlab.data.in_memory): each kind reads back, through the task's own
reader, as given; generators are read once; bad items and empty data are one-line errors naming the item; a
failure part-way leaves no file."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seqlab.data.in_memory import data_file_name, has_date_index, spool
from seqlab.base.errors import SeqlabError


class Once:
    """An iterable that may be iterated once: a second pass is an error (the spool must not read twice)."""

    def __init__(self, items):
        self.items, self.used = list(items), False

    def __iter__(self):
        if self.used:
            raise AssertionError("iterated twice")
        self.used = True
        yield from self.items


def no_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_file_names():
    assert data_file_name("tag", "train_data") == "train.conll"
    assert data_file_name("classify", "valid_data") == "valid.tsv"
    assert data_file_name("lm", "test_data") == "test.txt"
    assert data_file_name("embed", "data") == "data.txt"
    assert data_file_name("forecast", "train_data") == "train.csv"
    assert data_file_name("translate", "train_data") == "train"  # a prefix: train.src, train.tgt
    with pytest.raises(SeqlabError, match="task.kind 'parse' has no in-memory data"):
        data_file_name("parse", "train_data")


def test_lm_text_and_documents(tmp_path):
    from seqlab.data.sources import read_text, stream_text

    docs = ["First document.\r\nwith a CRLF", "", "third\u2028line \ud7ff é"]
    path = spool("lm", Once(docs), tmp_path / "train.txt")
    assert read_text(path) == "\n".join(docs)  # exactly the text, as data.source reads it
    assert "".join(stream_text(path)()) == "\n".join(docs)
    assert read_text(spool("lm", "one text\n", tmp_path / "one.txt")) == "one text\n"


def test_embed_token_lists_and_lines(tmp_path):
    from seqlab.data.sources import line_pieces, stream_text
    from seqlab.tasks.word_vectors import stream_sentences

    data = [["the", "cat", "sat", "."], "A line, split\nas a file's", ("Größe", "42", "_x")]
    path = spool("embed", (d for d in data), tmp_path / "train.txt", tokenizer="word")
    read = list(stream_sentences(line_pieces(stream_text(path)())))
    assert read == [["the", "cat", "sat", "."], ["A", "line", ",", "split"], ["as", "a", "file", "'", "s"],
                    ["Größe", "42", "_x"]]
    with pytest.raises(SeqlabError, match='set data.tokenizer = "word"'):
        spool("embed", [["a"]], tmp_path / "x.txt", tokenizer="char")


def test_tag_sentences(tmp_path):
    from seqlab.tasks.tag import read_examples

    data = [[("EU", "B-ORG"), ("rejects", "O"), ("German", "B-MISC"), ("call", "O")],
            [("Peter", "B-PER"), ("Blackburn", "I-PER")], [("a\u00a0b", "O")]]  # NBSP: not a column separator
    path = spool("tag", Once(data), tmp_path / "train.conll")
    assert [list(zip(ex.tokens, ex.tags)) for ex in read_examples(str(path))] == data


def test_classify_pairs(tmp_path):
    from seqlab.tasks.classify import read_examples

    data = [("a fine film", "pos"), ("dull,  \"quoted\"; (x)", "neg"), ("(3 (2 not a tree))", "neu")]
    path = spool("classify", Once(data), tmp_path / "train.tsv")
    assert [(ex.text, ex.label) for ex in read_examples(str(path))] == data
    # an int label reads back as its digits, as from a file; surrounding whitespace is stripped as in a file
    path = spool("classify", [(" padded text ", 1), ("other", 2)], tmp_path / "int.tsv")
    assert [(ex.text, ex.label) for ex in read_examples(str(path))] == [("padded text", "1"), ("other", "2")]


def test_translate_pairs(tmp_path):
    from seqlab.data.parallel import stream_parallel

    data = [("ein Haus", "a house"), ("zwei\u2028Zeilen\x0b", "two lines"), ("x", "y")]
    prefix = spool("translate", Once(data), tmp_path / "train", src="de", tgt="en")
    assert prefix == tmp_path / "train" and no_files(tmp_path) == ["train.de", "train.en"]
    assert list(stream_parallel(prefix, "de", "en")) == data


def test_forecast_values_and_dates(tmp_path):
    from seqlab.data.series import read_column
    from seqlab.tasks import registry
    from seqlab.tasks.forecast import read_splits

    values = [0.1 + 0.2, 1e-300, -2, np.float32(0.1), np.int64(7), 123456789.123456789, 5.5, 6.25, 1.0, 2.0]
    path = spool("forecast", Once(values), tmp_path / "train.csv")
    col = read_column(path)
    assert col.values.tolist() == [float(v) for v in values] and col.dates is None  # exact float64
    assert spool("forecast", np.arange(4.0), tmp_path / "a.csv").read_text() == "value\n0.0\n1.0\n2.0\n3.0\n"

    series = pd.Series(np.linspace(0, 1, 10) ** 2, index=pd.date_range("1981-01-01", periods=10, freq="D"))
    assert has_date_index(series) and not has_date_index(series.reset_index(drop=True))
    path = spool("forecast", series, tmp_path / "dated.csv")
    cfg = registry.resolve("ar", [f'data.source="{path}"', 'data.date_column="date"', "model.max_p=0"])
    read = read_splits(cfg)  # the task's own reader, from the config a run would have
    assert read.values.tolist() == series.tolist() and read.dates[:2] == ["1981-01-01", "1981-01-02"]
    months = pd.Series([1.0, 2.0, 3.0], index=pd.period_range("2020-01", periods=3, freq="M"))
    assert read_column(spool("forecast", months, tmp_path / "m.csv"), date_column="date").dates == [
        "2020-01", "2020-02", "2020-03"]


BAD = [  # (kind, data, the error's pattern): each names the item's index and the fix
    ("lm", ["ok", 5], r"train_data item 1: expected str \(a document\), got int 5; give each document as a str"),
    ("lm", ["ok", "bad \ud800"], r"train_data item 1 holds '\\ud800' .* lone surrogate"),
    ("embed", [["ok"], ["two words"]], r"train_data item 1: token 0 'two words' is not one word"),
    ("embed", [["ok"], []], r"train_data item 1: an empty sentence"),
    ("embed", [["ok"], ["a", 3]], r"train_data item 1: token 1 is int 3, not a str"),
    ("embed", [["ok"], ["a\x1cb"]], r"train_data item 1: token 0 'a\\x1cb' is not one word"),
    ("embed", [["ok"], 7], r"train_data item 1: expected a token list or a str"),
    ("tag", [[("a", "O")], [("New York", "B-LOC")]], r"train_data item 1: token 0 'New York' cannot be one CoNLL"),
    ("tag", [[("a", "O")], [("x", "O"), ("a\tb", "O")]], r"train_data item 1: token 1 'a\\tb' cannot be one"),
    ("tag", [[("a", "O")], [("-DOCSTART-", "O")]], r"train_data item 1: token 0 '-DOCSTART-' cannot be one"),
    ("tag", [[("a", "O")], []], r"train_data item 1: an empty sentence"),
    ("tag", [[("a", "O")], [("a", "PER")]], r"train_data item 1: token 0's tag 'PER' is not a NER tag"),
    ("tag", [[("a", "O")], [("a", 1)]], r"train_data item 1: pair 0 \(str 'a', int 1\) is not two str"),
    ("tag", [[("a", "O")], [("a",)]], r"train_data item 1: pair 0 expected \(token, tag\), got tuple"),
    ("tag", [[("a", "O")], "a O"], r"train_data item 1: expected \[\(token, tag\), ...\], got str 'a O'"),
    ("classify", [("a", "x"), 5], r"train_data item 1: expected \(text, label\), got int 5; give \(text, label\)"),
    ("classify", [("a", "x"), ("a\tb", "x")], r"train_data item 1: the text holds a tab or a line break"),
    ("classify", [("a", "x"), ("a\nb", "x")], r"train_data item 1: the text holds a tab or a line break"),
    ("classify", [("a", "x"), ("a", "x\ry")], r"train_data item 1: the label holds a tab or a line break"),
    ("classify", [("a", "x"), ("  ", "x")], r"train_data item 1: the text is empty"),
    ("classify", [("a", "x"), ("a", True)], r"train_data item 1: expected \(text, label\), got tuple .* label"),
    ("translate", [("a", "b"), ("a\nb", "c")], r"train_data item 1: the source holds a line break"),
    ("translate", [("a", "b"), ("a", "")], r"train_data item 1: the target is empty"),
    ("translate", [("a", "b"), ("a", "b", "c")], r"train_data item 1: expected \(source, target\)"),
    ("forecast", [1.0, "2.0"], r"train_data item 1: expected a number, got str '2.0'"),
    ("forecast", [1.0, math.nan], r"train_data item 1: nan is not a finite number; fill or drop it"),
    ("forecast", [1.0, 10 ** 400], r"train_data item 1: 1000.* is not a finite number"),
    ("forecast", [1.0, True], r"train_data item 1: expected a number, got bool True"),
    ("forecast", pd.Series([1.0, 2.0], index=pd.DatetimeIndex(["2020-01-01", None])),
     r"train_data item 1: the date index is missing \(NaT\)"),
    ("forecast", np.zeros((3, 2)), r"train_data has shape \(3, 2\); give a 1-D series"),
    ("forecast", pd.DataFrame({"a": [1.0]}), r"train_data is a DataFrame; give one column"),
    ("forecast", "1,2,3", r"train_data must be an iterable of items"),
]


@pytest.mark.parametrize("kind, data, pattern", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_items_name_their_index_and_leave_no_file(tmp_path, kind, data, pattern):
    path = tmp_path / data_file_name(kind, "train_data")
    with pytest.raises(SeqlabError, match=pattern) as err:
        spool(kind, data, path)
    assert "\n" not in str(err.value)
    assert no_files(tmp_path) == []  # no file, no temporary


@pytest.mark.parametrize("kind", ["lm", "embed", "tag", "classify", "translate", "forecast"])
def test_empty_data_names_the_argument(tmp_path, kind):
    with pytest.raises(SeqlabError, match="^valid_data is empty \\(no items\\)"):
        spool(kind, iter([]), tmp_path / "valid", what="valid_data")
    assert no_files(tmp_path) == []


def test_text_of_only_whitespace_is_refused(tmp_path):
    for kind, data in (("lm", ["  ", "\n"]), ("lm", ""), ("embed", [" ", ""])):
        with pytest.raises(SeqlabError, match="^test_data holds no text"):
            spool(kind, data, tmp_path / "test.txt", what="test_data")
    assert no_files(tmp_path) == []


def test_failure_part_way_leaves_the_previous_file(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("before", encoding="utf-8")

    def items():
        yield "text", "label"
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        spool("classify", items(), path)
    with pytest.raises(SeqlabError, match="item 2"):
        spool("classify", [("a", "b")] * 2 + [("c", None)], path)
    assert path.read_text(encoding="utf-8") == "before" and no_files(tmp_path) == ["train.tsv"]
    with pytest.raises(SeqlabError, match=re.escape("item 1: the target is empty")):
        spool("translate", [("a", "b"), ("c", " ")], tmp_path / "pairs")
    assert no_files(tmp_path) == ["train.tsv"]  # neither side of a translation is left


# --- classify pairs that look swapped or have one label; DataFrames (issue #52) ----------------------------

SENTENCES = ["a fine film with a good cast", "dull and far too long", "the best thing this year",
             "i walked out before the end", "warm funny and kind", "a mess from start to finish",
             "it made me smile", "nothing happens for two hours", "worth every minute", "i want my money back"]


@pytest.mark.parametrize("data, pattern", [
    ([("pos" if i % 2 else "neg", s) for i, s in enumerate(SENTENCES)],
     r"^train_data has as many distinct labels as examples \(10\): the pairs look swapped, \(label, text\); give "
     r"\(text, label\) pairs, the text first"),
    ([("pos" if i % 2 else "neg", SENTENCES[i % 6]) for i in range(10)],  # 6 distinct "labels" of 10
     r"^train_data's labels are longer than its texts \(5\.\d words against 1\.0 on average\): the pairs look "
     r"swapped"),
    ([("pos", "great film"), ("neg", "awful")], r"labels are longer than its texts.*look swapped"),
    ([(s, "pos") for s in SENTENCES[:5]],
     r"^train_data has a single label \('pos'\) in its 5 examples; a classifier needs at least two classes"),
])
def test_classify_pairs_swapped_or_of_one_label_are_one_line_errors(tmp_path, data, pattern):
    with pytest.raises(SeqlabError, match=pattern) as err:
        spool("classify", Once(data), tmp_path / "train.tsv")
    assert "\n" not in str(err.value) and no_files(tmp_path) == []


def test_small_legitimate_classify_data_passes(tmp_path):
    """Four examples of two labels, one-word texts with long label names, numeric labels, a one-label test
    split: none looks swapped."""
    for i, data in enumerate([[("good", "pos"), ("bad", "neg"), ("fine", "pos"), ("awful", "neg")],
                              [("ok", "positive"), ("bad", "negative")],
                              [(s, i % 3) for i, s in enumerate(SENTENCES)],
                              [("a fine film", "pos"), ("dull", "neg")]]):
        spool("classify", data, tmp_path / f"train{i}.tsv")
    spool("classify", [(s, "pos") for s in SENTENCES[:3]], tmp_path / "test.tsv", what="test_data")


class FakeFrame:
    """A DataFrame by its looks (``columns``, ``itertuples``), as pandas' is read without importing pandas."""

    def __init__(self, columns: dict):
        self.columns, self._data = list(columns), columns

    def __iter__(self):  # what iterating a DataFrame yields: its column names
        return iter(self.columns)

    def itertuples(self, index=True):
        assert index is False
        return zip(*self._data.values())


FakeFrame.__name__ = "DataFrame"


@pytest.mark.parametrize("make", [pd.DataFrame, FakeFrame], ids=["pandas", "stand-in"])
def test_a_dataframe_of_text_and_label_columns_is_read_by_name_or_position(tmp_path, make):
    from seqlab.tasks.classify import read_examples

    texts, labels = SENTENCES[:4], ["pos", "neg", "pos", "neg"]
    for i, columns in enumerate([{"id": [1, 2, 3, 4], "label": labels, "text": texts},  # by name
                                 {"review": texts, "stars": labels}]):  # two columns: text first
        path = spool("classify", make(columns), tmp_path / f"train{i}.tsv")
        assert [(ex.text, ex.label) for ex in read_examples(str(path))] == list(zip(texts, labels))
    numeric = spool("classify", make({"text": texts, "label": np.array([0, 1, 0, 1])}), tmp_path / "n.tsv")
    assert [ex.label for ex in read_examples(str(numeric))] == ["0", "1", "0", "1"]
    with pytest.raises(SeqlabError, match=r"^train_data is a DataFrame with columns a, b, c; name two of them "
                                          r"'text' and 'label'.*df\[\[TEXT, LABEL\]\]\.itertuples\(index=False\)"):
        spool("classify", make({"a": texts, "b": labels, "c": labels}), tmp_path / "bad.tsv")
    with pytest.raises(SeqlabError, match=r"^train_data is a DataFrame, whose iteration yields its column names "
                                          r"\(text\); .*df\.itertuples\(index=False\)"):
        spool("lm", make({"text": texts}), tmp_path / "lm.txt")
    assert sorted(no_files(tmp_path)) == ["n.tsv", "train0.tsv", "train1.tsv"]
