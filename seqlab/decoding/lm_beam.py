"""Beam search for a language model: the K best continuations of a prompt, through the same cached decode step as
greedy decoding, beam K as K rows of the KV cache.

The search is translation's (:func:`seqlab.decoding.beam.search`): each step extends every live prefix by every
token and keeps the 2K best candidates by cumulative log-probability log p(y | prompt) = sum_t log p(y_t | prompt,
y_<t); a candidate ending in ``<eos>`` among the first K is finished, the first K others stay live; a prompt stops
once it has K finished hypotheses, and at ``max_new_tokens`` the K best candidates of that step are finished. The
result is the finished hypothesis with the best GNMT score log p(Y) / lp(Y), lp(Y) = ((5 + |Y|) / 6) ** alpha
(Wu et al. 2016, section 7), |Y| counting the new tokens and the final ``<eos>``. K = 1 is greedy decoding.

The rows: each prompt is encoded once (its logits give the first step), then its row is repeated K times
(``index_select`` of the cache rows); after each step the cache rows are reordered by the surviving prefixes'
parents (:func:`seqlab.decoding.cache_rows.select_rows`), so a prefix always extends its parent's keys and values.
Prompts are grouped as :func:`seqlab.decoding.decode.generate` groups them (left-padded together when the static
cache holds every row to the end, else by length); once a row reaches ``max_len`` tokens the window slides and each
step recomputes the last ``max_len`` tokens, as generation does.

Shapes: batch (prompts), rows (prompt x beam), seq, vocab.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError, spelled
from seqlab.decoding.beam import DEFAULT_ALPHA, Hypothesis, Stepper, check_beam, search
from seqlab.decoding.cache_rows import select_rows
from seqlab.decoding.decode import check_length, decode_step, prompt_groups
from seqlab.nn.attention import KVCache


class LMStepper(Stepper):
    """A language model's rows for the search: their token windows (rows, seq <= max_len) and their cache (a KV
    cache, or a recurrent model's state), fed one token a row per step."""

    def __init__(self, model, window: Tensor, pads: list[int] | None, use_cache: bool, step) -> None:
        self.model, self.max_len, self.window, self.step = model, model.cfg.max_len, window, step
        self.cache = None
        if use_cache:
            self.cache = model.new_cache(window.shape[0], device=window.device, dtype=next(model.parameters()).dtype)
            if pads is not None:
                self.cache.pad_left(torch.tensor(pads))
        self.first = model(window, cache=self.cache)[:, -1]  # batch, vocab: the prompts' next-token logits

    def logits(self, tokens: Tensor) -> Tensor:
        self.window = torch.cat([self.window, tokens[:, None]], dim=1)[:, -self.max_len:]  # rows, seq<=max_len
        if self.cache is not None and self.cache.pos < self.max_len:
            return self.step(tokens[:, None], self.cache)[:, -1]  # rows, vocab
        return self.model(self.window)[:, -1]  # no cache, or the window slid: the last max_len tokens

    def select(self, rows: Tensor) -> None:
        self.window = self.window.index_select(0, rows)  # rows, seq
        if isinstance(self.cache, KVCache):
            select_rows(self.cache, rows)
        elif self.cache is not None:  # a recurrent state: tuple of (layers, rows, hidden)
            self.cache.state = tuple(s.index_select(1, rows) for s in self.cache.state)


@torch.inference_mode()
def lm_beam_search(model, prompts: list[list[int]], beam: int, max_new_tokens: int, eos_id: int | None = None,
                   alpha: float = DEFAULT_ALPHA, use_cache: bool = True, device: torch.device | None = None,
                   compile: bool = False, products: str = "blas") -> list[list[Hypothesis]]:
    r"""Every finished hypothesis of each prompt, best GNMT score first (ties: the first found); the first is the
    search's result. A hypothesis' ``tokens`` are the new tokens without the final ``<eos>``, ``log_prob`` their
    log-probability given the prompt (the ``<eos>`` included when ``finished``).

    !!! equation "Sequence to sequence › Decoding (beyond the notes)"
        $\mathrm{score}(Y) = \frac{\log p(Y \mid x)}{lp(Y)},\ lp(Y) = \left(\frac{5 + \vert Y \vert}{6}\right)^\alpha$:
        the language model's beam search keeps the $K$ best continuations of the prompt $x$ by cumulative
        log-probability and ranks the finished ones by the length-normalised score, as translation does.
    """
    check_beam(beam)
    check_length(max_new_tokens, None)
    if max_new_tokens < 1:
        raise SeqlabError(f"beam search needs max_new_tokens >= 1 (--max-new-tokens), got {max_new_tokens}")
    if any(len(p) == 0 for p in prompts):
        raise SeqlabError(f"an empty prompt has no token to condition on; give {spelled('prompt')} some text")
    device = device or next(model.parameters()).device
    out: list[list[Hypothesis]] = [[] for _ in prompts]
    step = decode_step(model, compile and use_cache, products)
    for index in prompt_groups(model, prompts, max_new_tokens, use_cache):
        longest = max(len(prompts[i]) for i in index)
        pads = [longest - len(prompts[i]) for i in index]
        rows = [[0] * pad + prompts[i] for pad, i in zip(pads, index)]  # left-padded with token 0 (masked)
        window = torch.tensor(rows, dtype=torch.long, device=device)[:, -model.cfg.max_len:]  # batch, seq
        stepper = LMStepper(model, window, pads if any(pads) else None, use_cache, step)
        repeat = torch.arange(len(index), device=device).repeat_interleave(beam)  # rows = prompt * beam + b
        stepper.select(repeat)
        found = search(stepper, stepper.first.index_select(0, repeat), beam, [max_new_tokens] * len(index), eos_id,
                       [], alpha)
        for i, hyps in zip(index, found):
            out[i] = sorted(hyps, key=lambda h: -h.score)  # stable: ties keep the order found
    return out
