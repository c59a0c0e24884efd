"""The sentence-classification task (sentiment, seed 004 many-to-one): pooling, the classifier model, training
end to end on a tiny synthetic task, predictions and their formats, evaluation with the confusion plot,
word vectors, bad input, the CLI."""

from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pytest
import torch

from seqlab import api, tasks
from seqlab.base import config
from seqlab.base.errors import SeqlabError
from seqlab.metrics.accuracy import classification_scores
from seqlab.models.classifier import CLASSIFIER_CONFIGS, Classifier, pool
from seqlab.models.recurrent import RecurrentEncoder

from seqlab.base.bounds import chain_bound, gamma
from helpers import assert_same_weights

QUIET = {"log": lambda *a, **k: None}
FILLER = ["the", "film", "was", "a", "story", "of", "and", "it", "plot", "acting", "with", "long", "music", "very"]
TINY = {"lstm": {"d_model": 16, "hidden_size": 16, "n_layers": 1, "dropout": 0.0},
        "gru": {"d_model": 16, "hidden_size": 16, "n_layers": 2, "dropout": 0.0},
        "transformer": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12, "dropout": 0.0}}


pytestmark = pytest.mark.usefixtures("one_thread")


def _padding_tol(model: torch.nn.Module, steps: int = 7) -> float:
    """Two float64 evaluations of a TINY classifier (padded in a batch, or alone): <= 8·steps + 1 reductions (steps ×
    2 directions × 2 layers × input and hidden products, the head) of length <= 48, terms <= g·max(1, max|e|) in
    absolute value and an error carried with a gain <= g per step, g the largest ‖|W|‖∞ of the model's own
    matrices (Higham §3.1, §3.3). A padding leak moves logits by >= 1e-3."""
    g = max(p.detach().abs().sum(-1).max().item() for n, p in model.named_parameters() if p.dim() == 2
            and "embed" not in n)
    e = max(p.detach().abs().max().item() for n, p in model.named_parameters() if "embed" in n)
    return chain_bound(products=8 * steps + 1, n=48, magnitude=g * max(1.0, e), dtype=torch.float64,
                       gain=max(1.0, g) ** steps)


def example(rng: random.Random) -> tuple[str, str]:
    """'pos' when the keyword 'great' occurs anywhere in the sentence, else 'neg'."""
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 8))]
    label = "pos" if rng.random() < 0.5 else "neg"
    if label == "pos":
        words.insert(rng.randint(0, len(words)), "great")
    return " ".join(words), label


@pytest.fixture
def corpus(tmp_path):
    """Three files in three formats the reader detects: TSV with a header, `label sentence`, fastText."""
    rng = random.Random(0)
    train = [example(rng) for _ in range(300)]
    valid = [example(rng) for _ in range(30)]
    test = [example(rng) for _ in range(40)]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"{s} \t{y}\n" for s, y in train))
    (tmp_path / "valid.txt").write_text("".join(f"{y} {s}\n" for s, y in valid))
    (tmp_path / "test.txt").write_text("".join(f"__label__{y}\t{s}\n" for s, y in test))
    return {"train": str(tmp_path / "train.tsv"), "valid": str(tmp_path / "valid.txt"),
            "test": str(tmp_path / "test.txt"), "test_examples": test}


def run_config(corpus, arch="lstm", steps=60, data=None, **model):
    return tasks.from_dict({
        "task": {"kind": "classify"},
        "data": {"train": corpus["train"], "valid": corpus["valid"], "test": corpus["test"], "tokenizer": "word",
                 **(data or {})},
        "model": {"arch": arch, **TINY[arch], **model},
        "train": {"max_steps": steps, "batch_size": 16, "lr": 2e-2, "warmup_steps": 5, "eval_every": 0,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1},
    })


# --- pooling and the model ---

def test_pooling_reads_real_tokens_only():
    h = torch.tensor([[[1.0, -1.0], [3.0, 5.0], [100.0, 100.0]],
                      [[2.0, 4.0], [-6.0, 0.0], [8.0, -2.0]]])  # batch 2, seq 3, width 2
    padding = torch.tensor([[True, True, False], [True, True, True]])
    assert torch.equal(pool(h, padding, "mean"), torch.tensor([[2.0, 2.0], [4.0 / 3, 2.0 / 3]]))
    assert torch.equal(pool(h, padding, "max"), torch.tensor([[3.0, 5.0], [8.0, 4.0]]))
    assert torch.equal(pool(h, padding, "last"), torch.tensor([[3.0, 5.0], [8.0, -2.0]]))
    # bidirectional: [forward half at the last real token, backward half at the first token]
    assert torch.equal(pool(h, padding, "last", dirs=2), torch.tensor([[3.0, -1.0], [8.0, 4.0]]))
    assert torch.equal(pool(h, None, "max"), torch.tensor([[100.0, 100.0], [8.0, 4.0]]))


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_last_pooling_is_each_direction_s_final_state(cell):
    torch.manual_seed(0)
    cfg = CLASSIFIER_CONFIGS[cell](vocab_size=20, n_classes=2, bidirectional=True, n_layers=2, d_model=8,
                                   hidden_size=6, dropout=0.0)
    encoder = RecurrentEncoder(cfg, bidirectional=True, padding_idx=0).double().eval()
    ids = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    padding = ids != 0
    h, state = encoder(ids, padding)  # batch, seq, 2*hidden; h_n (layers*dirs, batch, hidden)
    top_forward, top_backward = state[0][-2], state[0][-1]  # batch, hidden each
    # "last" gathers the outputs the final states are: the same numbers, copied
    assert torch.equal(pool(h, padding, "last", dirs=2), torch.cat([top_forward, top_backward], -1))


@pytest.mark.parametrize("arch,pooling,bidirectional", [("lstm", "last", True), ("lstm", "mean", False),
                                                        ("gru", "max", True), ("transformer", "mean", False),
                                                        ("transformer", "max", False)])
def test_padding_never_changes_a_sentence_s_logits(arch, pooling, bidirectional):
    torch.manual_seed(0)
    kw = {"vocab_size": 30, "n_classes": 3, "pooling": pooling, **TINY[arch]}
    if arch != "transformer":
        kw["bidirectional"] = bidirectional
    model = Classifier(CLASSIFIER_CONFIGS[arch](**kw)).double().eval()
    seqs = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [4]]
    width = max(map(len, seqs))
    ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])  # batch, seq
    mask = torch.tensor([[True] * len(s) + [False] * (width - len(s)) for s in seqs])
    batched = model(ids, mask)  # batch, classes
    tol = _padding_tol(model)
    for row, s in enumerate(seqs):
        torch.testing.assert_close(batched[row], model(torch.tensor([s]))[0], atol=tol, rtol=0)


def test_config_checks():
    with pytest.raises(SeqlabError, match="model.pooling='last' is not available for this model.arch; use one of mean"):
        CLASSIFIER_CONFIGS["transformer"](vocab_size=5, n_classes=2, pooling="last")
    with pytest.raises(SeqlabError, match="use one of last, mean, max"):
        CLASSIFIER_CONFIGS["lstm"](vocab_size=5, n_classes=2, pooling="first")
    with pytest.raises(SeqlabError, match="cell='lstm' does not fit this model.arch"):
        CLASSIFIER_CONFIGS["gru"](vocab_size=5, n_classes=2, cell="lstm")
    with pytest.raises(SeqlabError, match="tie_embeddings has no meaning"):
        CLASSIFIER_CONFIGS["transformer"](vocab_size=5, n_classes=2, tie_embeddings=True)


# --- the task end to end ---

@pytest.mark.parametrize("arch,pooling", [("lstm", "last"), ("gru", "max"), ("transformer", "mean")])
def test_a_keyword_task_is_learned(corpus, tmp_path, arch, pooling):
    run = api.train_run(run_config(corpus, arch, steps=60, pooling=pooling), tmp_path / "run", **QUIET)
    assert json.loads((run / "labels.json").read_text())["labels"] == ["neg", "pos"]
    valid = [json.loads(r) for r in (run / "metrics.jsonl").read_text().splitlines()][-1]
    assert valid["split"] == "valid" and valid["accuracy"] > 0.9 and valid["loss"] < math.log(2) / 2

    classifier = api.load(run, device="cpu")
    scores = classifier.evaluate("test")
    assert set(scores) == {"accuracy", "macro_f1"} and scores["accuracy"] > 0.9
    png = run / "plots" / "confusion.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    results = classifier.predict(["the plot was great", "the acting was long"])
    assert [r["label"] for r in results] == ["pos", "neg"]
    assert results[0]["probability"] == max(results[0]["probabilities"].values()) > 0.5
    # a float32 softmax over 2 classes (exp, sum, divide: γ_4 each), the two summed
    assert sum(results[0]["probabilities"].values()) == pytest.approx(1.0, abs=gamma(2 * 2 + 4, torch.float32))
    label, probability = classifier.format_prediction(results[0]).split("\t")
    # printed to 4 decimals: within half a unit of the 4th
    assert label == "pos" and float(probability) == pytest.approx(results[0]["probability"], abs=5e-5)
    lines = ["great", "a film of very long music and the plot with acting", "it was great and long"]
    batched, alone = classifier.predict(lines), [classifier.predict([line])[0] for line in lines]
    assert [r["label"] for r in batched] == [r["label"] for r in alone]  # padding changes no prediction
    classifier.model.double()  # the probabilities of two float64 evaluations: |Δp| <= max|Δlogit|
    try:
        batched, alone = classifier.predict(lines), [classifier.predict([line])[0] for line in lines]
        tol = _padding_tol(classifier.model, steps=12) + gamma(4, torch.float32)  # + a float32 softmax, if any
    finally:
        classifier.model.float()
    assert [r["probability"] for r in batched] == pytest.approx([r["probability"] for r in alone], abs=tol)


def test_evaluate_matches_the_metrics_of_the_predictions(corpus, tmp_path):
    run = api.train_run(run_config(corpus, steps=3), tmp_path / "run", **QUIET)  # barely trained: errors to score
    classifier = api.load(run, device="cpu")
    test = corpus["test_examples"]
    predicted = [r["label"] for r in classifier.predict([s for s, _ in test])]
    assert classifier.evaluate("test") == classification_scores([y for _, y in test], predicted)


def test_resume_continues_exactly(corpus, tmp_path):
    straight = api.train_run(run_config(corpus, steps=10), tmp_path / "a", **QUIET)
    api.train_run(run_config(corpus, steps=5), tmp_path / "b", **QUIET)
    resumed = api.train_run(run_config(corpus, steps=10), tmp_path / "b", resume=True, **QUIET)
    assert_same_weights(straight, resumed)


def test_numeric_labels_keep_their_spelling_and_order(tmp_path):
    rng = random.Random(2)
    lines = []
    for _ in range(120):
        label = rng.choice(["2", "10", "7"])
        lines.append(f"{label} " + " ".join([f"w{label}"] + rng.sample(FILLER, 3)))
    (tmp_path / "all.txt").write_text("\n".join(lines) + "\n")
    cfg = tasks.from_dict({**run_config({"train": "", "valid": "", "test": ""}).to_dict(),
                            "data": {"train": str(tmp_path / "all.txt"), "tokenizer": "word"}})
    run = api.train_run(cfg, tmp_path / "run", **QUIET)
    assert json.loads((run / "labels.json").read_text())["labels"] == ["2", "7", "10"]
    classifier = api.load(run, device="cpu")
    assert classifier.predict(["w10 the film"])[0]["label"] == "10"


def test_sst_by_name_reads_the_cached_splits(shared_data, tmp_path, monkeypatch):
    from seqlab.tasks.classify import read_data

    (tmp_path / "cache").mkdir()
    for name in ("sst2", "sst5"):  # the cache layout, no download
        (tmp_path / "cache" / name).symlink_to(shared_data / name)
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    cfg = tasks.resolve("sentiment-lstm")
    assert cfg.data.source == "sst2" and cfg.task.kind == "classify"
    data = read_data(cfg)
    assert [len(data[s]) for s in ("train", "valid", "test")] == [6920, 872, 1821]
    assert {ex.label for ex in data["test"]} == {"0", "1"}
    assert data["valid"][4].where.endswith("sst2/sentence_level/dev.txt:5")
    sst5 = read_data(tasks.resolve("sentiment-lstm", ["data.source=sst5"]), ("test",))["test"]
    assert len(sst5) == 2210 and {ex.label for ex in sst5} == {"0", "1", "2", "3", "4"}
    phrases = read_data(tasks.resolve("sentiment-lstm", ["data.source=sst2-phrases"]))  # issue #39
    assert [len(phrases[s]) for s in ("train", "valid", "test")] == [67349, 872, 1821]
    assert phrases["train"][0].where.endswith("sst2/train.tsv:2") and phrases["train"][0].label == "0"
    assert phrases["test"][7] == data["test"][7]


# --- word vectors ---

def test_frozen_word_vectors(corpus, tmp_path):
    words = ["great", "film", "zebra"]
    vectors = np.random.default_rng(0).normal(size=(3, 16)).astype(np.float32)
    (tmp_path / "vec.txt").write_text("3 16\n" + "".join(f"{w} " + " ".join(f"{v:.9g}" for v in row) + "\n"
                                                          for w, row in zip(words, vectors)))
    cfg = run_config(corpus, steps=8, vectors=str(tmp_path / "vec.txt"), freeze_vectors=True)
    classifier = api.load(api.train_run(cfg, tmp_path / "run", **QUIET), device="cpu")
    E = classifier.model.token_embedding.weight.detach().numpy()
    vocab = classifier.tokenizer.vocab
    assert np.array_equal(E[[vocab.stoi("great"), vocab.stoi("film")]], vectors[:2])
    bpe = run_config(corpus, steps=2, data={"tokenizer": "bpe", "vocab_size": 300}, vectors=str(tmp_path / "vec.txt"))
    with pytest.raises(SeqlabError, match="model.vectors needs a word"):
        api.train_run(bpe, tmp_path / "bpe", **QUIET)


# --- bad input ---

def test_bad_input_names_file_and_line(corpus, tmp_path):
    no_label = tmp_path / "nolabel.tsv"
    no_label.write_text("sentence\tscore\nfine film\t1\n")
    with pytest.raises(SeqlabError, match=rf"{no_label}:1: tab-separated file whose header .* has no 'label' column"):
        api.train_run(run_config({**corpus, "train": str(no_label)}), tmp_path / "r0", **QUIET)

    run = api.train_run(run_config(corpus, steps=2), tmp_path / "run", **QUIET)
    classifier = api.load(run, device="cpu")
    odd = tmp_path / "odd.txt"
    odd.write_text("pos a great film\n\nmeh a film\n")
    data = {**classifier.config.to_dict()["data"], "test": str(odd)}
    classifier.config = tasks.from_dict({**classifier.config.to_dict(), "data": data})
    with pytest.raises(SeqlabError, match=rf"{odd}:3: label 'meh' does not occur in the training data \(labels: neg, pos\)"):
        classifier.evaluate("test")
    with pytest.raises(SeqlabError, match="input line 3 is empty"):
        classifier.predict(["a film", "great", ""])
    with pytest.raises(SeqlabError, match="takes no beam"):  # from Python; --beam from the CLI
        classifier.predict(["a film"], beam=2)


def test_transformer_leaves_out_long_training_sentences_and_refuses_them_at_prediction(corpus, tmp_path):
    messages = []
    run = api.train_run(run_config(corpus, "transformer", steps=2, max_len=6), tmp_path / "run", log=messages.append)
    assert any(m.startswith("train: left out ") and "model.max_len=6" in m for m in messages)
    with pytest.raises(SeqlabError, match="input line 1 has 7 tokens, more than model.max_len=6"):
        api.load(run, device="cpu").predict(["a b c d e f g"])


# --- the command line ---

def test_cli_predict_and_eval(corpus, tmp_path, monkeypatch, capsys):
    from seqlab.cli import main

    run = api.train_run(run_config(corpus, steps=60), tmp_path / "run", **QUIET)
    monkeypatch.setattr("sys.stdin", io.StringIO("the plot was great\nthe acting was long\n"))
    assert main(["predict", str(run), "--device", "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["pos", "neg"]
    assert all(0.5 < float(line.split("\t")[1]) <= 1.0 for line in lines)
    monkeypatch.setattr("sys.stdin", io.StringIO("great film\n"))
    assert main(["predict", str(run), "--format", "json", "--device", "cpu"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["label"] == "pos" and set(result["probabilities"]) == {"neg", "pos"}
    (run / "plots" / "confusion.png").unlink(missing_ok=True)
    assert main(["eval", str(run), "--split", "valid", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and set(json.loads(out)) == {"accuracy", "macro_f1"}
    assert (run / "plots" / "confusion.png").exists()
    monkeypatch.setattr("sys.stdin", io.StringIO("great film\n\n"))
    assert main(["predict", str(run), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: input line 2 is empty") and err.count("\n") == 1


@pytest.mark.parametrize("preset", ["sentiment-lstm", "sentiment-transformer"])
def test_presets_resolve_and_build(preset):
    from seqlab.tasks.classify import build_model

    cfg = tasks.resolve(preset)
    assert preset in config.preset_names() and config.preset_summary(preset)
    model = build_model(cfg, vocab_size=100, n_classes=2)
    assert model(torch.tensor([[4, 5, 6]]), torch.tensor([[True, True, True]])).shape == (1, 2)
