"""GloVe: co-occurrence counts against a direct count, the AdaGrad step (numba vs PyTorch), NaN guards,
and that it learns."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch

from seqlab.base.bounds import gamma, u
from helpers import train_epochs
from seqlab.data.corpus import Corpus
from seqlab.models.arrays import weight_array
from seqlab.models.glove import GloVe, GloVeAdaGrad, GloVeConfig, cooccurrence
from seqlab.vectors.keyed import KeyedVectors


def random_sentences(n: int = 60, vocab: int = 15, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[f"w{i}" for i in rng.zipf(1.5, rng.integers(1, 25)) % vocab] for _ in range(n)]


def topic_sentences(n_topics: int = 5, per_topic: int = 6, sentences: int = 600, length: int = 10, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [[f"t{t}w{i}" for i in rng.integers(0, per_topic, length)] for t in rng.integers(0, n_topics, sentences)]


def direct_counts(corpus: Corpus, window: int, terms: dict | None = None) -> dict[tuple[int, int], float]:
    """X_ij by the definition: for every pair at distance d <= window in one sentence, 1/d both ways."""
    x = defaultdict(float)
    for s in range(len(corpus.sentence_starts) - 1):
        ids = corpus.ids[corpus.sentence_starts[s]:corpus.sentence_starts[s + 1]].tolist()
        for p, i in enumerate(ids):
            for q in range(max(0, p - window), p):
                x[i, ids[q]] += 1.0 / (p - q)
                x[ids[q], i] += 1.0 / (p - q)
                if terms is not None:  # how many 1/d a value sums
                    terms[i, ids[q]] = terms.get((i, ids[q]), 0) + 1
                    terms[ids[q], i] = terms.get((ids[q], i), 0) + 1
    return x


@pytest.mark.parametrize("block_pairs", [1, 50, 1 << 20])  # tiny blocks exercise the sort-and-merge path
def test_cooccurrence_equals_direct_count(block_pairs):
    sentences = random_sentences()
    sentences[3] = ["rare"] + sentences[3]  # out of vocabulary: the window spans it, as in the C tool
    corpus = Corpus.build(sentences, min_freq=2)
    rows, cols, vals = cooccurrence(corpus, window=4, block_pairs=block_pairs)
    terms = {}
    want = direct_counts(corpus, 4, terms)
    assert len(vals) == len(want)
    got = {(int(i), int(j)): float(v) for i, j, v in zip(rows, cols, vals)}
    assert got.keys() == want.keys()
    # k positive terms 1/d summed in float64 here (γ_{2k}: the 1/d roundings and the sum, Higham §3.1), exact integer
    # sums over lcm(1..window) and one division there: relative difference <= γ_{2k+1}
    rtol = np.array([gamma(2 * terms[k] + 1, np.float64) for k in want])
    np.testing.assert_array_less(np.abs(np.array([got[k] for k in want]) - [want[k] for k in want]),
                                 rtol * np.array([want[k] for k in want]) + np.finfo(np.float64).tiny)
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


def _engine_bounds(task: GloVeAdaGrad, eta: float) -> dict[str, float]:
    """How far the numba and torch engines may end apart after one epoch by rounding: numba sums diff = θ·e + b + b̃
    - log X in float64, torch in float32 (γ_{D+6}·S: the D products, the biases, the log and the weight f,
    S = D·max|θ|·max|e| + 2·max|b| + log max X), so f·diff·η differs by <= η·γ_{D+6}·S per update; each update of
    a weight w also rounds differently (one ulp: 2u|w|). Over the n updates a row receives in the epoch (counted
    from the entries), first order, with the carry of a partner's difference into later updates (the steps are
    scaled by η / √G <= η: a factor 1 + n·η; AdaGrad's step on its own variable contracts, 1 - ηf/√G). G gains
    2|g||Δg| + one rounding per update. Magnitudes: the trained weights (they grow from init in one epoch)."""
    f32, dim = np.float32, task.cfg.dim
    n = max(np.bincount(task.rows).max(), np.bincount(task.cols).max())
    mw = max(np.abs(weight_array(getattr(task.model, k))).max() for k in ("word", "context"))
    mb = max(np.abs(weight_array(getattr(task.model, k))).max() for k in ("word_bias", "context_bias"))
    s = dim * mw * mw + 2 * mb + np.log(task.vals.max())
    dstep = eta * gamma(dim + 6, f32) * s
    carry = 1 + n * eta
    vec, bias = carry * n * (2 * u(f32) * mw + dstep * mw), carry * n * (2 * u(f32) * mb + dstep)
    g_max = max(task.adagrad[k].max() for k in task.PARAMS)
    ddiff = gamma(dim + 6, f32) * s + 2 * dim * mw * vec + 2 * bias  # a cost's diff, rounding and weights apart
    return {"word": vec, "context": vec, "word_bias": bias, "context_bias": bias,
            "adagrad": n * (2 * eta * s * dstep + u(f32) * g_max),  # absolute, on G >= 1
            "cost": s * ddiff + gamma(3, f32) * s * s / 2}  # per entry: f|diff|Δdiff + torch's float32 cost


def test_numba_and_torch_take_the_same_adagrad_steps():
    """Entry by entry (torch with batches of one), the two engines follow the same trajectory: within the rounding
    bounds of _engine_bounds (~1e-6 for the vectors, ~1e-5 for the biases; a wrong gradient or accumulator order
    moves them by the size of a step, eta·f·diff ~ 1e-2)."""
    a, b = _glove(random_sentences()), _glove(random_sentences(), engine="torch", batch_size=1)
    (loss_a, terms_a), (loss_b, terms_b) = _epoch(a), _epoch(b)
    assert terms_a == terms_b == len(a.vals)
    tol = _engine_bounds(a, eta=0.05)
    assert loss_a == pytest.approx(loss_b, abs=tol["cost"])  # mean cost: the per-entry bound
    for name in GloVeAdaGrad.PARAMS:
        np.testing.assert_allclose(weight_array(getattr(a.model, name)),
                                   weight_array(getattr(b.model, name)), rtol=0, atol=tol[name])
        np.testing.assert_allclose(a.adagrad[name], b.adagrad[name], rtol=0, atol=tol["adagrad"])


def test_torch_loss_is_the_weighted_least_squares_term():
    cfg = GloVeConfig(dim=3, x_max=10.0, alpha=0.75, vocab_size=4)
    model = GloVe(cfg)
    i, j, x = torch.tensor([0, 2]), torch.tensor([1, 3]), torch.tensor([4.0, 25.0])
    theta, e = model.word.weight.detach(), model.context.weight.detach()
    b, bt = model.word_bias.weight.detach()[:, 0], model.context_bias.weight.detach()[:, 0]
    diff = (theta[i] * e[j]).sum(-1) + b[i] + bt[j] - torch.log(x)
    f = torch.tensor([(4 / 10) ** 0.75, 1.0])  # f(x) = min(1, (x / x_max)^alpha)
    # both float32: diff within 2γ_{D+3} Σ|terms| of each other (Higham §3.1), the cost f·diff²/2 then within
    # f·|diff|·Δdiff plus its own 4 roundings on each side
    terms = (theta[i] * e[j]).abs().sum(-1) + b[i].abs() + bt[j].abs() + torch.log(x).abs()
    expected = 0.5 * f * diff**2
    tol = f * diff.abs() * 2 * gamma(cfg.dim + 3, torch.float32) * terms + 2 * gamma(4, torch.float32) * expected
    assert bool(((model(i, j, x) - expected).abs() <= tol).all())


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_nan_guard_skips_bad_entries(engine):
    trainer = _glove(random_sentences(), engine=engine)
    trainer.vals[:3] = [0.0, np.inf, np.nan]  # log 0 = -inf, inf, NaN: each would poison the weights
    loss, terms = _epoch(trainer)
    assert terms == len(trainer.vals) - 3 and np.isfinite(loss)
    for name in GloVeAdaGrad.PARAMS:
        assert np.isfinite(weight_array(getattr(trainer.model, name))).all()
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
    b.restore_trainer_tensors({k: v.copy() for k, v in a.trainer_tensors().items()})
    _epoch(a, 1)
    _epoch(b, 1)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
