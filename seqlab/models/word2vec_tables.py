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

import heapq
from dataclasses import dataclass

import numpy as np


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


class _Node:
    """A heap entry ordered by count alone, as gensim's ``Heapitem``: ties then fall as heapq's sift leaves
    them, which decides some branch bits, so the tree is gensim's to the bit."""

    __slots__ = ("count", "index")

    def __init__(self, count: int, index: int):
        self.count, self.index = count, index

    def __lt__(self, other: _Node) -> bool:
        return self.count < other.count


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
