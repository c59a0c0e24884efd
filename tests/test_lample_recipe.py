"""What Lample et al. 2016's recipe needs (issue #56), each on a tiny tagging task: ``train.optimizer = "sgd"``
(plain SGD's step, exact resume with its momentum buffers, the optimizer fixed on resume), validation over the
whole valid split (``train.eval_batches = 0``), ``data.digits_to_zero`` (words, characters, vectors' words and
prediction), the tanh layer before the output layer (``model.tanh_hidden_size``), and the ``ner-lample`` preset."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
import torch

from seqlab import api, tasks
from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_metrics
from seqlab.models.tagger import TAGGER_CONFIGS, Tagger

from helpers import assert_same_weights, write_conll

QUIET = {"log": lambda *a, **k: None}
WORDS = ["the", "a", "runs", "in", "sees", "near"]
NAMES = ["Paris", "Anna", "Kim", "Oslo"]

pytestmark = pytest.mark.usefixtures("one_thread")


def sentence(rng: random.Random) -> list[tuple[str, str]]:
    """Names are one-word entities; a number (digits) is O."""
    out = []
    for _ in range(rng.randint(2, 6)):
        r = rng.random()
        word = rng.choice(NAMES) if r < 0.3 else str(rng.randint(1, 2999)) if r < 0.45 else rng.choice(WORDS)
        out.append((word, "B-NAME" if word[0].isupper() else "O"))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder, rng = tmp_path_factory.mktemp("lample"), random.Random(0)
    return {split: write_conll(folder / f"{split}.txt", [sentence(rng) for _ in range(n)])
            for split, n in (("train", 120), ("valid", 20), ("test", 10))}


def tiny(corpus, steps=6, data=None, model=None, **train):
    return tasks.from_dict({
        "task": {"kind": "tag"},
        "data": {"train": corpus["train"], "valid": corpus["valid"], "test": corpus["test"], "tokenizer": "word",
                 **(data or {})},
        "model": {"arch": "lstm", "d_model": 8, "hidden_size": 8, "n_layers": 1, "dropout": 0.0, **(model or {})},
        "train": {"max_steps": steps, "batch_size": 4, "lr": 0.1, "warmup_steps": 0, "eval_every": 0,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1, **train},
    })


# --- train.optimizer ---

def test_sgd_is_plain_sgd_with_optional_momentum_and_adamw_stays_the_default():
    from seqlab.base.config import TrainConfig
    from seqlab.training.optim import make_optimizer

    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    w = layer.weight.detach().clone()
    opt = make_optimizer(layer, TrainConfig(optimizer="sgd", lr=0.5, weight_decay=0.0), torch.device("cpu"))
    layer(torch.ones(1, 3)).sum().backward()
    g = layer.weight.grad.clone()
    opt.step()
    assert torch.equal(layer.weight.detach(), w - 0.5 * g)  # w <- w - lr g
    assert type(make_optimizer(layer, TrainConfig(), torch.device("cpu"))) is torch.optim.AdamW
    assert make_optimizer(layer, TrainConfig(optimizer="sgd", momentum=0.9), torch.device("cpu")
                          ).param_groups[0]["momentum"] == 0.9
    with pytest.raises(SeqlabError, match="train.optimizer must be one of adamw, sgd"):
        tasks.resolve("ner-bilstm", ["train.optimizer=adam"])
    with pytest.raises(SeqlabError, match=r"train.momentum=1.0 is outside \[0, 1\)"):
        tasks.resolve("ner-bilstm", ["train.optimizer=sgd", "train.momentum=1.0"])
    with pytest.raises(SeqlabError, match='train.beta1 is read by train.optimizer = "adamw" only'):
        tasks.resolve("ner-bilstm", ["train.optimizer=sgd", "train.beta1=0.8"])
    with pytest.raises(SeqlabError, match='train.momentum is read by train.optimizer = "sgd" only'):
        tasks.resolve("ner-bilstm", ["train.momentum=0.9"])


def test_sgd_with_momentum_resumes_exactly_and_the_optimizer_cannot_change_on_resume(corpus, tmp_path):
    sgd = {"optimizer": "sgd", "momentum": 0.9, "min_lr": 0.1}  # a constant rate: the length changes nothing else
    straight = api.train_run(tiny(corpus, 8, **sgd), tmp_path / "a", **QUIET)
    api.train_run(tiny(corpus, 4, **sgd), tmp_path / "b", **QUIET)  # the buffers the resume must restore
    assert_same_weights(straight, api.train_run(tiny(corpus, 8, **sgd), tmp_path / "b", resume=True, **QUIET))
    with pytest.raises(SeqlabError, match="cannot resume .*train.momentum, train.optimizer differ"):
        api.train_run(tiny(corpus, 10), tmp_path / "b", resume=True, **QUIET)


def test_a_run_recorded_before_the_new_keys_resumes_with_their_defaults(corpus, tmp_path):
    run = api.train_run(tiny(corpus, 2), tmp_path / "old", **QUIET)
    path = run / "config.toml"
    lines = path.read_text(encoding="utf-8").splitlines()
    new_keys = ("optimizer =", "momentum =", "tanh_hidden_size =", "digits_to_zero =")
    path.write_text("\n".join(line for line in lines if not line.startswith(new_keys)) + "\n", encoding="utf-8")
    api.train_run(tiny(corpus, 3), run, resume=True, **QUIET)
    assert json.loads((run / "state.json").read_text())["step"] == 3


# --- whole-split validation ---

def test_eval_batches_0_validates_the_whole_valid_split_and_the_rows_say_so(corpus, tmp_path):
    run = api.train_run(tiny(corpus, 4, eval_every=2, eval_batches=0, best_by="f1"), tmp_path / "all", **QUIET)
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "valid"]
    assert [(r["step"], r["validated"]) for r in rows] == [(2, "all"), (4, "all")]
    assert rows[-1]["f1"] == api.load(run, device="cpu", last=True).evaluate("valid")["f1"]
    part = api.train_run(tiny(corpus, 2, eval_every=2, eval_batches=1), tmp_path / "part", **QUIET)
    assert [r["validated"] for r in read_metrics(part / "metrics.jsonl") if r["split"] == "valid"] == ["1 batch"]
    with pytest.raises(SeqlabError, match="train.eval_batches must be >= 0"):
        tasks.resolve("ner-bilstm", ["train.eval_batches=-1"])


# --- data.digits_to_zero ---

def test_digits_read_as_zero_in_words_characters_vectors_and_prediction(corpus, tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("4 8\n" + "".join(f"{w} " + " ".join(["0.1"] * 8) + "\n"
                                        for w in ("1996", "0000", "Bonn", "x7")), encoding="utf-8")
    cfg = tiny(corpus, 4, data={"digits_to_zero": True},
               model={"char_dim": 4, "char_hidden_size": 4, "vectors": str(vectors), "vectors_vocab": 4})
    run = api.train_run(cfg, tmp_path / "zero", **QUIET)
    words = json.loads((run / "vocab.json").read_text())["tokens"]
    assert "0000" in words and "Bonn" in words and not any(c in "123456789" for w in words for c in w)
    chars = json.loads((run / "chars.json").read_text())["tokens"]
    assert "0" in chars and not set("123456789") & set(chars)
    tagger = api.load(run, device="cpu")
    assert tagger.tag("Kim 1996 runs") == list(zip(["Kim", "1996", "runs"], [t for _, t in tagger.tag("Kim 0000 runs")]))
    assert tagger.predict(["Oslo 42"]) == [{"tokens": ["Oslo", "42"], "tags": [t for _, t in tagger.tag("Oslo 00")]}]
    assert tagger.evaluate(data=[[("Anna", "B-NAME"), ("1234", "O")]]) == \
        tagger.evaluate(data=[[("Anna", "B-NAME"), ("0000", "O")]])
    plain = api.train_run(replace(cfg, data=replace(cfg.data, digits_to_zero=False)), tmp_path / "plain", **QUIET)
    assert "1996" in json.loads((plain / "vocab.json").read_text())["tokens"]
    with pytest.raises(SeqlabError, match='data.digits_to_zero is used by task.kind = "tag" only'):
        tasks.resolve("sentiment-lstm", ["data.digits_to_zero=true"])
    from seqlab.exporters import _check_task

    with pytest.raises(SeqlabError, match="data.digits_to_zero = true: it reads every digit as 0"):  # no tokenizer
        _check_task(tasks.resolve("ner-transformer", ["data.digits_to_zero=true"]), "onnx", run)  # exported does


# --- model.tanh_hidden_size ---

def test_the_tanh_layer_sits_between_the_states_and_the_output_and_is_off_by_default():
    kw = {"vocab_size": 30, "n_labels": 5, "d_model": 6, "hidden_size": 4, "n_layers": 1, "dropout": 0.0}
    ids, mask = torch.tensor([[5, 6, 7]]), torch.tensor([[True, True, True]])
    torch.manual_seed(0)
    off = Tagger(TAGGER_CONFIGS["lstm"](**kw)).eval()
    torch.manual_seed(0)
    on = Tagger(TAGGER_CONFIGS["lstm"](**kw, tanh_hidden_size=7)).eval()
    assert off.hidden is None and not any(k.startswith("hidden.") for k in off.state_dict())
    assert off.head.in_features == 8 and torch.equal(off(ids, mask), off.head(off.states(ids, mask, None)))
    assert (on.hidden.in_features, on.hidden.out_features, on.head.in_features) == (8, 7, 7)
    for name, p in off.encoder.state_dict().items():  # the layer is built after the encoder: same start
        assert torch.equal(p, on.encoder.state_dict()[name]), name
    h = on.states(ids, mask, None)  # 1, 3, 8
    assert on(ids, mask).shape == (1, 3, 5)
    assert torch.equal(on(ids, mask), on.head(torch.tanh(on.hidden(h))))
    with pytest.raises(SeqlabError, match="model.tanh_hidden_size=-1 must be 0"):
        TAGGER_CONFIGS["lstm"](**kw, tanh_hidden_size=-1)
    with pytest.raises(SeqlabError, match="tanh_hidden_size"):  # the recurrent taggers' option
        tasks.resolve("ner-transformer", ["model.tanh_hidden_size=8"])


# --- the preset ---

def test_the_ner_lample_preset_is_the_recipe_and_trains_at_tiny_size(corpus, tmp_path):
    cfg = tasks.resolve("ner-lample")
    d, m, t = cfg.data, cfg.model, cfg.train
    assert (d.tag_scheme, d.digits_to_zero, d.min_freq, d.lowercase) == ("iobes", True, 1, False)
    assert (m.n_layers, m.d_model, m.hidden_size, m.char_dim, m.char_hidden_size, m.tanh_hidden_size, m.crf,
            m.dropout, m.vectors) == (1, 100, 100, 25, 25, 100, True, 0.5, "")
    assert (t.optimizer, t.momentum, t.batch_size, t.grad_clip, t.singleton_unk, t.eval_batches, t.best_by,
            t.min_lr, t.weight_decay) == ("sgd", 0.0, 1, 5.0, 0.5, 0, "f1", t.lr, 0.0)
    small = tasks.resolve("ner-lample", [
        f"data.train={corpus['train']}", f"data.valid={corpus['valid']}", f"data.test={corpus['test']}",
        "model.d_model=8", "model.hidden_size=8", "model.char_dim=4", "model.char_hidden_size=4",
        "model.tanh_hidden_size=8", "train.max_steps=4", "train.eval_every=2", "train.save_every=2",
        "train.progress=false", "train.device=cpu", "train.threads=1"])
    run = api.train_run(small, tmp_path / "lample", **QUIET)
    tagger = api.load(run, device="cpu")
    assert len(tagger.tag("Anna flew to 1996")) == 4
    assert set(json.loads((run / "labels.json").read_text())["labels"]) == {"O", "S-NAME"}
