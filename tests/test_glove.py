"""GloVe: co-occurrence counts against a direct count, the AdaGrad step (numba vs PyTorch), NaN guards,
and that it learns."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from helpers import train_epochs
from seqlab.data.corpus import Corpus
from seqlab.models.glove import GloVe, GloVeAdaGrad, GloVeConfig, cooccurrence
from seqlab.vectors import KeyedVectors


def random_sentences(n: int = 60, vocab: int = 15, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[f"w{i}" for i in rng.zipf(1.5, rng.integers(1, 25)) % vocab] for _ in range(n)]


def topic_sentences(n_topics: int = 5, per_topic: int = 6, sentences: int = 600, length: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [[f"t{t}w{i}" for i in rng.integers(0, per_topic, length)] for t in rng.integers(0, n_topics, sentences)]


def direct_counts(corpus: Corpus, window: int) -> dict[tuple[int, int], float]:
    """X_ij by the definition: for every pair at distance d <= window in one sentence, 1/d both ways."""
    x = defaultdict(float)
    for s in range(len(corpus.sentence_starts) - 1):
        ids = corpus.ids[corpus.sentence_starts[s]:corpus.sentence_starts[s + 1]].tolist()
        for p, i in enumerate(ids):
            for q in range(max(0, p - window), p):
                x[i, ids[q]] += 1.0 / (p - q)
                x[ids[q], i] += 1.0 / (p - q)
    return x


@pytest.mark.parametrize("block_pairs", [1, 50, 1 << 20])  # tiny blocks exercise the sort-and-merge path
def test_cooccurrence_equals_direct_count(block_pairs):
    sentences = random_sentences()
    sentences[3] = ["rare"] + sentences[3]  # out of vocabulary: the window spans it, as in the C tool
    corpus = Corpus.build(sentences, min_freq=2)
    rows, cols, vals = cooccurrence(corpus, window=4, block_pairs=block_pairs)
    want = direct_counts(corpus, 4)
    assert len(vals) == len(want)
    got = {(int(i), int(j)): float(v) for i, j, v in zip(rows, cols, vals)}
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], [want[k] for k in want], rtol=1e-12)
    keys = rows.astype(np.int64) * len(corpus.words) + cols
    assert (np.diff(keys) > 0).all()  # sorted, distinct


def _glove(sentences, engine: str = "numba", batch_size: int = 16, **cfg) -> GloVeAdaGrad:
    corpus = Corpus.build(sentences, min_freq=1)
    cfg = GloVeConfig(**{"dim": 8, "window": 3, "x_max": 5.0, **cfg})
    return GloVeAdaGrad(cfg, corpus, seed=3, engine=engine, threads=1, batch_size=batch_size)


def _epoch(task: GloVeAdaGrad, epoch: int = 0, eta: float = 0.05) -> tuple[float, int]:
    """One epoch, step by step at a constant rate: (mean cost, entries)."""
    stats = [task.update(epoch, i, lambda done: eta) for i in range(task.steps_per_epoch)]
    terms = sum(s.terms for s in stats)
    return sum(s.loss for s in stats) / terms, terms


def test_numba_and_torch_take_the_same_adagrad_steps():
    """Entry by entry (torch with batches of one), the two engines follow the same trajectory."""
    a, b = _glove(random_sentences()), _glove(random_sentences(), engine="torch", batch_size=1)
    (loss_a, terms_a), (loss_b, terms_b) = _epoch(a), _epoch(b)
    assert terms_a == terms_b == len(a.vals)
    assert loss_a == pytest.approx(loss_b, rel=1e-4)
    for name in GloVeAdaGrad.PARAMS:
        np.testing.assert_allclose(getattr(a.model, name).weight.detach().numpy(),
                                   getattr(b.model, name).weight.detach().numpy(), atol=2e-5)
        np.testing.assert_allclose(a.adagrad[name], b.adagrad[name], rtol=1e-4)


def test_torch_loss_is_the_weighted_least_squares_term():
    cfg = GloVeConfig(dim=3, x_max=10.0, alpha=0.75, vocab_size=4)
    model = GloVe(cfg)
    i, j, x = torch.tensor([0, 2]), torch.tensor([1, 3]), torch.tensor([4.0, 25.0])
    theta, e = model.word.weight.detach(), model.context.weight.detach()
    b, bt = model.word_bias.weight.detach()[:, 0], model.context_bias.weight.detach()[:, 0]
    diff = (theta[i] * e[j]).sum(-1) + b[i] + bt[j] - torch.log(x)
    f = torch.tensor([(4 / 10) ** 0.75, 1.0])  # f(x) = min(1, (x / x_max)^alpha)
    torch.testing.assert_close(model(i, j, x), 0.5 * f * diff**2)


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_nan_guard_skips_bad_entries(engine):
    trainer = _glove(random_sentences(), engine=engine)
    trainer.vals[:3] = [0.0, np.inf, np.nan]  # log 0 = -inf, inf, NaN: each would poison the weights
    loss, terms = _epoch(trainer)
    assert terms == len(trainer.vals) - 3 and np.isfinite(loss)
    for name in GloVeAdaGrad.PARAMS:
        assert np.isfinite(getattr(trainer.model, name).weight.detach().numpy()).all()
        assert np.isfinite(trainer.adagrad[name]).all()


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_glove_learns_topics(engine):
    corpus = Corpus.build(topic_sentences(), min_freq=1)
    trainer = GloVeAdaGrad(GloVeConfig(dim=10, window=4, x_max=10.0), corpus, seed=0, engine=engine, threads=1,
                           batch_size=64)
    losses = [row["loss"] for row in train_epochs(trainer, 15, 0.05)]
    assert losses[-1] < 0.5 * losses[0]
    kv = KeyedVectors(corpus.words, trainer.vectors())
    hits = [kv.most_similar(w, topn=1)[0][0].split("w")[0] == w.split("w")[0] for w in kv.words]
    assert np.mean(hits) >= 0.9


def test_resume_state_round_trips():
    a, b = _glove(random_sentences()), _glove(random_sentences())
    _epoch(a)
    b.model.load_state_dict(a.model.state_dict())
    b.restore_trainer_tensors({k: v.clone() for k, v in a.trainer_tensors().items()})
    _epoch(a, 1)
    _epoch(b, 1)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
