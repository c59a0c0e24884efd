"""Skip-gram word2vec (notes: Word embeddings › Skip-gram), with negative sampling or a Huffman tree.

The notes' notation: o_w is the one-hot vector of word w, E the embedding matrix and e_w = E·o_w the word's
vector ("Embedding Matrix"). Skip-gram chooses a context word c and a target t within a window around it and
models P(t | c) = exp(θ_t·e_c) / Σ_j exp(θ_j·e_c) (the notes' "ŷ = P[t | c]"), trained with the
cross-entropy L = -log ŷ_t. That softmax costs O(V); the two ways around it share one form, a sum of
logistic losses over K scored output vectors:

    L(c, t) = Σ_k -log σ(s_k · θ_{u_k}·e_c),   s_k = +1 for a label-1 output u_k, -1 for label 0

- negative sampling (SGNS, Mikolov et al. 2013): u = (t, n_1 .. n_K), labels (1, 0 .. 0), the noise words n_k
  drawn from the unigram distribution raised to ``ns_exponent`` (0.75);
- hierarchical softmax (the notes: "binary tree over the vocabulary, product of binary probabilities along the
  path, O(log2 V)"): u = the inner nodes on the root-to-t path of a Huffman tree, label = 1 - the branch bit,
  so P(t | c) = Π_nodes σ(±θ_node·e_c).

One SGD step on a pair (``_sgd_pair``): g_k = α (label_k - σ(θ_{u_k}·e_c)); θ_{u_k} += g_k e_c; e_c += Σ_k g_k θ_{u_k}
(every θ update uses the old e_c, the e_c update the old θ's: a gradient step on L(c, t); the numba engine reads
σ there from gensim's table, see below, the torch engine computes it exactly).

Training follows the word2vec C tool and gensim (word2vec_inner.pyx), so the two are comparable:
- frequent-word subsampling as gensim computes it: keep probability p_w = (√(n_w / τ) + 1)·τ / n_w with
  τ = sample × (retained corpus size), stored as uint32(p_w (2³² - 1)) and tested against a fresh 32-bit
  random per occurrence per epoch; dropped words take no window slot;
- a dynamic window: for the target at i, a radius drawn uniformly from 1..window (from a random stream of its
  own, as gensim draws the radii apart from the noise words);
- the update is skipped for a score |θ·e| ≥ 6 (gensim's exp-table rule), and σ in the update is read from
  gensim's 1000-entry table exactly as gensim reads it (:func:`~seqlab.models.word2vec_kernels.update_sigmoid`:
  about σ(s - 0.03), a bias towards label 1 that SGNS's quality depends on), but the reported loss is exact,
  every term to within 5e-7 (gensim's own running loss is known to be wrong: its issues #2617, #999);
- the initial vectors are gensim 4's (uniform in ±1/D from ``numpy.random.default_rng(seed)``, the same bits),
  the output vectors zero;
- the learning rate falls linearly from ``train.lr`` to ``train.min_lr`` with the position of each chunk of
  ≤ 10,000 words in the whole run (the ``linear`` shape of the one schedule, :func:`seqlab.training.optim.learning_rate`).

Two engines run that same step. ``numba`` (:mod:`seqlab.models.word2vec_kernels`): one kernel, Hogwild
threads (lock-free writes to the shared matrices), thread t taking chunks t, t+T, t+2T, ... so every thread sees
the same learning rates; per-thread 48-bit LCG streams (the C tool's), deterministic with one thread. Given
gensim's initial state of that stream, one thread, one job, window 1 and no subsampling, it ends within float
rounding of gensim's Cython (tests/test_parity_vectors.py: the same pairs, noise words and updates). ``torch``:
the readable reference and the GPU path, :class:`SkipGram` with sparse embeddings, batches of pairs and plain SGD.
The vocabulary tables are in :mod:`seqlab.models.word2vec_tables`, the corpus layout in :mod:`seqlab.data.corpus`.

:class:`SkipGramSGD` is what the Trainer runs (a kernel task, :class:`seqlab.training.trainer.KernelTask`): the model, its
tables, and one step = ``CHUNKS_PER_STEP`` chunks of the corpus by either engine; the Trainer owns the loop,
the schedule, interruption, the time budget, checkpoints and resume.

Shapes: B pairs in a batch, K scored outputs per pair (1 + negative, or the tree depth), D = ``dim``, V words.
"""


from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from seqlab.base.errors import SeqlabError
from seqlab.base.lazy import lazy_exports
from seqlab.data.corpus import Corpus
from seqlab.models.arrays import ArrayModel, weight_array
from seqlab.models.word2vec_kernels import StepStats, _train_chunks, numba_threads, thread_seeds
from seqlab.models.word2vec_tables import HuffmanTree, cum_table, huffman_tree, noise_buckets, sample_ints

if TYPE_CHECKING:  # annotations only: the numba engine runs without torch
    import torch

CHUNKS_PER_STEP = 64  # chunks (<= 640k raw words) per Trainer step: the grain of progress, Ctrl-C and checkpoints
PAIR_SLICE_CHUNKS = 20  # torch engine: chunks whose pairs are generated at once (bounds their memory)


@dataclass(frozen=True)
class Word2VecConfig:
    dim: int = 100  # D: size of the word vectors e_w
    window: int = 5  # maximum distance between c and t; each target draws its radius from 1..window
    negative: int = 5  # noise words per pair (0 = none; model.arch="sgns" needs >= 1)
    ns_exponent: float = 0.75  # noise distribution ∝ count^ns_exponent
    sample: float = 1e-3  # subsampling threshold as a fraction of the corpus (0 = keep every word)
    engine: str = "auto"  # auto (numba on CPU, torch on CUDA) | numba | torch
    vocab_size: int = 0  # V, derived from the data

    def __post_init__(self):
        if self.dim < 1 or self.window < 1 or self.negative < 0:
            raise ValueError(f"dim and window must be >= 1 and negative >= 0; got dim={self.dim}, "
                             f"window={self.window}, negative={self.negative}")
        if not (self.sample >= 0 and self.ns_exponent >= 0):
            raise ValueError(f"sample and ns_exponent must be >= 0; got {self.sample}, {self.ns_exponent}")
        if self.engine not in ("auto", "numba", "torch"):
            raise ValueError(f"engine must be one of auto, numba, torch; got {self.engine!r}")

    def unused_keys(self) -> dict[str, str]:
        """The keys this combination leaves unused, each with why and the fix (seqlab.tasks.registry.resolve_run)."""
        if self.negative == 0:  # model.arch = "hs" without negative sampling: no noise distribution
            return {"ns_exponent": "while model.negative = 0 draws no noise words; set model.negative >= 1 to add "
                                   "negative sampling, or remove model.ns_exponent"}
        return {}


# ------------------------------------------------------------------------------------------------------
# the PyTorch model (the readable reference, and the GPU path): seqlab.models.word2vec_torch.SkipGram, imported
# from here on first use (the numba engine, and so `seqlab train w2v-sgns` on a CPU, runs without torch)

__getattr__, __dir__ = lazy_exports(__name__, {"SkipGram": "seqlab.models.word2vec_torch"}, globals())


# ------------------------------------------------------------------------------------------------------
# training: one step = CHUNKS_PER_STEP chunks, by either engine


class SkipGramSGD:
    r"""A skip-gram model, its tables and the corpus, trained by plain SGD one step at a time (a kernel task of
    :class:`seqlab.training.trainer.Trainer`): ``update(epoch, index, lr)`` trains chunks ``index·CHUNKS_PER_STEP ..`` of
    the corpus at the learning rates ``lr(epochs done)`` of the Trainer's schedule. ``model`` is a :class:`SkipGram`
    on the torch engine and, on the numba engine, its weights as numpy arrays under the same names
    (:func:`skip_gram_arrays_model`: that engine imports no torch); the checkpoints of the two are the same files.

    !!! equation "Word embeddings › Skip-gram (beyond the notes)"
        $g_k = \alpha (l_k - \sigma(\theta_{u_k}^\top e_c)),\ \theta_{u_k} \mathrel{+}= g_k e_c,\ e_c
        \mathrel{+}= \sum_k g_k \theta_{u_k}$: one SGD step on a pair, over its $K$ scored outputs $u_k$ with
        labels $l_k$ (the word2vec C tool's and gensim's update)."""

    schedule = "linear"  # lr -> min_lr linearly over the run (the C tool's and gensim's alpha -> min_alpha)
    unit = "word"

    def __init__(self, cfg: Word2VecConfig, corpus: Corpus, *, hs: bool, seed: int, engine: str = "numba",
                 threads: int = 0, device: torch.device | None = None, batch_size: int = 4096):
        if not hs and cfg.negative < 1:
            raise SeqlabError("model.arch=sgns needs model.negative >= 1 (noise words per pair); "
                              "use model.arch=hs for hierarchical softmax without negative sampling")
        self.corpus, self.counts = corpus, np.asarray(corpus.counts, dtype=np.int64)
        cfg = replace(cfg, vocab_size=len(self.counts))
        self.cfg, self.hs, self.seed = cfg, hs, seed
        self.engine, self.threads, self.batch_size = engine, threads, batch_size
        self.device = device  # the torch engine's (None: the CPU); the numba engine runs on the CPU
        # gensim 4's initialisation (prep_vectors), to the bit: e uniform in ±1/D, θ zero
        rng = np.random.default_rng(seed)
        init = rng.random((cfg.vocab_size, cfg.dim), dtype=np.float32)  # twice the C tool's ±0.5/D, which
        init *= 2.0  # starts SGNS slower: 1.4 points lower on MEN and SimLex after 5 epochs on enwiki_sample
        init -= 1.0
        init /= cfg.dim
        self.model: Any = skip_gram_arrays_model(cfg, hs)  # numba: the arrays; torch: a SkipGram holding them
        self.model.input.weight[...] = init
        if engine != "numba":
            self.model = _torch_model(_torch_skip_gram(cfg, hs), self.model.state_dict(), device)
        self.sample_int = sample_ints(self.counts, cfg.sample)
        self.cum = cum_table(self.counts, cfg.ns_exponent)
        self.noise_shift, self.noise_starts = noise_buckets(self.cum)
        self._hs_labels: np.ndarray | None = None  # (V, depth) float32, made on the first kernel call
        self.tree = huffman_tree(self.counts) if hs else None
        self.steps_per_epoch = max(1, math.ceil(corpus.n_chunks / CHUNKS_PER_STEP))
        self.rng: np.ndarray | None = None  # (T,) the numba threads' LCG states, carried from step to step
        if engine == "numba":
            self.n_threads = numba_threads(threads)  # seqlab.api.train_run sizes numba's pool to it
            self._kernel(0, 0, np.zeros(0, np.float32), thread_seeds(seed, 0, self.n_threads))  # compile (or load)

    def vectors(self) -> np.ndarray:
        """(V, D) float32 word vectors e_w (the input matrix, as gensim's ``wv.vectors``)."""
        return weight_array(self.model.input).copy()

    def trainer_tensors(self) -> dict[str, np.ndarray]:
        """SGD keeps no optimiser state; the numba threads' random states are what a mid-epoch resume needs
        (the torch engine derives its streams from (seed, epoch, step))."""
        return {} if self.rng is None else {"rng": self.rng.astype(np.int64)}

    def restore_trainer_tensors(self, tensors: dict[str, np.ndarray]) -> None:
        rng = tensors.get("rng")
        ok = rng is not None and self.engine == "numba" and tuple(rng.shape) == (self.n_threads, 2)
        self.rng = np.asarray(rng).astype(np.uint64) if ok else None  # else: fresh streams (another thread count)

    def update(self, epoch: int, index: int, lr: Callable[[float], float]) -> StepStats:
        """Train chunks [c0, c1) of step ``index`` of ``epoch``; chunk c at lr(epoch + its position in the
        epoch), the position measured in raw words before it (as gensim's progress)."""
        corpus = self.corpus
        c0 = index * CHUNKS_PER_STEP
        c1 = min(c0 + CHUNKS_PER_STEP, corpus.n_chunks)
        raw = corpus.raw_words
        def at(raw_position: float) -> float:  # the rate at a position in the epoch, in raw words
            return lr(epoch + raw_position / raw)

        if self.engine == "numba":
            alphas = np.array([at(corpus.raw_before[c]) for c in range(c0, c1)], dtype=np.float32)
            if index == 0 or self.rng is None:
                self.rng = thread_seeds(self.seed, epoch if index == 0 else (epoch << 20) + index, self.n_threads)
            loss, pairs, words = self._kernel(c0, c1, alphas, self.rng)
        else:
            loss, pairs, words = self._torch_step(c0, c1, at, np.random.default_rng([self.seed, epoch, index]))
        corpus.release()  # a corpus on disk: its pages leave this process's memory
        return StepStats(loss, pairs, words, int(corpus.raw_before[c1] - corpus.raw_before[c0]))

    def _kernel(self, c0: int, c1: int, alphas: np.ndarray, rng: np.ndarray) -> tuple[float, int, int]:
        cfg, m, corpus = self.cfg, self.model, self.corpus
        syn0 = m.input.weight
        syn1 = m.hs_output.weight if self.hs else np.zeros((1, cfg.dim), np.float32)
        syn1neg = m.ns_output.weight if cfg.negative else np.zeros((1, cfg.dim), np.float32)
        tree = self.tree or HuffmanTree(np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32), np.zeros(1, np.int32))
        if self._hs_labels is None:
            self._hs_labels = (1.0 - tree.codes).astype(np.float32)  # label 1 - code: gensim's g = (1 - code - f) α
        hs_labels = self._hs_labels
        loss, pairs, words = (np.zeros(self.n_threads, dtype=t) for t in (np.float64, np.int64, np.int64))
        _train_chunks(syn0, syn1, syn1neg, corpus.ids, corpus.sentence_starts, corpus.chunk_starts, c0, c1,
                      self.n_threads, rng, self.sample_int, cfg.sample > 0, self.cum, np.uint64(self.noise_shift),
                      self.noise_starts, cfg.negative, tree.points, hs_labels, tree.lengths, self.hs, cfg.window,
                      alphas, loss, pairs, words)
        return float(loss.sum()), int(pairs.sum()), int(words.sum())

    def _torch_step(self, c0: int, c1: int, at: Callable[[float], float],
                    rng: np.random.Generator) -> tuple[float, int, int]:
        import torch

        cfg, m, corpus, batch_size = self.cfg, self.model, self.corpus, self.batch_size
        device = self.device or torch.device("cpu")
        optimizer = torch.optim.SGD(m.parameters(), lr=at(corpus.raw_before[c0]))  # plain SGD, sparse gradients
        gen = torch.Generator(device=device).manual_seed(int(rng.integers(2**62)))
        cum = torch.from_numpy(self.cum.astype(np.int64)).to(device)
        cum_last = int(self.cum[-1])
        tree = self.tree
        if tree is not None:
            points = torch.from_numpy(tree.points.astype(np.int64)).to(device)  # (V, depth)
            hs_labels = torch.from_numpy(1.0 - tree.codes.astype(np.float32)).to(device)  # (V, depth)
            depth_mask = (torch.arange(points.shape[1], device=device)[None, :]
                          < torch.from_numpy(tree.lengths).to(device)[:, None]).float()  # (V, depth)
        total_loss = torch.zeros((), dtype=torch.float64, device=device)
        total_pairs, total_words = 0, 0
        for s0 in range(c0, c1, PAIR_SLICE_CHUNKS):  # pairs are generated a slice of chunks at a time
            s1 = min(s0 + PAIR_SLICE_CHUNKS, c1)
            inputs, targets, words = self._pairs(corpus, s0, s1, rng)
            total_words += words
            for b0 in range(0, len(inputs), batch_size):
                start, span = corpus.raw_before[s0], corpus.raw_before[s1] - corpus.raw_before[s0]
                for group in optimizer.param_groups:  # the batch's position: pro rata within the slice
                    group["lr"] = at(start + span * b0 / len(inputs))
                c = torch.from_numpy(inputs[b0:b0 + batch_size]).to(device)  # (B,)
                t = torch.from_numpy(targets[b0:b0 + batch_size]).to(device)  # (B,)
                ns = hs = None
                if cfg.negative:
                    noise = torch.searchsorted(cum, torch.randint(0, cum_last, (len(t), cfg.negative),
                                                                  generator=gen, device=device))  # (B, K)
                    ns_t = torch.cat([t[:, None], noise], dim=1)  # (B, 1 + K)
                    ns_labels = torch.zeros(ns_t.shape, device=device)
                    ns_labels[:, 0] = 1.0
                    ns_mask = torch.ones(ns_t.shape, device=device)
                    ns_mask[:, 1:] = (noise != t[:, None]).float()  # a noise word equal to t is skipped (gensim)
                    ns = (ns_t, ns_labels, ns_mask)
                if tree is not None:
                    hs = (points[t], hs_labels[t], depth_mask[t])  # (B, depth) each
                loss = m(c, ns=ns, hs=hs).sum()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total_loss += loss.detach()
            total_pairs += len(inputs)
        return total_loss.item(), total_pairs, total_words

    def _pairs(self, corpus: Corpus, c0: int, c1: int, rng: np.random.Generator):
        """(input c, target t) pairs of chunks c0..c1 with subsampling and the dynamic window, shuffled."""
        s0, s1 = corpus.chunk_starts[c0], corpus.chunk_starts[c1]
        p0, p1 = corpus.sentence_starts[s0], corpus.sentence_starts[s1]
        ids = corpus.ids[p0:p1]
        sentence = np.repeat(np.arange(s1 - s0), np.diff(corpus.sentence_starts[s0:s1 + 1]))  # (tokens,)
        if self.cfg.sample > 0:
            keep = self.sample_int[ids] >= rng.integers(0, 2**32, len(ids), dtype=np.uint64)
            ids, sentence = ids[keep], sentence[keep]
        n, window = len(ids), self.cfg.window
        radius = window - rng.integers(0, window, n)  # uniform in 1..window
        inputs, targets = [], []
        for d in range(1, window + 1):
            i = np.arange(max(n - d, 0))
            for tgt, inp in ((i, i + d), (i + d, i)):  # context to the right of the target, then to the left
                ok = (sentence[tgt] == sentence[inp]) & (d <= radius[tgt])
                inputs.append(ids[inp[ok]])
                targets.append(ids[tgt[ok]])
        inputs, targets = np.concatenate(inputs).astype(np.int64), np.concatenate(targets).astype(np.int64)
        order = rng.permutation(len(inputs))
        return inputs[order], targets[order], n


def skip_gram_arrays_model(cfg: Word2VecConfig, hs: bool) -> ArrayModel:
    """A skip-gram model in numpy arrays, zero, with :class:`SkipGram`'s names (``input`` (V, D), ``ns_output``
    (V, D) when ``negative`` > 0, ``hs_output`` (V-1, D) with ``hs``): what the numba engine trains and what
    loading a run's vectors reads into, without torch."""
    v, d = cfg.vocab_size, cfg.dim
    return ArrayModel(input=np.zeros((v, d), np.float32),
                      ns_output=np.zeros((v, d), np.float32) if cfg.negative > 0 else None,
                      hs_output=np.zeros((max(v - 1, 1), d), np.float32) if hs else None)


def _torch_skip_gram(cfg: Word2VecConfig, hs: bool) -> Any:
    from seqlab.models.word2vec_torch import SkipGram

    return SkipGram(cfg, hs=hs)


def _torch_model(model: Any, weights: dict[str, np.ndarray], device: Any) -> Any:
    """``model`` (an nn.Module) with ``weights`` (arrays by state_dict name) copied in, on ``device``."""
    import torch

    with torch.no_grad():
        for name, value in model.state_dict(keep_vars=True).items():
            value.copy_(torch.from_numpy(weights[name]))
    return model.to(device or torch.device("cpu"))
