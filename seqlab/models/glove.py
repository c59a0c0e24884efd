"""GloVe (notes: Word embeddings › GloVe; Pennington et al. 2014): weighted least squares on co-occurrence counts.

The notes: X_ij counts how often word j occurs in the window of word i (symmetric: X_ij = X_ji), and the
vectors minimise

    J = Σ_{i,j: X_ij > 0} f(X_ij) (θ_i·e_j + b_i + b̃_j - log X_ij)²,   f(x) = min(1, (x / x_max)^alpha)

(the notes write the sum over all pairs; pairs with X_ij = 0 have no log and f(0) = 0, so they drop out).
As in the reference C tool (stanfordnlp/GloVe: cooccur.c, glove.c):
- a pair at distance d in a symmetric window adds 1/d to X_ij and to X_ji; the window stops at line ends;
- counting is sparse and memory-bounded: the pairs of a block of sentences (at most ``BLOCK_PAIRS``) are sorted
  and summed, then merged into the running sparse matrix, which spills to sorted shards on disk past
  ``data.max_memory_mb``, merged at the end (the tool's ``-memory`` and overflow files); counts are exact
  (integer multiples of 1/lcm(1..window)), so they do not depend on how the work was cut;
- AdaGrad with the accumulators starting at 1, one shuffle of the non-zero entries, Hogwild threads over
  contiguous parts of it; the reported cost is the mean of ½ f(X_ij) diff² over the entries;
- NaN guards where the C tool needed them (its issues #85, #99, #156): an entry whose diff is not finite is
  skipped, a vector update whose sum is not finite is dropped, a non-finite bias update counts as 0;
- the word vectors are θ_w + e_w (the tool's ``-model 2``).

Engines: ``numba`` (CPU kernel) and ``torch`` (:class:`GloVe` with sparse embeddings; the GPU path), taking
the same AdaGrad step: u = η ∂J/∂p; p -= u / √G; G += u² (the tool accumulates the scaled gradient).

Shapes: B entries in a batch, D = ``dim``, V words, N non-zero entries of X.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit, prange

from seqlab.base.io import drop_pages, map_array
from seqlab.base.lazy import lazy_exports
from seqlab.data.corpus import Corpus
from seqlab.models.arrays import ArrayModel, weight_array
from seqlab.models.word2vec_kernels import StepStats, numba_threads

if TYPE_CHECKING:  # annotations only: the numba engine runs without torch
    import torch

ENTRIES_PER_STEP = 1 << 20  # co-occurrence entries per Trainer step: the grain of progress, Ctrl-C, checkpoints
BLOCK_PAIRS = 1 << 22  # co-occurrences emitted between two sort-and-merge steps (bounds the temporary memory)
_GUARDED = {"nsz", "arcp", "contract", "afn", "reassoc"}  # fastmath without nnan/ninf: the NaN guards must stay


@dataclass(frozen=True)
class GloVeConfig:
    dim: int = 100  # D: size of θ_w and e_w
    window: int = 10  # symmetric context window; a pair at distance d counts 1/d
    x_max: float = 100.0  # f(x) = min(1, (x / x_max)^alpha)
    alpha: float = 0.75  # exponent of the weighting function
    engine: str = "auto"  # auto (numba on CPU, torch on CUDA) | numba | torch
    vocab_size: int = 0  # V, derived from the data

    def __post_init__(self):
        if self.dim < 1 or self.window < 1:
            raise ValueError(f"dim and window must be >= 1; got dim={self.dim}, window={self.window}")
        if not (self.x_max > 0 and self.alpha >= 0):
            raise ValueError(f"x_max must be > 0 and alpha >= 0; got x_max={self.x_max}, alpha={self.alpha}")
        if self.engine not in ("auto", "numba", "torch"):
            raise ValueError(f"engine must be one of auto, numba, torch; got {self.engine!r}")


# ------------------------------------------------------------------------------------------------------
# co-occurrence counts


@njit(cache=True)
def _emit_pairs(ids, sentence_starts, s, s_end, window, vocab, weights, keys, vals):
    """Left-context pairs (later word i, earlier word j at distance d) of sentences s.. into keys = i·V + j with
    vals = weights[d]; stops before a sentence that would not fit. Returns (pairs written, next sentence)."""
    n = 0
    while s < s_end:
        a, b = sentence_starts[s], sentence_starts[s + 1]
        if n + (b - a) * window > keys.shape[0]:
            break
        for p in range(a, b):
            for d in range(1, min(window, p - a) + 1):
                keys[n] = np.int64(ids[p]) * vocab + ids[p - d]
                vals[n] = weights[d]
                n += 1
        s += 1
    return n, s


@njit(cache=True)
def _longest(sentence_starts):
    """The most tokens in one sentence."""
    longest = 0
    for s in range(sentence_starts.shape[0] - 1):
        longest = max(longest, sentence_starts[s + 1] - sentence_starts[s])
    return longest


@njit(cache=True)
def _sum_sorted(keys, vals):
    """Sum the values of equal keys in a sorted array (in place); returns the number of distinct keys."""
    if keys.shape[0] == 0:
        return 0
    m = 0
    for p in range(1, keys.shape[0]):
        if keys[p] == keys[m]:
            vals[m] += vals[p]
        else:
            m += 1
            keys[m] = keys[p]
            vals[m] = vals[p]
    return m + 1


@njit(cache=True)
def _kway_merge(keys, vals, heads, ends, out_keys, out_vals, n, n_stop):
    """Merge the sorted runs keys[heads[r]:ends[r]] (each with distinct keys) into out_keys/out_vals from position
    n on, summing the values of equal keys in run order, until n_stop entries are written or the runs run out;
    advances heads. Returns the entries written so far."""
    while n < n_stop:
        best, key = -1, np.int64(0)
        for r in range(heads.shape[0]):  # the first run holding the smallest key
            if heads[r] < ends[r] and (best < 0 or keys[heads[r]] < key):
                best, key = r, keys[heads[r]]
        if best < 0:
            break
        total = vals[heads[best]]
        heads[best] += 1
        for r in range(best + 1, heads.shape[0]):  # the runs before best hold only larger keys
            if heads[r] < ends[r] and keys[heads[r]] == key:
                total += vals[heads[r]]
                heads[r] += 1
        out_keys[n], out_vals[n] = key, total
        n += 1
    return n


@njit(cache=True)
def _merge(ka, va, kb, vb):
    """Merge two sorted sparse vectors with distinct keys into one (summing shared keys)."""
    keys = np.empty(ka.shape[0] + kb.shape[0], dtype=np.int64)
    vals = np.empty(keys.shape[0], dtype=va.dtype)
    i = j = n = 0
    while i < ka.shape[0] or j < kb.shape[0]:
        if j == kb.shape[0] or (i < ka.shape[0] and ka[i] < kb[j]):
            keys[n], vals[n] = ka[i], va[i]
            i += 1
        elif i == ka.shape[0] or kb[j] < ka[i]:
            keys[n], vals[n] = kb[j], vb[j]
            j += 1
        else:
            keys[n], vals[n] = ka[i], va[i] + vb[j]
            i += 1
            j += 1
        n += 1
    return keys[:n], vals[:n]


def _sorted_sum(keys: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    n = _sum_sorted(keys, vals)
    return keys[:n].copy(), vals[:n].copy()


def distance_weights(window: int, tokens: int) -> tuple[np.ndarray, int]:
    """(weights, unit): the weight of a pair at distance d is weights[d] / unit = 1/d. With L = lcm(1..window),
    weights[d] = L/d are int64 and the counts are exact sums, the same in any order (so shards and blocks merge to
    exactly the same matrix), when no sum can overflow (2·tokens·window·L < 2⁶³); otherwise float64 1/d, unit 1."""
    unit = math.lcm(*range(1, window + 1))
    d = np.arange(1, window + 1)
    if 2 * tokens * window * unit < 2**63:
        return np.concatenate([[0], unit // d]).astype(np.int64), unit
    return np.concatenate([[0.0], 1.0 / d]), 1


class _Shards:
    """Sorted (keys, values) runs spilled to two files in a temporary folder, merged back at the end."""

    MERGE_ENTRIES = 1 << 22  # entries merged between two drops of the files' pages

    def __init__(self, folder: Path | None):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        self.tmp = tempfile.TemporaryDirectory(prefix="cooccurrence-", dir=folder)
        self.paths = [Path(self.tmp.name) / name for name in ("keys.bin", "values.bin")]
        self.bounds = [0]

    def add(self, keys: np.ndarray, vals: np.ndarray) -> None:
        for path, array in zip(self.paths, (keys, vals)):
            with open(path, "ab") as f:
                array.tofile(f)
        self.bounds.append(self.bounds[-1] + len(keys))

    def merge(self, dtype) -> tuple[np.ndarray, np.ndarray]:
        """The runs merged (k-way, equal keys summed) into one sorted sparse vector in memory."""
        (keys, key_map), (vals, val_map) = map_array(self.paths[0], np.int64), map_array(self.paths[1], dtype)
        bounds = np.asarray(self.bounds, dtype=np.int64)
        heads, ends = bounds[:-1].copy(), bounds[1:]
        out_keys, out_vals = np.empty(len(keys), np.int64), np.empty(len(keys), dtype)  # pages used: the result's
        n = 0
        while True:
            m = _kway_merge(keys, vals, heads, ends, out_keys, out_vals, n, n + self.MERGE_ENTRIES)
            drop_pages((key_map, val_map))
            if m < n + self.MERGE_ENTRIES:
                break
            n = m
        del keys, vals, key_map, val_map
        self.tmp.cleanup()
        return out_keys[:m], out_vals[:m]


def cooccurrence(corpus: Corpus, window: int, block_pairs: int = BLOCK_PAIRS, max_memory_mb: int = 0,
                 scratch: Path | None = None) -> tuple[np.ndarray, ...]:
    r"""The symmetric matrix X as sorted (rows (N,) int32, cols (N,) int32, values (N,) float64).

    Counting is sparse and holds about ``max_memory_mb`` MB (0 = no bound): the pairs of a block of sentences
    are sorted and summed, then merged into a running sparse matrix; when that passes the budget it is written
    to a sorted shard on disk (in a temporary folder in ``scratch``, else the system's), and at the end the
    shards are merged (k-way, summing equal keys). The weights are exact (:func:`distance_weights`), so the
    matrix does not depend on the blocks or the shards.

    !!! equation "Word embeddings › GloVe (beyond the notes)"
        $X_{ij} = \sum_{\text{pairs } (i, j) \text{ at distance } d \le \text{window}} 1/d$: the co-occurrence
        matrix as GloVe's reference tool counts it, each occurrence of word $j$ within the window of word $i$
        weighted by $1/d$ (symmetric, $X_{ij} = X_{ji}$; the window stops at line ends). The notes count each
        occurrence as 1; seqlab has no option for that.

    !!! departure "Word embeddings › GloVe"
        notes: $X_{ij}$ = the number of times word $i$ appears in the context of word $j$, each occurrence
        counting 1.
        seqlab: an occurrence at distance $d$ counts $1/d$ (``cooccur.c``'s weighting, within ``model.window``
        words), so near pairs count more; raw counts are not offered.
        default: model.window = 10 for embed/glove"""
    v = len(corpus.words)
    weights, unit = distance_weights(window, len(corpus.ids))
    budget = max_memory_mb * 2**20
    if budget:  # a block costs ~40 B a pair (buffers, sort order, sorted copies); the running matrix ~32 B an entry
        block_pairs = min(block_pairs, budget // 4 // 40)
    block_pairs = max(block_pairs, window * (int(_longest(corpus.sentence_starts)) + 1))
    keys_buf = np.empty(block_pairs, dtype=np.int64)
    vals_buf = np.empty(block_pairs, dtype=weights.dtype)
    keys, vals = np.zeros(0, np.int64), np.zeros(0, weights.dtype)
    shards = None
    s, n_sentences = 0, len(corpus.sentence_starts) - 1
    while s < n_sentences:
        n, s = _emit_pairs(corpus.ids, corpus.sentence_starts, s, n_sentences, window, v, weights, keys_buf, vals_buf)
        corpus.release()
        keys, vals = _merge(keys, vals, *_sorted_sum(keys_buf[:n], vals_buf[:n]))
        if budget and 32 * len(keys) > budget * 3 // 4:
            shards = shards or _Shards(scratch)
            shards.add(keys, vals)
            keys, vals = np.zeros(0, np.int64), np.zeros(0, weights.dtype)
    del keys_buf, vals_buf
    if shards is not None:
        shards.add(keys, vals)
        keys, vals = shards.merge(weights.dtype)
    later, earlier = keys // v, keys % v  # A[later, earlier]; X = A + Aᵀ
    keys, vals = _sorted_sum(np.concatenate([keys, earlier * v + later]), np.concatenate([vals, vals]))
    return (keys // v).astype(np.int32), (keys % v).astype(np.int32), vals / unit


# ------------------------------------------------------------------------------------------------------
# the numba engine


@njit(parallel=True, fastmath=_GUARDED, cache=True)
def _adagrad(word, context, word_bias, context_bias, g_word, g_context, g_word_bias, g_context_bias,
             rows, cols, vals, begin, end, x_max, alpha, eta, out_cost, out_count):
    """glove.c's inner loop over entries begin[t] <= p < end[t] for each thread t (Hogwild)."""
    for t in prange(begin.shape[0]):
        dim = word.shape[1]
        update_w = np.empty(dim, dtype=np.float32)
        update_c = np.empty(dim, dtype=np.float32)
        cost, count = 0.0, 0
        for p in range(begin[t], end[t]):
            i, j, x = rows[p], cols[p], vals[p]
            diff = 0.0
            for d in range(dim):
                diff += word[i, d] * context[j, d]
            diff += word_bias[i] + context_bias[j] - math.log(x)  # θ_i·e_j + b_i + b̃_j - log X_ij
            fdiff = diff if x > x_max else (x / x_max) ** alpha * diff  # f(X_ij) · diff
            if not (math.isfinite(diff) and math.isfinite(fdiff)):
                continue
            cost += 0.5 * fdiff * diff
            count += 1
            fdiff *= eta
            sum_w, sum_c = 0.0, 0.0
            for d in range(dim):
                grad_w = fdiff * context[j, d]
                grad_c = fdiff * word[i, d]
                update_w[d] = grad_w / math.sqrt(g_word[i, d])
                update_c[d] = grad_c / math.sqrt(g_context[j, d])
                sum_w += update_w[d]
                sum_c += update_c[d]
                g_word[i, d] += grad_w * grad_w
                g_context[j, d] += grad_c * grad_c
            if math.isfinite(sum_w) and math.isfinite(sum_c):
                for d in range(dim):
                    word[i, d] -= update_w[d]
                    context[j, d] -= update_c[d]
            step_w = fdiff / math.sqrt(g_word_bias[i])
            step_c = fdiff / math.sqrt(g_context_bias[j])
            word_bias[i] -= step_w if math.isfinite(step_w) else 0.0
            context_bias[j] -= step_c if math.isfinite(step_c) else 0.0
            g_word_bias[i] += fdiff * fdiff
            g_context_bias[j] += fdiff * fdiff
        out_cost[t] += cost
        out_count[t] += count


# ------------------------------------------------------------------------------------------------------
# the PyTorch model (the GPU path): seqlab.models.glove_torch.GloVe, imported from here on first use (the numba
# engine, and so `seqlab train glove` on a CPU, runs without torch)

__getattr__, __dir__ = lazy_exports(__name__, {"GloVe": "seqlab.models.glove_torch"}, globals())


class GloVeAdaGrad:
    """A :class:`GloVe`, its co-occurrence matrix and AdaGrad accumulators, trained one step at a time (a kernel
    task of :class:`seqlab.training.trainer.Trainer`): step ``index`` of an epoch takes the ``index``-th of
    ``steps_per_epoch`` contiguous parts of the shuffled non-zero entries, its threads each a contiguous share.
    ``model`` is a :class:`GloVe` on the torch engine and, on the numba engine, its weights as numpy arrays under
    the same names (:func:`glove_arrays_model`: that engine imports no torch)."""

    PARAMS = ("word", "context", "word_bias", "context_bias")
    schedule = "constant"  # AdaGrad scales each weight's step itself; the tool keeps eta fixed
    unit = "word"

    def __init__(self, cfg: GloVeConfig, corpus: Corpus, *, seed: int, engine: str = "numba", threads: int = 0,
                 device: torch.device | None = None, batch_size: int = 4096, max_memory_mb: int = 0,
                 scratch: Path | None = None):
        cfg = replace(cfg, vocab_size=len(corpus.words))
        self.cfg, self.seed, self.corpus = cfg, seed, corpus
        self.engine, self.threads, self.batch_size = engine, threads, batch_size
        self.device = device  # the torch engine's (None: the CPU); the numba engine runs on the CPU
        self.model: Any = glove_arrays_model(cfg)  # numba: the arrays; torch: a GloVe holding them
        rng = np.random.default_rng(seed)
        for name in self.PARAMS:  # glove.c: every weight uniform in ±0.5/D, accumulators at 1
            w = getattr(self.model, name).weight
            w[...] = (rng.random(w.shape, dtype=np.float32) - 0.5) / cfg.dim
        self.adagrad = {name: np.ones(getattr(self.model, name).weight.shape, dtype=np.float32)
                        for name in self.PARAMS}
        rows, cols, vals = cooccurrence(corpus, cfg.window, max_memory_mb=max_memory_mb, scratch=scratch)
        order = rng.permutation(len(vals))  # one shuffle, as the tool's shuffle step
        self.rows, self.cols, self.vals = rows[order], cols[order], vals[order]
        self.steps_per_epoch = max(1, math.ceil(len(self.vals) / ENTRIES_PER_STEP))
        if engine == "numba":
            self.n_threads = numba_threads(threads)  # seqlab.api.train_run sizes numba's pool to it
            self._kernel(0, 0, 0.0)  # compiles (or loads the cached machine code) before training
        else:
            self.model = _torch_glove(cfg, self.model.state_dict(), device)

    def vectors(self) -> np.ndarray:
        """(V, D) word vectors θ_w + e_w."""
        m = self.model
        return (weight_array(m.word) + weight_array(m.context)).astype(np.float32)

    def trainer_tensors(self) -> dict[str, np.ndarray]:
        return {f"adagrad.{k}": v for k, v in self.adagrad.items()}

    def restore_trainer_tensors(self, tensors: dict[str, np.ndarray]) -> None:
        for name in self.PARAMS:
            self.adagrad[name][...] = np.asarray(tensors[f"adagrad.{name}"])

    def update(self, epoch: int, index: int, lr: Callable[[float], float]) -> StepStats:
        """Entries [p0, p1) of step ``index`` at the learning rate lr(epochs done); effective and raw words are
        the corpus's, pro rata, so an epoch's steps add up to the corpus."""
        n, steps = len(self.vals), self.steps_per_epoch
        p0, p1 = n * index // steps, n * (index + 1) // steps
        eta = lr(epoch + index / steps)
        if self.engine == "numba":
            cost, count = self._kernel(p0, p1, eta)
        else:
            cost, count = self._torch_step(p0, p1, eta)

        def share(total: int) -> int:
            return total * (index + 1) // steps - total * index // steps

        return StepStats(cost, count, share(len(self.corpus.ids)), share(self.corpus.raw_words))

    def _arrays(self) -> list[np.ndarray]:
        m = self.model
        return [m.word.weight, m.context.weight, m.word_bias.weight[:, 0], m.context_bias.weight[:, 0]]

    def _kernel(self, p0: int, p1: int, eta: float) -> tuple[float, int]:
        bounds = np.linspace(p0, p1, self.n_threads + 1).astype(np.int64)  # thread t: a contiguous share
        g = self.adagrad
        grads = [g["word"], g["context"], g["word_bias"][:, 0], g["context_bias"][:, 0]]
        cost, count = np.zeros(self.n_threads), np.zeros(self.n_threads, dtype=np.int64)
        _adagrad(*self._arrays(), *grads, self.rows, self.cols, self.vals, bounds[:-1], bounds[1:], self.cfg.x_max,
                 self.cfg.alpha, eta, cost, count)
        return float(cost.sum()), int(count.sum())

    def _torch_step(self, p0: int, p1: int, eta: float) -> tuple[float, int]:
        import torch

        m, device = self.model, self.device or torch.device("cpu")
        params = [getattr(m, name).weight for name in self.PARAMS]
        accumulators = [torch.from_numpy(self.adagrad[name]).to(device) for name in self.PARAMS]
        rows = torch.from_numpy(self.rows[p0:p1].astype(np.int64))
        cols = torch.from_numpy(self.cols[p0:p1].astype(np.int64))
        vals = torch.from_numpy(self.vals[p0:p1])
        count = 0
        cost = torch.zeros((), dtype=torch.float64, device=device)
        for b0 in range(0, p1 - p0, self.batch_size):
            i = rows[b0:b0 + self.batch_size].to(device)  # (B,)
            j = cols[b0:b0 + self.batch_size].to(device)  # (B,)
            x = vals[b0:b0 + self.batch_size].to(device, torch.float32)  # (B,)
            loss = m(i, j, x)  # (B,)
            finite = torch.isfinite(loss.detach())
            if not bool(finite.all()):  # NaN guard: a non-finite entry takes no step
                i, j, x = i[finite], j[finite], x[finite]
                loss = m(i, j, x)
            for p in params:
                p.grad = None
            loss.sum().backward()
            with torch.no_grad():
                for p, acc in zip(params, accumulators):
                    grad = p.grad.coalesce()
                    rows_touched, u = grad.indices()[0], eta * grad.values()  # u = η ∂J/∂p
                    step = u / acc[rows_touched].sqrt()
                    step = torch.where(torch.isfinite(step), step, torch.zeros_like(step))  # per element
                    p.index_add_(0, rows_touched, -step)
                    acc.index_add_(0, rows_touched, u * u)
            cost += loss.detach().sum()
            count += len(x)
        for name, acc in zip(self.PARAMS, accumulators):
            self.adagrad[name][...] = acc.cpu().numpy()
        return cost.item(), count


def glove_arrays_model(cfg: GloVeConfig) -> ArrayModel:
    """A GloVe model in numpy arrays, zero, with :class:`GloVe`'s names (``word``, ``context`` (V, D),
    ``word_bias``, ``context_bias`` (V, 1)): what the numba engine trains and what loading a run's vectors reads
    into, without torch."""
    v, d = cfg.vocab_size, cfg.dim
    return ArrayModel(word=np.zeros((v, d), np.float32), context=np.zeros((v, d), np.float32),
                      word_bias=np.zeros((v, 1), np.float32), context_bias=np.zeros((v, 1), np.float32))


def _torch_glove(cfg: GloVeConfig, weights: dict[str, np.ndarray], device: Any) -> Any:
    """A :class:`GloVe` holding ``weights`` (arrays by state_dict name), on ``device``."""
    import torch

    from seqlab.models.glove_torch import GloVe

    model = GloVe(cfg)
    with torch.no_grad():
        for name, value in model.state_dict(keep_vars=True).items():
            value.copy_(torch.from_numpy(weights[name]))
    return model.to(device or torch.device("cpu"))
