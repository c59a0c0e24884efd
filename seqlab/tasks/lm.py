"""Language modelling (notes: Recurrent neural networks › Language model loss): next-token prediction with the
average token-level NLL.

The corpus is one token stream per split, a memory-mapped binary: the run directory's own prepared folder
(``data/{train,valid,test}.bin`` beside ``data/manifest.json``) or the folder ``data.prepared`` names, written
once by ``seqlab data prepare`` (:mod:`seqlab.data.lm_tokens` prepares and opens them). Training draws windows
x = t[i:i+T], y = t[i+1:i+T+1] at offsets sampled from the data generator (nanoGPT style).
Evaluation cuts the split into non-overlapping windows so that every token after the first is
scored exactly once, and reports exp of the token-weighted mean NLL (specs/metrics.md §4;
:func:`seqlab.metrics.lm.score_stream`). A trained run loads as a :class:`~seqlab.tasks.language_model.LanguageModel`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from seqlab.training import checkpoint
from seqlab.base.config import DataConfig, RunConfig
from seqlab.data import lm_tokens
from seqlab.data.batching import random_lm_batch
from seqlab.data.lm_tokens import SPLITS, open_prepared
from seqlab.training.devices import Dist, inference_device
from seqlab.base.errors import SeqlabError, shown
from seqlab.base.io import read_json, write_json_atomic
from seqlab.metrics.lm import nll_sum, perplexity, score_stream
from seqlab.models.gpt2 import DIRECTORY_FILES, GPT2Directory, from_gpt2_tensors, read_gpt2_directory
from seqlab.models.recurrent import LM_CONFIGS, RecurrentLMConfig, build_lm
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.tasks.language_model import LanguageModel, LMModel
from seqlab.text.tokenizers import WordTokenizer, load_tokenizer
from seqlab.training.trainer import TRAINER_KEYS, Trainer, shard_rows


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
TRAIN_KEYS = (*TRAINER_KEYS, "label_smoothing")  # the train.* keys used: the Trainer's and the loss's
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
