"""word2vec's tables, each built exactly as gensim builds it (so the vocabularies, noise draws and trees
of the two tools are bit-identical; tests/test_parity_vectors.py):

- subsampling (Mikolov et al. 2013, as gensim's ``prepare_vocab``): word w is kept with probability
  p_w = (sqrt(n_w / tau) + 1) tau / n_w, tau = sample x (retained corpus size), stored as uint32 thresholds;
- the noise distribution of negative sampling, proportional to count^ns_exponent, as a cumulative table;
- the Huffman tree of hierarchical softmax (the notes: "binary tree over the vocabulary, product of binary
  probabilities along the path, O(log2 V)"): frequent words get short paths.

Shapes: V words; depth (the longest root-to-leaf path).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit


def sample_ints(counts: np.ndarray, sample: float) -> np.ndarray:
    r"""(V,) uint32 keep thresholds: word w is kept when uint32 random <= sample_int[w] (gensim prepare_vocab).

    !!! equation "Word embeddings › Skip-gram (beyond the notes)"
        $p_w = \min\left(1, \left(\sqrt{n_w / \tau} + 1\right) \tau / n_w\right)$: the probability of keeping an
        occurrence of a word seen $n_w$ times (subsampling of frequent words; $\tau$ = sample × corpus size)."""
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
    r"""(V,) uint32 cumulative noise distribution ∝ count^ns_exponent over [0, domain] (gensim make_cum_table);
    a noise word is the insertion point of a uniform integer below the last entry.

    !!! equation "Word embeddings › Negative sampling (beyond the notes)"
        $P_n(w) = \frac{n_w^{3/4}}{\sum_v n_v^{3/4}}$: the noise distribution the negative words are drawn from,
        the unigram counts raised to ``ns_exponent`` (0.75)."""
    powers = [int(c) ** float(ns_exponent) for c in counts]
    total = sum(powers)
    table = np.zeros(len(counts), dtype=np.uint32)
    cumulative = 0.0
    for i, p in enumerate(powers):  # sequential, as gensim sums, so the table is bit-identical
        cumulative += p
        table[i] = round(cumulative / total * domain)
    return table


NOISE_BUCKET_BITS = 14  # 16,385 int32 bucket starts (64 KiB) beside the V-entry cumulative table


def noise_buckets(cum: np.ndarray, bits: int = NOISE_BUCKET_BITS) -> tuple[int, np.ndarray]:
    """An index over ``cum`` that makes a noise draw a short search: (shift, starts) where starts[b] =
    bisect_left(cum, b << shift), so the draw of a uniform x < cum[-1] lies in starts[x >> shift] ..
    starts[(x >> shift) + 1] (bisect is monotone); the same word as a bisect over the whole table."""
    last = int(cum[-1])
    shift = max(0, last.bit_length() - bits)
    bounds = np.arange((last >> shift) + 2, dtype=np.int64) << shift  # (buckets + 1,)
    return shift, np.searchsorted(cum.astype(np.int64), bounds, side="left").astype(np.int32)


@dataclass(frozen=True)
class HuffmanTree:
    """Word w's root-to-leaf path: inner nodes points[w, :lengths[w]] and branch bits codes[w, :lengths[w]]."""

    codes: np.ndarray  # (V, depth) uint8: 0 = left, 1 = right
    points: np.ndarray  # (V, depth) int32: inner-node ids 0 .. V-2 (the rows of the output matrix)
    lengths: np.ndarray  # (V,) int32


@njit(cache=True)
def _sift_down(counts, nodes, start, pos):
    """CPython's heapq._siftdown on the heap (counts, nodes) (heap size,) each, ordered by count alone: the
    entry at pos moves up past every parent with a larger count (not an equal one)."""
    count, node = counts[pos], nodes[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if count < counts[parent]:
            counts[pos], nodes[pos] = counts[parent], nodes[parent]
            pos = parent
            continue
        break
    counts[pos], nodes[pos] = count, node


@njit(cache=True)
def _sift_up(counts, nodes, pos, size):
    """CPython's heapq._siftup on the first ``size`` entries: the smaller child moves up until a leaf (the right
    one unless the left is strictly smaller), then the entry from pos sifts down from there."""
    start = pos
    count, node = counts[pos], nodes[pos]
    child = 2 * pos + 1
    while child < size:
        if child + 1 < size and not counts[child] < counts[child + 1]:
            child += 1
        counts[pos], nodes[pos] = counts[child], nodes[child]
        pos = child
        child = 2 * pos + 1
    counts[pos], nodes[pos] = count, node
    _sift_down(counts, nodes, start, pos)


@njit(cache=True)
def _huffman_children(word_counts):
    """gensim's ``_build_heap`` with CPython's heapq (heapify, then V-1 times heappop, heappop, heappush of the
    merged node): (V-1, 2) int64, the (left, right) children of inner node V + i, left the first popped."""
    v = word_counts.shape[0]
    counts = word_counts.astype(np.int64)  # (V,) the heap: counts and node ids side by side
    nodes = np.arange(v)
    for pos in range(v // 2 - 1, -1, -1):  # heapify
        _sift_up(counts, nodes, pos, v)
    children = np.empty((max(v - 1, 0), 2), dtype=np.int64)
    size = v
    for n in range(v, 2 * v - 1):
        merged = 0
        for side in range(2):  # heappop: the last entry replaces the root and sifts up
            children[n - v, side] = nodes[0]
            merged += counts[0]
            size -= 1
            counts[0], nodes[0] = counts[size], nodes[size]
            _sift_up(counts, nodes, 0, size)
        counts[size], nodes[size] = merged, n  # heappush: append, then sift down
        _sift_down(counts, nodes, 0, size)
        size += 1
    return children


@njit(cache=True)
def _huffman_paths(children):
    """Each word's root-to-leaf path through the inner nodes ``children`` (V-1, 2): (codes (V, depth) uint8,
    points (V, depth) int32, lengths (V,) int32), walking up from each leaf (a parent's id exceeds its
    children's, so one pass from the root down gives every node's depth)."""
    v = children.shape[0] + 1
    parent = np.zeros(2 * v - 1, dtype=np.int64)  # (2V-1,) over words 0..V-1 then inner nodes V..2V-2
    bit = np.zeros(2 * v - 1, dtype=np.uint8)
    depth = np.zeros(2 * v - 1, dtype=np.int32)
    for i in range(v - 1):
        for side in range(2):
            parent[children[i, side]], bit[children[i, side]] = v + i, side
    for node in range(2 * v - 3, -1, -1):  # the root 2V-2 has depth 0
        depth[node] = depth[parent[node]] + 1
    lengths = depth[:v].copy()
    width = max(1, lengths.max())
    codes = np.zeros((v, width), dtype=np.uint8)
    points = np.zeros((v, width), dtype=np.int32)
    for w in range(v):
        node = w
        for level in range(lengths[w] - 1, -1, -1):
            codes[w, level] = bit[node]
            node = parent[node]
            points[w, level] = node - v
    return codes, points, lengths


def huffman_tree(counts: np.ndarray) -> HuffmanTree:
    r"""gensim's ``_build_heap`` / ``_assign_binary_codes``: merge the two least frequent nodes, the first popped
    becoming the left (code 0) child; frequent words get short paths.

    !!! equation "Word embeddings › Hierarchical softmax"
        $\mathrm{depth}(w) \approx -\log_2 P(w),\ P(w) = n_w / \sum_v n_v$: the binary tree whose leaves are the
        words, each with a unique path from the root; a Huffman code gives a word a path about as long as its
        information, so frequent words get the shortest paths and the mean depth over the corpus is less than
        $\log_2 V + 1$.

    !!! departure "Word embeddings › Hierarchical softmax"
        notes: a tree whose paths have "around $\log_2 n$" nodes, $O(\log_2 V)$ per word (a balanced tree).
        seqlab: word2vec's Huffman tree: a word's path has about $-\log_2 P(w)$ nodes, short for frequent words
        and longer than $\log_2 V$ for rare ones; weighted by frequency the mean is below $\log_2 V + 1$."""
    codes, points, lengths = _huffman_paths(_huffman_children(np.asarray(counts)))
    return HuffmanTree(codes, points, lengths)
