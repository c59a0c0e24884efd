"""The linear-chain CRF (seqlab.nn.crf): against pytorch-crf (torchcrf) with the same scores, against brute-force
enumeration of every tag sequence, the IOB2/BIOES constraints, gradients; then the tagger with model.crf = true
end to end (train, predict, evaluate, load, export refusal) for a recurrent and a Transformer tagger."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
import torch

from seqlab import api, tasks
from seqlab.base.errors import SeqlabError
from seqlab.nn.crf import CRF, Constraints, gather_scored, label_scheme, transition_constraints

from seqlab.base.bounds import gamma
from helpers import write_conll

QUIET = {"log": lambda *a, **k: None}
pytestmark = pytest.mark.usefixtures("one_thread")


def random_crf(n_labels: int, seed: int, constraints: Constraints | None = None) -> CRF:
    torch.manual_seed(seed)
    crf = CRF(n_labels, constraints).double()
    with torch.no_grad():
        for p in (crf.transitions, crf.start, crf.end):
            p.normal_()
    return crf


def padded(lengths: list[int], n_labels: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random emissions (batch, seq, labels), tags (batch, seq) and a mask (batch, seq), real tokens first."""
    g = torch.Generator().manual_seed(seed)
    batch, seq = len(lengths), max(lengths)
    emissions = torch.randn(batch, seq, n_labels, generator=g, dtype=torch.float64)
    tags = torch.randint(n_labels, (batch, seq), generator=g)
    mask = torch.arange(seq) < torch.tensor(lengths).unsqueeze(1)
    return emissions, tags, mask


def _forward_tol(crf: CRF, emissions: torch.Tensor) -> float:
    """A rounding bound for one float64 implementation of log p(y|x) (or log Z) of ``emissions`` (seq, labels):
    T steps of logsumexp over L labels (the sum's relative error γ_L is an absolute error of its log; the exps and
    the α + a + e additions a few roundings of values <= A), then the path score, T + 1 emissions and transitions:
    <= γ_{T(L+4)} · A + γ_{2T+2} · A (Higham §3.1), A = T (max|e| + max|a| + log L) + max|start| + max|end| the
    largest |α| or |score| (forbidden transitions, -inf, left out)."""
    a, start, end = (x[torch.isfinite(x)].abs().max().item() for x in crf.scores(float("-inf"), torch.float64))
    T, L = emissions.shape[-2], emissions.shape[-1]
    big = max(1.0, T * (emissions.abs().max().item() + a + math.log(L)) + start + end)
    return (gamma(T * (L + 4), torch.float64) + gamma(2 * T + 2, torch.float64)) * big


# --- against pytorch-crf ---

@pytest.mark.parametrize("lengths, n_labels", [([5, 3, 1, 4], 4), ([1], 2), ([7, 7, 2], 6), ([2, 6, 3, 6, 1], 9)])
def test_log_likelihood_and_viterbi_equal_torchcrf(lengths, n_labels):
    torchcrf = pytest.importorskip("torchcrf")
    ours = random_crf(n_labels, seed=len(lengths))
    theirs = torchcrf.CRF(n_labels, batch_first=True).double()
    with torch.no_grad():
        theirs.transitions.copy_(ours.transitions)  # both: [i, j] = score of tag j after tag i
        theirs.start_transitions.copy_(ours.start)
        theirs.end_transitions.copy_(ours.end)
    emissions, tags, mask = padded(lengths, n_labels, seed=n_labels)
    expected = theirs(emissions, tags, mask, reduction="none")
    # both sides float64: twice one implementation's bound (~1e-12; a wrong transition or end score: >= 1e-2)
    torch.testing.assert_close(ours.log_likelihood(emissions, tags, mask), expected,
                               atol=2 * _forward_tol(ours, emissions), rtol=0)
    paths = ours.decode(emissions, mask)
    assert paths == theirs.decode(emissions, mask)
    assert [len(p) for p in paths] == lengths


# --- against brute force ---

def path_score(crf: CRF, emissions: torch.Tensor, path: tuple[int, ...]) -> torch.Tensor:
    """score(x, y) written out for one sequence (the constraints' forbidden scores included)."""
    a, start, end = crf.scores(float("-inf"), torch.float64)
    total = start[path[0]] + end[path[-1]] + sum(emissions[t, y] for t, y in enumerate(path))
    return total + sum(a[i, j] for i, j in zip(path, path[1:]))


@pytest.mark.parametrize("scheme, names", [(None, ["x", "y", "z"]), ("IOB2", ["O", "B-PER", "I-PER"]),
                                           ("BIOES", ["O", "B-A", "I-A", "E-A", "S-A"])])
def test_log_z_and_viterbi_equal_enumerating_every_path(scheme, names):
    n = len(names)
    constraints = None if scheme is None else transition_constraints(names, scheme)
    crf = random_crf(n, seed=3, constraints=constraints)
    for length in range(1, 5):
        emissions, _, mask = padded([length], n, seed=length)
        paths = list(itertools.product(range(n), repeat=length))
        scores = torch.stack([path_score(crf, emissions[0], p) for p in paths])  # paths (-inf: forbidden)
        allowed = torch.isfinite(scores)
        assert bool(allowed.any())
        log_z = crf.log_partition(emissions, mask)[0]
        # ours: the forward algorithm's bound; the reference: each path's sum (γ_{2T+2} A) and a logsumexp over
        # N = n^length paths (γ_{N+1}, absolute in the log)
        tol = 2 * _forward_tol(crf, emissions[0]) + gamma(len(paths) + 1, torch.float64)
        torch.testing.assert_close(log_z, torch.logsumexp(scores, dim=0), atol=tol, rtol=0)
        probs = torch.stack([crf.log_likelihood(emissions, torch.tensor([p]), mask)[0] for p in paths]).exp()
        assert bool((probs[~allowed] == 0).all()), "a forbidden path has probability"
        # each p = exp(log p): relative error <= that of log p plus one rounding; their sum of N terms: γ_N
        tol = 2 * _forward_tol(crf, emissions[0]) + gamma(len(paths) + 1, torch.float64)
        torch.testing.assert_close(probs.sum(), torch.tensor(1.0, dtype=torch.float64), atol=tol, rtol=0)
        best = crf.decode(emissions, mask)[0]
        assert tuple(best) == paths[int(scores.argmax())] and bool(allowed[paths.index(tuple(best))])
    if scheme is not None:  # strong emissions for forbidden tags still decode an allowed path
        emissions = torch.zeros(1, 3, n, dtype=torch.float64)
        emissions[:, :, names.index("I-PER" if scheme == "IOB2" else "I-A")] = 50.0
        best = tuple(crf.decode(emissions, torch.ones(1, 3, dtype=torch.bool))[0])
        assert torch.isfinite(path_score(crf, emissions[0], best))


def test_the_iob2_and_bioes_constraints():
    c = transition_constraints(["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "MISC"], "IOB2")
    ok = {(a, b) for a in range(6) for b in range(6) if c.allowed[a, b]}
    assert (1, 2) in ok and (2, 2) in ok and (0, 2) not in ok and (3, 2) not in ok and (4, 2) not in ok
    assert (5, 2) not in ok and (5, 1) in ok and (2, 5) in ok  # a label without a prefix is outside
    assert c.allowed_start.tolist() == [True, True, False, True, False, True] and bool(c.allowed_end.all())
    b = transition_constraints(["O", "B-X", "I-X", "E-X", "S-X"], "BIOES")
    assert b.allowed.int().tolist() == [[1, 1, 0, 0, 1], [0, 0, 1, 1, 0], [0, 0, 1, 1, 0], [1, 1, 0, 0, 1],
                                        [1, 1, 0, 0, 1]]
    assert b.allowed_start.tolist() == [True, True, False, False, True]
    assert b.allowed_end.tolist() == [True, False, False, True, True]
    assert label_scheme(["O", "B-X", "I-X"]) == "IOB2" and label_scheme(["O", "S-X", "B-X"]) == "BIOES"
    with pytest.raises(SeqlabError, match="label 'E-X' is not a IOB2 tag"):
        transition_constraints(["O", "E-X"], "IOB2")


# --- gradients, scored positions ---

def test_gradients_are_finite_with_constraints_and_padding():
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    crf = random_crf(5, seed=1, constraints=transition_constraints(names))
    emissions, _, mask = padded([4, 1, 3], 5, seed=0)
    emissions.requires_grad_(True)
    tags = torch.tensor([[1, 2, 0, 3], [0, 0, 0, 0], [3, 4, 4, 0]])  # allowed paths
    loss = -crf.log_likelihood(emissions, tags, mask).sum()
    loss.backward()
    for p in (crf.transitions, crf.start, crf.end, emissions):
        assert p.grad is not None and bool(torch.isfinite(p.grad).all())
    assert bool((crf.transitions.grad[~crf.allowed] == 0).all()) and float(crf.transitions.grad.abs().sum()) > 0
    assert bool((emissions.grad[~mask] == 0).all())  # padding scores nothing


def test_gather_scored_moves_each_row_s_scored_positions_to_its_front():
    emissions = torch.arange(2 * 5 * 2, dtype=torch.float64).view(2, 5, 2)  # batch, seq, labels
    scored = torch.tensor([[False, True, False, True, False], [False, True, True, True, False]])
    tags = torch.tensor([[0, 7, 0, 8, 0], [0, 4, 5, 6, 0]])
    mask, (compact, gold) = gather_scored(scored, emissions, tags)
    assert compact.shape == (2, 3, 2) and mask.tolist() == [[True, True, False], [True, True, True]]
    assert compact[0, :2].tolist() == [emissions[0, 1].tolist(), emissions[0, 3].tolist()]
    assert gold[0, :2].tolist() == [7, 8] and gold[1].tolist() == [4, 5, 6]


def test_forbidden_sentences_are_counted():
    from seqlab.tasks.tag_output import forbidden_sentences

    c = transition_constraints(["O", "B-X", "I-X"])
    masks = [m.numpy() for m in c]
    assert forbidden_sentences([[0, 1, 2], [1], [0, 0]], *masks) == 0
    assert forbidden_sentences([[0, 2], [2, 0], [1, 2, 0], [0, 1, 0, 2]], *masks) == 3


# --- the tagger with model.crf = true ---

LOWER = ["the", "a", "runs", "sees", "big", "old", "and", "with", "near"]
UPPER = ["Paris", "Anna", "Bonn", "Kim", "Oslo", "Lima"]
TINY = {"lstm": {"d_model": 16, "hidden_size": 16, "n_layers": 1, "dropout": 0.0},
        "transformer": {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 12, "dropout": 0.0}}


def sentence(rng: random.Random) -> list[tuple[str, str]]:
    """A run of capitalised words is one entity: B-NAME then I-NAME; every other word is O."""
    words = [rng.choice(UPPER if rng.random() < 0.35 else LOWER) for _ in range(rng.randint(2, 8))]
    return [(w, "O" if w.islower() else "I-NAME" if i and words[i - 1][0].isupper() else "B-NAME")
            for i, w in enumerate(words)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder, rng = tmp_path_factory.mktemp("crf-corpus"), random.Random(0)
    return {split: write_conll(folder / f"{split}.txt", [sentence(rng) for _ in range(n)])
            for split, n in (("train", 200), ("valid", 20), ("test", 20))}


def run_config(corpus, arch: str, steps: int, **train):
    return tasks.from_dict({
        "task": {"kind": "tag"},
        "data": {**corpus, "tokenizer": "word"},
        "model": {"arch": arch, **TINY[arch], "crf": True},
        "train": {"max_steps": steps, "batch_size": 16, "lr": 2e-2, "warmup_steps": 2, "eval_every": 0,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1, **train},
    })


@pytest.mark.parametrize("arch, steps", [("lstm", 40), ("transformer", 12)])
def test_a_crf_tagger_trains_predicts_by_viterbi_evaluates_and_reloads(corpus, tmp_path, arch, steps):
    from safetensors.torch import load_file

    from seqlab.data.conll import read_conll
    from seqlab.exporters import export
    from seqlab.metrics.ner import entity_f1

    run = api.train_run(run_config(corpus, arch, steps), tmp_path / "run", **QUIET)
    names = json.loads((run / "labels.json").read_text())["labels"]
    assert names == ["O", "B-NAME", "I-NAME"]
    tagger = api.load(run, device="cpu")
    crf = tagger.model.crf
    assert crf is not None and float(crf.transitions.detach().abs().sum()) > 0  # trained
    expected = transition_constraints(names, "IOB2")
    assert all(torch.equal(a, b) for a, b in zip((crf.allowed, crf.allowed_start, crf.allowed_end), expected))
    saved = load_file(str(run / "model.safetensors"))  # loading rebuilds what training saved
    assert torch.equal(saved["crf.transitions"], crf.transitions.detach()) and torch.equal(saved["crf.allowed"],
                                                                                           expected.allowed)
    # predictions are the Viterbi paths over the model's emissions, in a batch or alone
    lines = ["the Paris Anna sees Kim", "Oslo", "a big Lima near the old Bonn with Anna"]
    results = tagger.predict(lines)
    for line, result in zip(lines, results):
        ids = torch.tensor([tagger.tokenizer.encode(line.split())])  # 1, seq
        mask = torch.ones_like(ids, dtype=torch.bool)
        with torch.no_grad():
            path = crf.decode(tagger.model(ids, mask), mask)[0]
        assert result["tags"] == [names[t] for t in path]
        assert not any(b == "I-NAME" and a == "O" for a, b in zip(["O", *result["tags"]], result["tags"]))
    assert tagger.tag(lines[0]) == list(zip(lines[0].split(), results[0]["tags"]))
    gold = read_conll(corpus["test"])
    predicted = tagger.predict([" ".join(s.tokens) for s in gold])
    scores = tagger.evaluate("test")
    assert scores == entity_f1([list(s.tags) for s in gold], [r["tags"] for r in predicted])
    if arch == "lstm":
        assert scores["f1"] > 0.9
    for fmt in ("onnx", "hf"):
        with pytest.raises(SeqlabError, match=r"model\.crf = true: the CRF's Viterbi decoding has no ONNX/HF "
                                              r"equivalent; export a tagger trained with model\.crf=false"):
            export(run, fmt, tmp_path / f"out-{fmt}")
    assert not (tmp_path / "out-onnx").exists()


def test_the_crf_loss_is_its_nll_per_word_and_label_smoothing_is_refused(corpus, tmp_path):
    from seqlab.tasks.tag import Encoded, TagTask, collate
    from seqlab.models.tagger import TAGGER_CONFIGS, Tagger

    torch.manual_seed(0)
    model = Tagger(TAGGER_CONFIGS["lstm"](vocab_size=30, n_labels=3, crf=True, **TINY["lstm"])).double().eval()
    data = Encoded(words=[[5, 6], [7, 8, 9, 10], [11]], tags=[[1, 2], [0, 1, 2, 0], [1]])
    task = TagTask(model, data, data, labels=None, eval_batch_size=3)
    batch = collate(data, [0, 1, 2])
    emissions = model(batch.ids, batch.mask)
    per_sentence = -model.crf.log_likelihood(emissions, batch.tags, batch.mask)
    expected = per_sentence.sum()
    # the same float64 emissions and log-likelihoods (one model, one batch); at most the 3-term sum's order differs
    torch.testing.assert_close(task.loss_sum(model, batch, torch.device("cpu")), expected, rtol=0,
                               atol=gamma(3, torch.float64) * per_sentence.abs().sum().item())
    assert task.count(batch) == 7  # the trainer divides by the words
    with pytest.raises(SeqlabError, match=r"train\.label_smoothing=0\.1 has no CRF form"):
        api.train_run(run_config(corpus, "lstm", 2, label_smoothing=0.1), tmp_path / "run", **QUIET)


def test_a_sub_word_crf_tagger_decodes_each_word_s_first_sub_word():
    from seqlab.models.pretrained_heads import PretrainedTaggerConfig, TokenClassifier
    from seqlab.models.pretrained import BertConfig, BertEncoder
    from seqlab.tasks.tag import Encoded, run_tagger

    torch.manual_seed(0)
    bert = BertConfig(vocab_size=40, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16, dropout=0.0)
    model = TokenClassifier(PretrainedTaggerConfig(n_labels=3, crf=True, dropout=0.0), BertEncoder(bert)).eval()
    model.crf.constrain(transition_constraints(["O", "B-X", "I-X"]))
    with torch.no_grad():
        model.crf.transitions.normal_()
    words, first = [[2, 5, 6, 7, 3], [2, 8, 9, 3]], [[1, 3], [1, 2]]  # [CLS] pieces [SEP]; first sub-words
    _, _, predicted = run_tagger(model, Encoded(words, [[], []], first), torch.device("cpu"))
    for i, (ids, positions) in enumerate(zip(words, first)):
        with torch.no_grad():
            emissions = model(torch.tensor([ids]))[:, positions]  # 1, words, labels
        assert predicted[i] == model.crf.decode(emissions, torch.ones(1, len(positions), dtype=torch.bool))[0]


def test_the_bilstm_crf_preset_is_a_crf_over_character_features():
    from seqlab.base import config
    from seqlab.tasks.tag import build_model

    cfg, plain = tasks.resolve("ner-bilstm-crf"), tasks.resolve("ner-bilstm")
    assert "ner-bilstm-crf" in config.preset_names() and cfg.model.crf and cfg.model.dropout == 0.5
    assert cfg.model.char_dim == cfg.model.char_hidden_size == 25  # Lample et al.'s character BiLSTM
    assert plain.model.crf is False and plain.model.char_dim == 0
    model = build_model(cfg, vocab_size=100, n_labels=9, n_chars=60)
    assert model.crf is not None and model.crf.transitions.shape == (9, 9)
    assert build_model(plain, vocab_size=100, n_labels=9).crf is None
