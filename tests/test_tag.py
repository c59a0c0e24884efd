"""The sequence-tagging task (NER, seed 004 many-to-many): the tagger model, training end to end on a tiny
synthetic task, predictions and their formats, evaluation, word vectors, bad input, the CLI."""

from __future__ import annotations

import io
import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest
import torch

from seqlab import api, tasks
from seqlab.base import config
from seqlab.base.errors import SeqlabError
from seqlab.metrics.ner import entity_f1
from seqlab.models.tagger import TAGGER_CONFIGS, Tagger
from seqlab.vectors.start import init_embeddings

from seqlab.base.bounds import chain_bound, gamma
from helpers import assert_same_weights, write_conll

QUIET = {"log": lambda *a, **k: None}
LOWER = ["the", "a", "runs", "sees", "big", "old", "and", "with", "near", "green"]
UPPER = ["Paris", "Anna", "Bonn", "Kim", "Oslo", "Ravi", "Lima", "Omar"]
TINY = {"lstm": {"d_model": 16, "hidden_size": 16, "n_layers": 1, "dropout": 0.0},
        "gru": {"d_model": 16, "hidden_size": 16, "n_layers": 2, "dropout": 0.0},
        "transformer": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12, "dropout": 0.0}}


pytestmark = pytest.mark.usefixtures("one_thread")

# Two float64 evaluations of a TINY tagger (padded in a batch, or alone): each logit is <= 57 chained reductions
# (7 steps × 2 directions × 2 layers × input and hidden products, the output layer) of length <= 48 (a second
# layer's 32 inputs + 16 hidden), terms <= 20 in absolute value (torch's U(±1/4) weights, N(0, 1) embeddings), an
# error carried through the remaining steps with a gain <= 4 per step (‖|W_hh|‖∞ <= 16/4): 57·γ_48·20·4^7 = 1e-7
# (Higham §3.1, §3.3; the transformer arch, one layer, is below it). A padding leak moves logits by >= 1e-3.
TAG_TOL = chain_bound(products=57, n=48, magnitude=20, dtype=torch.float64, gain=4**7)


def sentence(rng: random.Random) -> list[tuple[str, str]]:
    """A capitalised word is a one-word entity (B-NAME), every other word is O."""
    words = [rng.choice(UPPER if rng.random() < 0.35 else LOWER) for _ in range(rng.randint(2, 8))]
    return [(w, "B-NAME" if w[0].isupper() else "O") for w in words]


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    return {split: write_conll(tmp_path / f"{split}.txt", [sentence(rng) for _ in range(n)])
            for split, n in (("train", 300), ("valid", 20), ("test", 30))}


def run_config(corpus, arch="lstm", steps=60, data=None, **model):
    return tasks.from_dict({
        "task": {"kind": "tag"},
        "data": {"train": corpus["train"], "valid": corpus["valid"], "test": corpus["test"], "tokenizer": "word",
                 **(data or {})},
        "model": {"arch": arch, **TINY[arch], **model},
        "train": {"max_steps": steps, "batch_size": 16, "lr": 2e-2, "warmup_steps": 5, "eval_every": 0,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1},
    })


# --- the model ---

@pytest.mark.parametrize("arch", ["lstm", "gru", "transformer"])
def test_padding_never_changes_a_sentence_s_logits(arch):
    torch.manual_seed(0)
    kw = {"vocab_size": 30, "n_labels": 5, **TINY[arch]}
    model = Tagger(TAGGER_CONFIGS[arch](**kw)).double().eval()
    seqs = [[5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [4]]
    width = max(map(len, seqs))
    ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])  # batch, seq
    mask = torch.tensor([[True] * len(s) + [False] * (width - len(s)) for s in seqs])
    batched = model(ids, mask)  # batch, seq, labels
    for row, s in enumerate(seqs):
        alone = model(torch.tensor([s]))[0]  # seq, labels
        torch.testing.assert_close(batched[row, :len(s)], alone, atol=TAG_TOL, rtol=0)


def test_bidirectional_tagger_uses_the_future_and_the_transformer_refuses_long_input():
    torch.manual_seed(0)
    model = Tagger(TAGGER_CONFIGS["lstm"](vocab_size=30, n_labels=3, **TINY["lstm"])).eval()
    a, b = model(torch.tensor([[5, 6, 7]]))[0, 0], model(torch.tensor([[5, 6, 8]]))[0, 0]
    assert not torch.allclose(a, b)  # the first token's labels depend on the last token (seed 004 BiRNN)
    one_way = Tagger(TAGGER_CONFIGS["lstm"](vocab_size=30, n_labels=3, bidirectional=False, **TINY["lstm"])).eval()
    assert torch.equal(one_way(torch.tensor([[5, 6, 7]]))[0, 0], one_way(torch.tensor([[5, 6, 8]]))[0, 0])
    transformer = Tagger(TAGGER_CONFIGS["transformer"](vocab_size=30, n_labels=3, **TINY["transformer"]))
    with pytest.raises(SeqlabError, match="13 positions exceed max_len=12"):
        transformer(torch.ones(1, 13, dtype=torch.long))


def test_loss_is_summed_over_real_tokens_only(corpus):
    from seqlab.tasks.tag import Encoded, TagTask, collate

    torch.manual_seed(0)
    model = Tagger(TAGGER_CONFIGS["lstm"](vocab_size=30, n_labels=3, **TINY["lstm"])).double().eval()
    data = Encoded(words=[[5, 6], [7, 8, 9, 10], [11]], tags=[[1, 0], [0, 2, 1, 0], [2]])
    task = TagTask(model, data, data, labels=None, eval_batch_size=3)
    batch = collate(data, [0, 1, 2])
    assert task.count(batch) == 7
    total = task.loss_sum(model, batch, torch.device("cpu"))
    alone = sum(task.loss_sum(model, collate(data, [i]), torch.device("cpu")).item() for i in range(3))
    # 7 token losses, each within 2·TAG_TOL (log-softmax: |Δ| <= 2 max|Δlogit|), and the sums' rounding
    assert total.item() == pytest.approx(alone, abs=7 * 2 * TAG_TOL + gamma(7, torch.float64) * abs(alone))
    draws = [task.train_batch(torch.Generator().manual_seed(4), 5) for _ in range(2)]
    assert all(torch.equal(x, y) for x, y in zip(*draws))  # the data generator is the only randomness


# --- the task end to end ---

@pytest.mark.parametrize("arch", ["lstm", "transformer"])
def test_a_tiny_tagging_task_is_learned(corpus, tmp_path, arch):
    run = api.train_run(run_config(corpus, arch, steps=60), tmp_path / "run", **QUIET)
    assert json.loads((run / "labels.json").read_text())["labels"] == ["O", "B-NAME"]
    valid = [json.loads(r) for r in (run / "metrics.jsonl").read_text().splitlines()][-1]
    assert valid["split"] == "valid" and valid["f1"] > 0.95

    tagger = api.load(run, device="cpu")
    scores = tagger.evaluate("test")
    assert set(scores) == {"precision", "recall", "f1", "per_type"} and set(scores["per_type"]) == {"NAME"}
    assert scores["f1"] > 0.95 and scores["per_type"]["NAME"]["support"] > 0
    results = tagger.predict(["the Paris sees Anna", "Kim runs"])
    assert results[0] == {"tokens": ["the", "Paris", "sees", "Anna"], "tags": ["O", "B-NAME", "O", "B-NAME"]}
    assert tagger.format_prediction(results[1]) == "B-NAME O"
    # the same sentence alone and in a batch with longer ones: the same tags
    lines = ["Oslo and the big green Lima", "Anna", "a Bonn near the old Omar with Ravi"]
    batched = tagger.predict(lines)
    assert batched == [tagger.predict([line])[0] for line in lines]


def test_evaluate_matches_entity_f1_of_the_predictions(corpus, tmp_path):
    from seqlab.data.conll import read_conll

    run = api.train_run(run_config(corpus, steps=4), tmp_path / "run", **QUIET)  # barely trained: errors to score
    tagger = api.load(run, device="cpu")
    for split in ("test", "valid"):
        sentences = read_conll(corpus[split])
        predicted = tagger.predict([" ".join(s.tokens) for s in sentences])
        expected = entity_f1([list(s.tags) for s in sentences], [r["tags"] for r in predicted])
        assert tagger.evaluate(split) == expected


def test_resume_continues_exactly(corpus, tmp_path):
    straight = api.train_run(run_config(corpus, steps=10), tmp_path / "a", **QUIET)
    api.train_run(run_config(corpus, steps=5), tmp_path / "b", **QUIET)
    resumed = api.train_run(run_config(corpus, steps=10), tmp_path / "b", resume=True, **QUIET)
    assert_same_weights(straight, resumed)


def test_iob1_files_are_learned_and_scored_in_iob2(tmp_path):
    rng = random.Random(1)
    sentences = []
    for _ in range(200):  # "Anna Kim" is one two-word entity: IOB1 writes it I-NAME I-NAME
        s = [(w, "O") for w in rng.sample(LOWER, 2)] + [("Anna", "I-NAME"), ("Kim", "I-NAME")]
        sentences.append(s[rng.randint(0, 1):])
    corpus = {split: write_conll(tmp_path / f"{split}.txt", sentences) for split in ("train", "valid", "test")}
    run = api.train_run(run_config(corpus, steps=40), tmp_path / "run", **QUIET)
    assert json.loads((run / "labels.json").read_text())["labels"] == ["O", "B-NAME", "I-NAME"]
    tagger = api.load(run, device="cpu")
    assert tagger.predict(["the Anna Kim"])[0]["tags"] == ["O", "B-NAME", "I-NAME"]
    assert tagger.evaluate()["f1"] == 1.0


def test_iobes_scheme_is_learned_and_scores_the_entities_iob2_scores(tmp_path):
    """data.tag_scheme = "iobes" converts every split (here IOB1 files) to IOBES: the labels and predictions are
    IOBES, and the entity F1 equals the one of the same predictions read back in IOB2 against IOB2 gold (the CRF
    keeps every predicted sequence well formed, so the two schemes name the same entities)."""
    from seqlab.data.conll import convert_scheme, read_conll

    rng = random.Random(2)
    sentences = []
    for _ in range(200):  # "Anna Kim" one two-word entity (IOB1: I-NAME I-NAME), "Oslo" a one-word one
        s = [(w, "O") for w in rng.sample(LOWER, 2)] + [("Anna", "I-NAME"), ("Kim", "I-NAME"), ("near", "O"),
                                                         ("Oslo", "I-NAME")]
        sentences.append(s[rng.randint(0, 1):])
    corpus = {split: write_conll(tmp_path / f"{split}.txt", sentences) for split in ("train", "valid", "test")}
    cfg = run_config(corpus, steps=40, data={"tag_scheme": "iobes"}, crf=True)
    run = api.train_run(cfg, tmp_path / "run", **QUIET)
    assert set(json.loads((run / "labels.json").read_text())["labels"]) == {"O", "B-NAME", "E-NAME", "S-NAME"}
    tagger = api.load(run, device="cpu")
    assert tagger.predict(["the Anna Kim near Oslo"])[0]["tags"] == ["O", "B-NAME", "E-NAME", "O", "S-NAME"]
    assert tagger.evaluate()["f1"] == 1.0
    assert tagger.evaluate(data=[[("Anna", "B-NAME"), ("Kim", "I-NAME"), ("near", "O"), ("Oslo", "B-NAME")]]
                           )["f1"] == 1.0  # IOB2 in memory: read in the run's scheme too

    barely = api.load(api.train_run(replace_steps(cfg, 3), tmp_path / "barely", **QUIET), device="cpu")
    gold = [list(convert_scheme(s.tags, "iob2", iob1=True)) for s in read_conll(corpus["test"])]
    predicted = barely.predict([" ".join(s.tokens) for s in read_conll(corpus["test"])])
    assert any(p["tags"] != list(convert_scheme(g, "iobes")) for p, g in zip(predicted, gold))  # errors to score
    assert barely.evaluate() == entity_f1(gold, [list(convert_scheme(p["tags"], "iob2")) for p in predicted])


def test_tag_scheme_is_refused_elsewhere_and_checked():
    with pytest.raises(SeqlabError, match='data.tag_scheme is used by task.kind = "tag" only'):
        tasks.resolve("sentiment-lstm", ['data.tag_scheme="iobes"'])
    with pytest.raises(SeqlabError, match="data.tag_scheme"):
        tasks.resolve("ner-bilstm", ['data.tag_scheme="bilou"'])


def test_singleton_replacement_reads_words_seen_once_as_unk_at_rate_p():
    """Singletons.apply: of 200,000 singleton positions, the share replaced is p within 6 standard deviations of
    a binomial share (6 * sqrt(p(1 - p) / n) = 0.0067), the other ids never; p = 0 and p = 1 replace none and all."""
    from seqlab.tasks.singletons import Singletons

    torch.manual_seed(0)
    ids = torch.randint(0, 40, (400, 500))  # batch, seq
    singleton = (ids >= 30) & (ids < 40)
    for p in (0.0, 0.5, 1.0):
        out = Singletons(p, first=30, end=40, unk=1).apply(ids)
        assert torch.equal(out[~singleton], ids[~singleton])
        replaced = (out[singleton] == 1).double().mean().item()
        assert abs(replaced - p) <= 6 * math.sqrt(p * (1 - p) / int(singleton.sum())) + 1e-12, (p, replaced)


def test_singleton_unk_trains_resumes_exactly_and_is_checked(tmp_path):
    """train.singleton_unk = 0.5 with data.min_freq = 1: RUN/singletons.json names the run of ids of the words
    seen once in training; training draws the replacements from the generator the checkpoint keeps (a resumed run
    equals the straight one) and differs from a run without them; a min_freq that drops those words, a value
    outside [0, 1] and a task that has no words of its own are refused."""
    from collections import Counter

    from seqlab.data.conll import read_conll
    from seqlab.text.vocab import Vocab

    rng = random.Random(3)
    sentences = [sentence(rng) + [(f"rare{i}", "O")] * (i % 3 == 0) for i in range(300)]  # 100 words seen once
    corpus = {split: write_conll(tmp_path / f"{split}.txt", sentences[:n]) for split, n in
              (("train", 300), ("valid", 20), ("test", 20))}
    cfg = run_config(corpus, steps=10, data={"min_freq": 1})
    cfg = replace(cfg, train=replace(cfg.train, singleton_unk=0.5))
    straight = api.train_run(cfg, tmp_path / "a", **QUIET)
    counts = Counter(w for s in read_conll(corpus["train"]) for w in s.tokens)
    vocab = Vocab.load(straight / "vocab.json")
    ids = json.loads((straight / "singletons.json").read_text())
    assert sorted(vocab.stoi(w) for w, n in counts.items() if n == 1) == list(range(ids["first"], ids["end"]))
    assert ids["end"] - ids["first"] == 100
    api.train_run(replace(cfg, train=replace(cfg.train, max_steps=5)), tmp_path / "b", **QUIET)
    assert_same_weights(straight, api.train_run(cfg, tmp_path / "b", resume=True, **QUIET))
    plain = api.train_run(replace(cfg, train=replace(cfg.train, singleton_unk=0.0)), tmp_path / "c", **QUIET)
    assert not (plain / "singletons.json").exists()
    with pytest.raises(AssertionError):
        assert_same_weights(straight, plain)

    with pytest.raises(SeqlabError, match="data.min_freq=2 leaves them out of the vocabulary"):
        api.train_run(replace(cfg, data=replace(cfg.data, min_freq=2)), tmp_path / "d", **QUIET)
    with pytest.raises(SeqlabError, match=r"train.singleton_unk=1.5 is outside \[0, 1\]"):
        tasks.resolve("ner-bilstm", ["data.min_freq=1", "train.singleton_unk=1.5"])
    with pytest.raises(SeqlabError, match="train.singleton_unk is not used by"):
        tasks.resolve("sentiment-lstm", ["train.singleton_unk=0.5"])


def replace_steps(cfg, steps):
    return replace(cfg, train=replace(cfg.train, max_steps=steps))


def test_one_file_is_cut_into_splits_in_order(corpus, tmp_path):
    from seqlab.tasks.tag import read_data

    cfg = run_config(corpus, data={"valid": "", "test": "", "split": [0.8, 0.1, 0.1]})
    data = read_data(cfg)
    assert [len(data[s]) for s in ("train", "valid", "test")] == [240, 30, 30]
    assert data["valid"][0].line < data["test"][0].line  # contiguous, in file order


def test_conll2003_by_name_reads_the_cached_iob2_splits(shared_data, tmp_path, monkeypatch):
    from seqlab.tasks.tag import read_data

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "conll2003").symlink_to(shared_data / "conll2003")  # the cache layout, no download
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    cfg = tasks.resolve("ner-bilstm")
    assert cfg.data.source == "conll2003" and cfg.task.kind == "tag"
    data = read_data(cfg, ("valid", "test"))
    assert [len(data["valid"]), len(data["test"])] == [3250, 3453]
    assert data["test"][0].path.endswith("conll2003/iob2/test.txt")
    assert sum(t.startswith("B-") for ex in data["test"] for t in ex.tags) == 1617 + 1668 + 1661 + 702


# --- word vectors ---

def write_vectors(path, words, dim, seed=0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(len(words), dim)).astype(np.float32)
    path.write_text(f"{len(words)} {dim}\n" + "".join(f"{w} " + " ".join(f"{v:.9g}" for v in row) + "\n"
                                                      for w, row in zip(words, vectors)), encoding="utf-8")
    return vectors


@pytest.mark.parametrize("freeze", [True, False])
def test_embeddings_start_from_word2vec_vectors(corpus, tmp_path, freeze):
    words = ["Paris", "the", "unused"]
    vectors = write_vectors(tmp_path / "vec.txt", words, 16)
    cfg = run_config(corpus, steps=8, vectors=str(tmp_path / "vec.txt"), freeze_vectors=freeze)
    tagger = api.load(api.train_run(cfg, tmp_path / "run", **QUIET), device="cpu")
    E = tagger.model.token_embedding.weight.detach().numpy()
    rows = [tagger.tokenizer.stoi(w) for w in words[:2]]
    assert np.array_equal(E[rows], vectors[:2]) == freeze  # frozen: kept exactly; trainable: moved
    if not freeze:
        assert np.abs(E[rows] - vectors[:2]).max() < 0.5  # started there and moved a little
    assert not E[0].any()  # <pad>


def test_vectors_must_fit_d_model_and_freezing_needs_vectors(tmp_path, corpus):
    write_vectors(tmp_path / "vec.txt", ["the"], 7)
    embedding = torch.nn.Embedding(5, 16)
    with pytest.raises(SeqlabError, match="have 7 dimensions but model.d_model is 16; set model.d_model=7"):
        init_embeddings(embedding, ["<pad>", "<unk>", "<sos>", "<eos>", "the"], tmp_path / "vec.txt")
    with pytest.raises(SeqlabError, match="freeze_vectors needs model.vectors"):
        run_config(corpus, freeze_vectors=True)
    with pytest.raises(SeqlabError, match="not a file"):
        init_embeddings(embedding, ["the"], tmp_path / "missing.txt")


# --- bad input ---

def test_bad_input_names_file_and_line(corpus, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("Anna B-NAME\nruns\n", encoding="utf-8")
    with pytest.raises(SeqlabError, match=rf"{bad}:2: expected at least 2 columns"):
        api.train_run(run_config({**corpus, "train": str(bad)}), tmp_path / "r0", **QUIET)

    run = api.train_run(run_config(corpus, steps=2), tmp_path / "run", **QUIET)
    odd = tmp_path / "odd.txt"
    odd.write_text("the NN O O\nAnna NN O B-NAME\n\nKim NN O B-CITY\n", encoding="utf-8")
    tagger = api.load(run, device="cpu")
    tagger.config = tasks.from_dict({**tagger.config.to_dict(), "data": {**tagger.config.to_dict()["data"],
                                                                         "test": str(odd)}})
    with pytest.raises(SeqlabError, match=rf"{odd}:4: label 'B-CITY' does not occur in the training data"):
        tagger.evaluate("test")
    with pytest.raises(SeqlabError, match=r"input line 2 is empty"):
        tagger.predict(["Anna runs", "  ", "Kim"])
    with pytest.raises(SeqlabError, match="data.tokenizer=word"):
        api.train_run(run_config(corpus, data={"tokenizer": "char"}), tmp_path / "r1", **QUIET)


def test_unknown_label_in_validation_file_names_the_line(corpus, tmp_path):
    valid = tmp_path / "valid.txt"
    valid.write_text("the NN O O\nruns NN O I-THING\n", encoding="utf-8")
    with pytest.raises(SeqlabError, match=rf"{valid}:2 \(written 'I-THING', read as 'B-THING'\): label 'B-THING' "
                                          "does not"):
        api.train_run(run_config({**corpus, "valid": str(valid)}), tmp_path / "run", **QUIET)


def test_transformer_refuses_a_long_sentence_naming_its_line(corpus, tmp_path):
    tagger = api.load(api.train_run(run_config(corpus, "transformer", steps=2), tmp_path / "run", **QUIET), device="cpu")
    with pytest.raises(SeqlabError, match=r"input line 2 has 13 tokens, more than model.max_len=12"):
        tagger.predict(["the", " ".join(["a"] * 13)])


# --- the command line ---

def test_cli_train_predict_eval(corpus, tmp_path, monkeypatch, capsys):
    from seqlab.cli import main

    toml = tmp_path / "tag.toml"
    toml.write_text(run_config(corpus, steps=40).to_toml(), encoding="utf-8")
    assert main(["train", str(toml), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("the Paris sees Anna\nKim runs\n"))
    assert main(["predict", str(tmp_path / "run"), "--device", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == ["O B-NAME O B-NAME", "B-NAME O"]
    monkeypatch.setattr("sys.stdin", io.StringIO("Kim runs\n"))
    assert main(["predict", str(tmp_path / "run"), "--format", "json", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out) == {"tokens": ["Kim", "runs"], "tags": ["B-NAME", "O"]}
    assert main(["eval", str(tmp_path / "run"), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and set(json.loads(out)) == {"precision", "recall", "f1", "per_type"}
    monkeypatch.setattr("sys.stdin", io.StringIO("Kim runs\n\n"))
    assert main(["predict", str(tmp_path / "run"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: input line 2 is empty") and err.count("\n") == 1


@pytest.mark.parametrize("preset", ["ner-bilstm", "ner-transformer"])
def test_presets_resolve_and_build(preset):
    from seqlab.tasks.tag import build_model

    cfg = tasks.resolve(preset)
    assert preset in config.preset_names() and config.preset_summary(preset)
    model = build_model(cfg, vocab_size=100, n_labels=9)
    logits = model(torch.tensor([[4, 5, 6]]), torch.tensor([[True, True, True]]))
    assert logits.shape == (1, 3, 9)
