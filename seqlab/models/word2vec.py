"""Skip-gram word2vec (seed 004, "Word2Vec" and "Hierarchical Softmax"), with negative sampling or a Huffman tree.

Seed 004's notation: o_w is the one-hot vector of word w, E the embedding matrix and e_w = E·o_w the word's
vector ("Embedding Matrix"). Skip-gram chooses a context word c and a target t within a window around it and
models P(t | c) = exp(θ_t·e_c) / Σ_j exp(θ_j·e_c) (seed 004, "ŷ = P[t | c]"), trained with the
cross-entropy L = -log ŷ_t. That softmax costs O(V); the two ways around it share one form, a sum of
logistic losses over K scored output vectors:

    L(c, t) = Σ_k -log σ(s_k · θ_{u_k}·e_c),   s_k = +1 for a label-1 output u_k, -1 for label 0

- negative sampling (SGNS, Mikolov et al. 2013): u = (t, n_1 .. n_K), labels (1, 0 .. 0), the noise words n_k
  drawn from the unigram distribution raised to ``ns_exponent`` (0.75);
- hierarchical softmax (seed 004: "binary tree over the vocabulary, product of binary probabilities along the
  path, O(log2 V)"): u = the inner nodes on the root-to-t path of a Huffman tree, label = 1 - the branch bit,
  so P(t | c) = Π_nodes σ(±θ_node·e_c).

One SGD step on a pair (``_sgd_pair``): g_k = α (label_k - σ(θ_{u_k}·e_c)); θ_{u_k} += g_k e_c; e_c += Σ_k g_k θ_{u_k}
(every θ update uses the old e_c, the e_c update the old θ's: exactly a gradient step on L(c, t)).

Training follows the word2vec C tool and gensim (word2vec_inner.pyx), so the two are comparable:
- frequent-word subsampling as gensim computes it: keep probability p_w = (√(n_w / τ) + 1)·τ / n_w with
  τ = sample × (retained corpus size), stored as uint32(p_w (2³² - 1)) and tested against a fresh 32-bit
  random per occurrence per epoch; dropped words take no window slot;
- a dynamic window: for the target at i, a radius drawn uniformly from 1..window;
- the update is skipped for a score |θ·e| ≥ 6 (gensim's exp-table rule), but the reported loss counts every
  term, each to within 5e-7 (gensim's own running loss is known to be wrong: its issues #2617, #999);
- the learning rate falls linearly from ``train.lr`` to ``train.min_lr`` with the position of each chunk of
  ≤ 10,000 words in the whole run.

Two engines run that same step. ``numba``: one kernel, Hogwild threads (lock-free writes to the shared
matrices), thread t taking chunks t, t+T, t+2T, ... so every thread sees the same learning rates; per-thread
48-bit LCG streams (the C tool's), deterministic with one thread. ``torch``: the readable reference and the GPU
path, :class:`SkipGram` with sparse embeddings, batches of pairs and plain SGD.

Shapes: B pairs in a batch, K scored outputs per pair (1 + negative, or the tree depth), D = ``dim``, V words.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from numba import njit, prange
from torch import nn

from seqlab.errors import SeqlabError

MAX_EXP = 6.0  # gensim / C tool: no update when |score| >= MAX_EXP
MAX_WORDS_IN_CHUNK = 10_000  # gensim's job size (raw words) and longest sentence


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


# ------------------------------------------------------------------------------------------------------
# the corpus as the kernels read it


@dataclass(frozen=True)
class Corpus:
    """A tokenised corpus in gensim's layout: in-vocabulary ids sentence after sentence, cut into chunks.

    Out-of-vocabulary tokens are removed (as gensim does: the window then spans them) but counted in the raw
    word totals that drive the learning rate. Sentences longer than MAX_WORDS_IN_CHUNK are split (as
    gensim's LineSentence does); a chunk is a run of whole sentences of at most MAX_WORDS_IN_CHUNK raw words.
    """

    words: list[str]  # the vocabulary, most frequent first (ties as gensim orders them)
    counts: np.ndarray  # (V,) int64: occurrences of each word in the corpus
    ids: np.ndarray  # (tokens,) int32: in-vocabulary tokens, sentence after sentence
    sentence_starts: np.ndarray  # (sentences + 1,) int64 offsets into ids
    chunk_starts: np.ndarray  # (chunks + 1,) int64 offsets into the sentences
    raw_before: np.ndarray  # (chunks + 1,) int64 raw words (out-of-vocabulary included) before each chunk

    @property
    def raw_words(self) -> int:
        return int(self.raw_before[-1])

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_starts) - 1

    @classmethod
    def build(cls, sentences: Sequence[Sequence[str]], min_freq: int = 5, max_size: int = 0) -> Corpus:
        """Vocabulary (words seen >= min_freq times; at most max_size words if > 0) and id arrays.

        The order is gensim's: descending count, ties broken by *later* first occurrence first
        (``KeyedVectors.sort_by_descending_frequency``); ``max_size`` raises the count threshold as gensim's
        ``max_final_vocab`` does, so tied words are kept or dropped together.
        """
        raw = Counter()  # insertion order = first occurrence, as gensim's raw_vocab
        for sentence in sentences:
            raw.update(sentence)
        if not raw:
            raise SeqlabError("empty corpus: no words to train on; give a text with words in it")
        threshold = min_freq
        if max_size and max_size < len(raw):
            by_count = sorted(raw, key=raw.__getitem__, reverse=True)
            threshold = max(threshold, raw[by_count[max_size]] + 1)
        kept = [(w, n) for w, n in raw.items() if n >= threshold]
        if len(kept) < 2:
            raise SeqlabError(f"the corpus has {len(kept)} distinct word(s) seen at least {threshold} times "
                              f"({len(raw)} distinct words in all); embeddings need at least 2: lower "
                              "data.min_freq or give a larger corpus")
        counts = np.array([n for _, n in kept], dtype=np.int64)
        order = np.lexsort((-np.arange(len(kept)), -counts))
        words = [kept[i][0] for i in order]
        counts = counts[order]
        index = {w: i for i, w in enumerate(words)}

        ids, sentence_starts, raw_lengths = [], [0], []
        for sentence in sentences:
            for s in range(0, len(sentence), MAX_WORDS_IN_CHUNK):
                piece = sentence[s:s + MAX_WORDS_IN_CHUNK]
                ids.extend(i for i in map(index.get, piece) if i is not None)
                sentence_starts.append(len(ids))
                raw_lengths.append(len(piece))
        chunk_starts, raw_before, size, words_before = [0], [0], 0, 0
        for s, n in enumerate(raw_lengths):  # gensim's job producer: add the sentence if it fits
            if size + n > MAX_WORDS_IN_CHUNK and size:
                chunk_starts.append(s)
                raw_before.append(words_before)
                size = 0
            size += n
            words_before += n
        chunk_starts.append(len(raw_lengths))
        raw_before.append(words_before)
        return cls(words, counts, np.asarray(ids, dtype=np.int32), np.asarray(sentence_starts, dtype=np.int64),
                   np.asarray(chunk_starts, dtype=np.int64), np.asarray(raw_before, dtype=np.int64))


# ------------------------------------------------------------------------------------------------------
# tables: subsampling, noise distribution, Huffman tree (all exactly as gensim builds them)


def sample_ints(counts: np.ndarray, sample: float) -> np.ndarray:
    """(V,) uint32 keep thresholds: word w is kept when uint32 random <= sample_int[w] (gensim prepare_vocab)."""
    counts = counts.astype(np.float64)
    retain_total = counts.sum()
    if not sample:
        threshold = retain_total
    elif sample < 1.0:
        threshold = sample * retain_total
    else:  # gensim's shorthand: sample >= 1 downsamples every word seen more than `sample` times
        threshold = int(sample * (3 + np.sqrt(5)) / 2)
    p = (np.sqrt(counts / threshold) + 1) * (threshold / counts)
    return (np.minimum(p, 1.0) * (2**32 - 1)).astype(np.uint32)


def cum_table(counts: np.ndarray, ns_exponent: float, domain: int = 2**31 - 1) -> np.ndarray:
    """(V,) uint32 cumulative noise distribution ∝ count^ns_exponent over [0, domain] (gensim make_cum_table);
    a noise word is the insertion point of a uniform integer below the last entry."""
    powers = [int(c) ** float(ns_exponent) for c in counts]
    total = sum(powers)
    table = np.zeros(len(counts), dtype=np.uint32)
    cumulative = 0.0
    for i, p in enumerate(powers):  # sequential, as gensim sums, so the table is bit-identical
        cumulative += p
        table[i] = round(cumulative / total * domain)
    return table


@dataclass(frozen=True)
class HuffmanTree:
    """Word w's root-to-leaf path: inner nodes points[w, :lengths[w]] and branch bits codes[w, :lengths[w]]."""

    codes: np.ndarray  # (V, depth) uint8: 0 = left, 1 = right
    points: np.ndarray  # (V, depth) int32: inner-node ids 0 .. V-2 (the rows of the output matrix)
    lengths: np.ndarray  # (V,) int32


class _Node:
    """A heap entry ordered by count alone, as gensim's ``Heapitem``: ties then fall as heapq's sift leaves
    them, which decides some branch bits, so the tree is gensim's to the bit."""

    __slots__ = ("count", "index")

    def __init__(self, count: int, index: int):
        self.count, self.index = count, index

    def __lt__(self, other: _Node) -> bool:
        return self.count < other.count


def huffman_tree(counts: np.ndarray) -> HuffmanTree:
    """gensim's ``_build_heap`` / ``_assign_binary_codes``: merge the two least frequent nodes, the first popped
    becoming the left (code 0) child; frequent words get short paths."""
    v = len(counts)
    heap = [_Node(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    children = []  # children[n - v] = (left, right) of inner node n
    for n in range(v, 2 * v - 1):
        first, second = heapq.heappop(heap), heapq.heappop(heap)
        children.append((first.index, second.index))
        heapq.heappush(heap, _Node(first.count + second.count, n))
    paths: list[tuple[list[int], list[int]]] = [([], [])] * v
    stack = [(2 * v - 2, [], [])] if v > 1 else []
    while stack:
        node, codes, points = stack.pop()
        if node < v:
            paths[node] = (codes, points)
            continue
        points = points + [node - v]
        left, right = children[node - v]
        stack.append((left, codes + [0], points))
        stack.append((right, codes + [1], points))
    depth = max(1, max(len(c) for c, _ in paths))
    codes = np.zeros((v, depth), dtype=np.uint8)
    points = np.zeros((v, depth), dtype=np.int32)
    lengths = np.zeros(v, dtype=np.int32)
    for w, (c, p) in enumerate(paths):
        codes[w, :len(c)], points[w, :len(p)], lengths[w] = c, p, len(c)
    return HuffmanTree(codes, points, lengths)


# ------------------------------------------------------------------------------------------------------
# the numba engine

# -log σ(s) = log(1 + e^-s) on a grid of step 1/256 over [-MAX_EXP, MAX_EXP]; linear interpolation is within
# 5e-7 of the exact value (a chord of a convex function: error <= step² / 8 · max σ(1 - σ)). Measured: an
# exact log1p per score cost 20% (negative sampling) to 30% (hierarchical softmax) of the kernel's speed.
_LOSS_STEPS = 256.0
_NEG_LOG_SIGMOID = np.log1p(np.exp(-np.linspace(-MAX_EXP, MAX_EXP, int(2 * MAX_EXP * _LOSS_STEPS) + 1)))

_LCG_MUL, _LCG_ADD, _LCG_MASK = np.uint64(25214903917), np.uint64(11), np.uint64(2**48 - 1)


@njit(inline="always")
def _lcg(state):
    """The C tool's (and gensim's, and java.util.Random's) 48-bit linear congruential step."""
    return (state * _LCG_MUL + _LCG_ADD) & _LCG_MASK


@njit(fastmath=True, cache=True)
def _sgd_pair(syn0, out, c, targets, labels, row, k, alpha, work):
    """One SGD step on L(c, ·) = Σ_m -log σ(±θ_u·e_c) over outputs u = targets[row, :k] with labels[row, :k];
    returns the loss (every term, see _NEG_LOG_SIGMOID). syn0 (V, D) holds e, out (·, D) holds θ; work (D,)
    is scratch."""
    dim = syn0.shape[1]
    for d in range(dim):
        work[d] = 0.0
    loss = 0.0
    for m in range(k):
        u = targets[row, m]
        label = labels[row, m]
        score = np.float32(0.0)
        for d in range(dim):
            score += syn0[c, d] * out[u, d]
        if score <= -MAX_EXP or score >= MAX_EXP:  # no update (gensim's rule); the loss still counts
            z = score if label > 0.5 else -score
            loss += max(-z, 0.0) + math.log1p(math.exp(-abs(z)))  # -log σ(z), computed stably
            continue
        x = (score + MAX_EXP) * _LOSS_STEPS  # -log σ(s) from the table, linearly interpolated
        i = int(x)
        nls = _NEG_LOG_SIGMOID[i] + (x - i) * (_NEG_LOG_SIGMOID[i + 1] - _NEG_LOG_SIGMOID[i])
        loss += nls + (0.0 if label > 0.5 else score)  # -log σ(-s) = -log σ(s) + s
        g = np.float32((label - 1.0 / (1.0 + math.exp(-score))) * alpha)
        for d in range(dim):
            work[d] += g * out[u, d]
        for d in range(dim):
            out[u, d] += g * syn0[c, d]
    for d in range(dim):
        syn0[c, d] += work[d]
    return loss


@njit(inline="always")
def _bisect_left(table, x):
    lo, hi = 0, table.shape[0]
    while hi > lo:
        mid = (lo + hi) >> 1
        if table[mid] >= x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(parallel=True, fastmath=True, cache=True)
def _train_chunks(syn0, syn1, syn1neg, ids, sentence_starts, chunk_starts, raw_before, c0, c1, n_threads, rng,
                  sample_int, use_sample, cum, negative, points, hs_labels, path_lengths, hs, window,
                  lr, min_lr, epoch, n_epochs, out_loss, out_pairs, out_words):
    """Skip-gram SGD over chunks c0 <= c < c1; thread t takes the chunks with c % n_threads == t (Hogwild)."""
    raw_total = raw_before[raw_before.shape[0] - 1]
    for t in prange(n_threads):
        work = np.zeros(syn0.shape[1], dtype=np.float32)
        kept = np.empty(MAX_WORDS_IN_CHUNK, dtype=np.int32)  # the sentence after subsampling
        ns_targets = np.zeros((1, negative + 1), dtype=np.int32)
        ns_labels = np.zeros((1, negative + 1), dtype=np.float32)
        ns_labels[0, 0] = 1.0
        cum_last = np.uint64(cum[cum.shape[0] - 1])
        state = rng[t]
        loss, pairs, words = 0.0, 0, 0
        c = c0 + (t - c0 % n_threads) % n_threads
        while c < c1:
            progress = (epoch + raw_before[c] / raw_total) / n_epochs
            alpha = np.float32(max(min_lr, lr - (lr - min_lr) * progress))
            for s in range(chunk_starts[c], chunk_starts[c + 1]):
                n = 0
                for p in range(sentence_starts[s], sentence_starts[s + 1]):
                    w = ids[p]
                    if use_sample:
                        r = state >> np.uint64(16)
                        state = _lcg(state)
                        if sample_int[w] < r:
                            continue
                    kept[n] = w
                    n += 1
                words += n
                for i in range(n):
                    shrink = np.int64((state >> np.uint64(16)) % np.uint64(window))
                    state = _lcg(state)
                    lo = max(0, i - window + shrink)
                    hi = min(n, i + window + 1 - shrink)
                    target = kept[i]
                    for j in range(lo, hi):
                        if j == i:
                            continue
                        pairs += 1
                        if hs:
                            loss += _sgd_pair(syn0, syn1, kept[j], points, hs_labels, target,
                                              path_lengths[target], alpha, work)
                        if negative > 0:
                            ns_targets[0, 0] = target
                            k = 1
                            for _ in range(negative):
                                noise = _bisect_left(cum, (state >> np.uint64(16)) % cum_last)
                                state = _lcg(state)
                                if noise == target:
                                    continue
                                ns_targets[0, k] = noise
                                k += 1
                            loss += _sgd_pair(syn0, syn1neg, kept[j], ns_targets, ns_labels, 0, k, alpha, work)
            c += n_threads
        rng[t] = state
        out_loss[t] += loss
        out_pairs[t] += pairs
        out_words[t] += words


def thread_seeds(seed: int, epoch: int, n_threads: int) -> np.ndarray:
    """(T,) uint64 LCG states, a function of (seed, epoch, thread) only, so an epoch can be re-run exactly."""
    out = np.zeros(n_threads, dtype=np.uint64)
    for t in range(n_threads):
        x = (seed * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9 + t * 0x94D049BB133111EB) % 2**64
        x = ((x ^ (x >> 31)) * 0xBF58476D1CE4E5B9) % 2**64  # splitmix64 finaliser
        out[t] = (x ^ (x >> 29)) & (2**48 - 1)
    return out


@contextlib.contextmanager
def cpu_threads(n: int):
    """PyTorch's intra-op threads set to ``n`` (0 = unchanged) for the block (tiny sparse ops on a busy
    machine run far faster on one thread than on contended ones)."""
    previous = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def numba_threads(requested: int) -> int:
    """``train.threads`` (0 = every core numba may use), capped at numba's thread pool."""
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    return min(requested, limit) if requested > 0 else limit


# ------------------------------------------------------------------------------------------------------
# the PyTorch model (the readable reference, and the GPU path)


class SkipGram(nn.Module):
    """e_c = E·o_c (``input``) and output vectors θ (``ns_output``: one per word, for negative sampling;
    ``hs_output``: one per inner node of the Huffman tree). ``forward`` returns L(c, t) per pair."""

    def __init__(self, cfg: Word2VecConfig, hs: bool = False):
        super().__init__()
        v, d = cfg.vocab_size, cfg.dim
        self.input = nn.Embedding(v, d, sparse=True)  # E: (V, D)
        self.ns_output = nn.Embedding(v, d, sparse=True) if cfg.negative > 0 else None  # θ: (V, D)
        self.hs_output = nn.Embedding(max(v - 1, 1), d, sparse=True) if hs else None  # θ: (V-1, D)

    @staticmethod
    def pair_loss(output: nn.Embedding, e_c: torch.Tensor, targets: torch.Tensor, labels: torch.Tensor,
                  mask: torch.Tensor) -> torch.Tensor:
        """Σ_k mask_k · -log σ(±θ_{targets_k}·e_c): e_c (B, D), targets/labels/mask (B, K) -> (B,)."""
        theta = output(targets)  # (B, K, D)
        scores = torch.einsum("bkd,bd->bk", theta, e_c)  # (B, K)
        nll = nn.functional.binary_cross_entropy_with_logits(scores, labels, reduction="none")  # (B, K)
        return (nll * mask).sum(-1)

    def forward(self, c: torch.Tensor, ns: tuple | None = None, hs: tuple | None = None) -> torch.Tensor:
        """c (B,) input words; ns / hs = (targets, labels, mask), each (B, K); returns the loss per pair (B,)."""
        e_c = self.input(c)  # (B, D)
        loss = torch.zeros(c.shape[0], device=c.device)
        if ns is not None:
            loss = loss + self.pair_loss(self.ns_output, e_c, *ns)
        if hs is not None:
            loss = loss + self.pair_loss(self.hs_output, e_c, *hs)
        return loss


@dataclass
class EpochStats:
    loss: float  # mean loss per training pair (word2vec) or per co-occurrence (GloVe)
    terms: int  # pairs (word2vec) or co-occurrences (GloVe) trained on
    effective_words: int  # words kept after subsampling (gensim's "effective words")
    raw_words: int  # words read, out-of-vocabulary ones included
    seconds: float
    lr: float  # learning rate at the end of the epoch


class Word2VecTrainer:
    """A :class:`SkipGram` and its tables, trained one epoch at a time by either engine."""

    def __init__(self, cfg: Word2VecConfig, counts: np.ndarray, *, hs: bool, seed: int):
        if not hs and cfg.negative < 1:
            raise SeqlabError("model.arch=sgns needs model.negative >= 1 (noise words per pair); "
                              "use model.arch=hs for hierarchical softmax without negative sampling")
        self.counts = np.asarray(counts, dtype=np.int64)
        cfg = replace(cfg, vocab_size=len(self.counts))
        self.cfg, self.hs, self.seed = cfg, hs, seed
        self.model = SkipGram(cfg, hs=hs)
        rng = np.random.default_rng(seed)
        with torch.no_grad():  # the C tool's initialisation: e uniform in ±0.5/D, θ zero
            init = (rng.random((cfg.vocab_size, cfg.dim), dtype=np.float32) - 0.5) / cfg.dim
            self.model.input.weight.copy_(torch.from_numpy(init))
            for out in (self.model.ns_output, self.model.hs_output):
                if out is not None:
                    out.weight.zero_()
        self.sample_int = sample_ints(self.counts, cfg.sample)
        self.cum = cum_table(self.counts, cfg.ns_exponent)
        self.tree = huffman_tree(self.counts) if hs else None

    def vectors(self) -> np.ndarray:
        """(V, D) float32 word vectors e_w (the input matrix, as gensim's ``wv.vectors``)."""
        return self.model.input.weight.detach().cpu().numpy().copy()

    def trainer_tensors(self) -> dict[str, torch.Tensor]:
        return {}  # SGD has no state beyond the weights; the epoch's random streams derive from the seed

    def restore_trainer_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Nothing to restore: plain SGD keeps no optimiser state (see ``trainer_tensors``)."""

    def train_epoch(self, corpus: Corpus, epoch: int, n_epochs: int, lr: float, min_lr: float, *,
                    engine: str = "numba", threads: int = 0, device: torch.device | None = None,
                    batch_size: int = 4096, on_progress: Callable[[int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> EpochStats | None:
        """One pass over ``corpus``; None when ``should_stop`` interrupted it (the weights are then mid-epoch)."""
        run = self._epoch_numba if engine == "numba" else self._epoch_torch
        result = run(corpus, epoch, n_epochs, lr, min_lr, threads=threads, device=device, batch_size=batch_size,
                     on_progress=on_progress or (lambda n: None), should_stop=should_stop or (lambda: False))
        if result is None:
            return None
        loss, pairs, words, seconds = result
        end_lr = max(min_lr, lr - (lr - min_lr) * (epoch + 1) / n_epochs)
        return EpochStats(loss / max(pairs, 1), pairs, words, corpus.raw_words, seconds, end_lr)

    def _epoch_numba(self, corpus, epoch, n_epochs, lr, min_lr, *, threads, device, batch_size, on_progress,
                     should_stop):
        import numba

        n_threads = numba_threads(threads)
        numba.set_num_threads(n_threads)
        cfg, m = self.cfg, self.model
        syn0 = m.input.weight.detach().numpy()
        syn1 = m.hs_output.weight.detach().numpy() if self.hs else np.zeros((1, cfg.dim), np.float32)
        syn1neg = m.ns_output.weight.detach().numpy() if cfg.negative else np.zeros((1, cfg.dim), np.float32)
        tree = self.tree or HuffmanTree(np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.int32), np.zeros(1, np.int32))
        hs_labels = (1.0 - tree.codes).astype(np.float32)  # label 1 - code: gensim's g = (1 - code - f) α
        rng = thread_seeds(self.seed, epoch, n_threads)
        loss, pairs, words = (np.zeros(n_threads, dtype=t) for t in (np.float64, np.int64, np.int64))

        def kernel(c0: int, c1: int) -> None:
            _train_chunks(syn0, syn1, syn1neg, corpus.ids, corpus.sentence_starts, corpus.chunk_starts,
                          corpus.raw_before, c0, c1, n_threads, rng, self.sample_int, cfg.sample > 0, self.cum,
                          cfg.negative, tree.points, hs_labels, tree.lengths, self.hs, cfg.window, lr, min_lr,
                          epoch, n_epochs, loss, pairs, words)

        kernel(0, 0)  # compiles (or loads the cached machine code) outside the timed epoch
        t0 = time.perf_counter()
        step = 16 * n_threads  # chunks per kernel call: progress and Ctrl-C between calls
        for c0 in range(0, corpus.n_chunks, step):
            if should_stop():
                return None
            c1 = min(c0 + step, corpus.n_chunks)
            kernel(c0, c1)
            on_progress(int(corpus.raw_before[c1] - corpus.raw_before[c0]))
        return float(loss.sum()), int(pairs.sum()), int(words.sum()), time.perf_counter() - t0

    def _epoch_torch(self, corpus, epoch, n_epochs, lr, min_lr, *, threads, device, batch_size, on_progress,
                     should_stop):
        device = device or torch.device("cpu")
        with cpu_threads(threads if device.type == "cpu" else 0):
            try:
                return self._epoch_torch_body(corpus, epoch, n_epochs, lr, min_lr, device, batch_size,
                                              on_progress, should_stop)
            finally:
                self.model.cpu()  # the numba engine and checkpoints read the weights on the CPU

    def _epoch_torch_body(self, corpus, epoch, n_epochs, lr, min_lr, device, batch_size, on_progress, should_stop):
        cfg, m = self.cfg, self.model
        m.to(device)
        optimizer = torch.optim.SGD(m.parameters(), lr=lr)  # plain SGD on sparse gradients
        rng = np.random.default_rng([self.seed, epoch])
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
        t0 = time.perf_counter()
        step = max(1, 200_000 // MAX_WORDS_IN_CHUNK)  # chunks per slice of generated pairs
        for c0 in range(0, corpus.n_chunks, step):
            if should_stop():
                return None
            c1 = min(c0 + step, corpus.n_chunks)
            inputs, targets, words = self._pairs(corpus, c0, c1, rng)
            total_words += words
            for b0 in range(0, len(inputs), batch_size):
                progress = (epoch + (corpus.raw_before[c0] + (corpus.raw_before[c1] - corpus.raw_before[c0])
                                     * b0 / len(inputs)) / corpus.raw_words) / n_epochs
                for group in optimizer.param_groups:
                    group["lr"] = max(min_lr, lr - (lr - min_lr) * progress)
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
            on_progress(int(corpus.raw_before[c1] - corpus.raw_before[c0]))
        return total_loss.item(), total_pairs, total_words, time.perf_counter() - t0

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
