"""The numba engine of skip-gram word2vec: one SGD step per (centre, context) pair, Hogwild threads.

One SGD step on a pair (``_sgd_pair``; the notes' skip-gram): for the K scored outputs u_k of the pair (the
target and the noise words for negative sampling, the inner nodes of the target's Huffman path for hierarchical
softmax) with labels l_k,

    g_k = alpha (l_k - sigma(theta_{u_k} . e_c));   theta_{u_k} += g_k e_c;   e_c += sum_k g_k theta_{u_k}

(every theta update uses the old e_c, the e_c update the old thetas: a gradient step on
L(c, t) = sum_k -log sigma(+-theta_{u_k} . e_c), with sigma read from gensim's table: update_sigmoid).
When negative sampling's u_k are distinct (97% of pairs at V = 34,600) ``_sgd_distinct`` takes the same step
to the bit with every score read first. Hierarchical softmax keeps ``_sgd_pair`` although a tree path is always
distinct: its first nodes are shared by nearly every word, so two Hogwild threads write them all the time, and
reading a path's scores before writing lengthened each row's read-to-write time; measured at 2 threads on 20 MB
of enwiki_sample (Intel Xeon, AMX), reading first ran 275k-283k effective words/s against 379k-391k (3 runs each).
Following the word2vec C tool and gensim (word2vec_inner.pyx): subsampling against a fresh 32-bit random per
occurrence, a dynamic window (radius uniform in 1..window, its own random stream), noise words drawn in
gensim's order from gensim's stream formula (a bisect of the cumulative table, sped up by a bucket index
that gives the same words), no update for a score |theta . e| >= 6 (the loss still counts it), per-thread
48-bit LCG streams (the C tool's), thread t taking chunks t, t+T, t+2T, ... and writing to the shared matrices
without locks (Hogwild).
The learning rate of each chunk comes from the Trainer's schedule (``alphas``).

Shapes: V words, D = dim, K scored outputs per pair, T threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from seqlab.data.corpus import MAX_WORDS_IN_CHUNK

MAX_EXP = 6.0  # gensim / C tool: no update when |score| >= MAX_EXP


@dataclass
class StepStats:
    """What one step of a kernel engine (word2vec or GloVe) did; the Trainer sums them per epoch."""

    loss: float  # sum of the loss terms (pairs for word2vec, co-occurrence entries for GloVe)
    terms: int  # number of those terms
    words: int  # effective words: kept after subsampling (word2vec), the corpus pro rata (GloVe)
    raw_words: int  # words read, out-of-vocabulary ones included


# -log σ(s) = log(1 + e^-s) on a grid of step 1/256 over [-MAX_EXP, MAX_EXP]; linear interpolation is within
# 5e-7 of the exact value (a chord of a convex function: error <= step² / 8 · max σ(1 - σ)). Measured: an
# exact log1p per score cost 20% (negative sampling) to 30% (hierarchical softmax) of the kernel's speed.
_LOSS_STEPS = 256.0
_NEG_LOG_SIGMOID = np.log1p(np.exp(-np.linspace(-MAX_EXP, MAX_EXP, int(2 * MAX_EXP * _LOSS_STEPS) + 1)))
_NEG_LOG_SIGMOID_SLOPE = np.diff(_NEG_LOG_SIGMOID)  # table[i + 1] - table[i], the same float64 subtraction

# The sigmoid of the update, as gensim and the C tool read it: a 1000-entry table of σ over [-MAX_EXP, MAX_EXP)
# indexed by int((s + MAX_EXP) · 83), where 83 is the C integer division 1000 / 6 / 2 (not 83.3). So the update
# uses σ(0.996 s - 0.03) or so: a bias towards the positive label that is worth 1-2 Spearman points to SGNS on
# MEN and Stanford rare words (enwiki_sample, 5 epochs); the exact σ trails gensim there. The loss is exact.
_EXP_TABLE_SIZE = 1000
_EXP_TABLE = np.exp((np.arange(_EXP_TABLE_SIZE, dtype=np.float32) / np.float32(_EXP_TABLE_SIZE) * 2 - 1) * MAX_EXP,
                    dtype=np.float32)
_EXP_TABLE = (_EXP_TABLE / (_EXP_TABLE + np.float32(1.0))).astype(np.float32)
_EXP_SCALE = float(_EXP_TABLE_SIZE // int(MAX_EXP) // 2)  # 83


@njit(inline="always")
def update_sigmoid(score):
    """σ(score) as gensim's update reads it (see _EXP_TABLE), for MAX_EXP < score < MAX_EXP."""
    return _EXP_TABLE[int((score + MAX_EXP) * _EXP_SCALE)]


_LCG_MUL, _LCG_ADD, _LCG_MASK = np.uint64(25214903917), np.uint64(11), np.uint64(2**48 - 1)


@njit(inline="always")
def _lcg(state):
    """The C tool's (and gensim's, and java.util.Random's) 48-bit linear congruential step."""
    return (state * _LCG_MUL + _LCG_ADD) & _LCG_MASK


@njit(inline="always")
def _pair_loss(score, label):
    """-log σ(±score), + for label 1: from the table (see _NEG_LOG_SIGMOID) for |score| < MAX_EXP, else exact."""
    if score <= -MAX_EXP or score >= MAX_EXP:
        z = score if label > 0.5 else -score
        return max(-z, 0.0) + math.log1p(math.exp(-abs(z)))  # -log σ(z), computed stably
    x = (score + MAX_EXP) * _LOSS_STEPS  # -log σ(s) from the table, linearly interpolated
    i = int(x)
    nls = _NEG_LOG_SIGMOID[i] + (x - i) * _NEG_LOG_SIGMOID_SLOPE[i]
    return nls + (0.0 if label > 0.5 else score)  # -log σ(-s) = -log σ(s) + s


@njit(inline="always")
def _output_step(out, u, g, e, grad, dim):
    """θ_u's old value into the gradient of e_c (grad += g θ_u), then θ_u's step (θ_u += g e); (D,) each."""
    for d in range(dim):
        theta = out[u, d]
        grad[d] += g * theta
        out[u, d] = theta + g * e[d]


@njit(fastmath=True, cache=True)
def _sgd_pair(syn0, out, c, targets, labels, row, k, alpha, work):
    """One SGD step on L(c, ·) = Σ_m -log σ(±θ_u·e_c) over outputs u = targets[row, :k] with labels[row, :k]
    (σ of the update: update_sigmoid); returns the loss (every term, see _NEG_LOG_SIGMOID). syn0 (V, D) holds e,
    out (·, D) holds θ; work (2, D) is scratch: the gradient of e_c, and e_c read once (as gensim, which reads
    syn0's row in place: the same with one thread; Hogwild writes to it land after the pair)."""
    dim = syn0.shape[1]
    grad, e = work[0], work[1]
    for d in range(dim):
        grad[d] = 0.0
        e[d] = syn0[c, d]
    loss = 0.0
    for m in range(k):
        u = targets[row, m]
        label = labels[row, m]
        score = np.float32(0.0)
        for d in range(dim):
            score += e[d] * out[u, d]
        loss += _pair_loss(score, label)
        if score <= -MAX_EXP or score >= MAX_EXP:  # no update (gensim's rule); the loss still counts
            continue
        _output_step(out, u, np.float32((label - update_sigmoid(score)) * alpha), e, grad, dim)
    for d in range(dim):
        syn0[c, d] += grad[d]
    return loss


@njit(fastmath=True, cache=True)
def _sgd_distinct(syn0, out, c, targets, labels, row, k, alpha, work, scores):
    """_sgd_pair's step, to the bit, for outputs targets[row, :k] that are k distinct rows of out (noise words
    without a repeat): as no θ_u's update then touches another's score, all k scores are read first (independent
    dot products that the CPU overlaps), then the losses and steps in _sgd_pair's order. Negative sampling at
    D = 100, 2 threads, 20 MB of enwiki_sample (Intel Xeon, AMX): 698k-708k effective words/s against _sgd_pair's
    651k-659k (3 runs each). scores (>= k,) float32 is scratch."""
    dim = syn0.shape[1]
    grad, e = work[0], work[1]
    for d in range(dim):
        grad[d] = 0.0
        e[d] = syn0[c, d]
    for m in range(k):
        u = targets[row, m]
        score = np.float32(0.0)
        for d in range(dim):
            score += e[d] * out[u, d]
        scores[m] = score
    loss = 0.0
    for m in range(k):
        score, label = scores[m], labels[row, m]
        loss += _pair_loss(score, label)
        if score <= -MAX_EXP or score >= MAX_EXP:  # no update (gensim's rule); the loss still counts
            continue
        _output_step(out, targets[row, m], np.float32((label - update_sigmoid(score)) * alpha), e, grad, dim)
    for d in range(dim):
        syn0[c, d] += grad[d]
    return loss


@njit(inline="always")
def _distinct(targets, row, k):
    """Whether targets[row, :k] holds k different rows (a noise word can be drawn twice)."""
    for a in range(1, k):
        for b in range(a):
            if targets[row, a] == targets[row, b]:
                return False
    return True


@njit(inline="always")
def _bisect_left(table, x, lo, hi):
    """The first i in lo..hi with table[i] >= x (hi if none), table sorted: gensim's bisect_left."""
    while hi > lo:
        mid = (lo + hi) >> 1
        if table[mid] >= x:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(parallel=True, fastmath=True, cache=True)
def _train_chunks(syn0, syn1, syn1neg, ids, sentence_starts, chunk_starts, c0, c1, n_threads, rng,
                  sample_int, use_sample, cum, noise_shift, noise_starts, negative, points, hs_labels, path_lengths,
                  hs, window, alphas, out_loss, out_pairs, out_words):
    """Skip-gram SGD over chunks c0 <= c < c1 at learning rate alphas[c - c0]; thread t takes the chunks with
    c % n_threads == t (Hogwild), continuing its two LCG streams rng[t] (see thread_seeds)."""
    for t in prange(n_threads):
        work = np.zeros((2, syn0.shape[1]), dtype=np.float32)
        kept = np.empty(MAX_WORDS_IN_CHUNK, dtype=np.int32)  # the sentence after subsampling
        ns_targets = np.zeros((1, negative + 1), dtype=np.int32)
        ns_labels = np.zeros((1, negative + 1), dtype=np.float32)
        ns_labels[0, 0] = 1.0
        ns_scores = np.zeros(negative + 1, dtype=np.float32)
        cum_last = np.uint64(cum[cum.shape[0] - 1])
        state = rng[t, 0]  # subsampling and noise words, in gensim's order (its next_random)
        window_state = rng[t, 1]  # the window radii: a stream of their own (gensim draws them apart too)
        loss, pairs, words = 0.0, 0, 0
        c = c0 + (t - c0 % n_threads) % n_threads
        while c < c1:
            alpha = alphas[c - c0]
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
                    shrink = np.int64((window_state >> np.uint64(16)) % np.uint64(window))
                    window_state = _lcg(window_state)
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
                                x = (state >> np.uint64(16)) % cum_last
                                b = x >> noise_shift
                                noise = _bisect_left(cum, x, np.int64(noise_starts[b]), np.int64(noise_starts[b + 1]))
                                state = _lcg(state)
                                if noise == target:
                                    continue
                                ns_targets[0, k] = noise
                                k += 1
                            if _distinct(ns_targets, 0, k):  # the common case (97% of pairs at V = 34,600)
                                loss += _sgd_distinct(syn0, syn1neg, kept[j], ns_targets, ns_labels, 0, k, alpha,
                                                      work, ns_scores)
                            else:  # a repeated noise word scores after its earlier step
                                loss += _sgd_pair(syn0, syn1neg, kept[j], ns_targets, ns_labels, 0, k, alpha, work)
            c += n_threads
        rng[t, 0] = state
        rng[t, 1] = window_state
        out_loss[t] += loss
        out_pairs[t] += pairs
        out_words[t] += words


def thread_seeds(seed: int, epoch: int, n_threads: int) -> np.ndarray:
    """(T, 2) uint64 LCG states (per thread: the subsampling and noise stream, the window stream), a function
    of (seed, epoch, thread) only, so an epoch can be re-run exactly."""
    out = np.zeros((n_threads, 2), dtype=np.uint64)
    for t in range(n_threads):
        for stream in range(2):
            x = (seed * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9 + (2 * t + stream) * 0x94D049BB133111EB) % 2**64
            x = ((x ^ (x >> 31)) * 0xBF58476D1CE4E5B9) % 2**64  # splitmix64 finaliser
            out[t, stream] = (x ^ (x >> 29)) & (2**48 - 1)
    return out


def numba_threads(requested: int) -> int:
    """``train.threads`` (0 = every core numba may use), capped at numba's thread pool."""
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    return min(requested, limit) if requested > 0 else limit
