"""Fine-tuned BERT-style taggers and classifiers exported as BertForTokenClassification /
BertForSequenceClassification (``seqlab export RUN --format hf``), reloaded with transformers.

Parity: fp32 logits within 1e-5 of seqlab's on padded batches; the tokenizer gives seqlab's ids; id2label is the
run's label list. A tiny random BERT directory is fine-tuned for a few steps (test_finetune's fixtures).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from seqlab import api
from seqlab.base.errors import SeqlabError
from seqlab.exporters import export

from test_finetune import classify_config, tag_config, write_tiny_bert

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")
QUIET = {"log": lambda *a, **k: None}
SENTENCES = [["Bonn", "sees", "the", "Limas"], ["Kim"], ["the", "film", "and", "Anna", "with", "Paris", "runs"]]


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert")


@pytest.fixture(scope="module")
def tagger_run(tiny_bert, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tag")
    return api.train_run(tag_config(tmp, tiny_bert, steps=20), tmp / "run", **QUIET)


@pytest.fixture(scope="module")
def classifier_runs(tiny_bert, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("classify")
    cfg = classify_config(tmp, tiny_bert, steps=20)
    cls = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, pooling="cls"))
    return api.train_run(cls, tmp / "cls", **QUIET), api.train_run(cfg, tmp / "mean", **QUIET)


def test_tagger_exports_to_bert_for_token_classification(tagger_run, tmp_path):
    out = tmp_path / "hf"
    assert export(tagger_run, "hf", out)["model"] == "BertForTokenClassification"
    tagger = api.load(tagger_run, device="cpu")
    hf = transformers.AutoModelForTokenClassification.from_pretrained(out).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert type(hf).__name__ == "BertForTokenClassification"
    assert hf.config.id2label == dict(enumerate(tagger.labels.names))
    assert hf.config.label2id == {name: i for i, name in enumerate(tagger.labels.names)}
    ids = [tagger.tokenizer.encode_words(words)[0] for words in SENTENCES]
    batch = tok(SENTENCES, is_split_into_words=True, padding=True, return_tensors="pt")
    assert [row[: len(i)] for row, i in zip(batch["input_ids"].tolist(), ids)] == ids
    assert tok(" ".join(SENTENCES[2]))["input_ids"] == tagger.tokenizer.encode(" ".join(SENTENCES[2]))
    mask = batch["attention_mask"].bool()
    with torch.no_grad():
        ours = tagger.model(batch["input_ids"], mask)
        theirs = hf(**batch).logits
    diff = (ours - theirs)[mask].abs().max().item()
    assert diff <= 1e-5, diff
    # predictions read at each word's first sub-word are seqlab's
    first = [tagger.tokenizer.encode_words(words)[1] for words in SENTENCES]
    predicted = [[hf.config.id2label[int(theirs[r, p].argmax())] for p in positions]
                 for r, positions in enumerate(first)]
    assert predicted == [r["tags"] for r in tagger.predict([" ".join(w) for w in SENTENCES])]


def test_cls_pooled_classifier_exports_to_bert_for_sequence_classification(classifier_runs, tmp_path):
    run, _ = classifier_runs
    out = tmp_path / "hf"
    assert export(run, "hf", out)["model"] == "BertForSequenceClassification"
    classifier = api.load(run, device="cpu")
    assert classifier.model.pooler is not None
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert hf.config.id2label == dict(enumerate(classifier.labels.names))
    texts = ["the good film", "a bad film with anna and the kim", "good"]
    batch = tok(texts, padding=True, return_tensors="pt")
    assert [classifier.tokenizer.encode(t) for t in texts] == [
        row[: int(m.sum())] for row, m in zip(batch["input_ids"].tolist(), batch["attention_mask"])]
    with torch.no_grad():
        ours = classifier.model(batch["input_ids"], batch["attention_mask"].bool())
        theirs = hf(**batch).logits
    assert (ours - theirs).abs().max().item() <= 1e-5
    probs = theirs.softmax(-1)
    assert [hf.config.id2label[int(p.argmax())] for p in probs] == [r["label"] for r in classifier.predict(texts)]


def test_pooler_comes_from_the_checkpoint(tmp_path):
    from safetensors.torch import save_file

    from seqlab.models.pretrained_heads import PretrainedClassifierConfig, start
    from seqlab.models.pretrained import read_weights

    bert = write_tiny_bert(tmp_path / "bert")
    torch.manual_seed(0)
    tensors = read_weights(bert)
    tensors["pooler.dense.weight"], tensors["pooler.dense.bias"] = torch.randn(16, 16), torch.randn(16)
    save_file(tensors, str(bert / "model.safetensors"))
    cfg = PretrainedClassifierConfig(pretrained=str(bert), n_classes=2, pooling="cls", max_len=16)
    model, _ = start(cfg, tmp_path, write=False)
    assert torch.equal(model.pooler.weight, tensors["pooler.dense.weight"])
    assert torch.equal(model.pooler.bias, tensors["pooler.dense.bias"])
    with pytest.raises(SeqlabError, match="model.pooling='max' is not available; use one of mean, cls"):
        PretrainedClassifierConfig(pretrained="x", n_classes=2, pooling="max")


def test_mean_pooled_classifier_is_refused_by_name(classifier_runs, tmp_path):
    _, mean = classifier_runs
    with pytest.raises(SeqlabError, match=r"model.pooling=mean \(BertForSequenceClassification: cls, the pooler's "
                                          r"tanh layer on \[CLS\]\); retrain with --set model.pooling=cls"):
        export(mean, "hf", tmp_path / "out")
    assert not (tmp_path / "out").exists()
