"""Language modelling (seed 003): next-token prediction with the average token-level NLL.

The corpus is one token stream per split, cached as a memory-mapped binary in the run directory
(``data/{train,valid,test}.bin``), so corpora larger than memory train. Training draws windows
x = t[i:i+T], y = t[i+1:i+T+1] at offsets sampled from the data generator (nanoGPT style).
Evaluation cuts the split into non-overlapping windows so that every token after the first is
scored exactly once, and reports exp of the token-weighted mean NLL (specs/metrics.md §4).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqlab import checkpoint
from seqlab.config import DataConfig, RunConfig
from seqlab.data.batching import random_lm_batch, spread_batches
from seqlab.data.sources import read_text, split_text
from seqlab.decode import Sampling, generate
from seqlab.errors import SeqlabError
from seqlab.io import atomic_path, read_json, write_json_atomic, write_text_atomic
from seqlab.metrics.lm import nll_sum, perplexity
from seqlab.models.gpt2 import DIRECTORY_FILES, GPT2Directory, from_gpt2_tensors, read_gpt2_directory
from seqlab.models.recurrent import LM_CONFIGS, RecurrentLMConfig, build_lm
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn.attention import set_attention_impl
from seqlab.text.tokenizers import BPETokenizer, CharTokenizer, Tokenizer, WordTokenizer, load_tokenizer
from seqlab.devices import Dist, resolve_device
from seqlab.trainer import TRAINER_KEYS, Trainer, shard_rows


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
SPLITS = ("train", "valid", "test")
PRETRAINED = "pretrained.json"  # a run started from model.pretrained: the directory and its architecture
_CHUNK_CHARS = 1 << 20  # encode large corpora a megabyte of text at a time


# ------------------------------------------------------------------------------------------------------
# data: text -> tokenizer -> memory-mapped token streams


def split_texts(cfg: RunConfig) -> dict[str, str]:
    """The three splits' text: explicit files (data.train/valid/test) or one source cut by data.split."""
    d = cfg.data
    if d.train:
        texts = dict(zip(SPLITS, split_text(read_text(d.train), d.split)))
        for name in ("valid", "test"):
            if getattr(d, name):
                texts[name] = read_text(getattr(d, name))
    else:
        texts = dict(zip(SPLITS, split_text(read_text(d.source), d.split)))
    if not texts["train"]:
        raise SeqlabError("the training split is empty; use a larger corpus or a larger train fraction in data.split")
    return texts


def train_tokenizer(cfg: RunConfig, text: str) -> Tokenizer:
    d = cfg.data
    max_size = d.max_size or None
    if d.tokenizer == "char":
        return CharTokenizer.train(text, min_freq=d.min_freq, max_size=max_size)
    if d.tokenizer == "word":
        return WordTokenizer.train(text, lowercase=d.lowercase, min_freq=d.min_freq, max_size=max_size)
    return BPETokenizer.train([text], vocab_size=d.vocab_size)


def _chunks(text: str):
    """Pieces of about _CHUNK_CHARS characters, cut just after a newline that precedes a non-space
    character, so that no tokenizer sees a token or whitespace run cut in two."""
    start = 0
    while start < len(text):
        end = min(len(text), start + _CHUNK_CHARS)
        while end < len(text) and not (text[end - 1] == "\n" and not text[end].isspace()):
            end += 1
        yield text[start:end]
        start = end


def encode_to_file(tokenizer: Tokenizer, text: str, path: Path) -> int:
    """Encode ``text`` chunk by chunk into a raw binary of token ids; returns the token count."""
    dtype = np.uint16 if tokenizer.vocab_size <= np.iinfo(np.uint16).max else np.uint32
    count = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        for piece in _chunks(text):
            ids = np.asarray(tokenizer.encode(piece), dtype=dtype)
            f.write(ids.tobytes())
            count += ids.size
    return count


def prepare_data(cfg: RunConfig, run_dir: Path) -> tuple[Tokenizer, dict[str, np.ndarray]]:
    """Tokenizer and memory-mapped splits, built once per run directory and reused on resume."""
    meta_path = run_dir / "data" / "meta.json"
    if not meta_path.exists():
        texts = split_texts(cfg)
        pretrained = isinstance(cfg.model, PretrainedLMConfig)  # the directory's, saved by start_pretrained
        tokenizer = load_tokenizer(run_dir / "tokenizer.json") if pretrained else train_tokenizer(cfg, texts["train"])
        (run_dir / "data").mkdir(parents=True, exist_ok=True)
        counts = {s: encode_to_file(tokenizer, texts[s], run_dir / "data" / f"{s}.bin") for s in SPLITS}
        tokenizer.save(run_dir / "tokenizer.json")
        dtype = "uint16" if tokenizer.vocab_size <= np.iinfo(np.uint16).max else "uint32"
        write_text_atomic(meta_path, json.dumps({"dtype": dtype, "tokens": counts}) + "\n")
    return load_tokenizer(run_dir / "tokenizer.json"), load_splits(run_dir)


def load_splits(run_dir: Path) -> dict[str, np.ndarray]:
    meta = read_json(run_dir / "data" / "meta.json", "token data index", "train the run again with --force",
                     expect=dict)
    out = {}
    for s in SPLITS:
        n = meta["tokens"][s]
        out[s] = (np.memmap(run_dir / "data" / f"{s}.bin", dtype=meta["dtype"], mode="r", shape=(n,))
                  if n else np.zeros(0, dtype=meta["dtype"]))
    return out


# ------------------------------------------------------------------------------------------------------
# scoring a token stream


def eval_windows(n_tokens: int, max_len: int) -> list[tuple[int, int]]:
    """Non-overlapping (start, length) windows: inputs t[s:s+L], targets t[s+1:s+L+1]; every token but the
    first is a target exactly once."""
    return [(s, min(max_len, n_tokens - 1 - s)) for s in range(0, max(n_tokens - 1, 0), max_len)]


@torch.no_grad()
def score_stream(model: nn.Module, tokens: np.ndarray, max_len: int, batch_size: int, device: torch.device,
                 max_batches: int | None = None) -> tuple[float, int]:
    """(sum of NLL, number of scored tokens) over non-overlapping windows of the stream.

    With ``max_batches`` only that many batches are scored, spread evenly over the stream (periodic
    validation); the full split is scored otherwise.
    """
    windows = eval_windows(len(tokens), max_len)
    batches = spread_batches(windows, batch_size, max_batches)
    total, count = 0.0, 0
    for batch in batches:
        length = max(n for _, n in batch)
        x = np.zeros((len(batch), length), dtype=np.int64)
        y = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=bool)
        for row, (s, n) in enumerate(batch):
            x[row, :n] = tokens[s:s + n]
            y[row, :n] = tokens[s + 1:s + n + 1]
            mask[row, :n] = True  # padding (a short last window) is excluded from the sum and the count
        logits = model(torch.from_numpy(x).to(device))  # (batch, seq, vocab)
        s_, c_ = nll_sum(logits, torch.from_numpy(y).to(device), torch.from_numpy(mask).to(device))
        total += float(s_)
        count += c_
    return total, count


# ------------------------------------------------------------------------------------------------------
# the training task


class LMTask:
    """Plugs language modelling into :class:`seqlab.trainer.Trainer`."""

    def __init__(self, model: nn.Module, splits: dict[str, np.ndarray], eval_batch_size: int,
                 label_smoothing: float = 0.0):
        self.model = model
        self.label_smoothing = label_smoothing
        self.train_tokens_array = splits["train"]
        self.valid_tokens = splits["valid"]
        self.max_len = model.cfg.max_len
        self.eval_batch_size = eval_batch_size
        self.train_tokens = len(self.train_tokens_array)
        if self.train_tokens < self.max_len + 1:
            raise SeqlabError(f"the training split has {self.train_tokens} tokens, fewer than model.max_len + 1 = "
                              f"{self.max_len + 1}; use a larger corpus or a smaller model.max_len")

    def train_batch(self, generator: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return random_lm_batch(self.train_tokens_array, n, self.max_len, generator)  # (batch, seq) twice

    def shard(self, batch, rank: int, world: int):
        return shard_rows(batch, rank, world)

    def count(self, batch) -> int:
        return batch[1].numel()

    def loss_sum(self, model: nn.Module, batch, device: torch.device) -> torch.Tensor:
        x, y = (t.to(device, non_blocking=True) for t in batch)
        logits = model(x)  # (batch, seq, vocab)
        return nll_sum(logits, y, label_smoothing=self.label_smoothing)[0]

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        if len(self.valid_tokens) < 2:
            return {"loss": math.nan, "perplexity": math.nan}
        total, count = score_stream(model, self.valid_tokens, self.max_len, self.eval_batch_size, device, max_batches)
        return {"loss": total / count, "perplexity": perplexity(total, count)}


def build_model(cfg: RunConfig, vocab_size: int, run_dir: Path | None = None) -> nn.Module:
    """The configured LM (Transformer or recurrent) with the tokenizer's vocabulary size; a run started from
    model.pretrained has the architecture recorded in its ``pretrained.json``."""
    if isinstance(cfg.model, PretrainedLMConfig):
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
    if tok.kind == "word" and d.lowercase != tok.lowercase:
        bad.append(f"data.lowercase={str(d.lowercase).lower()} (the directory's: {str(tok.lowercase).lower()})")
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
    the model.pretrained directory and the tokenizer keys."""
    if isinstance(cfg.model, PretrainedLMConfig):
        _check_tokenizer_keys(cfg, read_gpt2_directory(cfg.model.pretrained, weights=False))


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
    return from_gpt2_tensors(arch, start.tensors, str(start.directory / "model.safetensors"), torch.float32)


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    pretrained = None  # rank 0 starts from model.pretrained unless resuming a checkpoint; DDP broadcasts it
    if isinstance(cfg.model, PretrainedLMConfig) and dist.main and not (resume and checkpoint.exists(run_dir)):
        pretrained = start_pretrained(cfg, run_dir)
    tokenizer, splits = prepare_data(cfg, run_dir) if dist.main else (None, None)
    dist.barrier()  # rank 0 wrote the token cache; the others read it
    if not dist.main:
        tokenizer, splits = load_tokenizer(run_dir / "tokenizer.json"), load_splits(run_dir)
    model = build_model(cfg, tokenizer.vocab_size, run_dir)
    if pretrained is not None:
        model.load_state_dict(pretrained.state_dict())
        log(f"model.pretrained: {cfg.model.pretrained} ({cfg.arch}: GPT-2 architecture and tokenizer)")
    log(f"model: {model.num_params() / 1e6:.2f}M parameters; tokens: "
        + ", ".join(f"{s} {len(splits[s]):,}" for s in SPLITS) + f"; vocabulary {tokenizer.vocab_size:,}")
    task = LMTask(model, splits, eval_batch_size=max(1, cfg.train.batch_size // cfg.train.grad_accum),
                  label_smoothing=cfg.train.label_smoothing)
    trainer = Trainer(task, cfg.train, run_dir, dist=dist, log=log)
    if trainer.precision == "bf16" and trainer.device.type == "cpu":
        set_attention_impl(model, "equations")  # explicit matmuls beat SDPA for bf16 training on CPU (notes)
    state = trainer.run(resume)
    set_attention_impl(model, "fused")
    return state


# ------------------------------------------------------------------------------------------------------
# a trained language model


class LanguageModel:
    """A trained LM loaded from a run directory: ``generate``, ``evaluate``, ``attention``."""

    def __init__(self, run_dir: Path, cfg: RunConfig, tokenizer: Tokenizer, model: nn.Module,
                 device: torch.device):
        self.run_dir, self.config, self.tokenizer, self.model, self.device = run_dir, cfg, tokenizer, model, device

    def generate(self, prompt: str | list[str], max_new_tokens: int = 200, temperature: float = 1.0,
                 top_k: int = 0, top_p: float = 1.0, seed: int | None = None, use_cache: bool = True,
                 compile: bool = False):
        """The continuation of each prompt (text); a str for a str prompt, a list for a list."""
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        ids = [self.tokenizer.encode(p) for p in prompts]
        new = generate(self.model, ids, max_new_tokens, Sampling(temperature, top_k, top_p), seed=seed,
                       eos_id=self.tokenizer.eos_id, use_cache=use_cache, device=self.device, compile=compile)
        texts = [self.tokenizer.decode(t) for t in new]
        return texts[0] if isinstance(prompt, str) else texts

    def evaluate(self, split: str = "test", batch_size: int = 16) -> dict[str, float]:
        if split not in SPLITS:
            raise SeqlabError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")
        tokens = load_splits(self.run_dir)[split]
        if len(tokens) < 2:
            raise SeqlabError(f"the {split} split of {self.run_dir} has {len(tokens)} tokens, nothing to score; "
                              "choose another --split or train with a non-zero fraction for it in data.split")
        total, count = score_stream(self.model, tokens, self.model.cfg.max_len, batch_size, self.device)
        return {"loss": total / count, "perplexity": perplexity(total, count), "tokens": count}

    def attention(self, text: str) -> tuple[list[str], list[torch.Tensor]]:
        """Token strings and per-layer attention weights (head, seq, seq) for ``text``."""
        if not hasattr(self.model, "attention_maps"):
            raise SeqlabError(f"{self.run_dir} is a {self.config.arch} language model, which has no attention weights; "
                              "attention maps need a Transformer run")
        ids = self.tokenizer.encode(text)[-self.model.cfg.max_len:]
        if not ids:
            raise SeqlabError("--text is empty after tokenisation; give some text")
        with torch.no_grad():
            weights = self.model.attention_maps(torch.tensor([ids], device=self.device))
        tokens = [self.tokenizer.decode([i]) for i in ids]
        return tokens, [w[0].float().cpu() for w in weights]


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> LanguageModel:
    device = resolve_device("auto") if device is None else torch.device(device)
    tokenizer = load_tokenizer(run_dir / "tokenizer.json")
    model = build_model(cfg, tokenizer.vocab_size, run_dir)
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    model.to(device).eval()
    return LanguageModel(run_dir, cfg, tokenizer, model, device)
