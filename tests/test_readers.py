"""CoNLL-2003 and labelled-sentence readers: the real files' counts (../shared/data/README.md),
IOB1 -> IOB2 conversion against the published IOB2 copy, format detection, and malformed input
reported as one-line SeqlabErrors with file:line."""

from __future__ import annotations

import random

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from seqlab.data.conll import Sentence, convert_scheme, detect_scheme, read_conll, to_iob2
from seqlab.data.labelled import detect_format, read_labelled
from seqlab.base.errors import SeqlabError
from seqlab.metrics.entities import get_entities

# README §3: file -> (documents, sentences, tokens, entities PER / LOC / ORG / MISC)
CONLL = {
    "train": ("eng.train", "iob2/train.txt", 946, 14_041, 203_621, (6_600, 7_140, 6_321, 3_438)),
    "valid": ("eng.testa", "iob2/valid.txt", 216, 3_250, 51_362, (1_842, 1_837, 1_341, 922)),
    "test": ("eng.testb", "iob2/test.txt", 231, 3_453, 46_435, (1_617, 1_668, 1_661, 702)),
}


@lru_cache(maxsize=None)
def conll(path: Path) -> list[Sentence]:
    return read_conll(path)


@pytest.mark.parametrize("split", list(CONLL))
def test_conll2003_counts_and_iob1_to_iob2(shared_data, split):
    iob1_name, iob2_name, docs, n_sentences, n_tokens, (per, loc, org, misc) = CONLL[split]
    iob1 = conll(shared_data / "conll2003" / iob1_name)
    iob2 = conll(shared_data / "conll2003" / iob2_name)
    for sentences in (iob1, iob2):
        assert len(sentences) == n_sentences
        assert sum(len(s.tokens) for s in sentences) == n_tokens
        assert len({s.doc for s in sentences}) == docs and sentences[-1].doc == docs - 1
        assert all(len(s.tags) == len(s.tokens) and len(s.columns) == 2 for s in sentences)
    assert detect_scheme(s.tags for s in iob1) == "IOB1"
    assert detect_scheme(s.tags for s in iob2) == "IOB2"
    # the README: converting the IOB1 files to IOB2 reproduces iob2/ exactly (chunk column included)
    assert [s.tokens for s in iob1] == [s.tokens for s in iob2]
    assert [to_iob2(s.tags) for s in iob1] == [s.tags for s in iob2]
    assert [to_iob2(s.columns[1]) for s in iob1] == [s.columns[1] for s in iob2]
    assert [to_iob2(s.tags) for s in iob2] == [s.tags for s in iob2]  # IOB2 is left alone
    expected = {"PER": per, "LOC": loc, "ORG": org, "MISC": misc}
    for sentences in (iob1, iob2):  # default-mode chunking reads both schemes to the same entities
        assert Counter(t for t, _, _ in get_entities([list(s.tags) for s in sentences])) == expected


def test_conll_first_sentence_and_iob2_option(shared_data):
    first = conll(shared_data / "conll2003" / "eng.train")[0]
    assert first.tokens[:3] == ("EU", "rejects", "German")
    assert first.tags[:3] == ("I-ORG", "O", "I-MISC")
    assert first.columns[0][:3] == ("NNP", "VBZ", "JJ")
    assert (first.doc, first.line) == (0, 3)
    converted = read_conll(shared_data / "conll2003" / "eng.testb", iob2=True)
    assert [s.tags for s in converted] == [s.tags for s in conll(shared_data / "conll2003" / "iob2" / "test.txt")]


def write(tmp_path: Path, text: str, name: str = "data.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_conll_small_file_two_columns_docstart_and_blank_runs(tmp_path):
    path = write(tmp_path, "-DOCSTART- O\n\nJohn I-PER\nlives O\n\n\n\nin O\nNew I-LOC\nYork I-LOC\n"
                           "-DOCSTART- O\nParis I-LOC\nI-LOC B-LOC\n")
    sentences = read_conll(path)
    assert [s.tokens for s in sentences] == [("John", "lives"), ("in", "New", "York"), ("Paris", "I-LOC")]
    assert [s.doc for s in sentences] == [0, 0, 1]
    assert [s.line for s in sentences] == [3, 8, 12]
    assert all(s.columns == () for s in sentences)
    assert [s.tags for s in read_conll(path, iob2=True)] == [("B-PER", "O"), ("O", "B-LOC", "I-LOC"),
                                                               ("B-LOC", "B-LOC")]


@pytest.mark.parametrize("tags, iob2", [
    ("I-PER I-PER O I-LOC", "B-PER I-PER O B-LOC"),
    ("I-PER B-PER I-PER", "B-PER B-PER I-PER"),
    ("I-PER I-LOC I-LOC", "B-PER B-LOC I-LOC"),
    ("O O", "O O"),
    ("B-ORG I-ORG", "B-ORG I-ORG"),
])
def test_to_iob2(tags, iob2):
    assert to_iob2(tags.split()) == tuple(iob2.split())


@pytest.mark.parametrize("tags, scheme, expected", [
    ("B-PER I-PER O B-LOC B-LOC I-LOC I-LOC", "iobes", "B-PER E-PER O S-LOC B-LOC I-LOC E-LOC"),
    ("B-PER I-LOC", "iobes", "S-PER S-LOC"),  # an I- of another type opens (and here ends) an entity
    ("S-PER B-LOC I-LOC E-LOC O", "iob2", "B-PER B-LOC I-LOC I-LOC O"),
    ("U-PER B-LOC L-LOC", "iob2", "B-PER B-LOC I-LOC"),  # BILOU
    ("U-PER B-LOC L-LOC", "iobes", "S-PER B-LOC E-LOC"),
    ("S-PER E-PER", "auto", "S-PER E-PER"),  # auto keeps what is not IOB1 as written
])
def test_convert_scheme(tags, scheme, expected):
    assert convert_scheme(tags.split(), scheme) == tuple(expected.split())


def test_iob1_converts_to_iobes_through_iob2():
    assert convert_scheme("I-PER I-PER O I-LOC B-LOC".split(), "iobes", iob1=True) == (
        "B-PER", "E-PER", "O", "S-LOC", "S-LOC")


def test_iobes_and_iob2_name_the_same_entities():
    """Random well-formed IOB2 sentences: to IOBES and back is the identity, and both name the same entities as
    the entity F1 reads them (seqeval's default mode)."""
    from seqlab.metrics.entities import get_entities

    rng = random.Random(0)
    for _ in range(500):
        tags: list[str] = []
        while len(tags) < rng.randint(1, 12):
            if rng.random() < 0.4:
                tags.append("O")
            else:
                kind = rng.choice(["PER", "LOC"])
                tags += [f"B-{kind}"] + [f"I-{kind}"] * rng.choice([0, 0, 1, 2])
        iobes = convert_scheme(tags, "iobes")
        assert convert_scheme(iobes, "iob2") == tuple(tags)
        assert get_entities(list(iobes)) == get_entities(tags)
        assert all(t[0] in "BIESO" for t in iobes)


def test_detect_scheme_variants():
    assert detect_scheme([["B-PER", "I-PER", "O"]]) == "IOB2"
    assert detect_scheme([["O"], ["I-PER"]]) == "IOB1"
    assert detect_scheme([["B-PER", "I-LOC"]]) == "IOB1"  # an I- of another type opens an entity
    assert detect_scheme([["S-PER", "B-LOC", "E-LOC"]]) == "IOBES"
    assert detect_scheme([["U-PER", "B-LOC", "L-LOC"]]) == "BILOU"
    with pytest.raises(SeqlabError, match="mix IOBES"):
        detect_scheme([["S-PER", "U-LOC"]])


@pytest.mark.parametrize("text, line, match", [
    ("EU NNP I-NP I-ORG\nrejects\n", 2, "expected at least 2 columns"),
    ("EU NNP I-NP I-ORG\nrejects VBZ O\n", 2, "3 columns, but earlier lines have 4"),
    ("EU NNP I-NP ORG\n", 1, "'ORG' is not a NER tag"),
    ("EU B-ORG\n\nParis X-LOC\n", 3, "'X-LOC' is not a NER tag"),
])
def test_conll_malformed_lines_name_file_and_line(tmp_path, text, line, match):
    path = write(tmp_path, text)
    with pytest.raises(SeqlabError, match=re.escape(f"{path}:{line}: ") + ".*" + match) as err:
        read_conll(path)
    assert "\n" not in str(err.value)


def test_conll_bad_files(tmp_path):
    with pytest.raises(SeqlabError, match="no sentences found"):
        read_conll(write(tmp_path, "-DOCSTART- -X- -X- O\n\n"))
    with pytest.raises(SeqlabError, match="no such file"):
        read_conll(tmp_path / "missing.txt")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"EU B-ORG\ncaf\xe9 O\n")
    with pytest.raises(SeqlabError, match=re.escape(f"{bad}:2: not valid UTF-8")):
        read_conll(bad)


# --------------------------------------------------------------------------------------------
# labelled sentences: README §4 counts

LABELLED = {
    "sst2/train.tsv": ("tsv", {"0": 29_780, "1": 37_569}),
    "sst2/dev.tsv": ("tsv", {"0": 428, "1": 444}),
    "sst2/sentence_level/train.txt": ("label-first", {"0": 3_310, "1": 3_610}),
    "sst2/sentence_level/dev.txt": ("label-first", {"0": 428, "1": 444}),
    "sst2/sentence_level/test.txt": ("label-first", {"0": 912, "1": 909}),
    "sst5/trees/train.txt": ("tree", dict(zip("01234", (1_092, 2_218, 1_624, 2_322, 1_288)))),
    "sst5/trees/dev.txt": ("tree", dict(zip("01234", (139, 289, 229, 279, 165)))),
    "sst5/trees/test.txt": ("tree", dict(zip("01234", (279, 633, 389, 510, 399)))),
    "sst5/train.tsv": ("fasttext", dict(zip("12345", (1_092, 2_218, 1_624, 2_322, 1_288)))),
    "sst5/dev.tsv": ("fasttext", dict(zip("12345", (139, 289, 229, 279, 165)))),
    "sst5/test.tsv": ("fasttext", dict(zip("12345", (279, 633, 389, 510, 399)))),
}


@lru_cache(maxsize=None)
def labelled(path: Path) -> tuple[list[str], list[str]]:
    return read_labelled(path)


@pytest.mark.parametrize("name", list(LABELLED))
def test_labelled_counts(shared_data, name):
    fmt, counts = LABELLED[name]
    path = shared_data / name
    with path.open(encoding="utf-8") as f:
        assert detect_format(f.readline()) == fmt
    sentences, labels = labelled(path)
    assert Counter(labels) == counts
    assert len(sentences) == len(labels) == sum(counts.values())
    assert all(s and s == s.strip() and "\t" not in s for s in sentences)


def test_labelled_first_examples(shared_data):
    sentences, labels = labelled(shared_data / "sst2" / "train.tsv")
    assert (sentences[0], labels[0]) == ("hide new secretions from the parental units", "0")  # trailing space gone
    sentences, labels = labelled(shared_data / "sst2" / "sentence_level" / "train.txt")
    assert labels[0] == "1" and sentences[0].startswith("a stirring , funny")
    sentences, labels = labelled(shared_data / "sst5" / "trees" / "train.txt")
    assert labels[0] == "3" and sentences[0].startswith("The Rock is destined to be the 21st Century 's new")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_sst5_trees_agree_with_tsv(shared_data, split):
    """README: the TSV label is the tree's root label + 1 and its text the tree's leaves, with
    -LRB-/-RRB- turned into brackets and the treebank's backslash escapes (\\/, \\*) undone."""
    tree_sentences, tree_labels = labelled(shared_data / "sst5" / "trees" / f"{split}.txt")
    tsv_sentences, tsv_labels = labelled(shared_data / "sst5" / f"{split}.tsv")
    assert [int(label) + 1 for label in tree_labels] == [int(label) for label in tsv_labels]

    def unescape(s: str) -> str:
        return re.sub(r"\\(.)", r"\1", s.replace("-LRB-", "(").replace("-RRB-", ")"))

    assert [unescape(s) for s in tree_sentences] == tsv_sentences


def test_sst2_glue_dev_equals_sentence_level_dev(shared_data):
    glue = labelled(shared_data / "sst2" / "dev.tsv")
    sentence_level = labelled(shared_data / "sst2" / "sentence_level" / "dev.txt")

    def normalise(s: str) -> str:  # README: normalise -lrb-/-rrb-; the treebank's \/ escapes differ too
        return re.sub(r"\\(.)", r"\1", s.replace("-lrb-", "(").replace("-rrb-", ")"))

    assert Counter(zip(glue[0], glue[1])) == Counter(zip(map(normalise, sentence_level[0]), sentence_level[1]))


def test_unlabelled_glue_test_file_is_refused(shared_data):
    path = shared_data / "sst2" / "test.tsv"
    with pytest.raises(SeqlabError, match=re.escape(f"{path}:1: ") + ".*no 'label' column"):
        read_labelled(path)


def test_labelled_small_files(tmp_path):
    assert read_labelled(write(tmp_path, "Label\tSentence\tid\npos\tgood film \t1\n\nneg\tbad\t2\n")) == (
        ["good film", "bad"], ["pos", "neg"])
    assert read_labelled(write(tmp_path, "__label__1\tawful .\n__label__5 great\n")) == (
        ["awful .", "great"], ["1", "5"])
    assert read_labelled(write(tmp_path, "positive  a  fine film\nnegative\tdull\n")) == (
        ["a  fine film", "dull"], ["positive", "negative"])
    assert read_labelled(write(tmp_path, "(4 (2 8 1\\/2) (4 (3 rocks) (2 !)))\n")) == (["8 1\\/2 rocks !"], ["4"])


@pytest.mark.parametrize("text, line, match", [
    ("sentence\tlabel\ngood \t1\nbad\n", 3, "1 tab-separated fields, but the header has 2"),
    ("sentence\tlabel\ngood \t\n", 2, "empty label"),
    ("sentence\tlabel\n \t1\n", 2, "empty sentence"),
    ("good film\t1\n", 1, "has no 'sentence' or 'label' column"),
    ("__label__1\tfine\nplain line\n", 2, "expected '__label__N<TAB>sentence'"),
    ("__label__1\t\n", 1, "empty sentence"),
    ("1 fine\n0\n", 2, "empty sentence"),
    ("(3 (2 a) (3 b))\n(3 (2 a) (3 b)\n", 2, "1 unclosed '\\('"),
    ("(3 (2 a) (3 b)))\n", 1, "unbalanced '\\)'"),
    ("(3 (2 a)) (2 b)\n", 1, "more than one tree"),
    ("(3 (2 a (2 b)))\n", 1, "followed by a subtree"),
    ("(3 (2 a) ( b))\n", 1, "node '\\(b\\)' has neither a word nor subtrees"),
    ("(3 (2 a) (()))\n", 1, "not followed by a label"),
    ("(3 (2 a) c)\n", 1, "outside a '\\(label word\\)' leaf"),
    ("(3 (2 a))\nno tree\n", 2, "expected a bracketed tree"),
    ("(3)\n", 1, "node '\\(3\\)' has neither"),
])
def test_labelled_malformed_lines_name_file_and_line(tmp_path, text, line, match):
    path = write(tmp_path, text)
    with pytest.raises(SeqlabError, match=re.escape(f"{path}:{line}: ") + ".*" + match) as err:
        read_labelled(path)
    assert "\n" not in str(err.value)


def test_labelled_empty_file(tmp_path):
    with pytest.raises(SeqlabError, match="no labelled sentences"):
        read_labelled(write(tmp_path, "\n\n"))
    with pytest.raises(SeqlabError, match="no labelled sentences"):
        read_labelled(write(tmp_path, "sentence\tlabel\n"))
