"""Chapter 5, sequence to sequence with attention, 05.1-05.3: Bahdanau's additive attention, one decoder step,
beam search with the length penalty (docs/tutorials/05-seq2seq-attention.md).

The references are :class:`seqlab.nn.additive.AdditiveAttention`, the decoder of :mod:`seqlab.models.seq2seq` and
:func:`seqlab.decoding.beam.beam_search` (driven by a scripted distribution); shapes are batch-first, masks boolean
with True = may attend (a real source token).
"""

from __future__ import annotations

import math

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.decoding.beam import Stepper, beam_search, length_penalty
from seqlab.models.seq2seq import AttentionDecoder, DecoderState, EncoderOutput, Seq2SeqConfig
from seqlab.nn.additive import AdditiveAttention
from seqlab.nn.masks import masked_softmax

# ------------------------------------------------------------------------------------------------------
# 05.1 Bahdanau's additive attention


def _lengths_mask(g: torch.Generator, batch: int, src: int) -> torch.Tensor:
    """batch, src: True on each sentence's real tokens; the first sentence has no padding, the others some."""
    lengths = torch.randint(1, src, (batch,), generator=g)
    lengths[0] = src
    return torch.arange(src) < lengths[:, None]


def _attention_cases() -> list[Case]:
    cases = []
    # (batch, src, query, key, attn): all different within a case
    for seed, (batch, src, query, key, attn) in enumerate([(2, 5, 3, 4, 6), (3, 4, 6, 5, 2), (4, 6, 2, 7, 3)]):
        g = generator(100 + seed)
        s, a = randn(g, batch, query), randn(g, batch, src, key)
        w_s, w_h, v = randn(g, attn, query), randn(g, attn, key), randn(g, attn)
        mask = _lengths_mask(g, batch, src)
        pre = max((w_s.abs() @ s.abs().T).max().item(), (a.abs() @ w_h.abs().T).max().item())
        cases.append(Case((s, a, mask, w_s, w_h, v), {"batch": batch, "src": src, "query": query, "key": key,
                                                      "attn": attn}, seed=100 + seed,
                          n=max(src, query, key, attn),
                          magnitude=max(pre, v.abs().sum().item(), src * a.abs().max().item(), 1.0)))
    return cases


def _additive_module(w_s, w_h, v) -> AdditiveAttention:
    attend = AdditiveAttention(w_s.shape[1], w_h.shape[1], w_s.shape[0]).double()
    with torch.no_grad():
        attend.W_s.weight.copy_(w_s)
        attend.W_h.weight.copy_(w_h)
        attend.v.weight.copy_(v[None, :])
    return attend


@torch.no_grad()
def _additive(query, keys, mask, w_s, w_h, v):
    return _additive_module(w_s, w_h, v)(query, keys, mask)  # (context, alpha)


@torch.no_grad()
def _additive_untanhed(query, keys, mask, w_s, w_h, v):
    # AdditiveAttention applies tanh inside forward; its pieces (the three linear maps and seqlab's masked
    # softmax) give the score without it
    attend = _additive_module(w_s, w_h, v)
    e = attend.v(attend.W_s(query)[:, None, :] + attend.project_keys(keys)).squeeze(-1)  # batch, src
    alpha = masked_softmax(e, mask)
    return torch.bmm(alpha[:, None, :], keys).squeeze(1), alpha


@torch.no_grad()
def _additive_over_batch(query, keys, mask, w_s, w_h, v):
    # the same scores, normalised over the batch (dim 0) instead of the source positions: seqlab's masked
    # softmax of the transposed scores
    attend = _additive_module(w_s, w_h, v)
    e = attend.v(torch.tanh(attend.W_s(query)[:, None, :] + attend.project_keys(keys))).squeeze(-1)  # batch, src
    alpha = masked_softmax(e.T, mask.T).T  # batch, src: each column sums to 1
    return torch.bmm(alpha[:, None, :], keys).squeeze(1), alpha


ADDITIVE = Exercise(
    id="05.1",
    name="additive_attention",
    title="Bahdanau's additive attention",
    section="Sequence to sequence › Bahdanau attention",
    signature="additive_attention(query, keys, mask, W_s, W_h, v)",
    statement=r"""Compute one decoder step's additive attention: the scores $e_{t,t'} = v^\top \tanh(W_s s_{t-1} +
W_h a_{t'})$, the weights $\alpha_{t,t'} = \mathrm{softmax}_{t'}(e_{t,t'})$ over the source positions and the context
$c_t = \sum_{t'} \alpha_{t,t'} a_{t'}$.

`query` is $s_{t-1}$, (batch, query); `keys` are the annotations $a_{t'}$, (batch, src, key); `mask` is a boolean
(batch, src) tensor, **True on a real source token** (it may be attended to), False on padding, which gets weight
0 (its score is $-\infty$ before the softmax). `W_s` is (attn, query), `W_h` (attn, key) and `v` (attn,): no biases,
$W_s s$ is `W_s @ s`. Return the tuple `(context, alpha)`: context (batch, key), alpha (batch, src). Every sentence
has at least one real token.""",
    reference=_additive,
    cases=_attention_cases,
    mistakes=(
        Mistake("no-tanh", "your scores skip the tanh: e_{{t,t'}} = v^T tanh(W_s s_{{t-1}} + W_h a_{{t'}}), the "
                "hidden layer of Bahdanau's scoring network goes through tanh before v (Sequence to sequence › "
                "Bahdanau attention).", _additive_untanhed),
        Mistake("softmax-over-batch", "the softmax runs over the batch (dim 0): each step's weights are normalised "
                "over the {src} source positions, alpha_{{t,t'}} = exp(e_{{t,t'}}) / sum_k exp(e_{{t,k}}), so each "
                "row of alpha sums to 1 (Sequence to sequence › Bahdanau attention).", _additive_over_batch),
        Mistake("padding-not-masked", "the padding is not masked: source positions where the mask is False must "
                "get weight 0 (score -inf before the softmax), so a sentence's context does not depend on its "
                "padding (Sequence to sequence › Bahdanau attention).",
                lambda query, keys, mask, w_s, w_h, v: _additive(query, keys, None, w_s, w_h, v)),
        Mistake("mask-inverted", "the mask's polarity is inverted: True marks a real source token that MAY be "
                "attended to; the positions where the mask is False (padding) get -inf (Sequence to sequence › "
                "Bahdanau attention).",
                lambda query, keys, mask, w_s, w_h, v: _additive(query, keys, ~mask, w_s, w_h, v)),
    ),
    # five chained reductions (W_s s, W_h a, v^T tanh(.), the softmax's sum over src, alpha times a over src);
    # tanh passes an error on with gain <= 1, v multiplies it by at most sum |v| (in the magnitude), and the
    # softmax and the weighted sum move the output by at most 2 max|a| per unit of score error
    tolerance=rounding(products=5, gain=2.0),
    follows="seqlab's (Bahdanau et al.'s) score: the notes leave the score c_{t,t'} of the softmax unspecified; "
            "seqlab writes it e_{t,t'} = v^T tanh(W_s s_{t-1} + W_h a_{t'}), keeping c_t for the context.",
)

# ------------------------------------------------------------------------------------------------------
# 05.2 one decoder step


def _decoder_cases() -> list[Case]:
    cases = []
    # (batch, src, vocab, d_model, hidden, attn): all different; annotations are 2 * hidden wide
    for seed, (batch, src, vocab, d_model, hidden, attn) in enumerate([(2, 5, 7, 3, 4, 6), (3, 6, 9, 5, 2, 4),
                                                                       (4, 3, 8, 6, 5, 7)]):
        g = generator(200 + seed)
        memory_size = 2 * hidden
        params = {
            "E": randn(g, vocab, d_model) * 0.7,
            "W_s": randn(g, attn, hidden) * 0.6, "W_h": randn(g, attn, memory_size) * 0.6, "v": randn(g, attn),
            "W_ih": randn(g, 3 * hidden, d_model + memory_size) * 0.5, "W_hh": randn(g, 3 * hidden, hidden) * 0.5,
            "b_ih": randn(g, 3 * hidden) * 0.3, "b_hh": randn(g, 3 * hidden) * 0.3,
            "W_r": randn(g, d_model, hidden + memory_size + d_model) * 0.5, "b_r": randn(g, d_model) * 0.3,
            "W_o": randn(g, vocab, d_model),
        }
        prev = torch.randint(0, vocab, (batch,), generator=g)
        s_prev, memory = torch.tanh(randn(g, batch, hidden)), randn(g, batch, src, memory_size)
        mask = _lengths_mask(g, batch, src)
        width = max(d_model + memory_size, hidden + memory_size + d_model)
        big = max(p.abs().max().item() for p in params.values())
        cases.append(Case((prev, s_prev, memory, mask, params),
                          {"batch": batch, "src": src, "vocab": vocab, "d_model": d_model, "hidden": hidden,
                           "attn": attn}, seed=200 + seed, n=max(width, src, attn),
                          magnitude=max(width * big * max(memory.abs().max().item(), 1.0), attn * big,
                                        src * memory.abs().max().item(), d_model * big)))
    return cases


def _decoder_module(params) -> AttentionDecoder:
    vocab, d_model = params["E"].shape
    hidden, attn = params["W_s"].shape[1], params["W_s"].shape[0]
    cfg = Seq2SeqConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, cell="gru", n_layers=1, d_model=d_model,
                        hidden_size=hidden, attn_size=attn, dropout=0.0, tie_embeddings=False)
    torch.manual_seed(0)  # every weight is overwritten below; the seed only keeps the caller's state apart
    decoder = AttentionDecoder(cfg).double().eval()
    with torch.no_grad():
        decoder.embed.weight.copy_(params["E"])
        decoder.attention.W_s.weight.copy_(params["W_s"])
        decoder.attention.W_h.weight.copy_(params["W_h"])
        decoder.attention.v.weight.copy_(params["v"][None, :])
        decoder.rnn.weight_ih_l0.copy_(params["W_ih"])
        decoder.rnn.weight_hh_l0.copy_(params["W_hh"])
        decoder.rnn.bias_ih_l0.copy_(params["b_ih"])
        decoder.rnn.bias_hh_l0.copy_(params["b_hh"])
        decoder.readout.weight.copy_(params["W_r"])
        decoder.readout.bias.copy_(params["b_r"])
        decoder.head.weight.copy_(params["W_o"])
    return decoder


def _decoder_inputs(decoder, s_prev, memory, mask):
    enc = EncoderOutput(memory, decoder.attention.project_keys(memory), mask)
    return DecoderState(s_prev[None].contiguous()), enc  # layers 1, batch, hidden


@torch.no_grad()
def _decoder_step(prev, s_prev, memory, mask, params):
    decoder = _decoder_module(params)
    state, enc = _decoder_inputs(decoder, s_prev, memory, mask)
    logits, new, alpha = decoder(prev, state, enc)
    return logits, new.h[0], alpha


@torch.no_grad()
def _decoder_readout_untanhed(prev, s_prev, memory, mask, params):
    # AttentionDecoder.logits applies the tanh; its recurrence and its two linear maps give the readout without it
    decoder = _decoder_module(params)
    state, enc = _decoder_inputs(decoder, s_prev, memory, mask)
    features, new, alpha = decoder.recur(prev, state, enc)
    return decoder.head(decoder.readout(features)), new.h[0], alpha


def _decoder_gru_variant(prev, s_prev, memory, mask, params, update_swapped=False, reset_before_w=False):
    # seqlab's step with the GRU cell written out (torch.nn.GRU's weights in seqlab's module, rows r, z, n) and
    # one of two learner's slips in it; torch.nn.GRU cannot be fed into them. The attention, the embedding and the
    # readout are the module's own
    decoder = _decoder_module(params)
    state, enc = _decoder_inputs(decoder, s_prev, memory, mask)
    e = decoder.embed(prev)  # batch, d_model
    context, alpha = decoder.attention(s_prev, memory, mask, enc.keys)  # (batch, 2*hidden), (batch, src)
    x = torch.cat([e, context], dim=-1)  # batch, d_model + 2*hidden
    rnn = decoder.rnn
    gi = x @ rnn.weight_ih_l0.T + rnn.bias_ih_l0  # batch, 3*hidden
    gh = s_prev @ rnn.weight_hh_l0.T + rnn.bias_hh_l0  # batch, 3*hidden
    (i_r, i_z, i_n), (h_r, h_z, h_n) = gi.chunk(3, -1), gh.chunk(3, -1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    if reset_before_w:  # Cho et al.'s W_hn (r * h) + b_hn in place of torch's r * (W_hn h + b_hn)
        w_hn, b_hn = rnn.weight_hh_l0.chunk(3, 0)[2], rnn.bias_hh_l0.chunk(3, 0)[2]
        h_n = (r * s_prev) @ w_hn.T + b_hn
        n = torch.tanh(i_n + h_n)
    else:
        n = torch.tanh(i_n + r * h_n)
    s_t = z * n + (1 - z) * s_prev if update_swapped else (1 - z) * n + z * s_prev
    return decoder.logits(torch.cat([s_t, context, e], dim=-1)), s_t, alpha


@torch.no_grad()
def _decoder_update_swapped(prev, s_prev, memory, mask, params):
    return _decoder_gru_variant(prev, s_prev, memory, mask, params, update_swapped=True)


@torch.no_grad()
def _decoder_reset_before_w(prev, s_prev, memory, mask, params):
    return _decoder_gru_variant(prev, s_prev, memory, mask, params, reset_before_w=True)


@torch.no_grad()
def _decoder_unmasked(prev, s_prev, memory, mask, params):
    return _decoder_step(prev, s_prev, memory, torch.ones_like(mask), params)


DECODER = Exercise(
    id="05.2",
    name="decoder_step",
    title="One step of the attentive GRU decoder",
    section="Sequence to sequence › Encoder-decoder (beyond the notes)",
    signature="decoder_step(prev, s_prev, memory, mask, params)",
    statement=r"""One step of seqlab's decoder (one GRU layer, no dropout): attend with the previous state, update
the state from the previous word and the context, read out the next word's logits:

$c_t, \alpha_t = \mathrm{attention}(s_{t-1}, a)$ (exercise 05.1), $s_t = \mathrm{GRU}([E\,y_{t-1} ; c_t],\ s_{t-1})$,
logits $= W_o \tanh(W_r [s_t ; c_t ; E\,y_{t-1}] + b_r)$.

`prev` holds the previous tokens $y_{t-1}$, (batch,) int64; `s_prev` is $s_{t-1}$, (batch, hidden); `memory` the
annotations $a_{t'}$, (batch, src, 2·hidden); `mask` (batch, src) boolean, True on real source tokens. `params` is
a dict of float64 tensors: `E` (vocab, d_model) the target embedding (row $y$ is $E\,y$); the attention's `W_s`
(attn, hidden), `W_h` (attn, 2·hidden), `v` (attn,); the GRU's `W_ih` (3·hidden, d_model + 2·hidden), `W_hh`
(3·hidden, hidden), `b_ih`, `b_hh` (3·hidden,), rows in torch.nn.GRU's order r, z, n:
$r = \sigma(W_{ir} x + b_{ir} + W_{hr} h + b_{hr})$, $z = \sigma(\dots)$ likewise,
$n = \tanh(W_{in} x + b_{in} + r \odot (W_{hn} h + b_{hn}))$, $s_t = (1 - z) \odot n + z \odot h$, with $x = [E\,y_{t-1}
; c_t]$ and $h = s_{t-1}$; the readout's `W_r` (d_model, hidden + 2·hidden + d_model), `b_r` (d_model,); `W_o`
(vocab, d_model). Return `(logits, s_t, alpha)`: (batch, vocab), (batch, hidden), (batch, src).""",
    reference=_decoder_step,
    cases=_decoder_cases,
    mistakes=(
        Mistake("readout-no-tanh", "your readout skips the tanh: p(y_t | y_<t, x) = softmax(W_o tanh(W_r [s_t ; "
                "c_t ; E y_{{t-1}}] + b_r)) (Sequence to sequence › Encoder-decoder).", _decoder_readout_untanhed),
        Mistake("update-gate-swapped", "the GRU's update gate is on the wrong term (the notes' Gamma_u weights the "
                "candidate): in torch.nn.GRU's convention s_t = (1 - z) * n + z * s_{{t-1}}, z keeping the old "
                "state (Recurrent neural networks › Gated recurrent unit (beyond the notes)).",
                _decoder_update_swapped),
        Mistake("reset-before-W_hn", "your candidate state applies the reset gate before W_hn, W_hn (r * h) + "
                "b_hn (Cho et al.'s form); torch.nn.GRU's, which the statement gives, is r * (W_hn h + b_hn) "
                "(Recurrent neural networks › Gated recurrent unit (beyond the notes)).", _decoder_reset_before_w),
        Mistake("padding-not-masked", "the source padding is not masked: positions where the mask is False must "
                "get attention weight 0 (Sequence to sequence › Bahdanau attention).", _decoder_unmasked),
    ),
    # about nine chained reductions (three of the attention, two of the GRU's gates, the readout, W_o, and the
    # attention's softmax and weighted sum); gates and tanh pass errors on with gain <= 1, the weights' sizes are
    # in the magnitude
    tolerance=rounding(products=9, gain=4.0),
    follows="seqlab's decoder (Bahdanau et al.'s, with torch.nn.GRU's gate convention and a tanh readout): the "
            "notes name the encoder-decoder and its attention but leave the decoder's step and readout open.",
)

# ------------------------------------------------------------------------------------------------------
# 05.3 beam search with the length penalty

SOS, EOS = 0, 1  # the scripted distributions' <sos> (never an output: log-prob -inf) and <eos>


class _Scripted(Stepper):
    """A 'model' whose next-token log-probabilities are a table keyed by the output prefix (a tuple of ids)."""

    def __init__(self, table: dict, max_len: int) -> None:
        self.table, self.max_len = table, max_len
        self.prefixes: list[tuple] = [()]
        self.calls = 0

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.calls:  # the first call feeds <sos>, which is no part of the prefix
            self.prefixes = [p + (t,) for p, t in zip(self.prefixes, tokens.tolist())]
        self.calls += 1
        return torch.stack([self.table[p] for p in self.prefixes])  # rows, vocab

    def select(self, rows: torch.Tensor) -> None:
        self.prefixes = [self.prefixes[r] for r in rows.tolist()]


def _all_prefixes(vocab: int, max_len: int) -> list[tuple]:
    prefixes: list[tuple[int, ...]] = [()]
    layer: list[tuple[int, ...]] = [()]
    for _ in range(max_len - 1):
        layer = [p + (t,) for p in layer for t in range(1, vocab)]  # every token but <sos>, <eos> included
        prefixes += layer
    return prefixes


def _beam_cases() -> list[Case]:
    # (vocab, beam, max_len, alpha): sizes all different; <eos> made likely enough that some hypotheses finish
    # before the limit and some at it
    return [_beam_case(seed, *sizes) for seed, sizes in BEAM_SEEDS]


BEAM_SEEDS = [(334, (6, 2, 4, 0.6)), (300, (7, 3, 5, 1.5)), (307, (5, 2, 3, 2.0))]


def _beam_case(seed: int, vocab: int, beam: int, max_len: int, alpha: float) -> Case:
    g = generator(seed)
    table = {}
    for prefix in _all_prefixes(vocab, max_len):
        logits = 1.5 * randn(g, vocab)
        logits[EOS] += 0.4 * len(prefix) - 0.3
        logits[SOS] = -math.inf
        table[prefix] = torch.log_softmax(logits, dim=-1)
    worst = max(float(-t[1:].min()) for t in table.values())
    return Case((table, beam, max_len, alpha), {"vocab": vocab, "beam": beam, "max_len": max_len},
                seed=seed, n=max(vocab, max_len), magnitude=max_len * worst + vocab)


def _beam(log_probs, beam, max_len, alpha):
    best = beam_search(_Scripted(log_probs, max_len), torch.zeros(1, 1, dtype=torch.long),
                       torch.ones(1, 1, dtype=torch.bool), beam=beam, sos_id=SOS, eos_id=EOS, alpha=alpha,
                       max_new=max_len)[0]
    return best.tokens, best.score, best.log_prob


def _learner_beam(log_probs, beam, max_len, alpha, add_previous=True, keep_finished=False):
    """A search with one of two learner's bugs, for the two mistakes seqlab's beam_search cannot be fed into (it adds
    the previous log-probability and sets aside a prefix ending in <eos> inside its step; its length_penalty is
    used here). Otherwise it is the
    procedure the statement gives (and beam.py's): 2 * beam candidates, the first beam of them not ending in <eos>
    live, <eos> among the first beam finished, the rest of the first beam finished at the limit."""
    live: list[tuple[tuple, float]] = [((), 0.0)]
    finished: list[tuple[list, float, float]] = []
    for t in range(1, max_len + 1):
        candidates = []
        for prefix, score in live:
            row = log_probs[prefix].tolist()
            candidates += [(prefix + (v,), (score if add_previous else 0.0) + row[v]) for v in range(len(row))]
        candidates.sort(key=lambda c: -c[1])  # stable: ties keep the prefix-then-token order
        top = [c for c in candidates[: 2 * beam] if c[1] != -math.inf]
        for prefix, score in top[:beam]:
            if prefix[-1] == EOS or t == max_len:
                body = list(prefix[:-1]) if prefix[-1] == EOS else list(prefix)
                finished.append((body, score / length_penalty(t, alpha), score))
        if len(finished) >= beam or t == max_len:
            break
        live = top[:beam] if keep_finished else [c for c in top if c[0][-1] != EOS][:beam]
    return max(finished, key=lambda h: h[1])


BEAM = Exercise(
    id="05.3",
    name="beam_search",
    title="Beam search with the length penalty",
    section="Sequence to sequence › Decoding (beyond the notes)",
    signature="beam_search(log_probs, beam, max_len, alpha)",
    statement=r"""Beam search on a scripted model, as seqlab's `beam_search` does it: return the best hypothesis by
the length-normalised score $\mathrm{score}(Y) = \log p(Y) / \mathrm{lp}(Y)$, $\mathrm{lp}(Y) = ((5 + |Y|)/6)^\alpha$.

`log_probs` is a dict: for every output prefix (a tuple of token ids, `()` first) of fewer than `max_len` tokens,
the (vocab,) float64 tensor of $\log p(\text{next token} \mid \text{prefix})$. Token 0 is `<sos>` (log-prob
$-\infty$, never output), token 1 is `<eos>`. The beam starts with the single empty prefix, log-probability 0. At step
$t = 1, 2, \dots$: extend every live prefix by every token, scoring each candidate by the prefix's summed
log-probability plus the new token's; take the `2 * beam` best candidates (best first; ties: the earlier live prefix,
then the smaller token id), drop those at $-\infty$. Among the first `beam` of them, a candidate ending in `<eos>` is
**finished** (its tokens without the `<eos>`; $|Y| = t$ counts the `<eos>`), and at step $t =$ `max_len` every one of
the first `beam` is finished (its $|Y| = t$). Stop when `beam` hypotheses are finished or at `max_len`; otherwise the
first `beam` candidates **not** ending in `<eos>` are the next live prefixes. Return `(tokens, score, log_prob)` of
the finished hypothesis with the highest score (ties: the first finished): a list of ints and two floats.""",
    reference=_beam,
    cases=_beam_cases,
    mistakes=(
        Mistake("no-previous-log-prob", "your candidates are scored by the new token's log-probability alone: "
                "a candidate's score is the prefix's summed log-probability plus the new token's, log p(Y) = "
                "sum_t log p(y_t | y_<t, x) (Sequence to sequence › Decoding).",
                lambda log_probs, beam, max_len, alpha: _learner_beam(log_probs, beam, max_len, alpha,
                                                                      add_previous=False)),
        Mistake("no-length-penalty", "the finished hypotheses are ranked by log p(Y) alone: the score divides it "
                "by lp(Y) = ((5 + |Y|) / 6)^alpha (Sequence to sequence › Decoding).",
                lambda log_probs, beam, max_len, alpha: _beam(log_probs, beam, max_len, 0.0)),
        Mistake("length-penalty-inverted", "the length penalty's exponent has the wrong sign (log p(Y) multiplied "
                "by lp(Y)): score(Y) = log p(Y) / lp(Y), lp(Y) = ((5 + |Y|) / 6)^alpha (Sequence to sequence › "
                "Decoding).", lambda log_probs, beam, max_len, alpha: _beam(log_probs, beam, max_len, -alpha)),
        Mistake("finished-extended", "a hypothesis that ended in <eos> stays in the beam and is extended: it is "
                "finished, set aside, and the live prefixes are the best candidates not ending in <eos> (Sequence "
                "to sequence › Decoding).",
                lambda log_probs, beam, max_len, alpha: _learner_beam(log_probs, beam, max_len, alpha,
                                                                      keep_finished=True)),
    ),
    # the score sums max_len log-probabilities (seqlab's log_softmax renormalises each row: a second reduction
    # over the vocabulary) and divides by lp once
    tolerance=rounding(products=2, gain=1.0),
    follows="seqlab's search (GNMT's length penalty, fairseq's stopping rule): the notes stop at the decoder's "
            "distribution and do not describe decoding.",
)

EXERCISES: tuple[Exercise, ...] = (ADDITIVE, DECODER, BEAM)
