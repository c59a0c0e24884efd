"""Greedy and beam-search decoding for encoder-decoder models (translation).

Both search for argmax_y log p(y | x) = sum_t log p(y_t | y_<t, x), the output starting after <sos>:

- greedy: y_t = argmax_v log p(v | y_<t, x), until <eos> or the length limit;
- beam search keeps the K best prefixes. Each step extends every live prefix by every token and takes
  the 2K best candidates by cumulative log-probability. A candidate ending in <eos> that ranks among
  the first K is finished; the first K candidates that do not end in <eos> stay live (so the beam
  always holds K live prefixes). Finished hypotheses are ranked by the GNMT length-normalised score
  (Wu et al. 2016, section 7, without the coverage penalty)

      score(Y) = log p(Y | X) / lp(Y),    lp(Y) = ((5 + |Y|) / 6) ** alpha

  where |Y| counts the generated tokens including the final <eos>; alpha = 0 turns it off.

Stopping rule (fairseq's): a sentence stops as soon as it has K finished hypotheses; at its length
limit the K best candidates of that step are finished whether or not they end in <eos>. The result is
the finished hypothesis with the best normalised score (ties: the first found). With K = 1 this is
exactly greedy decoding: a live prefix is only ever extended by its best token.

Both are batched: sentences of a batch decode together, each with its own length limit, and a sentence
leaves the batch when it stops, so its result does not depend on the rest of the batch (source padding is
masked). Default limit: min(2 * source length + 10, the model's max_len).

Models: :class:`seqlab.models.transformer.EncoderDecoder` (the decoder's self-attention uses its KV
cache: each step feeds one token; ``use_cache=False`` re-runs the whole prefix, the reference path) and
:class:`seqlab.models.seq2seq.Seq2SeqAttention` (its recurrent state is the cache). Both are driven
through a :class:`Stepper`: ``logits(tokens)`` feeds each row's last token and returns the next-token
logits, ``select(rows)`` keeps, repeats or reorders rows.

Shapes: batch (sentences), rows (sentence x beam), src, vocab.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seqlab.data.batching import pad_batch
from seqlab.base.errors import SeqlabError
from seqlab.models.seq2seq import Seq2SeqAttention
from seqlab.models.transformer import EncoderDecoder
from seqlab.nn.attention import KVCache


DEFAULT_ALPHA = 0.6  # GNMT length-penalty exponent (Wu et al. 2016 use 0.6 - 0.7): translation's and the LM's


@dataclass(frozen=True)
class Hypothesis:
    """One decoded output: the tokens after <sos> (without the final <eos>) and their scores."""

    tokens: list[int]
    score: float  # log p(Y | X) / lp(Y), the GNMT length-normalised score
    log_prob: float  # log p(Y | X), summed over the tokens and the <eos> when there is one
    finished: bool  # ended with <eos> (False: stopped at the length limit)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016, section 7)."""
    return ((5.0 + length) / 6.0) ** alpha


def default_max_new(src_len: int, model_max: int) -> int:
    """The default length limit of one translation: min(2 * source length + 10, the model's max_len)."""
    return min(2 * src_len + 10, model_max)


# ------------------------------------------------------------------------------------------------------
# steppers: one decoding step of a model, rows that can be kept, repeated and reordered


class Stepper(abc.ABC):
    """Drives a model one token at a time. ``logits(tokens (rows,)) -> (rows, vocab)``; ``select(rows)``.

    The searches take a model or, for scripted distributions, a ready Stepper with a ``max_len``.
    """

    max_len: int  # the most tokens one output may have

    @abc.abstractmethod
    def logits(self, tokens: Tensor) -> Tensor:
        """Feed each row's last token (rows,); return the next-token logits (rows, vocab)."""

    @abc.abstractmethod
    def select(self, rows: Tensor) -> None:
        """Keep, repeat or reorder rows: row i of the new state is row ``rows[i]`` of the old one."""


class TransformerStepper(Stepper):
    """EncoderDecoder: memory encoded once; the decoder's self-attention keys/values in a KV cache."""

    def __init__(self, model: EncoderDecoder, src: Tensor, src_padding: Tensor, use_cache: bool = True,
                 slots: int | None = None) -> None:
        self.model, self.src_padding, self.max_len = model, src_padding, model.cfg.max_len
        self.memory = model.encode(src, src_padding)  # batch, src, d_model
        self.cache = _kv_cache(model, src.shape[0], slots or model.cfg.max_len) if use_cache else None
        self.prefix: Tensor | None = None  # rows, t: every token fed so far (the uncached path)

    def logits(self, tokens: Tensor) -> Tensor:
        if self.cache is not None:
            return self.model.decode(tokens[:, None], self.memory, self.src_padding, cache=self.cache)[:, -1]
        self.prefix = tokens[:, None] if self.prefix is None else torch.cat([self.prefix, tokens[:, None]], 1)
        return self.model.decode(self.prefix, self.memory, self.src_padding)[:, -1]  # rows, vocab

    def select(self, rows: Tensor) -> None:
        self.memory, self.src_padding = self.memory[rows], self.src_padding[rows]
        if self.cache is not None:  # each layer's (rows, head, max_len, depth) storage; positions are shared
            self.cache.k = [k[rows] for k in self.cache.k]
            self.cache.v = [v[rows] for v in self.cache.v]
        if self.prefix is not None:
            self.prefix = self.prefix[rows]


def _kv_cache(model: EncoderDecoder, batch: int, slots: int) -> KVCache:
    """A KV cache of ``slots`` positions: the longest output of the batch, not max_len, so every step
    attends over (and beam search reorders) only the slots it can use."""
    cfg, p = model.cfg, next(model.parameters())
    return KVCache(cfg.n_layers, batch, cfg.n_heads, slots, cfg.d_model // cfg.n_heads, p.device, p.dtype)


class Seq2SeqStepper(Stepper):
    """Seq2SeqAttention: encoder output and projected keys once; the recurrent state is the cache."""

    def __init__(self, model: Seq2SeqAttention, src: Tensor, src_padding: Tensor) -> None:
        self.model, self.max_len = model, model.cfg.max_len
        self.enc, self.state = model.encode(src, src_padding)

    def logits(self, tokens: Tensor) -> Tensor:
        logits, self.state, _ = self.model.step(tokens, self.state, self.enc)  # rows, vocab
        return logits

    def select(self, rows: Tensor) -> None:
        self.enc, self.state = self.enc.select(rows), self.state.select(rows)


def stepper(model, src: Tensor, src_padding: Tensor, use_cache: bool = True, slots: int | None = None) -> Stepper:
    """The :class:`Stepper` of ``model`` (a Stepper is used as it is); ``slots``: the most tokens a row is fed."""
    if isinstance(model, Stepper):
        return model
    if isinstance(model, EncoderDecoder):
        return TransformerStepper(model, src, src_padding, use_cache, slots)
    if isinstance(model, Seq2SeqAttention):
        return Seq2SeqStepper(model, src, src_padding)
    raise TypeError(f"no decoding for {type(model).__name__}; expected EncoderDecoder or Seq2SeqAttention")


def _log_softmax(logits: Tensor, banned: list[int]) -> Tensor:
    """log p over the vocabulary, in float32 at least (float64 models stay float64); ``banned`` ids
    (<sos>, <pad>: never an output) get probability 0."""
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # rows, vocab
    if banned:
        logits = logits.index_fill(-1, torch.tensor(banned, device=logits.device), float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def _limits(model, src_padding: Tensor, max_new: int | Sequence[int] | None) -> list[int]:
    model_max = model.max_len if isinstance(model, Stepper) else model.cfg.max_len
    if max_new is None:
        return [default_max_new(int(n), model_max) for n in src_padding.sum(dim=1)]
    limits = [max_new] * src_padding.shape[0] if isinstance(max_new, int) else [int(n) for n in max_new]
    if any(n < 1 or n > model_max for n in limits):
        raise SeqlabError(f"the output length limit must be in 1..{model_max} (model.max_len); got {limits}")
    return limits


# ------------------------------------------------------------------------------------------------------
# greedy


@torch.inference_mode()
def greedy_search(model, src: Tensor, src_padding: Tensor, *, sos_id: int, eos_id: int, pad_id: int | None = None,
                  alpha: float = 0.0, max_new: int | Sequence[int] | None = None,
                  use_cache: bool = True) -> list[Hypothesis]:
    r"""Greedy decoding of a batch: src (batch, src) ids, src_padding (batch, src) True = real token.
    <sos> and <pad> (``pad_id``) are never output.

    !!! equation "Sequence to sequence › Decoding (beyond the notes)"
        $y_t = \arg\max_v \log p(v \mid y_{<t}, x)$: the most probable word at each step, fed back as the next
        input, until $\langle eos \rangle$ or the length limit."""
    batch = src.shape[0]
    banned = [sos_id] + ([] if pad_id is None else [pad_id])
    limits = _limits(model, src_padding, max_new)
    step = stepper(model, src, src_padding, use_cache, max(limits))
    live = list(range(batch))  # sentence of each row
    tokens = torch.full((batch,), sos_id, dtype=torch.long, device=src.device)  # rows
    scores = torch.zeros(batch, device=src.device)  # rows: log p of the prefix
    out: list[list[int]] = [[] for _ in range(batch)]
    results: list[Hypothesis | None] = [None] * batch
    t = 0
    while live:
        logp = _log_softmax(step.logits(tokens), banned)  # rows, vocab
        tokens = logp.argmax(dim=-1)  # rows
        scores = scores + logp.gather(1, tokens[:, None])[:, 0]  # rows
        keep = []
        for row, (sentence, token, score) in enumerate(zip(live, tokens.tolist(), scores.tolist())):
            ended = token == eos_id
            if not ended:
                out[sentence].append(token)
            if ended or t + 1 == limits[sentence]:
                results[sentence] = Hypothesis(out[sentence], score / length_penalty(t + 1, alpha), score, ended)
            else:
                keep.append(row)
        t += 1
        if len(keep) < len(live):
            live = [live[r] for r in keep]
            if live:
                index = torch.tensor(keep, device=src.device)
                step.select(index)
                tokens, scores = tokens[index], scores[index]
    return results


# ------------------------------------------------------------------------------------------------------
# beam search


@torch.inference_mode()
def beam_search(model, src: Tensor, src_padding: Tensor, *, beam: int, sos_id: int, eos_id: int,
                pad_id: int | None = None, alpha: float = DEFAULT_ALPHA, max_new: int | Sequence[int] | None = None,
                use_cache: bool = True) -> list[Hypothesis]:
    r"""Beam search of a batch (see the module docstring for the scoring and the stopping rule).

    src (batch, src) ids, src_padding (batch, src) True = real token; returns each sentence's best
    hypothesis. <sos> and <pad> (``pad_id``) are never output.

    !!! equation "Sequence to sequence › Decoding (beyond the notes)"
        $\mathrm{score}(Y) = \frac{\log p(Y \mid X)}{lp(Y)},\ lp(Y) = \left(\frac{5 + \vert Y \vert}{6}\right)^\alpha$:
        beam search keeps the $K$ best prefixes by cumulative log-probability and ranks the finished ones by this
        length-normalised score (GNMT, Wu et al. 2016).
    """
    banned = [sos_id] + ([] if pad_id is None else [pad_id])
    check_beam(beam)
    batch, device = src.shape[0], src.device
    limits = _limits(model, src_padding, max_new)
    step = stepper(model, src, src_padding, use_cache, max(limits))
    step.select(torch.arange(batch, device=device).repeat_interleave(beam))  # rows = sentence * k + beam
    first = step.logits(torch.full((batch * beam,), sos_id, dtype=torch.long, device=device))  # rows, vocab
    return [max(hyps, key=lambda h: h.score) for hyps in search(step, first, beam, limits, eos_id, banned, alpha)]


def check_beam(beam: object) -> None:
    """A beam size is an integer >= 1 (``--beam`` or ``beam=``)."""
    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise SeqlabError(f"--beam must be an integer >= 1, got {beam!r}")


def search(step: Stepper, first: Tensor, k: int, limits: list[int], eos_id: int | None, banned: list[int],
           alpha: float) -> list[list[Hypothesis]]:
    """The beam search loop (module docstring: 2K candidates, the first K live, <eos> among the first K finished,
    fairseq's stopping rule, GNMT's score) over ``step``, whose rows are already ``batch * k`` (sentence * k +
    beam, every beam of a sentence in the same state) and whose next-token logits are ``first`` (rows, vocab).
    Returns every sentence's finished hypotheses in the order found. The translators and the language model
    (:mod:`seqlab.decoding.lm_beam`) share it; ``eos_id`` None: no token ends a hypothesis before its limit."""
    batch, device = len(limits), first.device
    live = list(range(batch))  # live sentences, in row-block order
    # only beam 0 of each sentence starts live, so the first step does not pick k copies of one token
    scores = torch.full((batch, k), -math.inf, device=device)  # batch, k
    scores[:, 0] = 0.0
    history = torch.zeros((batch * k, 0), dtype=torch.long, device=device)  # rows, t
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    logits, t = first, 0
    while live:
        n = len(live)
        logp = _log_softmax(logits, banned)  # rows, vocab
        vocab = logp.shape[-1]
        candidates = (scores[:, :, None] + logp.view(n, k, vocab)).view(n, k * vocab)  # n, k*vocab
        top_scores, top_index = candidates.topk(min(2 * k, k * vocab), dim=-1)  # n, 2k: best first
        origin, token = top_index // vocab, top_index % vocab  # n, 2k: beam of origin, new token
        is_eos = token == eos_id if eos_id is not None else torch.zeros_like(token, dtype=torch.bool)  # n, 2k
        # live candidates: the first k that do not end in <eos> (a stable sort puts them first)
        live_pos = torch.sort(is_eos.to(torch.int8), dim=-1, stable=True).indices[:, :k]  # n, k
        eos_l, score_l, origin_l, token_l = is_eos.tolist(), top_scores.tolist(), origin.tolist(), token.tolist()
        keep_sentences = []
        for i, sentence in enumerate(live):
            at_limit = t + 1 == limits[sentence]
            for j in range(k):  # finish <eos> among the first k; at the limit, all of the first k
                if not (at_limit or eos_l[i][j]) or score_l[i][j] == -math.inf:  # -inf: a start-up dead beam
                    continue
                prefix = history[i * k + origin_l[i][j]].tolist()
                body = prefix if eos_l[i][j] else prefix + [token_l[i][j]]
                raw = score_l[i][j]
                finished[sentence].append(Hypothesis(body, raw / length_penalty(t + 1, alpha), raw, eos_l[i][j]))
            if len(finished[sentence]) < k and not at_limit:
                keep_sentences.append(i)
        t += 1
        if not keep_sentences:
            break
        keep = torch.tensor(keep_sentences, device=device)  # m
        pos = live_pos[keep]  # m, k
        rows = (keep[:, None] * k + origin[keep].gather(1, pos)).reshape(-1)  # m*k: the row each prefix extends
        tokens = token[keep].gather(1, pos).reshape(-1)  # m*k
        scores = top_scores[keep].gather(1, pos)  # m, k
        history = torch.cat([history[rows], tokens[:, None]], dim=1)  # m*k, t
        live = [live[i] for i in keep_sentences]
        step.select(rows)
        logits = step.logits(tokens)  # m*k, vocab
    return finished


# ------------------------------------------------------------------------------------------------------
# many sentences


def translate_ids(model, sources: Sequence[Sequence[int]], *, sos_id: int, eos_id: int, pad_id: int = 0,
                  beam: int = 1, alpha: float = DEFAULT_ALPHA, batch_size: int = 64, max_new: int | None = None,
                  use_cache: bool = True, device: torch.device | None = None) -> list[Hypothesis]:
    """Decode token-id sources (each already ending with its <eos>) in batches of similar length,
    greedy for ``beam == 1``; results in input order."""
    if batch_size < 1:
        raise SeqlabError(f"batch_size must be >= 1, got {batch_size}")
    device = device or next(model.parameters()).device
    order = sorted(range(len(sources)), key=lambda i: (len(sources[i]), i))
    results: list[Hypothesis | None] = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        index = order[start:start + batch_size]
        ids, mask = pad_batch([sources[i] for i in index], pad_id)  # batch, src
        ids, mask = ids.to(device), mask.to(device)
        if beam == 1:
            hyps = greedy_search(model, ids, mask, sos_id=sos_id, eos_id=eos_id, pad_id=pad_id, alpha=alpha,
                                 max_new=max_new, use_cache=use_cache)
        else:
            hyps = beam_search(model, ids, mask, beam=beam, sos_id=sos_id, eos_id=eos_id, pad_id=pad_id,
                               alpha=alpha, max_new=max_new, use_cache=use_cache)
        for i, h in zip(index, hyps):
            results[i] = h
    return results
