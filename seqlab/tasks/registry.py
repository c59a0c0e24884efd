"""The task layer's registry: which model config each ``task.kind`` / ``model.arch`` builds, which
``train.*`` keys each uses, and the :class:`~seqlab.base.config.RunConfig` built from a parsed config.

:mod:`seqlab.base.config` parses the sections and knows no task; this module finishes the job:

- the model section is validated against the model's dataclass (``MODEL_CONFIGS`` of the task module);
  the sizes read from the data (:data:`DERIVED_MODEL_KEYS`) cannot be set and stay ``None`` until the
  task reads the data and ``dataclasses.replace``-s them in;
- a ``train.*`` key the task does not use (``TRAIN_KEYS`` of the task module, per arch where it is a
  dict) is refused when the config sets it, so no setting is silently ignored. A run's own ``config.toml``
  is read with ``drop_unused=True``: earlier versions recorded every train key there;
- a ``train.*`` key the user set that only the other ``train.optimizer`` reads (AdamW's betas, SGD's momentum)
  is refused;
- a ``model.*`` key the user set (``--set``, :func:`from_sections`; not the preset's or file's own keys, whose
  combinations are the preset's choice) that the other model keys leave unused is refused, naming the key that
  decides: the model config's ``unused_keys()`` (e.g. ARConfig: ``p`` while ``max_p`` chooses it), and for
  ``model.arch = "pretrained"`` the architecture keys, which come from the checkpoint.

Entry points: :func:`resolve` (a preset or TOML file plus ``--set`` overrides), :func:`from_sections` (the same
with a dict of sections, or on top of a RunConfig: the Python API) and :func:`from_dict`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import fields
from types import ModuleType
from typing import Any

from seqlab.base import config
from seqlab.base.config import DataConfig, ParsedConfig, RunConfig, TrainConfig
from seqlab.base.errors import SeqlabError
from seqlab.tasks.protocol import TaskHooks, hooks

TASK_MODULES = {
    "lm": "seqlab.tasks.lm",
    "embed": "seqlab.tasks.word_vectors",
    "translate": "seqlab.tasks.translate",
    "forecast": "seqlab.tasks.forecast",
    "tag": "seqlab.tasks.tag",
    "classify": "seqlab.tasks.classify",
}

# Keys of a model config that come from the data, not from the user: None in RunConfig.model.
DERIVED_MODEL_KEYS = frozenset({"vocab_size", "src_vocab_size", "tgt_vocab_size", "n_labels", "n_classes"})
# data.* keys that one task uses, refused for the others (not ignored): the streaming LM preparation
# (seqlab.tasks.lm, `seqlab data prepare`), GloVe's bounded co-occurrence counting (seqlab.tasks.word_vectors) and the
# tagging scheme of a tagger's labels (seqlab.tasks.tag)
TASK_DATA_KEYS = {"prepared": ("lm", "`seqlab data prepare`"), "tokenizer_sample_mb": ("lm", "`seqlab data prepare`"),
                  "max_memory_mb": ("embed", "co-occurrence counting"), "tag_scheme": ("tag", "the tags' scheme"),
                  "digits_to_zero": ("tag", "the words' digits")}


def task_module(kind: str) -> ModuleType:
    """The module of ``task.kind``; read its hooks through :func:`task_hooks`."""
    name = TASK_MODULES.get(kind)
    if name is None:
        raise SeqlabError(f"task.kind={kind!r} is not available in this version; available: "
                          f"{', '.join(TASK_MODULES)}")
    return importlib.import_module(name)


def task_hooks(kind: str) -> TaskHooks:
    """The hooks of ``task.kind``'s module, the task protocol's defaults for those it does not define
    (:mod:`seqlab.tasks.protocol`)."""
    return hooks(task_module(kind))


def model_config_class(kind: str, arch: str) -> type:
    """The frozen dataclass that holds ``model.*`` for a task kind and architecture."""
    configs = task_hooks(kind).MODEL_CONFIGS
    if arch not in configs:
        raise SeqlabError(f"model.arch={arch!r} is not available for task.kind={kind}; available: "
                          f"{', '.join(configs)}")
    return configs[arch]


def train_keys(kind: str, arch: str) -> tuple[str, ...]:
    """The ``train.*`` keys a task kind (and architecture) uses, in :class:`TrainConfig` order."""
    keys = task_hooks(kind).TRAIN_KEYS
    if isinstance(keys, Mapping):  # per model.arch
        keys = keys[arch]
    return tuple(f.name for f in fields(TrainConfig) if f.name in keys)


def model_keys(cls: type) -> tuple[str, ...]:
    """The ``model.*`` keys a user may set for a model config (besides ``arch``)."""
    return tuple(f.name for f in fields(cls) if f.name not in DERIVED_MODEL_KEYS)


def build(parsed: ParsedConfig, *, drop_unused: bool = False) -> RunConfig:
    """The run config of a parsed config: the model section validated, unused train keys refused (or,
    with ``drop_unused``, for a run's own config.toml, dropped)."""
    kind, arch = parsed.task.kind, parsed.arch
    cls = model_config_class(kind, arch)
    used = train_keys(kind, arch)
    unused = [k for k in parsed.train_given if k not in used]
    if unused and not drop_unused:
        owner = f'task.kind = "{kind}"'
        if isinstance(task_hooks(kind).TRAIN_KEYS, Mapping):
            owner += f' with model.arch = "{arch}"'
        names = ", ".join(f"train.{k}" for k in unused)
        raise SeqlabError(f"{names} {'is' if len(unused) == 1 else 'are'} not used by {owner}; its train keys "
                          f"are: {', '.join(used)}; remove {'it' if len(unused) == 1 else 'them'}")
    for key, (owner_kind, what) in TASK_DATA_KEYS.items():
        if kind != owner_kind and not drop_unused and getattr(parsed.data, key) != getattr(DataConfig(), key):
            raise SeqlabError(f'data.{key} is used by task.kind = "{owner_kind}" only ({what}); remove it '
                              f'for task.kind = "{kind}"')
    train = TrainConfig(**{k: getattr(parsed.train, k) for k in used})  # the others keep their defaults
    _refuse_other_optimizer_keys(train, parsed.given)
    metrics = task_hooks(kind).BEST_BY  # what the task's validation reports
    if train.best_by not in metrics:
        raise SeqlabError(f'train.best_by = "{train.best_by}": task.kind = "{kind}" reports '
                          f'{", ".join(metrics)} on its validation split; use one of them')
    valid = model_keys(cls)
    derived = DERIVED_MODEL_KEYS & set(parsed.model)
    if derived:
        raise SeqlabError(f"model.{sorted(derived)[0]} is derived from the data and cannot be set; "
                          f"valid model keys: {', '.join(['arch', *valid])}")
    _refuse_checkpoint_keys(parsed, valid)
    model = config.build_section(cls, parsed.model, "model", exclude=DERIVED_MODEL_KEYS, extra_valid=("arch",))
    _refuse_unused_model_keys(model, parsed.given)
    return RunConfig(task=parsed.task, data=parsed.data, model=model, train=train, arch=arch, model_keys=valid,
                     train_keys=used)


def _refuse_other_optimizer_keys(train: TrainConfig, given: frozenset[str]) -> None:
    """A train key only the other ``train.optimizer`` reads (``config.OPTIMIZER_KEYS``: AdamW's betas, SGD's
    momentum), set by the user (``--set``, sections; a preset's or file's keys are its choice, as for model keys),
    is refused: it would change nothing."""
    for key, optimizer in config.OPTIMIZER_KEYS.items():
        if f"train.{key}" in given and train.optimizer != optimizer:
            raise SeqlabError(f'train.{key} is read by train.optimizer = "{optimizer}" only; this run\'s is '
                              f'"{train.optimizer}": remove train.{key}, or set train.optimizer={optimizer}')


def _refuse_unused_model_keys(model: Any, given: frozenset[str]) -> None:
    """A model key the user set that the model config's other keys leave unused (its ``unused_keys()``: key ->
    why, naming the deciding key, and the fix) is refused; the preset's own keys are its choice."""
    unused = model.unused_keys() if hasattr(model, "unused_keys") else {}
    for key, why in unused.items():
        if f"model.{key}" in given:
            raise SeqlabError(f"model.{key} is not used {why}")


def _refuse_checkpoint_keys(parsed: ParsedConfig, valid: tuple[str, ...]) -> None:
    """``model.arch = "pretrained"`` (PretrainedLMConfig, the fine-tuning PretrainedConfig): a Transformer
    architecture key is the checkpoint's (its config.json), not the config's; named so, not as an unknown key."""
    if parsed.arch != "pretrained":
        return
    from seqlab.models.transformer import TransformerLMConfig  # loaded with the task module anyway

    architecture = {f.name for f in fields(TransformerLMConfig)} - DERIVED_MODEL_KEYS - set(valid)
    for key in parsed.model:
        if key in architecture:
            raise SeqlabError(f"model.{key} comes from the pretrained checkpoint (its config.json, model.pretrained) "
                              f"with model.arch = \"pretrained\"; remove it (valid model keys: "
                              f"{', '.join(['arch', *valid])})")


def complete(cfg: RunConfig) -> RunConfig:
    """A RunConfig built by hand (not by :func:`resolve` / :func:`from_dict`) with the keys its config.toml
    records filled in: the model keys a user may set and the train keys its task uses."""
    if cfg.model_keys is not None and cfg.train_keys is not None:
        return cfg
    return dataclasses.replace(cfg, model_keys=model_keys(type(cfg.model)),
                               train_keys=train_keys(cfg.task.kind, cfg.arch))


def from_dict(raw: dict[str, Any], *, drop_unused: bool = False) -> RunConfig:
    """Validate a nested dict {section: {key: value}} into a :class:`RunConfig`."""
    return build(config.parse(raw), drop_unused=drop_unused)


def resolve(name_or_path: str, overrides: list[str] | None = None) -> RunConfig:
    """Preset or TOML file, then ``--set`` overrides, validated."""
    return from_sections(name_or_path, None, overrides)


def from_sections(preset_or_path: str | RunConfig, sections: Mapping[str, Any] | None,
                  overrides: list[str] | None = None) -> RunConfig:
    """A preset, TOML file or RunConfig (its :meth:`~RunConfig.to_dict`), then ``sections`` ({"model":
    {"n_layers": 4}, "train": {"max_steps": 500}}), then ``--set`` overrides, validated as :func:`resolve`
    validates ``--set``: an unknown section or key, a wrong type, an unused train key, or a model key the user
    set that the run would not use, is a one-line error naming the valid keys (or the deciding key)."""
    if isinstance(preset_or_path, RunConfig):
        base = complete(preset_or_path).to_dict()
    else:
        base = config.load_preset_or_file(preset_or_path)
    sections = {} if sections is None else sections
    over = config.parse_overrides(overrides or [])
    raw = config.merge_sections(config.merge_sections(base, sections), over)  # checks that sections are dicts
    return build(config.parse(raw, given=config.given_keys(sections) | config.given_keys(over)))
