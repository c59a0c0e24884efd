"""Chapter 7's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

import math

import torch


def wordpiece(words, vocab):
    known = set(vocab)
    out = []
    for word in words:
        pieces, start = [], 0
        while start < len(word):
            prefix = "##" if start > 0 else ""  # a continuation piece carries ##
            for end in range(len(word), start, -1):  # the longest match first
                if prefix + word[start:end] in known:
                    pieces.append(prefix + word[start:end])
                    start = end
                    break
            else:  # nothing matches here: the whole word is unknown
                pieces = ["[UNK]"]
                break
        out.append(pieces)
    return out


def bert_embeddings(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps):
    seq = ids.shape[1]
    x = word_emb[ids] + pos_emb[:seq] + type_emb[token_type_ids]  # batch, seq, d_model
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased: divided by d_model
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta  # BERT's LayerNorm on the sum


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))  # x Phi(x)


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased: divided by d_model
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta  # eps inside the root


def additive_mask(attention_mask):
    m = torch.zeros(attention_mask.shape, dtype=torch.float64)
    m[~attention_mask] = float("-inf")  # padding: -inf; real tokens: 0
    return m[:, None, None, :]  # batch, 1 (head), 1 (query), seq (key)


def mean_pool(hidden, attention_mask):
    m = attention_mask.to(hidden.dtype)[:, :, None]  # batch, seq, 1
    return (hidden * m).sum(1) / m.sum(1)  # over the real tokens only


def sentence_cosines(hidden, attention_mask):
    m = attention_mask.to(hidden.dtype)[:, :, None]  # batch, seq, 1
    u = (hidden * m).sum(1) / m.sum(1)  # batch, d_model: the mean over the real tokens
    u = u / u.norm(dim=-1, keepdim=True)  # unit length
    return u @ u.T  # batch, batch


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}


def _wordpiece_with(shortest=False, prefix="##", whole_unk=True):
    def split(words, vocab):
        known = set(vocab)
        out = []
        for word in words:
            pieces, start = [], 0
            while start < len(word):
                ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
                for end in ends:
                    piece = (prefix if start > 0 else "") + word[start:end]
                    if piece in known:
                        pieces.append(piece)
                        start = end
                        break
                else:
                    pieces = ["[UNK]"] if whole_unk else pieces + ["[UNK]"]
                    break
            out.append(pieces)
        return out

    return split


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _embeddings_with(types=True, norm=True, norm_first=False):
    def embed(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps):
        seq = ids.shape[1]
        extra = pos_emb[:seq] + (type_emb[token_type_ids] if types else 0)
        if norm_first:
            return _layer_norm(word_emb[ids], gamma, beta, eps) + extra
        x = word_emb[ids] + extra
        return _layer_norm(x, gamma, beta, eps) if norm else x

    return embed


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _norm_with(outside=False, unbiased=False, eps_used=True):
    def norm(x, gamma, beta, eps):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=unbiased, keepdim=True)
        e = eps if eps_used else 0.0
        scale = torch.sqrt(var) + e if outside else torch.sqrt(var + e)
        return (x - mean) / scale * gamma + beta

    return norm


def _mask_with(fill=float("-inf"), inverted=False, queries=False):
    def additive(attention_mask):
        keep = ~attention_mask if inverted else attention_mask
        m = (1.0 - keep.double()) * fill if math.isfinite(fill) else torch.zeros(keep.shape, dtype=torch.float64)
        if not math.isfinite(fill):
            m[~keep] = fill
        return m[:, None, :, None] if queries else m[:, None, None, :]

    return additive


def _pool_with(over_padding=False, by_seq=False, total=False):
    def pool(hidden, attention_mask):
        if over_padding:
            return hidden.mean(1)
        m = attention_mask.to(hidden.dtype)[:, :, None]
        s = (hidden * m).sum(1)
        return s if total else s / (hidden.shape[1] if by_seq else m.sum(1))

    return pool


def _cosines_with(normalise=True, cls=False, over_padding=False, token_units=False):
    def cosines(hidden, attention_mask):
        if token_units:
            hidden = hidden / hidden.norm(dim=-1, keepdim=True)
        if cls:
            u = hidden[:, 0]
        elif over_padding:
            u = hidden.mean(1)
        else:
            u = mean_pool(hidden, attention_mask)
        if normalise and not token_units:
            u = u / u.norm(dim=-1, keepdim=True)
        return u @ u.T

    return cosines


PLANTED = {
    "07.1": {"shortest-match": _wordpiece_with(shortest=True), "no-continuation-prefix": _wordpiece_with(prefix=""),
             "partial-unk": _wordpiece_with(whole_unk=False)},
    "07.2": {"no-token-types": _embeddings_with(types=False), "no-layernorm": _embeddings_with(norm=False),
             "norm-before-sum": _embeddings_with(norm_first=True)},
    "07.3": {"tanh-approximation": _gelu_tanh, "sigmoid-approximation": lambda x: x * torch.sigmoid(1.702 * x),
             "relu": lambda x: torch.clamp(x, min=0.0)},
    "07.4": {"eps-outside-sqrt": _norm_with(outside=True), "unbiased-variance": _norm_with(unbiased=True),
             "no-eps": _norm_with(eps_used=False)},
    "07.5": {"polarity-inverted": _mask_with(inverted=True), "finite-fill": _mask_with(fill=-10000.0),
             "query-axis": _mask_with(queries=True)},
    "07.6": {"mean-over-padding": _pool_with(over_padding=True), "divided-by-seq": _pool_with(by_seq=True),
             "sum-not-mean": _pool_with(total=True)},
    "07.7": {"not-normalised": _cosines_with(normalise=False), "cls-pooling": _cosines_with(cls=True),
             "mean-over-padding": _cosines_with(over_padding=True),
             "normalised-tokens": _cosines_with(token_units=True)},
}
