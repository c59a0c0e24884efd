"""The word-vector formats ``model.vectors`` reads (word2vec text and binary, headerless GloVe text, an embedding
run's directory), against gensim where it reads them too, and word vectors starting both sides of the translate
models (the coverage logged per side, the rows at step 0, frozen rows after training, the dimension check)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from seqlab import api, tasks
from seqlab.data.parallel import stream_parallel, train_tokenizers
from seqlab.base.errors import SeqlabError
from seqlab.vectors.start import init_embeddings, start_vectors, token_texts
from seqlab.tasks import translate
from seqlab.vectors.keyed import KeyedVectors, read_vectors

pytestmark = pytest.mark.usefixtures("one_thread")

FAST = ["train.progress=false", "train.device=cpu", "train.threads=1"]


@pytest.fixture
def kv() -> KeyedVectors:
    words = ["the", "Katze", "été", "dog", "x1"]
    return KeyedVectors(words, np.random.default_rng(0).normal(size=(len(words), 6)).astype(np.float32))


def write_glove(path, kv: KeyedVectors) -> None:
    """Stanford's layout: 'word v1 .. vD' lines, no header."""
    path.write_text("".join(f"{w} " + " ".join(f"{v:.9g}" for v in row) + "\n" for w, row in zip(kv.words, kv.vectors)),
                    encoding="utf-8")


def assert_same(a: KeyedVectors, b: KeyedVectors) -> None:
    assert a.words == b.words
    np.testing.assert_array_equal(a.vectors, b.vectors)


# --- files ---

def test_word2vec_binary_round_trip_equals_text(kv, tmp_path):
    binary = kv.save_word2vec_format(tmp_path / "v.bin", binary=True)
    text = kv.save_word2vec_format(tmp_path / "v.txt")
    assert_same(KeyedVectors.load_word2vec_format(binary), kv)  # the format read from the bytes
    assert_same(KeyedVectors.load_word2vec_format(binary, binary=True), KeyedVectors.load_word2vec_format(text))
    assert_same(read_vectors(binary), read_vectors(text))
    with pytest.raises(SeqlabError, match="not UTF-8"):  # told it is text, it is not
        KeyedVectors.load_word2vec_format(binary, binary=False)


def test_word2vec_binary_parity_with_gensim(kv, tmp_path):
    gensim = pytest.importorskip("gensim")
    ours = kv.save_word2vec_format(tmp_path / "ours.bin", binary=True)
    theirs = gensim.models.KeyedVectors.load_word2vec_format(str(ours), binary=True)
    assert theirs.index_to_key == kv.words
    np.testing.assert_array_equal(theirs.vectors, kv.vectors)
    theirs.save_word2vec_format(str(tmp_path / "gensim.bin"), binary=True)
    size = len(b"5 6\n") + sum(len(w.encode()) + 1 + 4 * 6 for w in kv.words)
    assert (tmp_path / "gensim.bin").stat().st_size == size  # gensim writes no newline after a vector
    assert_same(read_vectors(tmp_path / "gensim.bin"), kv)


def test_headerless_glove_text(kv, tmp_path):
    write_glove(tmp_path / "glove.txt", kv)
    assert_same(read_vectors(tmp_path / "glove.txt"), kv)
    gensim = pytest.importorskip("gensim")
    theirs = gensim.models.KeyedVectors.load_word2vec_format(str(tmp_path / "glove.txt"), no_header=True)
    assert theirs.index_to_key == kv.words
    np.testing.assert_array_equal(theirs.vectors, kv.vectors)


@pytest.mark.parametrize("content, message", [
    ("a 1 2 3\nb 1 2\n", "line 2: 2 values, line 1 has 3"),
    ("a 1 2\n\nb 1 2\n", "line 2: 0 values, line 1 has 2"),
    ("a 1 x\n", "line 1: a value is not a number"),
    ("a 1\na 2\n", "the word 'a' appears twice"),
    ("a\n", "expected 'WORDS DIM' or 'word v1 .. vDIM'"),
    ("2 3\nx 1 2 3\ny 1 2\n", "line 3: 2 values, the header says 3"),
])
def test_malformed_text_names_the_line(tmp_path, content, message):
    (tmp_path / "bad.txt").write_text(content, encoding="utf-8")
    with pytest.raises(SeqlabError, match=message):
        read_vectors(tmp_path / "bad.txt")


def test_damaged_binary_is_refused(kv, tmp_path):
    data = kv.save_word2vec_format(tmp_path / "v.bin", binary=True).read_bytes()
    (tmp_path / "short.bin").write_bytes(data[:-10])
    with pytest.raises(SeqlabError, match="the header says 5 words but the file ends after 4"):
        read_vectors(tmp_path / "short.bin")
    (tmp_path / "long.bin").write_bytes(data + b"junk")
    with pytest.raises(SeqlabError, match="bytes follow the 5 words"):
        read_vectors(tmp_path / "long.bin")
    write_glove(tmp_path / "glove.txt", kv)
    with pytest.raises(SeqlabError, match="expected 'WORDS DIM'"):
        KeyedVectors.load_word2vec_format(tmp_path / "glove.txt", binary=True)


def test_embed_run_directory(tmp_path):
    text = "".join(" ".join(random.Random(i).choices(["the", "cat", "dog", "sees", "a", "big"], k=6)) + "\n"
                   for i in range(200))
    (tmp_path / "w2v.txt").write_text(text, encoding="utf-8")
    run = api.train_run("w2v-sgns", tmp_path / "run", overrides=[*FAST, f"data.source={tmp_path / 'w2v.txt'}",
                        "data.min_freq=1", "model.dim=8", "model.window=2", "train.epochs=1"], log=lambda *a, **k: None)
    ours, theirs = read_vectors(run), api.open_vectors(run)
    assert ours.words == theirs.words and ours.dim == 8
    np.testing.assert_array_equal(ours.vectors, theirs.vectors)
    embedding = torch.nn.Embedding(3, 8)
    assert init_embeddings(embedding, ["<pad>", "cat", "DOG"], run) == 2  # model.vectors = the run's folder
    np.testing.assert_array_equal(embedding.weight[2].detach().numpy(), ours["dog"])
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "config.toml").write_bytes((run / "config.toml").read_bytes())
    with pytest.raises(SeqlabError, match="has no vectors.txt: its training has not finished"):
        read_vectors(unfinished)
    (unfinished / "config.toml").write_text('[task]\nkind = "tag"\n', encoding="utf-8")
    with pytest.raises(SeqlabError, match="is a tag run, which has no word vectors"):
        read_vectors(unfinished)
    with pytest.raises(SeqlabError, match="not a run directory"):
        read_vectors(tmp_path)
    with pytest.raises(SeqlabError, match="model.tgt_vectors: .* is not a file or a run directory"):
        init_embeddings(embedding, ["<pad>"], tmp_path / "missing", key="model.tgt_vectors")


# --- translate ---

TRANSLATION = {"red": "rot", "blue": "blau", "cat": "Katze", "dog": "Hund", "runs": "rennt", "big": "groß"}


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    splits = {}
    for split, n in (("train", 60), ("valid", 8), ("test", 4)):
        src = [" ".join(rng.choice(list(TRANSLATION)) for _ in range(rng.randint(2, 4))) for _ in range(n)]
        for suffix, lines in (("en", src), ("de", [" ".join(TRANSLATION[w] for w in s.split()) for s in src])):
            (tmp_path / f"{split}.{suffix}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        splits[split] = str(tmp_path / split)
    return splits


def translate_config(corpus, arch, **model):
    sizes = ({"n_layers": 1, "n_heads": 2, "d_model": 6, "d_ff": 8, "max_len": 8, "dropout": 0.0}
             if arch == "transformer" else {"d_model": 6, "hidden_size": 8, "attn_size": 8, "max_len": 8})
    return tasks.from_dict({
        "task": {"kind": "translate"},
        "data": {**corpus, "src": "en", "tgt": "de", "tokenizer": "word"},
        "model": {"arch": arch, **sizes, **model},
        "train": {"max_steps": 3, "batch_size": 8, "lr": 1e-2, "warmup_steps": 1, "eval_every": 0, "save_every": 0,
                  "progress": False, "precision": "fp32", "device": "cpu", "threads": 1},
    })


def vector_files(tmp_path) -> tuple[KeyedVectors, KeyedVectors]:
    """English vectors (word2vec binary) and German ones (GloVe text), each with a word the data lacks."""
    rng = np.random.default_rng(1)
    en = KeyedVectors(["cat", "DOG", "red", "tree"], rng.normal(size=(4, 6)).astype(np.float32))
    de = KeyedVectors(["Katze", "hund", "rot", "Baum"], rng.normal(size=(4, 6)).astype(np.float32))
    en.save_word2vec_format(tmp_path / "en.bin", binary=True)
    write_glove(tmp_path / "de.txt", de)
    return en, de


@pytest.mark.parametrize("arch", ["transformer", "seq2seq-attention"])
def test_translate_embeddings_start_from_vectors(corpus, tmp_path, arch):
    """Step 0: the covered rows of E_src and E_tgt are the vectors (case-folded matches too), the output
    projection stays tied to E_tgt, and the coverage of each side is logged."""
    en, de = vector_files(tmp_path)
    cfg = translate_config(corpus, arch, vectors=str(tmp_path / "en.bin"), tgt_vectors=str(tmp_path / "de.txt"))
    src_tok, tgt_tok = train_tokenizers(cfg.data, stream_parallel(corpus["train"], "en", "de"))
    model = translate.build_model(cfg, src_tok, tgt_tok)
    lines: list[str] = []
    start_vectors(translate.vector_sides(cfg, model, {"source": src_tok, "target": tgt_tok}), False, lines.append)
    n_src, n_tgt = src_tok.vocab_size, tgt_tok.vocab_size
    assert lines == [f"embeddings: 3 of {n_src} source word tokens from {tmp_path / 'en.bin'}",
                     f"embeddings: 3 of {n_tgt} target word tokens from {tmp_path / 'de.txt'}"]
    E = {side: e.weight.detach().numpy() for side, e in translate.token_embeddings(model).items()}
    for side, tok, kv, pairs in (("source", src_tok, en, {"cat": "cat", "dog": "DOG", "red": "red"}),
                                 ("target", tgt_tok, de, {"Katze": "Katze", "Hund": "hund", "rot": "rot"})):
        for token, word in pairs.items():
            np.testing.assert_array_equal(E[side][tok.vocab.stoi(token)], kv[word])
        assert not E[side][tok.pad_id].any()
    head = model.head if arch == "transformer" else model.decoder.head
    assert head.weight is translate.token_embeddings(model)["target"].weight  # still one matrix


@pytest.mark.parametrize("arch", ["transformer", "seq2seq-attention"])
def test_frozen_vectors_stay_through_training(corpus, tmp_path, arch):
    en, _ = vector_files(tmp_path)
    cfg = translate_config(corpus, arch, vectors=str(tmp_path / "en.bin"), freeze_vectors=True)
    lines: list[str] = []
    run = api.train_run(cfg, tmp_path / "run", log=lambda *a, **k: lines.append(" ".join(map(str, a))))
    assert any(line.startswith("embeddings: 3 of ") and line.endswith("(frozen)") for line in lines)
    assert not any("target word tokens" in line for line in lines)  # no model.tgt_vectors: E_tgt is trained
    translator = api.load(run, device="cpu")
    E = translate.token_embeddings(translator.model)["source"].weight.detach().numpy()
    np.testing.assert_array_equal(E[translator.src_tok.vocab.stoi("cat")], en["cat"])


def test_translate_vectors_checks(corpus, tmp_path):
    vector_files(tmp_path)
    cfg = translate_config(corpus, "transformer", d_model=8, n_heads=2, tgt_vectors=str(tmp_path / "de.txt"))
    with pytest.raises(SeqlabError, match=r"have 6 dimensions but model.d_model is 8; set model.d_model=6$"):
        api.train_run(cfg, tmp_path / "run", log=lambda *a, **k: None)
    with pytest.raises(SeqlabError, match="freeze_vectors needs model.vectors or model.tgt_vectors"):
        translate_config(corpus, "seq2seq-attention", freeze_vectors=True)
    with pytest.raises(SeqlabError, match="leave model.tgt_vectors empty"):
        translate_config(corpus, "transformer", share_embeddings=True, tgt_vectors=str(tmp_path / "de.txt"))


def test_bpe_pieces_are_looked_up_by_their_text():
    from seqlab.text.tokenizers import BPETokenizer

    tok = BPETokenizer.train(["the cat sat on the mat"] * 20, vocab_size=300)
    texts = token_texts(tok)
    assert len(texts) == tok.vocab_size and texts[tok.pad_id] == ""
    assert "cat" in texts  # the piece " cat" (ByteLevel "Ġcat") without its space


def test_the_vectors_home_imports_without_torch():
    """Reading vectors and checking a config never load torch (the embedding commands run without it): only the
    initialisers of seqlab.vectors.start import it, when called."""
    code = ("import sys, seqlab.vectors, seqlab.vectors.start, seqlab.vectors.keyed, seqlab.vectors.formats; "
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))[:5]")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert out.returncode == 0, out.stderr


def test_analogy_accuracy_is_none_when_nothing_was_answerable(tmp_path):
    """Every question out of the vocabulary: accuracy None, overall and per section, as a similarity score with
    no pair is (issue #52; 0.0 read as a model that answered every question wrong)."""
    from seqlab.vectors.keyed import KeyedVectors

    kv = KeyedVectors(["a", "b", "c", "d", "e"], np.eye(5, dtype=np.float32))
    path = tmp_path / "questions.txt"
    path.write_text(": capitals\nparis france berlin germany\n: known\na b c d\n", encoding="utf-8")
    result = kv.evaluate_analogies(path)
    assert result["sections"][0]["accuracy"] is None and result["sections"][1]["accuracy"] is not None
    path.write_text(": capitals\nparis france berlin germany\n", encoding="utf-8")
    result = kv.evaluate_analogies(path)
    assert result["accuracy"] is None and result["sections"][0]["accuracy"] is None and result["oov_ratio"] == 1.0
