"""Chapter 4's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import heapq

import torch


def cosine_similarity(u, v):
    dots = u @ v.T  # n, m
    return dots / (u.norm(dim=1)[:, None] * v.norm(dim=1)[None, :])  # divided by ||u_i|| ||v_j||


def sgns_update(e_c, theta, lr):
    labels = torch.zeros(theta.shape[0], dtype=theta.dtype)
    labels[0] = 1.0  # the target; the noise words have label 0
    g = lr * (labels - torch.sigmoid(theta @ e_c))  # (1 + K,): lr times minus the gradient wrt each score
    theta_new = theta + g[:, None] * e_c[None, :]  # every theta step with the old e_c
    e_new = e_c + g @ theta  # e_c's step with the old thetas
    return e_new, theta_new


def huffman_codes(counts):
    v = len(counts)
    heap = [(count, word) for word, count in enumerate(counts)]  # ties: the smaller id first
    heapq.heapify(heap)
    parent, bit = {}, {}
    for node in range(v, 2 * v - 1):
        count_0, left = heapq.heappop(heap)
        count_1, right = heapq.heappop(heap)
        parent[left], bit[left] = node, 0
        parent[right], bit[right] = node, 1
        heapq.heappush(heap, (count_0 + count_1, node))
    codes = []
    for word in range(v):
        code, node = [], word
        while node in parent:  # walk up to the root, then reverse: root first
            code.append(bit[node])
            node = parent[node]
        codes.append(code[::-1])
    return codes


def hs_probabilities(e_c, nodes, points, codes, lengths):
    probs = torch.ones(points.shape[0], dtype=e_c.dtype)
    for w in range(points.shape[0]):
        for k in range(int(lengths[w])):  # only the real nodes of the path
            score = nodes[points[w, k]] @ e_c
            probs[w] = probs[w] * torch.sigmoid((1 - 2 * codes[w, k]) * score)  # left: +score, right: -score
    return probs


def glove_weight(x, x_max, alpha):
    return torch.clamp(x / x_max, max=1.0) ** alpha  # min(1, (x / x_max)^alpha)


def glove_loss(theta, e, b, b_tilde, rows, cols, x, x_max, alpha):
    f = torch.clamp(x / x_max, max=1.0) ** alpha
    diff = (theta[rows] * e[cols]).sum(-1) + b[rows] + b_tilde[cols] - torch.log(x)  # (N,)
    return float(0.5 * (f * diff**2).sum())


def analogy(vectors, a, b, c, topn):
    unit = vectors / vectors.norm(dim=1, keepdim=True)  # (V, dim) every word at length 1
    query = unit[b] - unit[a] + unit[c]
    scores = unit @ query  # the cosine with the query, up to its (common) length
    order = torch.argsort(scores, descending=True).tolist()
    return [w for w in order if w not in (a, b, c)][:topn]


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _cosine_no_norms(u, v):
    return u @ v.T


def _cosine_one_norm(u, v):
    return (u @ v.T) / u.norm(dim=1)[:, None]


def _cosine_squared(u, v):
    return (u @ v.T) / ((u * u).sum(1)[:, None] * (v * v).sum(1)[None, :])


def _sgns_negative_sign(e_c, theta, lr):
    scores = theta @ e_c
    g = torch.empty_like(scores)
    g[0] = lr * (1 - torch.sigmoid(scores[0]))
    g[1:] = lr * torch.sigmoid(scores[1:])  # "the gradient of -log sigma(-s)" with its sign lost
    return e_c + g @ theta, theta + g[:, None] * e_c


def _sgns_ascent(e_c, theta, lr):
    labels = torch.zeros(theta.shape[0], dtype=theta.dtype)
    labels[0] = 1.0
    grad = torch.sigmoid(theta @ e_c) - labels  # dL/dscore
    return e_c + lr * grad @ theta, theta + lr * grad[:, None] * e_c  # + instead of -


def _sgns_sequential(e_c, theta, lr):
    labels = torch.zeros(theta.shape[0], dtype=theta.dtype)
    labels[0] = 1.0
    g = lr * (labels - torch.sigmoid(theta @ e_c))
    theta = theta + g[:, None] * e_c  # thetas first ...
    return e_c + g @ theta, theta  # ... then e_c from the new thetas


def _sgns_no_e_step(e_c, theta, lr):
    labels = torch.zeros(theta.shape[0], dtype=theta.dtype)
    labels[0] = 1.0
    g = lr * (labels - torch.sigmoid(theta @ e_c))
    return e_c.clone(), theta + g[:, None] * e_c


def _huffman_with(key, swap=False, reverse=False):
    def codes_of(counts):
        v = len(counts)
        heap = [(count, key(word), word) for word, count in enumerate(counts)]
        heapq.heapify(heap)
        parent, bit = {}, {}
        for node in range(v, 2 * v - 1):
            a, b = heapq.heappop(heap), heapq.heappop(heap)
            parent[a[2]], bit[a[2]] = node, 1 if swap else 0
            parent[b[2]], bit[b[2]] = node, 0 if swap else 1
            heapq.heappush(heap, (a[0] + b[0], key(node), node))
        codes = []
        for word in range(v):
            code, node = [], word
            while node in parent:
                code.append(bit[node])
                node = parent[node]
            codes.append(code if reverse else code[::-1])
        return codes

    return codes_of


def _hs_with(flip=False, all_depth=False, add=False):
    def probabilities(e_c, nodes, points, codes, lengths):
        out = []
        for w in range(points.shape[0]):
            p = torch.tensor(0.0 if add else 1.0, dtype=e_c.dtype)
            for k in range(points.shape[1] if all_depth else int(lengths[w])):
                sign = (2 * codes[w, k] - 1) if flip else (1 - 2 * codes[w, k])
                s = torch.sigmoid(sign * (nodes[points[w, k]] @ e_c))
                p = p + s if add else p * s
            out.append(p)
        return torch.stack(out)

    return probabilities


def _glove_loss_with(half=0.5, weighted=True, context_bias=True, log=True):
    def loss(theta, e, b, b_tilde, rows, cols, x, x_max, alpha):
        f = torch.clamp(x / x_max, max=1.0) ** alpha if weighted else torch.ones_like(x)
        bias = b_tilde[cols] if context_bias else b[cols]
        diff = (theta[rows] * e[cols]).sum(-1) + b[rows] + bias - (torch.log(x) if log else x)
        return float(half * (f * diff**2).sum())

    return loss


def _analogy_with(exclude=True, reverse=False, normalise=True, cosine=True):
    def answer(vectors, a, b, c, topn):
        if reverse:
            a, b = b, a
        e = vectors / vectors.norm(dim=1, keepdim=True) if normalise else vectors
        query = e[b] - e[a] + e[c]
        scores = (vectors @ query) / (vectors.norm(dim=1) if cosine else 1.0)
        order = torch.argsort(scores, descending=True).tolist()
        return [w for w in order if not exclude or w not in (a, b, c)][:topn]

    return answer


PLANTED = {
    "04.1": {"no-norms": _cosine_no_norms, "one-norm": _cosine_one_norm, "squared-norms": _cosine_squared},
    "04.2": {"negative-sign": _sgns_negative_sign, "ascent": _sgns_ascent, "sequential": _sgns_sequential,
             "e_c-not-updated": _sgns_no_e_step},
    "04.3": {"ties-reversed": _huffman_with(lambda i: -i), "bits-swapped": _huffman_with(lambda i: i, swap=True),
             "leaf-to-root": _huffman_with(lambda i: i, reverse=True)},
    "04.4": {"sign-flipped": _hs_with(flip=True), "padding-counted": _hs_with(all_depth=True),
             "sum-of-sigmoids": _hs_with(add=True)},
    "04.5": {"no-cap": lambda x, x_max, alpha: (x / x_max) ** alpha,
             "ratio-inverted": lambda x, x_max, alpha: torch.clamp(x_max / x, max=1.0) ** alpha,
             "exponent-on-x-only": lambda x, x_max, alpha: torch.clamp(x**alpha / x_max, max=1.0)},
    "04.6": {"not-halved": _glove_loss_with(half=1.0), "unweighted": _glove_loss_with(weighted=False),
             "one-bias": _glove_loss_with(context_bias=False), "no-log": _glove_loss_with(log=False)},
    "04.7": {"query-words-kept": _analogy_with(exclude=False), "offset-reversed": _analogy_with(reverse=True),
             "not-normalised": _analogy_with(normalise=False), "dot-product": _analogy_with(cosine=False)},
}
