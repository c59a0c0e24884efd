"""Language modelling (seed 003): next-token prediction with the average token-level NLL.

The corpus is one token stream per split, a memory-mapped binary: the run directory's own prepared folder
(``data/{train,valid,test}.bin`` beside ``data/manifest.json``) or the folder ``data.prepared`` names, written
once by ``seqlab data prepare``. Preparation streams (:mod:`seqlab.data.prepare`): the text is read in pieces,
the tokenizer trained from an iterator, the pieces encoded in worker processes, so memory does not grow with
the corpus and corpora larger than memory train. Under torchrun rank 0 prepares and the others wait for it. Training draws windows
x = t[i:i+T], y = t[i+1:i+T+1] at offsets sampled from the data generator (nanoGPT style).
Evaluation cuts the split into non-overlapping windows so that every token after the first is
scored exactly once, and reports exp of the token-weighted mean NLL (specs/metrics.md §4).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from seqlab import checkpoint
from seqlab.config import DataConfig, RunConfig
from seqlab.data.batching import random_lm_batch, spread_batches
from seqlab.data import prepare as prep
from seqlab.data.sources import source_file, split_points
from seqlab.decode import Sampling, forget_compiled, generate
from seqlab.errors import SeqlabError, shown
from seqlab.io import read_json, versions, write_json_atomic
from seqlab.metrics.lm import nll_sum, perplexity
from seqlab.models.gpt2 import DIRECTORY_FILES, GPT2Directory, from_gpt2_tensors, read_gpt2_directory
from seqlab.models.recurrent import LM_CONFIGS, RecurrentLMConfig, build_lm
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn.attention import set_attention_impl
from seqlab.nn.weight_only import to_weight_only
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


# ------------------------------------------------------------------------------------------------------
# data: text files -> tokenizer -> memory-mapped token streams (seqlab.data.prepare streams every step)

# The data.* keys that decide the tokens, by tokenizer kind (what a prepared folder's manifest records and
# data.prepared is checked against); the source keys are replaced by data.prepared, so not compared.
SOURCE_KEYS = ("source", "train", "valid", "test")
TOKEN_KEYS = {"char": ("min_freq", "max_size"), "word": ("lowercase", "min_freq", "max_size"),
              "bpe": ("vocab_size",)}
COMMON_TOKEN_KEYS = ("tokenizer", "split", "tokenizer_sample_mb")
DATA_DIR = "data"  # a run's own prepared data (a prepared folder); data/meta.json in runs of earlier versions
PREPARE_HELP = ("run `seqlab data prepare CONFIG --out DIR` with the same data.* keys on each node and pass "
                "--set data.prepared=DIR")


def token_keys(d: DataConfig) -> dict[str, object]:
    """The data.* keys (and values) that decide the tokens of config ``d``."""
    keys = (*SOURCE_KEYS, *COMMON_TOKEN_KEYS, *TOKEN_KEYS[d.tokenizer])
    return {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(d, k)) for k in keys)}


def train_tokenizer(cfg: RunConfig, text: str | Iterable[str]) -> Tokenizer:
    """The configured tokenizer trained on ``text``: a str, or str pieces cut at safe points (read once)."""
    d = cfg.data
    max_size = d.max_size or None
    if d.tokenizer == "char":
        return CharTokenizer.train(text, min_freq=d.min_freq, max_size=max_size)
    if d.tokenizer == "word":
        return WordTokenizer.train(text, lowercase=d.lowercase, min_freq=d.min_freq, max_size=max_size)
    return BPETokenizer.train(text, vocab_size=d.vocab_size)


def _text_file(source: str, tmp: Path, bar) -> prep.TextFile:
    """A source scanned; an embedded corpus is written into the temporary folder first."""
    found = source_file(source)
    if isinstance(found, str):
        path = tmp / f".{source}.txt"
        path.write_text(found, encoding="utf-8")
        found = path
    return prep.scan(found, bar)


def _split_ranges(d: DataConfig, tmp: Path, progress: bool) -> dict[str, tuple[prep.TextFile, int, int]]:
    """(file, start byte, end byte) of each split: data.split cuts the main file by characters, as
    :func:`split_text` does; explicit data.valid / data.test files replace their split."""
    names = [d.train or d.source] + ([d.valid, d.test] if d.train else [])
    paths = {n: source_file(n) for n in names if n}  # bad names and paths are refused before any reading
    sizes = sum(len(p) if isinstance(p, str) else p.stat().st_size for p in paths.values())
    with prep.progress_bar("reading", sizes, progress) as bar:
        files = {n: _text_file(n, tmp, bar) for n in paths}
    main = files[d.train or d.source]
    a, b = (main.byte_offset(c) for c in split_points(main.chars, d.split))
    ranges = {"train": (main, 0, a), "valid": (main, a, b), "test": (main, b, main.size)}
    for split in ("valid", "test"):
        if d.train and getattr(d, split):
            f = files[getattr(d, split)]
            ranges[split] = (f, 0, f.size)
    return ranges


def prepare_tokens(cfg: RunConfig, out: Path, *, tokenizer: Tokenizer | None = None, force: bool = False,
                   progress: bool = False) -> dict:
    """Tokenizer, token binaries and manifest of ``cfg``'s data, written into ``out`` atomically (a folder
    that appears complete or not at all); returns the manifest. The text streams through: the tokenizer is
    trained on pieces of the train split (its first data.tokenizer_sample_mb MB when set) unless one is given,
    and the splits are encoded in worker processes straight into ``SPLIT.bin``."""
    d = cfg.data
    started = time.perf_counter()
    with prep.building(out, force) as tmp:
        ranges = _split_ranges(d, tmp, progress)
        if tokenizer is None:
            f, lo, hi = ranges["train"]
            if d.tokenizer_sample_mb:
                with open(f.path, "rb") as fh:
                    hi = prep.find_cut(fh, lo + int(d.tokenizer_sample_mb * prep.MB), hi)
            with prep.progress_bar("tokenizer", hi - lo, progress) as bar:
                tokenizer = train_tokenizer(cfg, prep.read_pieces(f.path, lo, hi, bar=bar))
        dtype = prep.token_dtype(tokenizer.vocab_size)
        jobs = [prep.Job(split, str(f.path), a, b) for split, (f, lo, hi) in ranges.items()
                for a, b in itertools.pairwise(prep.cut_points(f.path, lo, hi, prep.ENCODE_PIECE))]
        total = sum(hi - lo for _, lo, hi in ranges.values())
        with prep.progress_bar("encoding", total, progress) as bar:
            counts = prep.encode_ranges(tokenizer, jobs, tmp, dtype, bar=bar)
        for split in SPLITS:
            (tmp / f"{split}.bin").touch()
        tokenizer.save(tmp / "tokenizer.json")
        sources, splits = [], {}
        for split, (f, lo, hi) in ranges.items():
            embedded = f.path.parent == tmp  # written there from memory: recorded by name
            ident = f.identity() | ({"path": None, "mtime": None, "embedded": f.path.name[1:-len(".txt")]}
                                    if embedded else {})
            if ident not in sources:
                sources.append(ident)
            splits[split] = {"source": sources.index(ident), "bytes": [lo, hi]}
        manifest = {"task": "lm", "seqlab_version": versions()["seqlab"], "data": token_keys(d),
                    "sources": sources, "splits": splits,
                    "tokenizer": {"kind": tokenizer.kind, "vocab_size": tokenizer.vocab_size,
                                  "sha256": prep.file_sha256(tmp / "tokenizer.json")},
                    "dtype": dtype.name, "tokens": {s: counts.get(s, 0) for s in SPLITS},
                    "seconds": round(time.perf_counter() - started, 3)}
        prep.write_manifest(tmp, manifest)
        for f, _, _ in ranges.values():
            if f.path.parent == tmp:
                f.path.unlink(missing_ok=True)
    return manifest


def prepare(cfg: RunConfig, out: Path, *, force: bool = False, progress: bool = True) -> dict:
    """``seqlab data prepare``: :func:`prepare_tokens` of a config into ``out`` (a model.pretrained
    directory brings its tokenizer, used as is)."""
    if cfg.data.prepared:
        raise SeqlabError(f"data.prepared={shown(cfg.data.prepared)} is already prepared data; to prepare, give the "
                          "text with data.source (or data.train, data.valid, data.test) and no data.prepared")
    tokenizer = None
    if isinstance(cfg.model, PretrainedLMConfig):
        check_config(cfg)
        tokenizer = read_gpt2_directory(cfg.model.pretrained, weights=False).tokenizer
    return prepare_tokens(cfg, out, tokenizer=tokenizer, force=force, progress=progress)


def open_prepared(cfg: RunConfig, directory: str | Path) -> tuple[Path, dict]:
    """A data.prepared folder and its manifest, refused when a data.* key that decides the tokens differs
    from the one it was prepared with (naming the key); model.* and train.* keys may differ freely."""
    directory = Path(directory).expanduser()
    fix = f"prepare it with `seqlab data prepare CONFIG --out {shown(directory)}`"
    manifest = prep.read_manifest(directory, fix)
    if manifest.get("task") != "lm":
        raise SeqlabError(f"data.prepared={shown(directory)} holds data of task {manifest.get('task')!r}, not lm; "
                          f"{fix}")
    prepared, kind = manifest["data"], manifest["data"].get("tokenizer")
    mine = token_keys(replace(cfg.data, tokenizer=kind) if kind in TOKEN_KEYS else cfg.data)
    differ = ["tokenizer"] if cfg.data.tokenizer != kind else []
    differ += [k for k in (*COMMON_TOKEN_KEYS[1:], *TOKEN_KEYS.get(kind, ())) if prepared.get(k) != mine[k]]
    if differ:
        keys = ", ".join(f"data.{k}={_toml(getattr(cfg.data, k))} (prepared with {_toml(prepared.get(k))})"
                         for k in differ)
        raise SeqlabError(f"data.prepared={shown(directory)} was prepared with other token settings: {keys}; "
                          "set these keys to the prepared values, or prepare the data again with them")
    tok_path = directory / "tokenizer.json"
    if prep.file_sha256(tok_path) != manifest["tokenizer"]["sha256"]:
        raise SeqlabError(f"{shown(tok_path)} does not match the SHA-256 in its manifest: the prepared data is "
                          f"damaged; {fix}")
    return directory.resolve(), manifest


def _toml(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else (
        str(list(value)) if isinstance(value, (list, tuple)) else str(value))


def prepare_data(cfg: RunConfig, run_dir: Path, dist: Dist, log=print) -> tuple[Tokenizer, dict[str, np.ndarray]]:
    """Tokenizer and memory-mapped splits. With data.prepared, that folder's (memory-mapped, not copied);
    else the run's own ``data/``, prepared once by rank 0 and reused on resume, while the other ranks of a
    torchrun wait for it (:func:`seqlab.data.prepare.wait_for_beacon`, no process-group timeout)."""
    if cfg.data.prepared:
        directory, manifest = open_prepared(cfg, cfg.data.prepared)
        if dist.main:
            shutil.copyfile(directory / "tokenizer.json", run_dir / "tokenizer.json")
            write_json_atomic(run_dir / DATA_DIR / "meta.json", {"prepared": str(directory),
                                                                  "dtype": manifest["dtype"],
                                                                  "tokens": manifest["tokens"]})
            log(f"data.prepared: {directory} ({_sources_line(manifest)})")
        return load_tokenizer(directory / "tokenizer.json"), prep.memmap_splits(directory, manifest)
    data = run_dir / DATA_DIR
    beacon_path = run_dir / "data.preparing.json"
    if dist.main:
        beacon = prep.Beacon(beacon_path) if dist.world > 1 else None
        if beacon:
            dist.share((beacon.token, beacon.doc["host"]))
        try:
            if not (data / prep.MANIFEST).exists() and not (data / "meta.json").exists():
                pretrained = isinstance(cfg.model, PretrainedLMConfig)  # the directory's, saved by start_pretrained
                given = load_tokenizer(run_dir / "tokenizer.json") if pretrained else None
                big = sum(_source_size(n) for n in (cfg.data.train or cfg.data.source, cfg.data.valid, cfg.data.test)
                          if n) >= 16 * prep.MB
                manifest = prepare_tokens(cfg, data, tokenizer=given, force=True,
                                          progress=cfg.train.progress and big)
                shutil.copyfile(data / "tokenizer.json", run_dir / "tokenizer.json")
                if big:
                    log(f"data: {_sources_line(manifest)}, prepared in {manifest['seconds']:.1f} s")
            if beacon:
                beacon.ready()
        except BaseException:
            if beacon:
                beacon.close()
            raise
        if beacon:
            dist.barrier()
            beacon.close()
    else:
        token, host = dist.share(None)
        prep.wait_for_beacon(beacon_path, token, host, dist.rank, PREPARE_HELP)
        dist.barrier()
    return load_tokenizer(run_dir / "tokenizer.json"), load_splits(run_dir)


def _source_size(name: str) -> int:
    path = Path(name).expanduser()
    return path.stat().st_size if path.is_file() else 0


def _sources_line(manifest: dict) -> str:
    mb = text_bytes(manifest) / prep.MB
    return (f"{mb:,.1f} MB of text, " + ", ".join(f"{s} {n:,}" for s, n in manifest["tokens"].items())
            + f" {manifest['dtype']} tokens")


def text_bytes(manifest: dict) -> int:
    """The bytes of text a prepared folder was encoded from."""
    return sum(hi - lo for lo, hi in (s["bytes"] for s in manifest["splits"].values()))


def load_splits(run_dir: Path) -> dict[str, np.ndarray]:
    """A run's token streams, memory-mapped: its own ``data/`` folder, or the data.prepared folder it names."""
    data = run_dir / DATA_DIR
    fix = "train the run again with --force"
    if (data / prep.MANIFEST).exists():
        return prep.memmap_splits(data, prep.read_manifest(data, fix))
    meta = read_json(data / "meta.json", "token data index", fix, expect=dict)
    if "prepared" in meta:
        directory = Path(meta["prepared"])
        return prep.memmap_splits(directory, prep.read_manifest(
            directory, f"the run reads its tokens from data.prepared={directory}; put that folder back"))
    return prep.memmap_splits(data, meta)  # a run of an earlier version: data/meta.json with dtype and tokens


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
    return from_gpt2_tensors(arch, start.tensors, str(start.directory / "model.safetensors"), torch.float32)


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    pretrained = None  # rank 0 starts from model.pretrained unless resuming a checkpoint; DDP broadcasts it
    if isinstance(cfg.model, PretrainedLMConfig) and dist.main and not (resume and checkpoint.exists(run_dir)):
        pretrained = start_pretrained(cfg, run_dir)
    tokenizer, splits = prepare_data(cfg, run_dir, dist, log)
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

    def use_weight_dtype(self, dtype: str) -> int:
        """Store the model's linear-layer weights in ``dtype`` ("fp32", "bf16" or "int8"; seqlab.nn.weight_only)
        from now on, for generation (fast with ``compile=True``) and evaluation; returns the layers converted.
        Irreversible on this object: load the run again for fp32."""
        converted = to_weight_only(self.model, dtype)
        if converted:
            forget_compiled(self.model)  # a step compiled before holds the fp32 layers (and froze them)
        return converted

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
