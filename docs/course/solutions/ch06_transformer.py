"""Chapter 6's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # batch, head, seq_q, seq_k
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # True = may attend: the others get -inf
    weights = torch.softmax(scores, dim=-1)  # over the keys: each query's weights sum to 1
    return weights @ v  # batch, head, seq_q, depth


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _attention_with(scale, fill_where_true=False, use_mask=True, axis=-1):
    def attention(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / scale(q.shape[-1])
        if mask is not None and use_mask:
            scores = scores.masked_fill(mask if fill_where_true else ~mask, float("-inf"))
        return torch.softmax(scores, dim=axis) @ v  # a fully masked row gives NaN: the checker still names it

    return attention


PLANTED = {
    "06.1": {
        "unscaled": _attention_with(lambda d: 1.0),
        "divided-by-d_k": _attention_with(lambda d: d),
        "mask-inverted": _attention_with(math.sqrt, fill_where_true=True),
        "mask-ignored": _attention_with(math.sqrt, use_mask=False),
        "softmax-over-queries": _attention_with(math.sqrt, axis=-2),
    },
}
