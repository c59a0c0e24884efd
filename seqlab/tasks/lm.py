"""Language modelling (notes: Recurrent neural networks › Language model loss): next-token prediction with the
average token-level NLL.

The corpus is one token stream per split, a memory-mapped binary: the run directory's own prepared folder
(``data/{train,valid,test}.bin`` beside ``data/manifest.json``) or the folder ``data.prepared`` names, written
once by ``seqlab data prepare`` (:mod:`seqlab.data.lm_tokens` prepares and opens them). Training draws windows
x = t[i:i+T], y = t[i+1:i+T+1] at offsets sampled from the data generator (nanoGPT style).
Evaluation cuts the split into non-overlapping windows so that every token after the first is
scored exactly once, and reports exp of the token-weighted mean NLL (specs/metrics.md §4;
:func:`seqlab.metrics.lm.score_stream`).

A trained run loads as a :class:`LanguageModel` (:func:`load`, what ``seqlab.load`` returns for an lm run):
``generate`` for ``seqlab generate`` and serve, ``score`` (per-token log-probabilities), ``evaluate`` for
``seqlab eval`` (a split, or texts in memory), ``attention`` for ``seqlab attention``.

Scoring, in :meth:`LanguageModel.score` as in ``evaluate``, follows :func:`seqlab.metrics.lm.score_stream`: the
tokens are cut into the same non-overlapping windows of ``model.max_len`` predictions
(:func:`~seqlab.metrics.lm.eval_windows`), so the loss ``score`` gives a text is the loss ``evaluate`` gives the
same tokens, and a text longer than ``max_len`` is scored window by window (a window's first prediction sees
one token of context). The first token of a text has no context and is not scored: seqlab's LM streams are
encoded without <sos>/<eos> (:mod:`seqlab.data.lm_tokens`), so the model never learned what follows them, and
a probability given <sos> would mean nothing.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast, overload

import numpy as np
import torch
from torch import nn

from seqlab.base.config import DataConfig, RunConfig
from seqlab.base.errors import SeqlabError, named, shown
from seqlab.base.io import read_json, write_json_atomic
from seqlab.data import lm_tokens
from seqlab.data.batching import random_lm_batch
from seqlab.data.lm_tokens import SPLITS, load_splits, open_prepared
from seqlab.data.text_pieces import ENCODE_PIECE, read_pieces
from seqlab.decoding.beam import DEFAULT_ALPHA
from seqlab.decoding.continuous import ContinuousBatcher, Streamed
from seqlab.decoding.decode import Sampling, forget_compiled, generate, stream
from seqlab.decoding.lm_beam import lm_beam_search
from seqlab.decoding.products import decode_products
from seqlab.metrics.lm import nll_sum, perplexity, score_stream, window_batches
from seqlab.models.gpt2_convert import DIRECTORY_FILES, GPT2Directory, from_gpt2_tensors, read_gpt2_directory
from seqlab.models.recurrent import LM_CONFIGS, RecurrentLM, RecurrentLMConfig, build_lm
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn.weight_only import to_weight_only
from seqlab.tasks.results import LMAttention, TokenScores
from seqlab.tasks.splits import spooled
from seqlab.tasks.trained import Trained, texts_given
from seqlab.text.tokenizers import Tokenizer, WordTokenizer, load_tokenizer
from seqlab.training import checkpoint
from seqlab.training.devices import Dist, inference_device
from seqlab.training.trainer import RUN_KEYS, Trainer, shard_rows

LMModel = TransformerLM | RecurrentLM  # what model.arch builds for an lm run (:func:`build_model`)


@dataclass(frozen=True, kw_only=True)
class PretrainedLMConfig:
    """``model.arch = "pretrained"``: continue training a GPT-2-format directory (Hugging Face layout,
    safetensors only), e.g. one ``seqlab export RUN --format hf`` wrote. The architecture and the tokenizer are
    the directory's: the model keys that describe an architecture are not keys of this arch, and the data keys
    of the tokenizer must agree with it (:func:`check_config`)."""

    pretrained: str = ""  # the directory: config.json, model.safetensors, tokenizer.json
    dropout: float | None = None  # replaces the directory's (GPT-2's resid_pdrop); unset keeps it

    def __post_init__(self) -> None:
        if not self.pretrained:
            raise SeqlabError(f"model.pretrained is empty; give a GPT-2-format directory ({DIRECTORY_FILES})")
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise SeqlabError(f"model.dropout={self.dropout} is outside [0, 1); use e.g. 0.1, or 0 to turn it off")


MODEL_CONFIGS = {"transformer": TransformerLMConfig, **LM_CONFIGS, "pretrained": PretrainedLMConfig}
TRAIN_KEYS = (*RUN_KEYS, "label_smoothing")  # the train.* keys used: the Trainer's and the loss's
BEST_BY = ("loss",)  # the validation metrics train.best_by may name (the validation loss alone)
PRETRAINED = "pretrained.json"  # a run started from model.pretrained: the directory and its architecture


# ------------------------------------------------------------------------------------------------------
# the training task


class LMTask:
    """Plugs language modelling into :class:`seqlab.training.trainer.Trainer`."""

    def __init__(self, model: LMModel, splits: dict[str, np.ndarray], eval_batch_size: int,
                 label_smoothing: float = 0.0, tokenizer: Any = None):
        self.model: nn.Module = model  # TrainTask's type
        self.tokenizer = tokenizer  # for the sample a reporter shows at each evaluation (train.report_to)
        self.label_smoothing = label_smoothing
        self.train_tokens_array = splits["train"]
        self.valid_tokens = splits["valid"]
        self.max_len = model.cfg.max_len
        self.eval_batch_size = eval_batch_size
        self.train_tokens = len(self.train_tokens_array)
        if self.train_tokens < self.max_len + 1:
            raise SeqlabError(f"the training split has {self.train_tokens} tokens, fewer than model.max_len + 1 = "
                              f"{self.max_len + 1}; use a larger corpus or a smaller model.max_len")

    def sample(self, model: nn.Module, device: torch.device, new: int = 64) -> str:
        """The greedy continuation (no random draw: the training streams stay as they are) of the validation
        split's first tokens (up to half of model.max_len), prompt and continuation decoded."""
        from seqlab.decoding.decode import Sampling, generate

        source = self.valid_tokens if len(self.valid_tokens) else self.train_tokens_array
        prompt = [int(t) for t in source[:max(1, self.max_len // 2)]]
        if self.tokenizer is None or not prompt:
            return ""
        out = generate(model, [prompt], min(new, self.max_len - len(prompt)), Sampling(0), device=device)[0]
        return self.tokenizer.decode(prompt) + " ‖ " + self.tokenizer.decode(out)

    def train_batch(self, generator: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return random_lm_batch(self.train_tokens_array, n, self.max_len, generator)  # (batch, seq) twice

    def shard(self, batch, rank: int, world: int):
        return shard_rows(batch, rank, world)

    def count(self, batch) -> int:
        return batch[1].numel()

    def loss_sum(self, model: nn.Module, batch, device: torch.device) -> torch.Tensor:
        r"""The batch's summed token NLL (the trainer divides by :meth:`count`, the batch's targets).

        !!! equation "Recurrent neural networks › Language model loss"
            $\sum_{b} \sum_{t=1}^{T} -\log p(y_t \mid x_{\le t}),\ y_t = x_{t+1}$: the language model's loss, each
            position of a window predicting the next token from the tokens up to and including its own (the
            notes' $L_3 = -\log p(\text{claudio} \mid \text{favorite LLM is})$); divided by the $N$ targets it is
            their average token-level NLL, $L = (L_1 + L_2 + L_3)/3$ in the notes' example."""
        x, y = (t.to(device, non_blocking=True) for t in batch)
        logits = model(x)  # (batch, seq, vocab)
        return nll_sum(logits, y, label_smoothing=self.label_smoothing)[0]

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        if len(self.valid_tokens) < 2:
            return {"loss": math.nan, "perplexity": math.nan}
        total, count = score_stream(model, self.valid_tokens, self.max_len, self.eval_batch_size, device, max_batches)
        return {"loss": total / count, "perplexity": perplexity(total, count)}


def build_model(cfg: RunConfig, vocab_size: int, run_dir: Path | None = None) -> LMModel:
    """The configured LM (Transformer or recurrent) with the tokenizer's vocabulary size; a run started from
    model.pretrained has the architecture recorded in its ``pretrained.json``."""
    if isinstance(cfg.model, PretrainedLMConfig):
        if run_dir is None:  # was a TypeError (None / str)
            raise SeqlabError(f"a model.pretrained run's architecture is in its {PRETRAINED}; pass its run_dir")
        saved = read_json(run_dir / PRETRAINED, "pretrained model", "train the run again", expect=dict)
        return TransformerLM(TransformerLMConfig(**saved["model"]))
    model_cfg = replace(cfg.model, vocab_size=vocab_size)
    return build_lm(model_cfg) if isinstance(model_cfg, RecurrentLMConfig) else TransformerLM(model_cfg)


# ------------------------------------------------------------------------------------------------------
# model.pretrained: a GPT-2-format directory to continue training


def _check_tokenizer_keys(cfg: RunConfig, start: GPT2Directory) -> None:
    """The data keys of the tokenizer must agree with the directory's tokenizer (none is silently ignored)."""
    d, tok, default = cfg.data, start.tokenizer, DataConfig()
    bad = []
    if d.tokenizer != tok.kind:
        bad.append(f"data.tokenizer={d.tokenizer} (the directory's: {tok.kind})")
    if tok.kind == "word" and d.lowercase != cast(WordTokenizer, tok).lowercase:
        lowercase = cast(WordTokenizer, tok).lowercase
        bad.append(f"data.lowercase={str(d.lowercase).lower()} (the directory's: {str(lowercase).lower()})")
    elif tok.kind != "word" and d.lowercase:
        bad.append("data.lowercase=true (a word-tokenizer key)")
    if d.vocab_size not in (default.vocab_size, tok.vocab_size):
        bad.append(f"data.vocab_size={d.vocab_size} (the directory's tokenizer has {tok.vocab_size})")
    for key in ("min_freq", "max_size"):
        if getattr(d, key) != getattr(default, key):
            bad.append(f"data.{key}={getattr(d, key)} (no tokenizer is trained)")
    if bad:
        raise SeqlabError(f"model.pretrained={cfg.model.pretrained} brings its own tokenizer, which these keys "
                          f"contradict: {', '.join(bad)}; set them to the directory's or remove them")


def check_config(cfg: RunConfig) -> None:
    """What is wrong with a config's inputs, found before a run directory is written (:func:`seqlab.api.train`):
    the model.pretrained directory and the tokenizer keys, the data.prepared folder and its token keys."""
    if isinstance(cfg.model, PretrainedLMConfig):
        start = read_gpt2_directory(cfg.model.pretrained, weights=False)
        _check_tokenizer_keys(cfg, start)
    if cfg.data.prepared:
        directory, _ = open_prepared(cfg, cfg.data.prepared)
        if isinstance(cfg.model, PretrainedLMConfig) and \
                load_tokenizer(directory / "tokenizer.json").to_dict() != start.tokenizer.to_dict():
            raise SeqlabError(f"data.prepared={shown(cfg.data.prepared)} was encoded with another tokenizer than "
                              f"model.pretrained={shown(cfg.model.pretrained)}'s; prepare it with model.pretrained "
                              "set (`seqlab data prepare CONFIG --set model.pretrained=DIR --out DIR2`)")


def start_pretrained(cfg: RunConfig, run_dir: Path) -> TransformerLM:
    """The directory's model (float32), its tokenizer saved as the run's ``tokenizer.json`` and its architecture
    (with model.dropout) in ``pretrained.json`` beside the directory's path, so the run reloads without it."""
    start = read_gpt2_directory(cfg.model.pretrained)
    _check_tokenizer_keys(cfg, start)
    arch = start.config if cfg.model.dropout is None else replace(start.config, dropout=cfg.model.dropout)
    start.tokenizer.save(run_dir / "tokenizer.json")
    write_json_atomic(run_dir / PRETRAINED, {"kind": "gpt2", "source": cfg.model.pretrained,
                                             "directory": str(start.directory.resolve()),
                                             "model": dataclasses.asdict(arch)})
    tensors = cast("dict[str, torch.Tensor]", start.tensors)  # read: read_gpt2_directory's weights=True
    return from_gpt2_tensors(arch, tensors, str(start.directory / "model.safetensors"), torch.float32)


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    pretrained = None  # rank 0 starts from model.pretrained unless resuming a checkpoint; DDP broadcasts it
    if isinstance(cfg.model, PretrainedLMConfig) and dist.main and not (resume and checkpoint.exists(run_dir)):
        pretrained = start_pretrained(cfg, run_dir)
    given = isinstance(cfg.model, PretrainedLMConfig)  # the run's tokenizer.json is the directory's (start_pretrained)
    # Ranks declares rank and world settable, Dist (frozen) has them read-only: Ranks should use properties
    tokenizer, splits = lm_tokens.prepare_data(cfg, run_dir, dist, log,  # type: ignore[arg-type]
                                               given_tokenizer=given)
    model = build_model(cfg, tokenizer.vocab_size, run_dir)
    if pretrained is not None:
        model.load_state_dict(pretrained.state_dict())
        log(f"model.pretrained: {cfg.model.pretrained} ({cfg.arch}: GPT-2 architecture and tokenizer)")
    log(f"model: {model.num_params() / 1e6:.2f}M parameters; tokens: "
        + ", ".join(f"{s} {len(splits[s]):,}" for s in SPLITS) + f"; vocabulary {tokenizer.vocab_size:,}")
    task = LMTask(model, splits, eval_batch_size=max(1, cfg.train.batch_size // cfg.train.grad_accum),
                  label_smoothing=cfg.train.label_smoothing, tokenizer=tokenizer)
    return Trainer(task, cfg.train, run_dir, dist=dist, log=log).run(resume)


# ------------------------------------------------------------------------------------------------------
# `seqlab data prepare` and a trained run


def prepare(cfg: RunConfig, out: Path, *, force: bool = False, progress: bool = True) -> dict:
    """``seqlab data prepare``: :func:`seqlab.data.lm_tokens.prepare_tokens` of a config into ``out`` (a
    model.pretrained directory brings its tokenizer, used as is)."""
    if cfg.data.prepared:
        raise SeqlabError(f"data.prepared={shown(cfg.data.prepared)} is already prepared data; to prepare, give the "
                          "text with data.source (or data.train, data.valid, data.test) and no data.prepared")
    tokenizer = None
    if isinstance(cfg.model, PretrainedLMConfig):
        check_config(cfg)
        tokenizer = read_gpt2_directory(cfg.model.pretrained, weights=False).tokenizer
    return lm_tokens.prepare_tokens(cfg, out, tokenizer=tokenizer, force=force, progress=progress)


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> LanguageModel:
    device = inference_device(device)
    tokenizer = load_tokenizer(run_dir / "tokenizer.json")
    model = build_model(cfg, tokenizer.vocab_size, run_dir)
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    model.to(device).eval()
    return LanguageModel(run_dir, cfg, tokenizer, model, device)


# --- the trained model: what load returns -------------------------------------------------------------
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
        (seqlab.decoding.products.decode_products)."""
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
