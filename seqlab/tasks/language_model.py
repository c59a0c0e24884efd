"""A trained language model, loaded from a run directory (:func:`seqlab.tasks.lm.load`, what ``seqlab.load``
returns for an lm run): ``generate`` for ``seqlab generate`` and serve, ``score`` (per-token log-probabilities),
``evaluate`` for ``seqlab eval`` (a split, or texts in memory), ``attention`` for ``seqlab attention``.

Scoring, in :meth:`LanguageModel.score` as in ``evaluate``, follows :func:`seqlab.metrics.lm.score_stream`: the
tokens are cut into the same non-overlapping windows of ``model.max_len`` predictions
(:func:`~seqlab.metrics.lm.eval_windows`), so the loss ``score`` gives a text is the loss ``evaluate`` gives the
same tokens, and a text longer than ``max_len`` is scored window by window (a window's first prediction sees
one token of context). The first token of a text has no context and is not scored: seqlab's LM streams are
encoded without <sos>/<eos> (:mod:`seqlab.data.lm_tokens`), so the model never learned what follows them, and
a probability given <sos> would mean nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast, overload

import numpy as np
import torch

from seqlab.base.config import RunConfig
from seqlab.data.lm_tokens import SPLITS, load_splits
from seqlab.data.text_pieces import ENCODE_PIECE, read_pieces
from seqlab.decoding.continuous import ContinuousBatcher, Streamed
from seqlab.decoding.decode import Sampling, forget_compiled, generate, stream
from seqlab.decoding.beam import DEFAULT_ALPHA
from seqlab.decoding.lm_beam import lm_beam_search
from seqlab.training.devices import decode_products
from seqlab.base.errors import SeqlabError, named
from seqlab.metrics.lm import perplexity, score_stream, window_batches
from seqlab.models.recurrent import RecurrentLM
from seqlab.models.transformer import TransformerLM
from seqlab.nn.weight_only import to_weight_only
from seqlab.tasks.results import LMAttention, TokenScores
from seqlab.text.tokenizers import Tokenizer
from seqlab.tasks.splits import spooled
from seqlab.tasks.trained import Trained, texts_given

LMModel = TransformerLM | RecurrentLM  # what model.arch builds for an lm run (:func:`seqlab.tasks.lm.build_model`)
_BATCHER_LOCK = threading.Lock()  # one shared decode loop per LanguageModel, made once


def check_options(beam: int | None, alpha: float | None, temperature: float | None, top_k: int | None,
                  top_p: float | None) -> None:
    """Beam search takes no sampling option, and the length penalty needs a beam (one line each)."""
    given = [name for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p))
             if value is not None]
    if beam is not None and given:
        flags = ", ".join(f"--{g.replace('_', '-')}" for g in given)
        raise SeqlabError(f"beam search (--beam or beam=) ranks continuations by probability and does not sample: "
                          f"drop {flags} (or {', '.join(f'{g}=' for g in given)}), or drop the beam")
    if alpha is not None and beam is None:
        raise SeqlabError("the length penalty (--alpha or alpha=) is beam search's; give --beam K (beam=K) too")


class LanguageModel(Trained):
    """A trained LM loaded from a run directory: ``generate``, ``score``, ``evaluate``, ``attention``."""

    def __init__(self, run_dir: Path, cfg: RunConfig, tokenizer: Tokenizer, model: LMModel,
                 device: torch.device):
        self.run_dir, self.config, self.tokenizer, self.model, self.device = run_dir, cfg, tokenizer, model, device
        self._batcher: ContinuousBatcher | None = None

    @overload
    def generate(self, prompt: str, max_new_tokens: int = ..., temperature: float | None = ...,
                 top_k: int | None = ..., top_p: float | None = ..., seed: int | None = ..., use_cache: bool = ...,
                 compile: bool = ..., beam: int | None = ..., alpha: float | None = ...) -> str: ...

    @overload
    def generate(self, prompt: list[str], max_new_tokens: int = ..., temperature: float | None = ...,
                 top_k: int | None = ..., top_p: float | None = ..., seed: int | None = ..., use_cache: bool = ...,
                 compile: bool = ..., beam: int | None = ..., alpha: float | None = ...) -> list[str]: ...

    def generate(self, prompt: str | list[str], max_new_tokens: int = 200, temperature: float | None = None,
                 top_k: int | None = None, top_p: float | None = None, seed: int | None = None,
                 use_cache: bool = True, compile: bool = False, beam: int | None = None,
                 alpha: float | None = None) -> str | list[str]:
        """The continuation of each prompt (text); a str for a str prompt, a list for a list. Sampling by default
        (``temperature`` 1.0, 0 = greedy; ``top_k``, ``top_p`` off); ``beam=K``: beam search instead
        (:mod:`seqlab.decoding.lm_beam`: the best of K hypotheses by the GNMT score with length penalty ``alpha``,
        default 0.6, as translation; ``beam=1`` is greedy), which takes no sampling option. ``compile``: the decode
        step through torch.compile, its products chosen for this machine and batch size
        (seqlab.training.devices.decode_products)."""
        prompts = texts_given(prompt, "prompt")[1]
        check_options(beam, alpha, temperature, top_k, top_p)
        ids = [self.tokenizer.encode(p) for p in prompts]
        rows = len(ids) * (beam or 1)
        products = decode_products(self.device, rows) if compile else "blas"
        if beam is not None:
            hyps = lm_beam_search(self.model, ids, beam, max_new_tokens, self.tokenizer.eos_id,
                                  DEFAULT_ALPHA if alpha is None else alpha, use_cache=use_cache, device=self.device,
                                  compile=compile, products=products)
            new = [h[0].tokens for h in hyps]
        else:
            sampling = Sampling(1.0 if temperature is None else temperature, top_k or 0,
                                1.0 if top_p is None else top_p)
            new = generate(self.model, ids, max_new_tokens, sampling, seed=seed, eos_id=self.tokenizer.eos_id,
                           use_cache=use_cache, device=self.device, compile=compile, products=products)
        texts = [self.tokenizer.decode_generated(t) for t in new]  # no special token shown as U+FFFD
        return texts[0] if isinstance(prompt, str) else texts

    def stream(self, prompt: str, max_new_tokens: int = 200, temperature: float = 1.0, top_k: int = 0,
               top_p: float = 1.0, seed: int | None = None) -> Iterator[Streamed]:
        """Continue ``prompt`` token by token through this model's shared decode loop: concurrent calls (threads,
        ``seqlab serve``'s requests) share one batched step (:mod:`seqlab.decoding.continuous`). Yields
        :class:`~seqlab.decoding.continuous.Streamed` ``(token, probs, near_tie)``; the tokens are those of
        ``generate`` with the same options and seed, up to the near ties it flags. A recurrent LM streams alone."""
        ids = self.tokenizer.encode(prompt)
        sampling = Sampling(temperature, top_k, top_p)
        if not hasattr(self.model, "step"):
            return (Streamed(t, p, False) for t, p in stream(self.model, ids, max_new_tokens, sampling, seed=seed,
                                                             eos_id=self.tokenizer.eos_id, device=self.device))
        return self.batcher().submit(ids, max_new_tokens, sampling, seed)

    def batcher(self) -> ContinuousBatcher:
        """The shared decode loop of this model (one per object, made on first use; its counters describe it)."""
        with _BATCHER_LOCK:
            if self._batcher is None:
                self._batcher = ContinuousBatcher(self.model, self.tokenizer.eos_id, self.device)
            return self._batcher

    def use_weight_dtype(self, dtype: str) -> int:
        """Store the model's linear-layer weights in ``dtype`` ("fp32", "bf16" or "int8"; seqlab.nn.weight_only)
        from now on, for generation (fast with ``compile=True``) and evaluation; returns the layers converted.
        Irreversible on this object: load the run again for fp32."""
        converted = to_weight_only(self.model, dtype)
        if converted:
            forget_compiled(self.model)
            self._batcher = None  # its bound reads the float output projection  # a step compiled before holds the fp32 layers (and froze them)
        return converted

    def score(self, texts: str | Iterable[str], batch_size: int = 16) -> TokenScores | list[TokenScores]:
        r"""Per-token log-probabilities of each text under the model: a :class:`~seqlab.tasks.results.TokenScores`
        for a str, a list of them for a list. Every token but the text's first is scored, given the tokens
        before it (the first has no context: module docstring); a text longer than ``model.max_len`` is scored
        in ``evaluate``'s windows. A text of fewer than 2 tokens is an error.

        !!! equation "Recurrent neural networks › Sentence probability"
            $\log P(S \mid x_1) = \sum_{t=2}^{n} \log p(x_t \mid x_{<t})$: how probable a sentence is, by the
            chain rule through the language model; ``logprobs`` holds the terms, one per token after the first
            (a text longer than ``model.max_len`` conditions each on the tokens of its window).

        !!! departure "Recurrent neural networks › Sentence probability"
            notes: $P(S) \approx o(S) / N$, the share of the corpus's $N$ sentences that are $S$ (speech to text:
            the more frequent of two candidate sentences wins).
            seqlab: the chain rule through a language model, $P(S) = \prod_t p(x_t \mid x_{<t})$, which gives a
            sentence never seen a probability above 0 (the count gives 0); ``score`` returns the terms for every
            token but the first, which has no context."""
        single, items = texts_given(texts)
        scores = []
        for number, text in enumerate(items, start=1):
            ids = self.tokenizer.encode(text)
            if len(ids) < 2:
                raise SeqlabError(f"text {number} has {len(ids)} token(s); scoring needs 2 or more (the first has "
                                  "no context and is not scored)")
            logprobs = self._token_logprobs(ids, batch_size)
            total = float(-logprobs.sum())
            scores.append(TokenScores([self.tokenizer.decode([i]) for i in ids[1:]], logprobs.tolist(),
                                      total / len(logprobs), perplexity(total, len(logprobs))))
        return scores[0] if single else scores

    @torch.no_grad()
    def _token_logprobs(self, ids: list[int], batch_size: int) -> np.ndarray:
        """log p(ids[t] | ids[:t]) for t = 1 .. n - 1 (n - 1,), float64, in score_stream's windows."""
        out = []
        for x, y, mask in window_batches(np.asarray(ids, dtype=np.int64), self.model.cfg.max_len, batch_size):
            logits = self.model(torch.from_numpy(x).to(self.device)).float()  # batch, seq, vocab
            targets = torch.from_numpy(y).to(self.device)[..., None]  # batch, seq, 1
            logp = torch.log_softmax(logits, dim=-1).gather(-1, targets)[..., 0]  # batch, seq
            out.append(logp.double().cpu()[torch.from_numpy(mask)])  # the real targets, window after window
        return torch.cat(out).numpy()

    def evaluate(self, split: str = "test", batch_size: int = 16, *,
                 data: str | Iterable[str] | None = None) -> dict[str, float]:
        """``{"loss", "perplexity", "tokens"}`` over a split's token stream, or with ``data`` over texts in memory
        (a str, or an iterable of str; written as a text file and encoded as ``seqlab data prepare`` encodes
        one, as one stream)."""
        if data is not None:
            with spooled("lm", data, "data.txt") as path:
                size = path.stat().st_size
                tokens = np.asarray([i for piece in read_pieces(path, 0, size, ENCODE_PIECE)
                                     for i in self.tokenizer.encode(piece)], dtype=np.int64)
            if len(tokens) < 2:
                raise SeqlabError(f"data has {len(tokens)} token(s), nothing to score; give texts of 2 or more "
                                  "tokens")
            return self._evaluate_tokens(tokens, batch_size)
        if split not in SPLITS:
            raise SeqlabError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
        tokens = load_splits(self.run_dir)[split]
        if len(tokens) < 2:
            raise SeqlabError(f"the {split} split of {self.run_dir} has {len(tokens)} tokens, nothing to score; "
                              f"choose another {named('split')} or train with a non-zero fraction for it in data.split")
        return self._evaluate_tokens(tokens, batch_size)

    def _evaluate_tokens(self, tokens: np.ndarray, batch_size: int) -> dict[str, float]:
        total, count = score_stream(self.model, tokens, self.model.cfg.max_len, batch_size, self.device)
        return {"loss": total / count, "perplexity": perplexity(total, count), "tokens": count}

    def attention(self, text: str) -> LMAttention:
        """Token strings and per-layer attention weights (head, seq, seq) for ``text`` (its last ``max_len``
        tokens): an :class:`~seqlab.tasks.results.LMAttention`, which unpacks as ``tokens, layers`` and plots."""
        if not hasattr(self.model, "attention_maps"):
            raise SeqlabError(f"{self.run_dir} is a {self.config.arch} language model, which has no attention weights; "
                              "attention maps need a Transformer run")
        ids = self.tokenizer.encode(text)[-self.model.cfg.max_len:]
        if not ids:
            raise SeqlabError("the text is empty after tokenisation; give some text")
        with torch.no_grad():
            model = cast(TransformerLM, self.model)  # the hasattr check above: the Transformer's
            weights = model.attention_maps(torch.tensor([ids], device=self.device))
        tokens = [self.tokenizer.decode([i]) for i in ids]
        return LMAttention(tokens, [w[0].float().cpu() for w in weights])
