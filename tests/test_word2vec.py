"""word2vec: corpus layout, Huffman tree, the SGD step (numba vs autograd), both engines learning the same
structure, the embed task's run directory and resume, the CLI verbs, bad input."""

from __future__ import annotations

import argparse
import heapq
import json

import numpy as np
import pytest
import torch

from seqlab.base.errors import SeqlabError
from seqlab.base.bounds import gamma, u
from helpers import train_epochs
from seqlab.data.corpus import MAX_WORDS_IN_CHUNK, Corpus
from seqlab.models.word2vec import SkipGram, SkipGramSGD, Word2VecConfig
from seqlab.models.word2vec_kernels import (_bisect_left, _distinct, _sgd_distinct, _sgd_pair,
                                            update_sigmoid)
from seqlab.models.word2vec_tables import cum_table, huffman_tree, noise_buckets
from seqlab.vectors.keyed import KeyedVectors


def topic_sentences(n_topics: int = 6, per_topic: int = 8, sentences: int = 1500, length: int = 10,
                    seed: int = 0) -> list[list[str]]:
    """Sentences each drawn from one topic's words: same-topic words share contexts, others never meet."""
    rng = np.random.default_rng(seed)
    return [[f"t{t}w{i}" for i in rng.integers(0, per_topic, length)] for t in rng.integers(0, n_topics, sentences)]


def topic_of(word: str) -> str:
    return word.split("w")[0]


# ------------------------------------------------------------------------------------------------------
# corpus and tables


def test_corpus_order_ties_chunks_and_oov():
    sentences = [["x", "y", "q"], ["y", "x", "q"], ["r"]]
    c = Corpus.build(sentences, min_freq=2)
    assert c.words == ["q", "y", "x"]  # all seen twice: latest first occurrence first (gensim)
    assert c.counts.tolist() == [2, 2, 2]
    assert c.ids.tolist() == [2, 1, 0, 1, 2, 0]  # "r" (seen once) dropped
    assert c.sentence_starts.tolist() == [0, 3, 6, 6]  # the OOV-only sentence is empty but counted
    assert c.raw_words == 7

    long = [["w"] * (MAX_WORDS_IN_CHUNK + 5), ["v", "w"], ["v"] * 3]
    c = Corpus.build(long, min_freq=1)
    assert np.diff(c.sentence_starts).tolist() == [MAX_WORDS_IN_CHUNK, 5, 2, 3]  # a long line is split
    assert c.chunk_starts.tolist() == [0, 1, 4]  # chunks of whole sentences, <= MAX_WORDS_IN_CHUNK raw words
    assert c.raw_before.tolist() == [0, MAX_WORDS_IN_CHUNK, MAX_WORDS_IN_CHUNK + 10]


def test_corpus_max_size_keeps_ties_together():
    sentences = [["a"] * 5 + ["b"] * 3 + ["c"] * 3 + ["d"]]
    assert Corpus.build(sentences, min_freq=1, max_size=3).words == ["a", "c", "b"]
    with pytest.raises(SeqlabError, match="1 distinct word"):  # b and c tie for the second place: both out
        Corpus.build(sentences, min_freq=1, max_size=2)


def test_corpus_errors():
    with pytest.raises(SeqlabError, match="empty corpus"):
        Corpus.build([], min_freq=1)
    with pytest.raises(SeqlabError, match="lower data.min_freq"):
        Corpus.build([["a", "b", "c"]], min_freq=2)


def test_huffman_tree_by_hand():
    # merges: (d1, c2) -> n4 (3); (b3, n4) -> n5 (6); (a5, n5) -> root n6 (11); inner node n has id n - 4
    tree = huffman_tree(np.array([5, 3, 2, 1]))
    paths = [(tree.codes[w, :n].tolist(), tree.points[w, :n].tolist()) for w, n in enumerate(tree.lengths)]
    assert paths == [([0], [2]), ([1, 0], [2, 1]), ([1, 1, 1], [2, 1, 0]), ([1, 1, 0], [2, 1, 0])]
    counts = np.random.default_rng(0).integers(1, 1000, 300)
    tree = huffman_tree(counts)
    assert sum(2.0 ** -tree.lengths) == 1.0  # a full binary tree (Kraft equality); powers of 2: exact in float64
    assert (tree.lengths[np.argsort(-counts)][:10] <= tree.lengths.mean()).all()  # frequent words: short paths


class _HeapItem:
    """A heapq entry ordered by count alone, as gensim's ``Heapitem`` (the reference below)."""

    __slots__ = ("count", "index")

    def __init__(self, count: int, index: int):
        self.count, self.index = count, index

    def __lt__(self, other: _HeapItem) -> bool:
        return self.count < other.count


def _huffman_tree_reference(counts: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
    """gensim's _build_heap / _assign_binary_codes with Python's heapq: each word's (codes, points)."""
    v = len(counts)
    heap = [_HeapItem(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    children = []  # children[n - v] = (left, right) of inner node n
    for n in range(v, 2 * v - 1):
        first, second = heapq.heappop(heap), heapq.heappop(heap)
        children.append((first.index, second.index))
        heapq.heappush(heap, _HeapItem(first.count + second.count, n))
    codes, points = [[] for _ in range(v)], [[] for _ in range(v)]
    stack = [(2 * v - 2, [], [])] if v > 1 else []
    while stack:
        node, code, point = stack.pop()
        if node < v:
            codes[node], points[node] = code, point
            continue
        left, right = children[node - v]
        stack += [(left, code + [0], point + [node - v]), (right, code + [1], point + [node - v])]
    return codes, points


@pytest.mark.parametrize("size", [1, 2, 3, 100, 5000])
@pytest.mark.parametrize("high", [3, 50])  # counts from a small range: many ties, broken as heapq breaks them
def test_huffman_tree_equals_the_heapq_reference(size, high):
    counts = np.random.default_rng(size * high).integers(1, high, size)
    if size == 5000:
        counts[:50] = np.random.default_rng(1).integers(10**5, 10**6, 50)  # a few frequent words, as Zipf
    tree = huffman_tree(counts)
    codes, points = _huffman_tree_reference(counts)
    assert tree.lengths.tolist() == [len(c) for c in codes]
    assert tree.codes.shape[1] == max(1, max(tree.lengths))
    for w in range(size):
        n = tree.lengths[w]
        assert tree.codes[w, :n].tolist() == codes[w] and tree.points[w, :n].tolist() == points[w]
        assert not tree.codes[w, n:].any() and not tree.points[w, n:].any()  # zero padding
    assert tree.codes.dtype == np.uint8 and tree.points.dtype == np.int32 and tree.lengths.dtype == np.int32


def test_noise_buckets_give_the_whole_table_bisect():
    """A noise draw searched within its bucket is the word a bisect over the whole cumulative table gives."""
    counts = (10**6 // np.arange(1, 15001) + 5).astype(np.int64)  # Zipf, 15,000 words
    cum = cum_table(counts, 0.75)
    shift, starts = noise_buckets(cum, bits=8)
    x = np.concatenate([np.random.default_rng(1).integers(0, int(cum[-1]), 20000), cum[:50].astype(np.int64) - 1,
                        cum[:50].astype(np.int64), [0, int(cum[-1]) - 1]])
    b = x >> shift
    got = [_bisect_left(cum, np.uint64(v), np.int64(starts[k]), np.int64(starts[k + 1])) for v, k in zip(x, b)]
    np.testing.assert_array_equal(got, np.searchsorted(cum.astype(np.int64), x, side="left"))
    assert np.diff(starts).max() <= 250  # 256 buckets: a search over at most 250 words (measured 208)
    assert np.diff(noise_buckets(cum)[1]).max() <= 8  # the default 16,384: at most 8 (measured 4)


# ------------------------------------------------------------------------------------------------------
# the SGD step: the numba kernel's update is a gradient step on the PyTorch model's loss


@pytest.mark.parametrize("labels", [[1, 0, 0, 0], [1, 0, 1, 1, 0]])  # negative sampling / a tree path
def test_sgd_pair_is_a_gradient_step_on_the_torch_loss(labels):
    """The loss is the PyTorch model's; the step is its gradient step with σ read as gensim reads it
    (update_sigmoid), and within that table's bias (< 0.01 in σ) of PyTorch's own step."""
    rng = np.random.default_rng(1)
    v, d, alpha = 12, 7, 0.05
    cfg = Word2VecConfig(dim=d, negative=len(labels) - 1, vocab_size=v)
    model = SkipGram(cfg)
    syn0 = rng.normal(0, 0.4, (v, d)).astype(np.float32)
    out = rng.normal(0, 0.4, (v, d)).astype(np.float32)
    with torch.no_grad():
        model.input.weight.copy_(torch.from_numpy(syn0))
        model.ns_output.weight.copy_(torch.from_numpy(out))
    c, targets = 3, np.array([[5, 0, 9, 2, 7][:len(labels)]], dtype=np.int32)  # distinct rows
    labels_np = np.array([labels], dtype=np.float32)
    scores = out[targets[0]].astype(np.float64) @ syn0[c]  # (K,)
    g = alpha * (np.array(labels) - np.array([update_sigmoid(np.float32(s)) for s in scores]))  # (K,)
    want_syn0, want_out = syn0.copy(), out.copy()
    want_syn0[c] += g @ out[targets[0]]
    want_out[targets[0]] += g[:, None] * syn0[c]
    syn0_0, out_0 = syn0.copy(), out.copy()

    loss = _sgd_pair(syn0, out, c, targets, labels_np, 0, len(labels), np.float32(alpha),
                     np.zeros((2, d), np.float32))
    t = torch.from_numpy(targets.astype(np.int64))
    torch_loss = model(torch.tensor([c]), ns=(t, torch.from_numpy(labels_np), torch.ones(t.shape)))
    torch_loss.sum().backward()
    torch.optim.SGD(model.parameters(), lr=alpha).step()

    # the kernel's -log σ is the chord of a 1/256 grid: within step²/8 · max σ(1 - σ) = 2^-16/32 of the exact value
    # per term (an approximation bound), torch's float32 terms within a few roundings (γ_{d+4} of the score's terms)
    k = len(labels)
    terms = float(np.abs(out_0[targets[0]] * syn0_0[c]).sum(-1).max())  # Σ_d |θ_d e_d| of a score
    assert loss == pytest.approx(torch_loss.item(), abs=k * (2.0**-16 / 32 + gamma(d + 4, np.float32) * terms))
    # the kernel in float32 (FMA or not), want_* in float64 rounded once: the k-term gradient sum, the update and
    # g's float32 rounding (same σ read, α and the product: 2u|g|), <= γ_{k+4} of the terms' magnitudes (Higham §3.1)
    rows = targets[0]
    np.testing.assert_array_less(np.abs(syn0 - want_syn0)[c], gamma(k + 4, np.float32) * (
        np.abs(syn0_0[c]) + np.abs(g) @ np.abs(out_0[rows])) + 1e-30)
    np.testing.assert_array_less(np.abs(out - want_out)[rows], gamma(4, np.float32) * (
        np.abs(out_0[rows]) + np.abs(g)[:, None] * np.abs(syn0_0[c])) + 1e-30)
    np.testing.assert_array_equal(np.delete(syn0, c, 0), np.delete(want_syn0, c, 0))  # untouched rows
    np.testing.assert_array_equal(np.delete(out, rows, 0), np.delete(want_out, rows, 0))
    bias = alpha * 0.01 * np.abs(np.concatenate([out, syn0])).max() * len(labels)
    np.testing.assert_allclose(syn0, model.input.weight.detach().numpy(), atol=bias)
    np.testing.assert_allclose(out, model.ns_output.weight.detach().numpy(), atol=bias)


@pytest.mark.parametrize("d", [3, 16, 100])
def test_sgd_distinct_is_sgd_pair_to_the_bit(d):
    """Scores read first (_sgd_distinct) or each before its own step (_sgd_pair): the same step and loss, to the bit,
    when the outputs are distinct rows; a path longer than D, saturated scores and both labels included."""
    rng = np.random.default_rng(d)
    v, k = 40, 24
    syn0 = rng.normal(0, 1.0, (v, d)).astype(np.float32)
    out = rng.normal(0, 1.0, (v, d)).astype(np.float32)
    targets = np.stack([rng.permutation(v)[:k] for _ in range(3)]).astype(np.int32)  # (3, K) distinct per row
    labels = rng.integers(0, 2, (3, k)).astype(np.float32)
    for row, c in enumerate([1, 7, 39]):
        (s0, o0), (s1, o1) = (syn0.copy(), out.copy()), (syn0.copy(), out.copy())
        want = _sgd_pair(s0, o0, c, targets, labels, row, k, np.float32(0.1), np.zeros((2, d), np.float32))
        got = _sgd_distinct(s1, o1, c, targets, labels, row, k, np.float32(0.1), np.zeros((2, d), np.float32),
                            np.zeros(k, np.float32))
        assert got == want
        np.testing.assert_array_equal(s1, s0)
        np.testing.assert_array_equal(o1, o0)
    scores = np.abs(out[targets[0]] @ syn0[1])  # (K,) of the first row
    assert (scores < 6).any() and ((scores >= 6).any() or d < 16)  # steps and saturated scores (D >= 16)


def test_distinct_spots_a_repeated_output():
    t = np.array([[4, 2, 9, 2], [4, 2, 9, 1]], dtype=np.int32)
    assert not _distinct(t, 0, 4) and _distinct(t, 1, 4) and _distinct(t, 0, 3) and _distinct(t, 0, 1)


def test_update_sigmoid_is_gensims_table():
    """gensim's σ lookup (word2vec_inner.pyx: EXP_TABLE[int((s + 6) · (1000 / 6 / 2))] with C's integer
    division): never above σ (but for float32 rounding), at most 0.01 below it, σ(0) read as σ(-0.024)."""
    s = np.linspace(-5.999, 5.999, 20001).astype(np.float32)
    table = np.array([update_sigmoid(x) for x in s])
    exact = 1 / (1 + np.exp(-s.astype(np.float64)))
    # float32 table entries: the argument (i/1000·2 - 1)·6 within 3 roundings of 6 (σ' <= 1/4), exp within 4 ulp
    # (numpy's float32 exp), the division and the sum: <= (4.5 + 6)·u above σ of the entry's exact argument
    rounding = 10.5 * u(np.float32)
    assert (table <= exact + rounding).all() and (exact - table).max() < 0.01
    assert update_sigmoid(np.float32(0.0)) == pytest.approx(1 / (1 + np.exp(0.024)), abs=rounding)  # index 498


def test_sgd_pair_skips_saturated_scores_but_counts_their_loss():
    syn0 = np.zeros((2, 2), np.float32)
    syn0[0] = [4.0, 0.0]
    out = np.zeros((2, 2), np.float32)
    out[1] = [-2.0, 0.0]  # score -8 for a label-1 output: |score| >= 6, no update (gensim's rule)
    before = (syn0.copy(), out.copy())
    loss = _sgd_pair(syn0, out, 0, np.array([[1]], np.int32), np.array([[1.0]], np.float32), 0, 1,
                     np.float32(0.1), np.zeros((2, 2), np.float32))
    # -log σ(-8) = 8 + log1p(e^-8) from an exact score (4·-2): numba evaluates exp and log1p of the float32 score in
    # float32 (within 2 ulp each: 4u of the 3.4e-4 term), the addition to 8 in float64
    tail = np.log1p(np.exp(-8.0))
    assert loss == pytest.approx(8.0 + tail, abs=4 * u(np.float32) * tail + 2 * u(np.float64) * 8.0)
    np.testing.assert_array_equal(syn0, before[0])
    np.testing.assert_array_equal(out, before[1])


# ------------------------------------------------------------------------------------------------------
# training


def _train(sentences, *, hs=False, engine="numba", seed=1, epochs=4, threads=1, **cfg):
    corpus = Corpus.build(sentences, min_freq=1)
    cfg = {"dim": 16, "window": 3, "negative": 0 if hs else 5, "sample": 0.0, **cfg}
    task = SkipGramSGD(Word2VecConfig(**cfg), corpus, hs=hs, seed=seed, engine=engine, threads=threads,
                       batch_size=256)
    rows = train_epochs(task, epochs, 0.025, 0.0001)
    return KeyedVectors(corpus.words, task.vectors()), rows


def _topic_accuracy(kv: KeyedVectors) -> float:
    return np.mean([topic_of(kv.most_similar(w, topn=1)[0][0]) == topic_of(w) for w in kv.words])


def _cosines(kv: KeyedVectors, words: list[str]) -> np.ndarray:
    x = np.stack([kv[w] / np.linalg.norm(kv[w]) for w in words])
    return (x @ x.T)[np.triu_indices(len(words), 1)]


@pytest.mark.parametrize("hs", [False, True])
def test_engines_learn_equivalent_vectors(hs):
    """numba (Hogwild kernel) and torch (batched autograd) on the same corpus: both recover the topics, their
    loss falls alike, and their similarity structures agree as well as two seeds of one engine agree."""
    sentences = topic_sentences()
    numba_kv, numba_stats = _train(sentences, hs=hs)
    other_kv, _ = _train(sentences, hs=hs, seed=2)
    torch_kv, torch_stats = _train(sentences, hs=hs, engine="torch")
    for kv in (numba_kv, torch_kv):
        assert _topic_accuracy(kv) >= 0.95
    for stats in (numba_stats, torch_stats):
        assert stats[-1]["loss"] < stats[0]["loss"]
    # not a rounding tolerance: two optimisers (per-pair SGD with gensim's σ table, batched autograd with the exact
    # σ) on their own random streams; "falls alike" is 10% apart at most
    assert torch_stats[-1]["loss"] == pytest.approx(numba_stats[-1]["loss"], rel=0.1)
    # a sampling bound: each kept word is the centre of <= 2r pairs, r uniform in 1..window (variance of 2r:
    # 4 (window² - 1) / 12); two independent streams differ by <= 5 standard deviations but in 6e-7 of runs
    words, window = sum(map(len, sentences)), 3
    sd = np.sqrt(2 * words * 4 * (window**2 - 1) / 12)
    assert numba_stats[0]["terms"] == pytest.approx(torch_stats[0]["terms"], abs=5 * sd)  # same windows
    words = numba_kv.words
    same_engine = np.corrcoef(_cosines(numba_kv, words), _cosines(other_kv, words))[0, 1]
    across = np.corrcoef(_cosines(numba_kv, words), _cosines(torch_kv, words))[0, 1]
    assert across > 0.8 and across >= same_engine - 0.1, (across, same_engine)


def test_single_thread_is_deterministic_and_seeded():
    sentences = topic_sentences(sentences=300)
    a, _ = _train(sentences, epochs=2, sample=1e-2)
    b, _ = _train(sentences, epochs=2, sample=1e-2)
    c, _ = _train(sentences, epochs=2, sample=1e-2, seed=5)
    np.testing.assert_array_equal(a.vectors, b.vectors)
    assert not np.allclose(a.vectors, c.vectors)


def test_quality_smoke_on_real_text():
    """Skip-gram on Python's documentation: the loss falls, and related words rank among each other's closest
    (of 1,412 words, where a random word would rank about 700th)."""
    from seqlab.data.sources import pydocs_text
    from seqlab.tasks.word_vectors import sentences_of

    corpus = Corpus.build(sentences_of(pydocs_text(), lowercase=True), min_freq=5)
    task = SkipGramSGD(Word2VecConfig(dim=50), corpus, hs=False, seed=1, threads=1)
    losses = [row["loss"] for row in train_epochs(task, 5, 0.025, 0.0001)]
    assert losses[-1] < losses[0] - 0.2
    kv = KeyedVectors(corpus.words, task.vectors())
    for a, b in [("true", "false"), ("keys", "values"), ("list", "tuple"), ("class", "instance")]:
        cosines = kv.vectors @ kv[a] / kv.norms
        rank = int((cosines > cosines[kv.index(b)]).sum())  # a itself ranks first
        assert rank <= 10, (a, b, rank)


# ------------------------------------------------------------------------------------------------------
# the task: run directory, resume, evaluation, CLI


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "topics.txt"
    path.write_text("\n".join(" ".join(s) for s in topic_sentences(sentences=2500)) + "\n")  # 3 chunks
    return path


def _overrides(corpus_file, *extra):
    return [f"data.source={corpus_file}", "data.min_freq=1", "model.dim=12", "model.window=3",
            "train.threads=1", "train.progress=false", *extra]


def test_run_directory_interrupt_resume_and_eval(corpus_file, tmp_path, monkeypatch):
    """Ctrl-C in the middle of an epoch saves at the next step; --resume continues bit for bit (one thread)."""
    import os
    import signal

    from seqlab.api import Interrupted, load, train_run
    from seqlab.models import word2vec

    monkeypatch.setattr(word2vec, "CHUNKS_PER_STEP", 1)  # 3 chunks of 10k words: 3 steps per epoch
    overrides = _overrides(corpus_file, "train.epochs=3", "model.sample=0")
    full = train_run("w2v-sgns", tmp_path / "full", overrides=overrides, log=_quiet)
    update = SkipGramSGD.update

    def ctrl_c_in_epoch_2(self, epoch, index, lr):  # as a Ctrl-C while epoch 2's second step runs
        stats = update(self, epoch, index, lr)
        if (epoch, index) == (1, 1):
            os.kill(os.getpid(), signal.SIGINT)
        return stats

    monkeypatch.setattr(SkipGramSGD, "update", ctrl_c_in_epoch_2)
    with pytest.raises(Interrupted, match="step 5"):
        train_run("w2v-sgns", tmp_path / "part", overrides=overrides, log=_quiet)
    monkeypatch.setattr(SkipGramSGD, "update", update)
    part = tmp_path / "part"
    rows = [json.loads(line) for line in (part / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["epoch"]) for r in rows] == [(3, 1)] and rows[0]["split"] == "train"
    assert json.loads((part / "state.json").read_text())["step"] == 5
    assert not (part / "vectors.txt").exists()
    train_run("w2v-sgns", part, overrides=overrides, resume=True, log=_quiet)
    mtime = (part / "model.safetensors").stat().st_mtime_ns
    train_run("w2v-sgns", part, overrides=overrides, resume=True, log=_quiet)  # finished: nothing to do
    assert (part / "model.safetensors").stat().st_mtime_ns == mtime
    rows = [json.loads(line) for line in (part / "metrics.jsonl").read_text().splitlines()]
    full_rows = [json.loads(line) for line in (full / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    for key in ("loss", "terms", "effective_words", "raw_words", "lr"):  # the resumed epoch's row is whole
        assert [r[key] for r in rows] == [r[key] for r in full_rows], key
    for name in ("vectors.txt", "config.toml", "state.json", "model.safetensors", "vocab.json", "metrics.jsonl"):
        assert (full / name).exists(), name
    a, b = load(full), load(part)
    np.testing.assert_array_equal(a.vectors.vectors, b.vectors.vectors)  # one thread: resume is bit for bit
    assert json.loads((part / "state.json").read_text())["step"] == 9
    text = KeyedVectors.load_word2vec_format(full / "vectors.txt")
    np.testing.assert_array_equal(text.vectors, a.vectors.vectors)
    assert topic_of(a.neighbors("t0w1", 1)[0][0]) == "t0"

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("# word1\tword2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in [
        ("t0w1", "t0w2", 9), ("t0w1", "t1w2", 1), ("t2w3", "t2w4", 8), ("t2w3", "t5w0", 2), ("t1w1", "nope", 5)]))
    questions = tmp_path / "questions.txt"
    questions.write_text(": topics\nt0w1 t0w2 t1w1 t1w2\nt0w1 nope t1w1 t1w2\n")
    result = a.evaluate(analogies=str(questions), similarity=str(pairs))
    assert set(result) >= {"analogy_accuracy", "wordsim353_spearman", "simlex999_spearman", "oov_ratio"}
    # ratios of integer counts, one correctly rounded division each: equal to the literal's
    assert result["pairs_spearman"] > 0.5 and result["pairs_oov_ratio"] == 1 / 5
    assert result["oov_ratio"] == 2 / 7  # 1 of 2 questions + 1 of 5 pairs


def _quiet(*args, **kwargs):
    pass


@pytest.mark.parametrize("arch", ["w2v-hs", "glove"])
def test_other_presets_train(corpus_file, tmp_path, arch):
    from seqlab.api import load, train_run

    extra = ["model.sample=0"] if arch.startswith("w2v") else []
    run = train_run(arch, tmp_path / arch, overrides=_overrides(corpus_file, "train.epochs=3", *extra), log=_quiet)
    kv = load(run).vectors
    assert _topic_accuracy(kv) >= 0.9
    assert (run / "plots" / "loss.png").exists()


def _cli(argv: list[str]) -> int:
    """Run a verb module as seqlab.cli.main does (the lead registers the verbs in cli.COMMANDS)."""
    import importlib

    parser = argparse.ArgumentParser(prog="seqlab")
    sub = parser.add_subparsers()
    importlib.import_module(f"seqlab.commands.{argv[0]}").add(sub)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except SeqlabError as e:
        print(f"error: {e}")
        return 2


def test_cli_verbs(corpus_file, tmp_path, capsys):
    from seqlab.api import train_run

    run = train_run("w2v-sgns", tmp_path / "run", overrides=_overrides(corpus_file, "train.epochs=2"), log=_quiet)
    capsys.readouterr()
    assert _cli(["neighbors", str(run), "t3w0", "-k", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    words, cosines = zip(*(line.split("\t") for line in lines))
    assert list(map(float, cosines)) == sorted(map(float, cosines), reverse=True)
    assert "t3w0" not in words
    assert _cli(["analogy", str(run / "vectors.txt"), "t0w0", "t0w1", "t4w0"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 10
    assert _cli(["neighbors", str(run), "unicorn"]) == 2
    assert "'unicorn' is not in the vocabulary" in capsys.readouterr().out
    assert _cli(["neighbors", str(run), "T3W0"]) == 2
    assert "did you mean 't3w0'" in capsys.readouterr().out
    out = tmp_path / "maps" / "words.png"
    assert _cli(["map", str(run), "--words", "20", "--out", str(out)]) == 0
    assert out.stat().st_size > 1000
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\nx 1 2 3\ny 1 2\n")
    assert _cli(["neighbors", str(bad), "x"]) == 2
    assert "line 3: 2 values, the header says 3" in capsys.readouterr().out


def test_bad_input(tmp_path):
    from seqlab.api import train_run

    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    few = tmp_path / "few.txt"
    few.write_text("one two three\n")
    cases = [
        ([f"data.source={empty}"], "is empty"),
        ([f"data.source={few}", "data.min_freq=2"], "lower data.min_freq"),
        ([f"data.source={few}", "train.epochs=1.5"], "whole number"),
        ([f"data.source={few}", "data.tokenizer=char"], 'data.tokenizer = "word"'),
        ([f"data.source={few}", "data.min_freq=1", "model.negative=0"], "negative >= 1"),
    ]
    for i, (overrides, message) in enumerate(cases):
        with pytest.raises(SeqlabError, match=message):
            train_run("w2v-sgns", tmp_path / f"r{i}", overrides=[*overrides, "train.progress=false"], log=_quiet)


def test_keyed_vectors_files_and_transfer(tmp_path):
    rng = np.random.default_rng(0)
    kv = KeyedVectors(["the", "cat", "Sat", "été"], rng.normal(size=(4, 5)).astype(np.float32), np.array([9, 4, 2, 1]))
    back = KeyedVectors.load(kv.save(tmp_path / "v" / "kv.safetensors"))
    assert back.words == kv.words
    np.testing.assert_array_equal(back.vectors, kv.vectors)
    np.testing.assert_array_equal(back.counts, kv.counts)
    text = KeyedVectors.load_word2vec_format(kv.save_word2vec_format(tmp_path / "kv.txt"))
    np.testing.assert_array_equal(text.vectors, kv.vectors)
    assert text.words == kv.words
    with pytest.raises(SeqlabError, match="whitespace"):
        KeyedVectors(["a b"], np.zeros((1, 2))).save_word2vec_format(tmp_path / "bad.txt")
    (tmp_path / "junk.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(SeqlabError, match="not a safetensors file"):
        KeyedVectors.load(tmp_path / "junk.safetensors")
    for content, message in [("3\n", "WORDS DIM"), ("1 2\nx 1 2\ny 3 4\n", "header says 1 words but 2"),
                             ("1 2\nx 1 abc\n", "not a number"), ("2 1\nx 1\nx 2\n", "appears twice")]:
        (tmp_path / "m.txt").write_text(content)
        with pytest.raises(SeqlabError, match=message):
            KeyedVectors.load_word2vec_format(tmp_path / "m.txt")
    matrix, found = kv.embedding_matrix(["<pad>", "cat", "sat", "dog"])
    assert found == 2 and matrix.shape == (4, 5)
    np.testing.assert_array_equal(matrix[1], kv["cat"])
    np.testing.assert_array_equal(matrix[2], kv["Sat"])  # falls back to another casing


def test_time_budget_stops_at_a_step_and_resume_finishes(corpus_file, tmp_path, monkeypatch):
    """train.max_minutes is the Trainer's: the run stops at a step boundary with a checkpoint and the vectors
    of that step; --resume with a larger budget (a change --resume allows) finishes it."""
    from seqlab.api import load, train_run
    from seqlab.models import word2vec

    monkeypatch.setattr(word2vec, "CHUNKS_PER_STEP", 1)
    lines = []
    overrides = _overrides(corpus_file, "train.epochs=3", "model.sample=0")
    run = train_run("w2v-sgns", tmp_path / "run", overrides=[*overrides, "train.max_minutes=1e-9"], log=lines.append)
    assert json.loads((run / "state.json").read_text())["step"] == 1
    assert any("train.max_minutes reached at step 1 of 9" in line for line in lines)
    assert (run / "vectors.txt").exists()
    train_run("w2v-sgns", run, overrides=overrides, resume=True, log=_quiet)
    assert json.loads((run / "state.json").read_text())["step"] == 9
    assert topic_of(load(run).neighbors("t0w1", 1)[0][0]) == "t0"
