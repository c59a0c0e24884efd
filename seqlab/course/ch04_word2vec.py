"""Chapter 4, word embeddings, 04.1-04.4: cosine similarity, one skip-gram negative-sampling step, the Huffman
code and the hierarchical-softmax probability (docs/tutorials/04-word-embeddings.md).

The references are :class:`seqlab.vectors.keyed.KeyedVectors` (similarity), :class:`SkipGram`'s ``pair_loss``
(:mod:`seqlab.models.word2vec_torch`: the torch engine's step) and :func:`huffman_tree`
(:mod:`seqlab.models.word2vec_tables`). The word vectors of very different lengths the cases draw live here;
:mod:`seqlab.course.ch04_glove` (04.5-04.7) uses them too.
"""

from __future__ import annotations

import heapq

import numpy as np
import torch
from torch import nn

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.word2vec_tables import huffman_tree
from seqlab.models.word2vec_torch import SkipGram
from seqlab.vectors.keyed import KeyedVectors

# ------------------------------------------------------------------------------------------------------
# 04.1 cosine similarity


def _scaled_rows(g: torch.Generator, n: int, d: int) -> torch.Tensor:
    """(n, d) float64 rows of very different lengths (0.3 to 3): a similarity without the norms shows."""
    return randn(g, n, d) * (0.3 + 2.7 * torch.rand(n, 1, generator=g, dtype=torch.float64))


def _cosine_cases() -> list[Case]:
    cases = []
    for seed, (n, m, dim) in enumerate([(2, 3, 5), (4, 2, 7), (3, 5, 6)]):
        g = generator(seed)
        u, v = _scaled_rows(g, n, dim).float(), _scaled_rows(g, m, dim).float()
        cases.append(Case((u, v), {"rows of u": n, "rows of v": m, "dim": dim}, seed=seed, n=dim + 2))
    return cases


def _cosine(u, v):
    # KeyedVectors.similarity on the rows of u and v as words "u0", ..., "v0", ... (float32, as it stores them)
    words = [f"u{i}" for i in range(len(u))] + [f"v{j}" for j in range(len(v))]
    kv = KeyedVectors(words, torch.cat([u, v]).numpy())
    return torch.tensor([[kv.similarity(f"u{i}", f"v{j}") for j in range(len(v))] for i in range(len(u))],
                        dtype=torch.float32)


def _norms(x):
    return torch.linalg.vector_norm(x.double(), dim=-1)


COSINE = Exercise(
    id="04.1",
    name="cosine_similarity",
    title="Cosine similarity",
    section="Word embeddings › Cosine similarity",
    signature="cosine_similarity(u, v)",
    statement=r"""Compute the cosine similarity of every row of `u` with every row of `v`:
$\mathrm{sim}(u, v) = \frac{u^\top v}{\lVert u\rVert_2 \lVert v\rVert_2}$.

`u` is (n, dim) and `v` is (m, dim), float32 tensors (word vectors, as `KeyedVectors` stores them); return the
(n, m) float32 tensor whose entry (i, j) is the cosine of `u[i]` and `v[j]`. No row is zero.""",
    reference=_cosine,
    cases=_cosine_cases,
    mistakes=(
        Mistake("no-norms", "your similarity is the dot product u^T v: divide it by both lengths, "
                "Sim(u, v) = u^T v / (||u||_2 ||v||_2), so that only the angle counts (Word embeddings › Cosine "
                "similarity).",
                lambda u, v: (_cosine(u, v) * _norms(u)[:, None] * _norms(v)[None, :]).float()),
        Mistake("one-norm", "your similarity is divided by ||u||_2 only: the notes divide u^T v by both lengths, "
                "||u||_2 ||v||_2 (Word embeddings › Cosine similarity).",
                lambda u, v: (_cosine(u, v) * _norms(v)[None, :]).float()),
        Mistake("squared-norms", "your similarity is divided by the squared lengths ||u||^2 ||v||^2: the norm "
                "is the square root of the sum of squares, ||u||_2 = sqrt(u_1^2 + ... + u_D^2) (Word embeddings › "
                "Cosine similarity).",
                lambda u, v: (_cosine(u, v) / _norms(u)[:, None] / _norms(v)[None, :]).float()),
    ),
    # two reductions (the dot product and a norm) of length <= dim + 2 over unit vectors (magnitude 1), in float32
    tolerance=rounding(products=2),
)

# ------------------------------------------------------------------------------------------------------
# 04.2 one skip-gram negative-sampling step


def _sgns_step(e_c, theta, lr, labels=None):
    """One SGD step on SkipGram.pair_loss (the torch engine's step): (e_c', theta'), both from the old values."""
    k = theta.shape[0]
    if labels is None:
        labels = torch.zeros(1, k, dtype=theta.dtype)
        labels[0, 0] = 1.0  # row 0 the true target, the others noise words
    with torch.enable_grad():
        e = e_c.detach().clone()[None].requires_grad_(True)  # (1, D)
        output = nn.Embedding.from_pretrained(theta.detach().clone(), freeze=False)  # θ: (K + 1, D)
        loss = SkipGram.pair_loss(output, e, torch.arange(k)[None], labels, torch.ones(1, k, dtype=theta.dtype))
        loss.sum().backward()
    with torch.no_grad():
        return (e - lr * e.grad)[0], output.weight - lr * output.weight.grad


def _sgns_negative_sign(e_c, theta, lr):
    # the step of the target alone plus the noise words' step reversed (each computed with the reference)
    e_pos, theta_pos = _sgns_step(e_c, theta[:1], lr)
    e_neg, theta_neg = _sgns_step(e_c, theta[1:], lr, torch.zeros(1, theta.shape[0] - 1, dtype=theta.dtype))
    return e_c + (e_pos - e_c) - (e_neg - e_c), torch.cat([theta_pos, 2 * theta[1:] - theta_neg])


def _sgns_ascent(e_c, theta, lr):
    e_new, theta_new = _sgns_step(e_c, theta, lr)
    return 2 * e_c - e_new, 2 * theta - theta_new


def _sgns_sequential(e_c, theta, lr):
    # g_k from the reference's own θ step (θ_k' - θ_k = g_k e_c), then e_c's step from the NEW θ_k'
    e_new, theta_new = _sgns_step(e_c, theta, lr)
    g = (theta_new - theta) @ e_c / (e_c @ e_c)  # (K + 1,)
    return e_c + g @ theta_new, theta_new


def _sgns_cases() -> list[Case]:
    cases = []
    for seed, (dim, negative, lr) in enumerate([(4, 2, 0.5), (6, 4, 0.25), (3, 5, 0.75)]):
        g = generator(seed)
        e_c, theta = randn(g, dim) * 0.7, randn(g, negative + 1, dim) * 0.7
        score = (theta.abs() @ e_c.abs()).max().item()
        cases.append(Case((e_c, theta, lr), {"dim": dim, "negative": negative}, seed=seed, n=max(dim, negative + 1),
                          magnitude=max(1.0, score, lr * (negative + 1) * theta.abs().max().item())))
    return cases


SGNS = Exercise(
    id="04.2",
    name="sgns_update",
    title="One skip-gram negative-sampling step",
    section="Word embeddings › Negative sampling (beyond the notes)",
    signature="sgns_update(e_c, theta, lr)",
    statement=r"""Take one SGD step on the negative-sampling loss of one (context, target) pair,
$\mathcal{L}(c, t) = -\log \sigma(\theta_t^\top e_c) - \sum_{k=1}^{K} \log \sigma(-\theta_{n_k}^\top e_c)$.

`e_c` is the context word's vector, (dim,); `theta` is (1 + K, dim): row 0 is the target's output vector
$\theta_t$, rows 1..K the noise words' $\theta_{n_k}$ (all different words); `lr` is the learning rate. Return
`(e_c_new, theta_new)`, each parameter moved by $-\mathrm{lr}$ times its gradient, **both gradients taken at
the old values** (word2vec's order: every $\theta$ step uses the old $e_c$, $e_c$'s step the old $\theta$'s).
With $g_k = \mathrm{lr}\,(l_k - \sigma(\theta_k^\top e_c))$, $l_0 = 1$ and $l_k = 0$ for the noise words:
$\theta_k \mathrel{+}= g_k e_c$, $e_c \mathrel{+}= \sum_k g_k \theta_k$. Do not change the inputs.""",
    reference=_sgns_step,
    cases=_sgns_cases,
    mistakes=(
        Mistake("negative-sign", "the noise words' gradient has the wrong sign: a noise word n_k has label 0, "
                "so g_k = lr (0 - sigma(theta_k . e_c)) pushes theta_k and e_c apart; the loss term is "
                "-log sigma(-theta_n^T e_c) (Word embeddings › Negative sampling).", _sgns_negative_sign),
        Mistake("ascent", "your step goes up the gradient: SGD subtracts lr times the gradient of the loss, "
                "which for the target is g_0 = lr (1 - sigma(theta_t . e_c)) added along e_c (Word embeddings › "
                "Negative sampling).", _sgns_ascent),
        Mistake("sequential", "e_c's step uses the theta's already updated: both gradients are taken at the old "
                "values, e_c += sum_k g_k theta_k with the theta_k before their step (word2vec's order; Word "
                "embeddings › Negative sampling).", _sgns_sequential),
        Mistake("e_c-not-updated", "e_c is returned unchanged: the loss depends on e_c too, and its step is "
                "e_c += sum_k g_k theta_k over the target and the {negative} noise words (Word embeddings › "
                "Negative sampling).", lambda e_c, theta, lr: (e_c.clone(), _sgns_step(e_c, theta, lr)[1])),
    ),
    # the scores (dot products over dim), then the sum over the 1 + K outputs of g_k theta_k; sigma's derivative
    # is <= 1/4, so an error in a score moves a step by <= lr/4 of a value bounded by the magnitude
    tolerance=rounding(products=2),
    follows="seqlab's torch engine: the exact sigma and a step for every score. The numba engine reads sigma "
            "from word2vec's 1000-entry table and skips a score |theta . e| >= 6, as gensim and the C tool do.",
)

# ------------------------------------------------------------------------------------------------------
# 04.3 the Huffman code


def _huffman(counts):
    tree = huffman_tree(np.asarray(counts, dtype=np.int64))
    return [[int(b) for b in tree.codes[w, : tree.lengths[w]]] for w in range(len(counts))]


def _huffman_larger_first(counts):
    """The tree with ties broken the other way: on equal counts the LARGER id pops first (written out here:
    seqlab's tree has no such option)."""
    v = len(counts)
    heap = [(c, -i, i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    parent, bit = {}, {}
    for node in range(v, 2 * v - 1):
        first, second = heapq.heappop(heap), heapq.heappop(heap)
        parent[first[2]], bit[first[2]] = node, 0
        parent[second[2]], bit[second[2]] = node, 1
        heapq.heappush(heap, (first[0] + second[0], -node, node))
    codes = []
    for w in range(v):
        code, node = [], w
        while node in parent:
            code.append(bit[node])
            node = parent[node]
        codes.append(code[::-1])
    return codes


def _huffman_cases() -> list[Case]:
    # counts sorted as seqlab's vocabulary is (most frequent first), with ties where the rule matters; on these
    # the rule of the statement and gensim's heap (seqlab's) give the same tree, and the other rule another
    lists = [[8, 8, 4, 4, 2, 1], [7, 7, 6, 6, 5, 4, 2, 2], [8, 8, 7, 6, 6, 5, 3, 3, 2]]
    return [Case((counts,), {"words": len(counts)}) for counts in lists]


HUFFMAN = Exercise(
    id="04.3",
    name="huffman_codes",
    title="The Huffman code of a vocabulary",
    section="Word embeddings › Hierarchical softmax",
    signature="huffman_codes(counts)",
    statement=r"""Build word2vec's Huffman tree over the words and return each word's code, its branch bits from the
root down to the word.

`counts` is a list of V word counts (word w has id w; most frequent first). Start with the V words as nodes;
V - 1 times, take out the two nodes of the smallest counts, the first one taken becoming the **left** child
(bit 0) and the second the **right** child (bit 1) of a new node whose count is their sum and whose id is
V, V + 1, ... in the order they are made. **On equal counts the node with the smaller id is taken first**
(Python's `heapq` on `(count, id)` tuples does exactly this). Return a list of V lists of ints (0/1): the
bits on the path from the root to each word, root first.""",
    reference=_huffman,
    cases=_huffman_cases,
    mistakes=(
        Mistake("ties-reversed", "your ties are broken the other way: among nodes of equal count the one with the "
                "smaller id must be taken first (a word before an inner node, an earlier word or inner node before a "
                "later one), the rule that gives seqlab's tree (Word embeddings › Hierarchical softmax).",
                _huffman_larger_first),
        Mistake("bits-swapped", "your bits are swapped: the first node taken out is the LEFT child, bit 0, the "
                "second the right child, bit 1 (word2vec's convention; Word embeddings › Hierarchical softmax).",
                lambda counts: [[1 - b for b in code] for code in _huffman(counts)]),
        Mistake("leaf-to-root", "your codes run from the word up to the root: give the bits from the root down, "
                "the order in which P(t | c)'s binary decisions are taken (Word embeddings › Hierarchical "
                "softmax).", lambda counts: [code[::-1] for code in _huffman(counts)]),
    ),
    tolerance=exact,
    follows="seqlab builds gensim's tree (heapq over nodes compared by count alone, so equal counts fall where "
            "the heap puts them); on these cases that is the tree of the rule stated. The notes ask only for a "
            "binary tree of about log2 V levels; seqlab, like word2vec, uses the Huffman tree.",
)

# ------------------------------------------------------------------------------------------------------
# 04.4 the hierarchical-softmax probability


def _hs_probability(e_c, nodes, points, codes, lengths):
    # SkipGram.pair_loss over each word's path (labels 1 - code, the padding masked) gives -log P(w | c)
    v, depth = points.shape
    mask = (torch.arange(depth)[None, :] < lengths[:, None]).to(e_c.dtype)  # (V, depth)
    output = nn.Embedding.from_pretrained(nodes)
    with torch.no_grad():
        return torch.exp(-SkipGram.pair_loss(output, e_c.expand(v, -1), points, 1.0 - codes.to(e_c.dtype), mask))


def _hs_cases() -> list[Case]:
    cases = []
    for seed, (words, dim) in enumerate([(6, 4), (9, 5), (7, 3)]):
        g = generator(seed)
        counts = np.sort(torch.randint(1, 20, (words,), generator=g).numpy())[::-1]
        tree = huffman_tree(counts.copy())
        e_c, nodes = randn(g, dim), randn(g, words - 1, dim)
        points, codes = torch.from_numpy(tree.points.astype(np.int64)), torch.from_numpy(tree.codes.astype(np.int64))
        lengths = torch.from_numpy(tree.lengths.astype(np.int64))
        score = (nodes.abs() @ e_c.abs()).max().item()
        cases.append(Case((e_c, nodes, points, codes, lengths), {"words": words, "dim": dim, "depth": points.shape[1]},
                          seed=seed, n=max(dim, points.shape[1]), magnitude=max(1.0, points.shape[1] * score)))
    return cases


HS = Exercise(
    id="04.4",
    name="hs_probabilities",
    title="The hierarchical-softmax probability",
    section="Word embeddings › Hierarchical softmax",
    signature="hs_probabilities(e_c, nodes, points, codes, lengths)",
    statement=r"""Compute, for every word $w$ of the vocabulary,
$P(w \mid c) = \prod_{k=1}^{L(w)} \sigma\bigl((1 - 2 d_k)\, \theta_{\text{node}_k}^\top e_c\bigr)$.

`e_c` is the context word's vector, (dim,); `nodes` holds the inner nodes' vectors $\theta$, (V - 1, dim);
word w's path is `points[w, :lengths[w]]` (inner-node rows of `nodes`, root first) with branch bits
`codes[w, :lengths[w]]` ($d_k$: 0 = left, 1 = right). `points` and `codes` are (V, depth) int64 tensors,
padded with 0 past each word's length; `lengths` is (V,). Return the (V,) float64 tensor of the probabilities
(they sum to 1).""",
    reference=_hs_probability,
    cases=_hs_cases,
    mistakes=(
        Mistake("sign-flipped", "your branch signs are flipped: the notes take sigma((1 - 2 d_k) theta^T e_c), "
                "so a left turn (d_k = 0) scores +theta^T e_c and a right turn -theta^T e_c (Word embeddings › "
                "Hierarchical softmax).",
                lambda e_c, nodes, points, codes, lengths: _hs_probability(e_c, nodes, points, 1 - codes, lengths)),
        Mistake("padding-counted", "your product runs over the padding too: word w's path has lengths[w] nodes, "
                "the product stops there (paths have different lengths in a Huffman tree; Word embeddings › "
                "Hierarchical softmax).",
                lambda e_c, nodes, points, codes, lengths: _hs_probability(
                    e_c, nodes, points, codes, torch.full_like(lengths, points.shape[1]))),
        Mistake("sum-of-sigmoids", "you added the sigmoids along the path: P(w | c) is their product, one binary "
                "decision after another (Word embeddings › Hierarchical softmax).",
                lambda e_c, nodes, points, codes, lengths: _hs_sum(e_c, nodes, points, codes, lengths)),
    ),
    # the scores (dot products over dim), then the sum of the logs over the path (magnitude: depth x max score)
    tolerance=rounding(products=2),
    follows="seqlab's (and word2vec's) tree is the Huffman tree of the word counts, not the notes' balanced tree.",
)


def _hs_sum(e_c, nodes, points, codes, lengths):
    # each node's sigma comes from the reference on the one-node paths points[:, k], codes[:, k]
    v, depth = points.shape
    total = torch.zeros(v, dtype=e_c.dtype)
    for k in range(depth):
        one = _hs_probability(e_c, nodes, points[:, k:k + 1], codes[:, k:k + 1], torch.ones_like(lengths))
        total = total + torch.where(lengths > k, one, torch.zeros_like(one))
    return total

EXERCISES: tuple[Exercise, ...] = (COSINE, SGNS, HUFFMAN, HS)
