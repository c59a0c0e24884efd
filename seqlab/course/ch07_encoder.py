"""Chapter 7, pretrained encoders, 07.1-07.4: WordPiece's greedy split, BERT's embeddings, GELU, LayerNorm's
epsilon (docs/tutorials/07-pretrained-encoders.md).

The references are :class:`seqlab.text.wordpiece.WordPieceTokenizer`, :class:`seqlab.models.pretrained.BertEmbeddings`,
the activations of :mod:`seqlab.nn.feedforward` and the LayerNorm of :class:`seqlab.nn.norm.Residual`; shapes are
batch-first.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

import torch
from torch import nn

from seqlab.course.exercise import Case, Exercise, Mistake, exact, generator, randn, rounding
from seqlab.models.pretrained import BertConfig, BertEmbeddings
from seqlab.nn.feedforward import ACTIVATIONS
from seqlab.nn.norm import Residual
from seqlab.text.wordpiece import WordPieceTokenizer, _from_vocab

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]


# ------------------------------------------------------------------------------------------------------
# 07.1 WordPiece's greedy longest-match-first split


def _wordpiece(words, vocab):
    # seqlab's tokenizer built from a vocab.txt (_from_vocab: the `tokenizers` WordPiece model, BERT's
    # normaliser and pre-tokenizer, which leave lowercase letters alone); its ids mapped back to pieces
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tokenizer = WordPieceTokenizer(_from_vocab(Path(folder)), max_length=512)
    ids, word_ids = tokenizer.encode_words(list(words))
    pieces = [[] for _ in words]  # one list per word
    for i, w in zip(ids, word_ids):
        if w is not None:  # [CLS] and [SEP]
            pieces[w].append(vocab[i])
    return pieces


def _greedy(word, vocab, shortest=False, whole_unk=True):
    """The split written out for the two mistakes seqlab has no option for: the shortest match first, or the
    pieces found before a dead end kept (then one [UNK])."""
    known, pieces, start = set(vocab), [], 0
    while start < len(word):
        ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
        piece = next((p for p in (("##" if start else "") + word[start:end] for end in ends) if p in known), None)
        if piece is None:
            return ["[UNK]"] if whole_unk else pieces + ["[UNK]"]
        pieces.append(piece)
        start += len(piece) - (2 if start else 0)
    return pieces


def _no_prefix(words, vocab):
    # continuation pieces looked up among the word-initial ones: the reference on a vocabulary whose "##" pieces
    # are exactly the plain ones, its "##" then dropped from the output
    plain = [p for p in vocab if not p.startswith("##")]
    return [[p.removeprefix("##") for p in word] for word in _wordpiece(words, plain + ["##" + p for p in plain
                                                                                         if p not in SPECIALS])]


WORDPIECE_CASES = [
    (["unaffable", "playing", "plays", "unaffq", "play"],
     ["un", "u", "##n", "##aff", "##a", "##ff", "##able", "aff", "able", "play", "p", "##lay", "##ing", "##s",
      "##i", "##ng"]),
    (["tokenizer", "tokens", "to", "tokenxy"],
     ["token", "to", "t", "##o", "##ken", "##k", "##en", "##ize", "##izer", "##r", "##s", "ken", "ize", "s"]),
    (["rerun", "runner", "reruns", "rex", "run", "z"],
     ["re", "r", "##e", "##run", "##r", "##un", "##n", "##ner", "##s", "run", "ner", "un"]),
]


def _wordpiece_cases() -> list[Case]:
    return [Case((words, SPECIALS + pieces), {"words": len(words), "vocab": len(SPECIALS) + len(pieces)})
            for words, pieces in WORDPIECE_CASES]


WORDPIECE = Exercise(
    id="07.1",
    name="wordpiece",
    title="WordPiece's greedy longest-match-first split",
    section="Tokens › Sub-word tokenisation (beyond the notes)",
    signature="wordpiece(words, vocab)",
    statement=r"""Split each word into WordPiece pieces, greedily, longest match first, as BERT's tokenizer does.

`words` is a list of lowercase words; `vocab` a list of pieces (with `"[UNK]"` among them): a piece that may
continue a word is written with the prefix `"##"` (`"##able"`), one that starts a word without it. For each
word, from its first character: take the **longest** vocabulary piece that matches there (with `"##"` before
it unless at the word's start), move past it, repeat. If at some point no piece matches, the **whole word**
becomes the single piece `"[UNK]"`. Return a list with one list of pieces (strings, `"##"` included) per word.""",
    reference=_wordpiece,
    cases=_wordpiece_cases,
    mistakes=(
        Mistake("shortest-match", "you took the shortest matching piece: WordPiece takes the longest piece of "
                "the vocabulary that matches at each point ('unaffable' -> un ##aff ##able; Tokens › Sub-word "
                "tokenisation).", lambda words, vocab: [_greedy(w, vocab, shortest=True) for w in words]),
        Mistake("no-continuation-prefix", "your pieces after a word's first lack the '##' prefix: a piece that "
                "continues a word is looked up, and returned, as '##piece' (Tokens › Sub-word tokenisation).",
                _no_prefix),
        Mistake("partial-unk", "a word that no pieces cover becomes ONE [UNK] as a whole, not the pieces found "
                "before the dead end and then [UNK] (Tokens › Sub-word tokenisation).",
                lambda words, vocab: [_greedy(w, vocab, whole_unk=False) for w in words]),
    ),
    tolerance=exact,
)

# ------------------------------------------------------------------------------------------------------
# 07.2 BERT's embeddings


def _bert_embeddings(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps):
    vocab, d_model = word_emb.shape
    cfg = BertConfig(vocab_size=vocab, d_model=d_model, n_heads=1, n_layers=1, d_ff=1, max_len=pos_emb.shape[0],
                     type_vocab_size=type_emb.shape[0], layer_norm_eps=eps, dropout=0.0)
    embed = BertEmbeddings(cfg).double().eval()
    with torch.no_grad():
        for param, value in ((embed.tokens.weight, word_emb), (embed.positions.table.weight, pos_emb),
                             (embed.token_types.weight, type_emb), (embed.norm.weight, gamma),
                             (embed.norm.bias, beta)):
            param.copy_(value)
        return embed(ids, token_type_ids)


def _embedding_sum(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps):
    return word_emb[ids] + pos_emb[: ids.shape[1]] + type_emb[token_type_ids]


def _norm_first(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps):
    # the reference with the positions and types at zero is lnorm(E I); then P and S added after it
    zeros = torch.zeros_like
    tokens = _bert_embeddings(ids, token_type_ids, word_emb, zeros(pos_emb), zeros(type_emb), gamma, beta, eps)
    return tokens + pos_emb[: ids.shape[1]] + type_emb[token_type_ids]


def _embedding_cases() -> list[Case]:
    cases = []
    # (batch, seq, d_model, vocab, max_len, types): all different within a case
    for seed, (batch, seq, d, vocab, max_len, types) in enumerate([(2, 5, 6, 11, 8, 3), (3, 4, 7, 9, 6, 2),
                                                                     (4, 3, 5, 13, 7, 2)]):
        g = generator(seed)
        ids = torch.randint(0, vocab, (batch, seq), generator=g)
        type_ids = torch.randint(0, types, (batch, seq), generator=g)
        word, pos, typ = randn(g, vocab, d), randn(g, max_len, d), randn(g, types, d)
        gamma, beta = 1 + 0.3 * randn(g, d), 0.3 * randn(g, d)
        x = word[ids] + pos[:seq] + typ[type_ids]
        spread = (x - x.mean(-1, keepdim=True)).abs().max() / x.std(-1, unbiased=False).min()
        cases.append(Case((ids, type_ids, word, pos, typ, gamma, beta, 1e-12),
                          {"batch": batch, "seq": seq, "d_model": d, "vocab": vocab, "max_len": max_len,
                           "types": types}, seed=seed, n=d + 3,
                          magnitude=float(d * spread * gamma.abs().max() + beta.abs().max())))
    return cases


EMBEDDINGS = Exercise(
    id="07.2",
    name="bert_embeddings",
    title="BERT's input embeddings",
    section="Pretrained encoders › BERT (beyond the notes)",
    signature="bert_embeddings(ids, token_type_ids, word_emb, pos_emb, type_emb, gamma, beta, eps)",
    statement=r"""Compute BERT's input to its first layer, $X^0 = \mathrm{lnorm}(E I + P + S\,\mathrm{type})$.

`ids` and `token_type_ids` are (batch, seq) int64; `word_emb` is the token table $E$, (vocab, d_model);
`pos_emb` the learned positions $P$, (max_len, d_model), position $t$ of every sequence (from 0) reading row
$t$; `type_emb` the token-type table $S$, (types, d_model); `gamma`, `beta` (d_model,) and `eps` (a float) are
the LayerNorm's: $\mathrm{lnorm}(x) = \frac{x - \mathrm{mean}(x)}{\sqrt{\mathrm{var}(x) + \epsilon}} \odot
\gamma + \beta$ over d_model (the biased variance). Return (batch, seq, d_model); no dropout.""",
    reference=_bert_embeddings,
    cases=_embedding_cases,
    mistakes=(
        Mistake("no-token-types", "the token-type term is missing: BERT adds a third embedding, S[type], to the "
                "tokens' and positions' before the LayerNorm (Pretrained encoders › BERT).",
                lambda ids, t, w, p, s, g, b, eps: _bert_embeddings(ids, t, w, p, torch.zeros_like(s), g, b, eps)),
        Mistake("no-layernorm", "the sum is not normalised: BERT's embedding ends with its own LayerNorm, "
                "X^0 = lnorm(E I + P + S type) (Pretrained encoders › BERT).", _embedding_sum),
        Mistake("norm-before-sum", "you normalised the token embeddings alone, then added the positions and "
                "types: the LayerNorm takes the whole sum, lnorm(E I + P + S type) (Pretrained encoders › BERT).",
                _norm_first),
    ),
    # three reductions over d_model (the mean, the variance, and the division by its root, whose relative error
    # the spread |x - mean| / std carries into the output)
    tolerance=rounding(products=3),
)

# ------------------------------------------------------------------------------------------------------
# 07.3 GELU


def _activation(name: str, x):
    """seqlab's FFN activation ``name`` (seqlab.nn.feedforward.ACTIVATIONS: "gelu", "gelu_tanh", "relu") on x."""
    return cast(Callable[[], nn.Module], ACTIVATIONS[name])()(x)


def _gelu(x):
    return _activation("gelu", x)


def _gelu_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, d) in enumerate([(2, 5, 3), (3, 2, 4), (4, 3, 6)]):
        x = 2.5 * randn(generator(seed), batch, seq, d)
        cases.append(Case((x,), {"batch": batch, "seq": seq, "d": d}, seed=seed, n=4,
                          magnitude=float(x.abs().max())))
    return cases


GELU = Exercise(
    id="07.3",
    name="gelu",
    title="GELU, exactly",
    section="Pretrained encoders › BERT (beyond the notes)",
    signature="gelu(x)",
    statement=r"""Compute BERT's activation, the exact GELU: $\mathrm{GELU}(x) = x\, \Phi(x) = \frac{x}{2}\bigl(1 +
\mathrm{erf}(x / \sqrt 2)\bigr)$, $\Phi$ the standard normal distribution function.

`x` is a float64 tensor of any shape; return a tensor of its shape, element by element.""",
    reference=_gelu,
    cases=_gelu_cases,
    mistakes=(
        Mistake("tanh-approximation", "you computed the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + "
                "0.044715 x^3))), GPT-2's (gelu_tanh): BERT's GELU is the exact x Phi(x) with erf (Pretrained "
                "encoders › BERT).", lambda x: _activation("gelu_tanh", x)),
        Mistake("sigmoid-approximation", "you computed x sigma(1.702 x), an approximation: BERT's GELU is the "
                "exact x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 (Pretrained encoders › BERT).",
                lambda x: x * torch.sigmoid(1.702 * x)),
        Mistake("relu", "you computed ReLU, max(0, x): BERT's feed-forward network uses GELU, x Phi(x), which is "
                "smooth and slightly negative for x < 0 (Pretrained encoders › BERT).",
                lambda x: _activation("relu", x)),
    ),
    # erf and a few products: a few roundings of values <= |x|
    tolerance=rounding(products=1),
)

# ------------------------------------------------------------------------------------------------------
# 07.4 LayerNorm and its epsilon


def _layer_norm(x, gamma, beta, eps):
    # Residual's LayerNorm (the one every seqlab Transformer layer, BERT's included, normalises with)
    norm = Residual(x.shape[-1], "post", eps=eps).norm.double()
    with torch.no_grad():
        norm.weight.copy_(gamma)
        norm.bias.copy_(beta)
        return norm(x)


def _eps_outside(x, gamma, beta, eps):
    # the reference without eps gives (x - mean) / std; the mistake divides by std + eps instead
    std = x.var(-1, unbiased=False, keepdim=True).sqrt()
    return (_layer_norm(x, torch.ones_like(gamma), torch.zeros_like(beta), 0.0) * std / (std + eps)) * gamma + beta


def _unbiased(x, gamma, beta, eps):
    # lnorm(k x) = k (x - mean) / sqrt(k^2 var + eps): with k^2 = d / (d - 1), the unbiased variance's output times k
    k = math.sqrt(x.shape[-1] / (x.shape[-1] - 1))
    return _layer_norm(k * x, torch.ones_like(gamma), torch.zeros_like(beta), eps) / k * gamma + beta


def _norm_cases() -> list[Case]:
    cases = []
    for seed, (batch, seq, d, eps) in enumerate([(2, 5, 4, 0.5), (3, 2, 6, 0.2), (4, 3, 5, 1.0)]):
        g = generator(seed)
        x = 0.6 * randn(g, batch, seq, d) + randn(g, batch, seq, 1)  # an offset per position: the mean matters
        gamma, beta = 1 + 0.3 * randn(g, d), 0.3 * randn(g, d)
        centred = (x - x.mean(-1, keepdim=True)).abs()
        cases.append(Case((x, gamma, beta, eps), {"batch": batch, "seq": seq, "d_model": d}, seed=seed, n=d + 2,
                          magnitude=float(d * x.abs().max() / math.sqrt(eps) * gamma.abs().max()
                                          + centred.max() + beta.abs().max())))
    return cases


LAYER_NORM = Exercise(
    id="07.4",
    name="layer_norm",
    title="LayerNorm, with its epsilon inside the square root",
    section="Transformer › Layer norm",
    signature="layer_norm(x, gamma, beta, eps)",
    statement=r"""Compute $\mathrm{lnorm}(x; \gamma, \beta) = \frac{x - \mathrm{mean}(x)}{\sqrt{\mathrm{var}(x) +
\epsilon}} \odot \gamma + \beta$ over the last axis.

`x` is (batch, seq, d_model) float64; `gamma` and `beta` are (d_model,); `eps` is a float (BERT's is
$10^{-12}$; the cases use large ones, so that where it goes shows). The mean and the variance are over
d_model, the variance the biased one (divided by d_model). Return a tensor of `x`'s shape.""",
    reference=_layer_norm,
    cases=_norm_cases,
    mistakes=(
        Mistake("eps-outside-sqrt", "your epsilon is added to the standard deviation: it belongs inside the root, "
                "(x - mean) / sqrt(var + eps) (Transformer › Layer norm).", _eps_outside),
        Mistake("unbiased-variance", "your variance is divided by d_model - 1 = {d_model} - 1: LayerNorm's is "
                "the biased one, the mean of the squared deviations over d_model (Transformer › Layer norm).",
                _unbiased),
        Mistake("no-eps", "your epsilon is missing: lnorm divides by sqrt(var(x) + eps) (Transformer › Layer "
                "norm).", lambda x, gamma, beta, eps: _layer_norm(x, gamma, beta, 0.0)),
    ),
    # the mean, the variance and the scaling, each over d_model; the root of var + eps >= sqrt(eps) bounds the gain
    tolerance=rounding(products=3),
)

EXERCISES: tuple[Exercise, ...] = (WORDPIECE, EMBEDDINGS, GELU, LAYER_NORM)
