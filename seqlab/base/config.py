"""Run configuration: dataclass sections, TOML files and presets, ``--set section.key=value`` overrides.

A run config has four sections (docs/manual.md, "Config conventions"):

- ``task``  -- :class:`TaskConfig`: what is being learned (``kind``).
- ``data``  -- :class:`DataConfig`: where the text comes from and how it is tokenised.
- ``model`` -- the model's own frozen dataclass, chosen by ``model.arch`` (and ``task.kind``).
- ``train`` -- :class:`TrainConfig`: the optimiser, schedule, precision and bookkeeping.

This module knows no task: :func:`read` takes a preset, TOML file, RunConfig or dict with sections and ``--set``
overrides on top, and :func:`parse` validates the ``task``, ``data`` and ``train`` sections and keeps ``model`` as
given. The task layer (:mod:`seqlab.tasks.registry`) knows which model config each
``task.kind`` / ``model.arch`` builds and which ``train.*`` keys each task uses, and turns a
:class:`ParsedConfig` into the :class:`RunConfig` a run is trained from.

Every key is validated: an unknown key, a wrong type or an out-of-range value raises
:class:`~seqlab.base.errors.SeqlabError` naming the key and listing the valid keys or range.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from seqlab.base.errors import SeqlabError, shown

SECTIONS = ("task", "data", "model", "train")
TASK_KINDS = ("lm", "tag", "classify", "translate", "forecast", "embed")


@dataclass(frozen=True)
class TaskConfig:
    kind: str = "lm"  # lm | tag | classify | translate | forecast | embed

    def __post_init__(self):
        _choice("task.kind", self.kind, TASK_KINDS)


TAG_SCHEMES = ("auto", "iob2", "iobes")  # data.tag_scheme: seqlab.data.conll.convert_scheme's schemes


@dataclass(frozen=True)
class DataConfig:
    source: str = "pydocs"  # embedded corpus (pydocs, pystdlib), downloadable dataset name, or a file path
    train: str = ""  # explicit training file; overrides `source`
    valid: str = ""  # explicit validation file (else cut from train by `split`)
    test: str = ""  # explicit test file (else cut from train by `split`)
    prepared: str = ""  # lm: a folder `seqlab data prepare` wrote; takes the place of source/train/valid/test
    split: tuple[float, float, float] = (0.9, 0.05, 0.05)  # train, valid, test fractions (contiguous)
    tokenizer: str = "char"  # char | word | bpe
    vocab_size: int = 4096  # BPE target vocabulary size (char/word: bounded by max_size)
    lowercase: bool = False  # word tokenizer: lowercase before splitting
    min_freq: int = 1  # char/word: drop tokens seen fewer times (they map to <unk>)
    max_size: int = 0  # char/word: cap on vocabulary size including specials; 0 = no cap
    tokenizer_sample_mb: float = 0.0  # lm: train the tokenizer on the first N MB of the train split (0 = all)
    src: str = ""  # parallel text: source-language suffix (data.train=PREFIX reads PREFIX.src)
    tgt: str = ""  # parallel text: target-language suffix
    joint_vocab: bool = False  # translation: one vocabulary (joint BPE merges) learned from both languages
    column: str = ""  # forecast: CSV column of the values, header name or 0-based index ("" = last numeric column)
    date_column: str = ""  # forecast: CSV column of date labels, for the plot ("" = none)
    horizon: int = 0  # forecast: held-out tail length (0 = the test fraction of data.split)
    analogies: str = ""  # embed: analogy questions file or dataset name (default analogy-google)
    similarity: str = ""  # embed: word-pair sets, comma-separated files or dataset names (default wordsim353,simlex999)
    max_memory_mb: int = 1024  # embed (GloVe): memory for co-occurrence counting; above it, sorted shards spill to disk
    tag_scheme: str = "auto"  # tag: auto (IOB1 read as IOB2, others as written) | iob2 | iobes: every split converted
    digits_to_zero: bool = False  # tag: every digit of a word read as 0 (words and characters, every split, predict)

    def __post_init__(self):
        _choice("data.tokenizer", self.tokenizer, ("char", "word", "bpe"))
        _choice("data.tag_scheme", self.tag_scheme, TAG_SCHEMES)
        if len(self.split) != 3 or not all(f >= 0 for f in self.split) or not abs(sum(self.split) - 1) <= 1e-6:
            raise SeqlabError(f"data.split must be three non-negative fractions summing to 1, got {list(self.split)}; "
                              "e.g. --set data.split=[0.9,0.05,0.05]")
        if self.split[0] <= 0:
            raise SeqlabError("data.split: the train fraction must be > 0")
        _at_least("data.vocab_size", self.vocab_size, 8)
        _at_least("data.min_freq", self.min_freq, 1)
        _at_least("data.max_size", self.max_size, 0)
        _at_least("data.horizon", self.horizon, 0)
        _at_least("data.tokenizer_sample_mb", self.tokenizer_sample_mb, 0)
        _at_least("data.max_memory_mb", self.max_memory_mb, 1)


OPTIMIZERS = ("adamw", "sgd")  # train.optimizer: seqlab.training.optim.make_optimizer builds them
# the train.* keys only one optimizer reads: set for the other, they are refused (seqlab.tasks.registry)
OPTIMIZER_KEYS = {"beta1": "adamw", "beta2": "adamw", "momentum": "sgd"}

# The validation metrics a run can be chosen by (train.best_by), and whether a higher value is better.
METRIC_HIGHER_IS_BETTER = {"loss": False, "f1": True, "accuracy": True, "bleu": True, "mae": False, "rmse": False}


@dataclass(frozen=True)
class TrainConfig:
    """The train section. Each task uses a subset of these keys (``TRAIN_KEYS`` of its module in
    :mod:`seqlab.tasks`); a config that sets another one is refused."""

    max_steps: int = 1000  # optimiser steps; training stops at max_steps or epochs, whichever comes first
    epochs: float = 0.0  # passes over the training tokens (0 = no limit from epochs)
    max_minutes: float = 0.0  # wall-clock budget for this invocation (0 = none); stops early, resumable
    batch_size: int = 32  # sequences per optimiser step (global, over all processes and accumulation)
    grad_accum: int = 1  # micro-batches per optimiser step (batch_size must be divisible by it)
    lr: float = 1e-3  # peak learning rate after warm-up
    min_lr: float = 1e-4  # learning rate at the end of the decay (cosine or wsd)
    warmup_steps: int = 100  # linear warm-up from 0 to lr
    schedule: str = "cosine"  # cosine to min_lr; wsd: lr held, then a linear decay; wsd-time: wsd timed by max_minutes
    decay_fraction: float = 0.2  # wsd: the share of max_steps (after warm-up) over which lr falls to min_lr
    optimizer: str = "adamw"  # adamw | sgd: plain SGD, w -= lr * (g + momentum buffer), as Lample et al. 2016
    weight_decay: float = 0.1  # AdamW decay (SGD: an L2 term) on weight matrices only (not norms, biases, embeddings)
    beta1: float = 0.9  # AdamW: decay rate of the running mean of the gradient
    beta2: float = 0.99  # AdamW: decay rate of the running mean of the squared gradient
    momentum: float = 0.0  # SGD: the momentum of its velocity buffer (0 = plain SGD)
    grad_clip: float = 1.0  # max global gradient norm (0 = off)
    label_smoothing: float = 0.0  # eps of the smoothed cross-entropy training loss (validation stays plain NLL)
    singleton_unk: float = 0.0  # tag: each training occurrence of a word seen once reads as <unk> with this chance
    seed: int = 1337  # seeds initialisation, data order and dropout: the same seed gives the same run
    precision: str = "auto"  # auto | fp32 | bf16 | fp16 (fp16 on CUDA only, with a gradient scaler)
    compile: bool = False  # torch.compile the model for training
    device: str = "auto"  # auto | cpu | cuda
    threads: int = 0  # torch intra-op threads (0 = leave PyTorch's default)
    eval_every: int = 250  # steps between validations (0 = only at the end)
    eval_batches: int = 20  # validation batches per periodic validation (0 = the whole valid split every time)
    save_every: int = 250  # steps between checkpoints (0 = only at the end)
    log_every: int = 10  # steps between metrics.jsonl training rows
    keep_best: bool = True  # keep the best-validation checkpoint in best/ (what readers load unless --last)
    keep_last: int = 2  # checkpoints kept: the newest (run root) and N - 1 earlier in checkpoints/ (resume fallback)
    patience: int = 0  # validations without a new best before training stops early (0 = never stop early)
    best_by: str = "loss"  # validation metric for best/ and patience: loss, f1, accuracy, bleu, mae or rmse
    report_to: tuple[str, ...] = ()  # logs beside metrics.jsonl (HF's name): "tensorboard" (RUN/tensorboard/)
    progress: bool = True  # progress bar on stderr

    def __post_init__(self):
        _at_least("train.max_steps", self.max_steps, 1)
        _at_least("train.batch_size", self.batch_size, 1)
        _at_least("train.grad_accum", self.grad_accum, 1)
        if self.batch_size % self.grad_accum:
            raise SeqlabError(f"train.batch_size ({self.batch_size}) must be divisible by train.grad_accum "
                              f"({self.grad_accum})")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise SeqlabError(f"train.lr must be a positive number, got {self.lr}")
        for name in ("epochs", "max_minutes", "min_lr", "weight_decay", "grad_clip"):
            _at_least(f"train.{name}", getattr(self, name), 0)
        for name in ("warmup_steps", "threads", "eval_every", "save_every", "log_every", "patience"):
            _at_least(f"train.{name}", getattr(self, name), 0)
        _at_least("train.eval_batches", self.eval_batches, 0)
        for name in ("beta1", "beta2"):  # AdamW's betas (torch raises a ValueError outside [0, 1))
            if not 0.0 <= getattr(self, name) < 1.0:
                raise SeqlabError(f"train.{name}={getattr(self, name)} is outside [0, 1); use e.g. 0.9 or 0.99")
        _at_least("train.keep_last", self.keep_last, 1)
        if not 0.0 <= self.label_smoothing < 1.0:
            raise SeqlabError(f"train.label_smoothing={self.label_smoothing} is outside [0, 1); use e.g. 0.1, or 0 "
                              "to turn it off")
        if not 0.0 <= self.singleton_unk <= 1.0:
            raise SeqlabError(f"train.singleton_unk={self.singleton_unk} is outside [0, 1]; use e.g. 0.5, or 0 to "
                              "turn it off")
        if not 0.0 <= self.momentum < 1.0:
            raise SeqlabError(f"train.momentum={self.momentum} is outside [0, 1); use e.g. 0.9, or 0 for plain SGD")
        _choice("train.optimizer", self.optimizer, OPTIMIZERS)
        _choice("train.precision", self.precision, ("auto", "fp32", "bf16", "fp16"))
        _choice("train.schedule", self.schedule, ("cosine", "wsd", "wsd-time"))
        _choice("train.best_by", self.best_by, tuple(METRIC_HIGHER_IS_BETTER))
        # HF's values: a name or a list of names; "all" = every supported one, "none" = none
        report_to = (self.report_to,) if isinstance(self.report_to, str) else tuple(self.report_to)
        report_to = ("tensorboard",) if "all" in report_to else tuple(r for r in report_to if r != "none")
        unknown = [r for r in report_to if r not in ("tensorboard",)]
        if unknown:
            raise SeqlabError(f"train.report_to: {unknown[0]!r} is not supported; supported: \"tensorboard\" "
                              "(or \"all\", \"none\")")
        object.__setattr__(self, "report_to", tuple(dict.fromkeys(report_to)))
        if self.schedule == "wsd-time" and not self.max_minutes:
            raise SeqlabError("train.schedule=wsd-time follows the time budget: set train.max_minutes > 0, or use "
                              "train.schedule=wsd")
        if not 0.0 < self.decay_fraction <= 1.0:
            raise SeqlabError(f"train.decay_fraction must be in (0, 1], got {self.decay_fraction}")
        _choice("train.device", self.device, ("auto", "cpu", "cuda"))

    @property
    def validated(self) -> str:
        """What each periodic validation scores, as metrics.jsonl's valid rows say: "all" (of the valid split,
        ``eval_batches = 0``) or "N batches"."""
        n = self.eval_batches
        return f"{n} batch{'es' if n > 1 else ''}" if n else "all"


@dataclass(frozen=True)
class ParsedConfig:
    """A config as :func:`parse` leaves it: ``task``, ``data`` and ``train`` validated, ``model`` as given
    (its dataclass depends on the task, so the task layer validates it)."""

    task: TaskConfig
    data: DataConfig
    train: TrainConfig
    train_given: tuple[str, ...]  # the train keys the config sets (preset, TOML file or --set), as written
    arch: str  # model.arch
    model: dict[str, Any]  # the other model.* keys, as given
    given: frozenset[str] = frozenset()  # "section.key" the user set (--set, sections), not the preset or file:
    # a model key the user set that the other keys leave unused is refused (seqlab.tasks.registry.resolve_run)


@dataclass(frozen=True)
class RunConfig:
    """A whole run: the four sections, each validated (built by :func:`seqlab.tasks.resolve`)."""

    task: TaskConfig = field(default_factory=TaskConfig)
    data: DataConfig = field(default_factory=DataConfig)
    model: Any = None  # the model's dataclass; the sizes read from the data are None (tasks `replace` them)
    train: TrainConfig = field(default_factory=TrainConfig)
    arch: str = "transformer"
    model_keys: tuple[str, ...] | None = None  # the model keys a user sets (None: every field of `model`)
    train_keys: tuple[str, ...] | None = None  # the train keys the task uses (None: every TrainConfig field)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """The sections as nested dicts: what ``config.toml`` records (only the keys a user may set)."""
        model_keys = self.model_keys if self.model_keys is not None else [f.name for f in fields(self.model)]
        train_keys = self.train_keys if self.train_keys is not None else [f.name for f in fields(self.train)]
        return {
            "task": dataclasses.asdict(self.task),
            "data": dataclasses.asdict(self.data),
            "model": {"arch": self.arch, **{k: getattr(self.model, k) for k in model_keys}},
            "train": {k: getattr(self.train, k) for k in train_keys},
        }

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())


# ---------------------------------------------------------------------------------------------------------
# parsing dicts, TOML files, presets and overrides


def parse(raw: dict[str, Any], given: Collection[str] = ()) -> ParsedConfig:
    """Validate the ``task``, ``data`` and ``train`` sections of a nested dict {section: {key: value}};
    ``given``: the ``section.key`` names the user set on top of a preset or file (:func:`given_keys`)."""
    unknown = set(raw) - set(SECTIONS)
    if unknown:
        raise SeqlabError(f"unknown config section(s) {sorted(unknown)}; valid sections: {', '.join(SECTIONS)}")
    task = build_section(TaskConfig, _table(raw, "task"), "task")
    data = build_section(DataConfig, _table(raw, "data"), "data")
    train = build_section(TrainConfig, _table(raw, "train"), "train")
    model = dict(_table(raw, "model"))
    arch = model.pop("arch", "transformer")
    if not isinstance(arch, str):
        raise SeqlabError(f"model.arch must be a string, got {arch!r}")
    return ParsedConfig(task=task, data=data, train=train, train_given=tuple(_table(raw, "train")), arch=arch,
                        model=model, given=frozenset(given))


def _table(raw: dict[str, Any], section: str) -> dict[str, Any]:
    """``raw[section]`` ({} when absent), which must be a table of keys (not `task = "lm"` at the top level)."""
    value = raw.get(section, {})
    if not isinstance(value, dict):
        raise SeqlabError(f"config section {section} must be a table of keys, got {section} = {value!r}; write "
                          f"[{section}] on a line of its own and the keys below it, e.g. [task] then kind = \"lm\"")
    return value


def load_toml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if os.path.isdir(path):  # os.path: False, not an OSError, for a name the system refuses (too long)
        raise SeqlabError(f"{shown(path)} is a directory; give a preset name or a .toml file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SeqlabError(f"config file {shown(path)} not found; give a preset name (see `seqlab presets`) "
                          "or the path of a .toml file") from None
    except UnicodeDecodeError as e:
        raise SeqlabError(f"{shown(path)} is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except (OSError, ValueError) as e:  # a name too long, no permission, a NUL in the name
        raise SeqlabError(f"cannot read config file {shown(path)} ({getattr(e, 'strerror', None) or e}); "
                          "check the path") from None
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as e:  # TOMLDecodeError; int()'s 4300-digit limit; nesting too deep
        raise SeqlabError(f"{shown(path)} is not valid TOML ({e}); fix the file") from None


def _presets_folder():
    """The presets' folder: package data beside this module (``seqlab/base/presets/``, one TOML file each)."""
    return resources.files("seqlab.base").joinpath("presets")


def preset_text(name: str) -> str:
    """The TOML text of preset ``name``."""
    return _presets_folder().joinpath(f"{name}.toml").read_text(encoding="utf-8")


def preset_names() -> list[str]:
    return sorted(p.name[:-5] for p in _presets_folder().iterdir() if p.name.endswith(".toml"))


def preset_summary(name: str) -> str:
    """The first comment line of a preset file (its one-line description)."""
    text = preset_text(name)
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


def read(source: str | RunConfig | Mapping[str, Any], sections: Mapping[str, Any] | None = None,
         overrides: list[str] | None = None) -> ParsedConfig:
    """A preset name, TOML path, RunConfig (its :meth:`~RunConfig.to_dict`) or dict of sections, then ``sections``
    ({"model": {"n_layers": 4}}), then ``--set`` overrides, parsed: the keys ``sections`` and ``overrides`` set are
    the user's (:attr:`ParsedConfig.given`). A dict on its own is parsed as it is (a run's config.toml)."""
    base = source.to_dict() if isinstance(source, RunConfig) else dict(source) if isinstance(source, Mapping) \
        else load_preset_or_file(source)
    over = parse_overrides(overrides or [])
    if isinstance(source, Mapping) and sections is None and not over:
        return parse(base)  # as written: a run's config.toml
    raw = merge_sections(merge_sections(base, {} if sections is None else sections), over)  # checks they are dicts
    return parse(raw, given=given_keys(sections or {}) | given_keys(over))


def load_preset_or_file(name_or_path: str) -> dict[str, Any]:
    """A preset name (``lm-char``) or the path of a TOML file with the same shape."""
    if name_or_path in preset_names():
        return tomllib.loads(preset_text(name_or_path))
    if name_or_path.endswith(".toml") or os.path.exists(name_or_path):
        return load_toml(name_or_path)
    raise SeqlabError(f"unknown preset {name_or_path!r}; valid presets: {', '.join(preset_names())} "
                      "(or give the path of a .toml file)")


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``section.key=value`` strings; values are parsed as TOML values (bare words are strings)."""
    return merge_sections(raw, parse_overrides(overrides))


def parse_overrides(overrides: list[str]) -> dict[str, dict[str, Any]]:
    """``section.key=value`` strings as sections {section: {key: value}} (a later string wins)."""
    sections: dict[str, dict[str, Any]] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        section, dot, name = key.strip().partition(".")
        if not sep or not dot or not name:
            raise SeqlabError(f"--set {item!r} must look like section.key=value, e.g. --set train.max_steps=500")
        if section not in SECTIONS:
            raise SeqlabError(f"--set {item!r}: unknown section {section!r}; valid sections: {', '.join(SECTIONS)}")
        sections.setdefault(section, {})[name] = parse_value(value.strip())
    return sections


def merge_sections(raw: dict[str, Any], sections: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` (a preset, file or run config) with the keys of ``sections`` ({"model": {"n_layers": 4}, ...})
    set on top: a copy, section by section; an unknown section or a section that is not a dict is an error
    (the keys are checked when the result is parsed, as every key is)."""
    if not isinstance(sections, Mapping):
        raise SeqlabError(f"sections must be a dict of sections like {{\"model\": {{\"n_layers\": 4}}}}, got "
                          f"{type(sections).__name__}")
    raw = {k: dict(_table(raw, k)) if k in SECTIONS else v for k, v in raw.items()}  # parse() names unknown ones
    for section, values in sections.items():
        if section not in SECTIONS:
            raise SeqlabError(f"unknown config section {section!r}; valid sections: {', '.join(SECTIONS)}")
        if not isinstance(values, Mapping):
            raise SeqlabError(f"section {section} must be a dict of keys, e.g. {{\"{section}\": {{\"KEY\": VALUE}}}}, "
                              f"got {section} = {values!r}")
        for key, value in values.items():
            if not isinstance(key, str):
                raise SeqlabError(f"section {section}: key {key!r} is not a str; name keys as str, e.g. \"max_steps\"")
            raw.setdefault(section, {})[key] = value
    return raw


def given_keys(sections: Mapping[str, Mapping[str, Any]]) -> frozenset[str]:
    """The ``section.key`` names that ``sections`` (or ``--set`` strings, :func:`parse_overrides`) set."""
    return frozenset(f"{section}.{key}" for section, values in sections.items() for key in values)


def parse_value(text: str) -> Any:
    """A TOML value (``3``, ``0.1``, ``true``, ``[0.9, 0.1, 0]``, ``"x"``) or else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (ValueError, RecursionError):  # TOMLDecodeError; int()'s 4300-digit limit; nesting too deep
        return text


# ---------------------------------------------------------------------------------------------------------
# validation helpers


def build_section(cls: type, values: dict[str, Any], section: str, *, exclude: Collection[str] = (),
                  extra_valid: tuple[str, ...] = ()):
    """``cls(**values)`` with every key checked against the fields of ``cls`` (minus ``exclude``, which keep
    their defaults) and coerced to its type; errors name ``section.key`` and list the valid keys."""
    hints = typing.get_type_hints(cls)
    valid = [f.name for f in fields(cls) if f.name not in exclude]
    kwargs = {}
    for key, value in values.items():
        if key not in valid:
            raise SeqlabError(f"unknown key {section}.{shown(key)}; valid {section} keys: "
                              f"{', '.join([*extra_valid, *valid])}")
        kwargs[key] = _coerce(f"{section}.{key}", value, hints[key])
    try:
        return cls(**kwargs)
    except SeqlabError:
        raise
    except (TypeError, ValueError) as e:  # a model config's own validation
        raise SeqlabError(f"invalid {section} config: {e}") from None


def _coerce(key: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or (type(None) in typing.get_args(hint) and value == ""):
            return None
        hint = options[0]
        origin = typing.get_origin(hint)
    if origin is tuple:
        args = typing.get_args(hint)
        if isinstance(value, str) and args == (str, Ellipsis):  # a list of names may be one name
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise SeqlabError(f"{key} must be a list like [0.9, 0.05, 0.05], got {value!r}")
        inner = args[0] if args else Any
        if len(args) == 2 and args[1] is Ellipsis or len(args) <= 1:
            return tuple(_coerce(key, v, inner) for v in value)
        if len(value) != len(args):
            raise SeqlabError(f"{key} must have {len(args)} entries, got {len(value)}")
        return tuple(_coerce(key, v, a) for v, a in zip(value, args))
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise SeqlabError(f"{key} must be true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SeqlabError(f"{key} must be an integer, got {value!r}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if isinstance(value, int) and not -1e308 < value < 1e308:  # float() would raise OverflowError
                raise SeqlabError(f"{key} is too large for a number ({len(str(abs(value)))} digits); "
                                  "give a value within ±1e308")
            return float(value)
        raise SeqlabError(f"{key} must be a number, got {value!r}")
    if hint is str:
        if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):  # config.toml is UTF-8
            raise SeqlabError(f"{key} = {value!r} holds bytes that are not UTF-8 (a name in another encoding?); "
                              "give it in UTF-8, e.g. rename the file")
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):  # e.g. --set data.column=1 (an index)
            return str(value)
        raise SeqlabError(f"{key} must be a string, got {value!r}")
    return value


def _choice(key: str, value: Any, options: tuple[str, ...]) -> None:
    if value not in options:
        raise SeqlabError(f"{key} must be one of {', '.join(options)}; got {value!r}")


def _at_least(key: str, value: float, low: float) -> None:
    if not (value >= low and (isinstance(value, int) or math.isfinite(value))):  # refuses NaN and infinity (an int
        # is finite; math.isfinite would overflow converting a 400-digit one)
        raise SeqlabError(f"{key} must be >= {low}{'' if isinstance(value, int) else ' and finite'}, got {value}")


# ---------------------------------------------------------------------------------------------------------
# writing TOML (the resolved config in a run directory); the subset we need: tables of scalars and lists


def dumps_toml(doc: dict[str, dict[str, Any]]) -> str:
    lines = []
    for section, values in doc.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is None:
                continue
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        # TOML strings hold no other control character (a tab is fine): escape them, or config.toml is unreadable
        escaped = "".join(f"\\u{ord(c):04x}" if c < " " and c != "\t" or c == "\x7f" else c for c in escaped)
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")
