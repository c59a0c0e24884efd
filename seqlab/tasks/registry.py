"""The task layer's registry: which model config each ``task.kind`` / ``model.arch`` builds, which
``train.*`` keys each uses, and :func:`resolve_run`, the one pass that resolves a run's config.

:mod:`seqlab.base.config` reads and parses the sections and knows no task; this module finishes the job with the
task's hooks (:mod:`seqlab.tasks.protocol`), asked once per pass:

- the model section is validated against the model's dataclass (``MODEL_CONFIGS`` of the task module);
  the sizes read from the data (:data:`DERIVED_MODEL_KEYS`) cannot be set and stay ``None`` until the
  task reads the data and ``dataclasses.replace``-s them in;
- a ``train.*`` key the task does not use (``TRAIN_KEYS`` of the task module, per arch where it is a
  dict) is refused when the config sets it, so no setting is silently ignored. A run's own ``config.toml``
  is read with ``drop_unused=True``: earlier versions recorded every train key there;
- a ``train.*`` key the user set that only the other ``train.optimizer`` reads (AdamW's betas, SGD's momentum)
  is refused;
- a ``model.*`` key the user set (``--set``, ``sections``; not the preset's or file's own keys, whose
  combinations are the preset's choice) that the other model keys leave unused is refused, naming the key that
  decides: the model config's ``unused_keys()`` (e.g. ARConfig: ``p`` while ``max_p`` chooses it), and for
  ``model.arch = "pretrained"`` the architecture keys, which come from the checkpoint.

Then, for a run: the device ``seqlab.train(device=)`` names, in-memory data written in the task's file format
(:mod:`seqlab.data.in_memory`) and the task's own checks. Every entry point calls :func:`resolve_run`;
:func:`resolve` (a preset, TOML file or RunConfig with sections and ``--set`` overrides) and :func:`from_dict` give
its config alone.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import Any, cast

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
    return _model_class(task_hooks(kind), kind, arch)


def train_keys(kind: str, arch: str) -> tuple[str, ...]:
    """The ``train.*`` keys a task kind (and architecture) uses, in :class:`TrainConfig` order."""
    return _train_keys(task_hooks(kind), arch)


def _model_class(task: TaskHooks, kind: str, arch: str) -> type:
    configs = task.MODEL_CONFIGS
    if arch not in configs:
        raise SeqlabError(f"model.arch={arch!r} is not available for task.kind={kind}; available: "
                          f"{', '.join(configs)}")
    return configs[arch]


def _train_keys(task: TaskHooks, arch: str) -> tuple[str, ...]:
    keys = task.TRAIN_KEYS
    if isinstance(keys, Mapping):  # per model.arch
        keys = keys[arch]
    return tuple(f.name for f in fields(TrainConfig) if f.name in keys)


def model_keys(cls: type) -> tuple[str, ...]:
    """The ``model.*`` keys a user may set for a model config (besides ``arch``)."""
    return tuple(f.name for f in fields(cls) if f.name not in DERIVED_MODEL_KEYS)


def _build(parsed: ParsedConfig, *, drop_unused: bool = False, by_hand: bool = False) -> tuple[RunConfig, TaskHooks]:
    """The run config of a parsed config and its task's hooks (asked once): the model section validated, unused
    train keys refused (or, with ``drop_unused``, for a run's own config.toml, dropped). ``by_hand``: the config is a
    RunConfig built by hand, every field of its sections: the train keys its task does not use and the sizes read
    from the data are dropped, not refused, unless the user set them."""
    kind, arch = parsed.task.kind, parsed.arch
    task = task_hooks(kind)
    cls = _model_class(task, kind, arch)
    used = _train_keys(task, arch)
    unused = [k for k in parsed.train_given if k not in used and not (by_hand and f"train.{k}" not in parsed.given)]
    if unused and not drop_unused:
        owner = f'task.kind = "{kind}"'
        if isinstance(task.TRAIN_KEYS, Mapping):
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
    metrics = task.BEST_BY  # what the task's validation reports
    if train.best_by not in metrics:
        raise SeqlabError(f'train.best_by = "{train.best_by}": task.kind = "{kind}" reports '
                          f'{", ".join(metrics)} on its validation split; use one of them')
    valid = model_keys(cls)
    values = {k: v for k, v in parsed.model.items()
              if not (by_hand and k in DERIVED_MODEL_KEYS and f"model.{k}" not in parsed.given)}
    derived = DERIVED_MODEL_KEYS & set(values)
    if derived:
        raise SeqlabError(f"model.{sorted(derived)[0]} is derived from the data and cannot be set; "
                          f"valid model keys: {', '.join(['arch', *valid])}")
    _refuse_checkpoint_keys(arch, values, valid)
    model = config.build_section(cls, values, "model", exclude=DERIVED_MODEL_KEYS, extra_valid=("arch",))
    _refuse_unused_model_keys(model, parsed.given)
    return RunConfig(task=parsed.task, data=parsed.data, model=model, train=train, arch=arch, model_keys=valid,
                     train_keys=used), task


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


def _refuse_checkpoint_keys(arch: str, model: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    """``model.arch = "pretrained"`` (PretrainedLMConfig, the fine-tuning PretrainedConfig): a Transformer
    architecture key is the checkpoint's (its config.json), not the config's; named so, not as an unknown key."""
    if arch != "pretrained":
        return
    from seqlab.models.transformer import TransformerLMConfig  # loaded with the task module anyway

    architecture = {f.name for f in fields(TransformerLMConfig)} - DERIVED_MODEL_KEYS - set(valid)
    for key in model:
        if key in architecture:
            raise SeqlabError(f"model.{key} comes from the pretrained checkpoint (its config.json, model.pretrained) "
                              f"with model.arch = \"pretrained\"; remove it (valid model keys: "
                              f"{', '.join(['arch', *valid])})")


@dataclass(frozen=True)
class Resolved:
    """What :func:`resolve_run` gives: the run's config, its task's hooks and, with in-memory data, the folder beside
    the run it was staged in (its files move into ``RUN/input/`` once the run directory is locked)."""

    config: RunConfig
    task: TaskHooks
    inputs: Path | None = None


def resolve_run(source: str | RunConfig | Mapping[str, Any], *, sections: Mapping[str, Any] | None = None,
                overrides: list[str] | None = None, device: object = None, data: Mapping[str, Any] | None = None,
                run_dir: Path | None = None, resume: bool = False, stack: contextlib.ExitStack | None = None,
                drop_unused: bool = False) -> Resolved:
    """A run's config in one pass: what ``seqlab train``, ``seqlab data prepare``, :func:`seqlab.train`,
    :func:`seqlab.load` (and so ``seqlab serve``) and, through :func:`resolve`, the benchmarks call.

    1. ``source`` (a preset name, a TOML path, a RunConfig or a dict of sections), then ``sections`` ({"model":
       {"n_layers": 4}}), then ``overrides`` ("section.key=value"), read and parsed (:func:`seqlab.base.config.read`);
    2. the task's hooks, asked once, and the config built against them (:func:`_build`);
    3. ``device`` (``seqlab.train(device=)``) sets ``train.device`` (:func:`_on_device`);
    4. with ``run_dir``, the run the config trains: a CUDA ``train.device`` on a machine without one is refused; the
       in-memory splits of ``data`` ({"train": ..., "valid": ..., "test": ...}) are checked, written in the task's
       file format to a folder beside the run that ``stack`` holds, and named by the data keys (:func:`_spooled`);
       the task checks its inputs (``check_config``) unless ``resume`` continues the run from a checkpoint.

    Every mistake is one :class:`SeqlabError` line, before anything of the run is written. ``drop_unused``: a run's
    own config.toml (earlier versions recorded every train key there)."""
    by_hand = isinstance(source, RunConfig) and (source.model_keys is None or source.train_keys is None)
    cfg, task = _build(config.read(source, sections, overrides), drop_unused=drop_unused, by_hand=by_hand)
    if device is not None:
        cfg = _on_device(cfg, device)
    if run_dir is None:
        return Resolved(cfg, task)
    from seqlab.training import checkpoint
    from seqlab.training.devices import cuda_present

    if cfg.train.device == "cuda" and "device" in (cfg.train_keys or ()) and not cuda_present():
        raise SeqlabError('train.device = "cuda" but no CUDA device is available; set train.device = "cpu" '
                          '(or "auto")')
    given = {split: items for split, items in (data or {}).items() if items is not None}
    inputs = None
    if given:
        cfg, inputs = _spooled(cfg, given, run_dir, cast(contextlib.ExitStack, stack))
    if task.check_config is not None and not (resume and checkpoint.exists(run_dir)):
        task.check_config(cfg)  # the inputs a task checks before any write
    return Resolved(cfg, task, inputs)


def resolve(source: str | RunConfig, overrides: list[str] | None = None, *,
            sections: Mapping[str, Any] | None = None) -> RunConfig:
    """The run config of a preset, TOML file or RunConfig with ``sections`` and ``--set`` overrides on top
    (:func:`resolve_run`): an unknown section or key, a wrong type, an unused train key, or a model key the user set
    that the run would not use, is a one-line error naming the valid keys (or the deciding key)."""
    return resolve_run(source, sections=sections, overrides=overrides).config


def from_dict(raw: dict[str, Any], *, drop_unused: bool = False) -> RunConfig:
    """Validate a nested dict {section: {key: value}} into a :class:`RunConfig` (:func:`resolve_run`)."""
    return resolve_run(raw, drop_unused=drop_unused).config


def _on_device(cfg: RunConfig, device: object) -> RunConfig:
    """``seqlab.train(..., device=)``: the device training runs on (it sets ``train.device``) and the returned
    object is placed on. "auto", "cpu" or "cuda" (the first visible GPU; pick one with ``CUDA_VISIBLE_DEVICES``). A
    config whose ``train.device`` names another device than "auto" is a contradiction, refused; so is "cuda:N"
    (``seqlab.load(run, device="cuda:N")`` places a trained run there) and a CUDA device on a machine without one.
    AR(p), fitted without a device, only places the object."""
    from seqlab.training.devices import check_inference_device

    check_inference_device(cast(str, device))  # the spelling, a CUDA device that is not there: the one check
    name = str(device)
    if name not in ("auto", "cpu", "cuda"):
        raise SeqlabError(f'device={name!r}: training runs on "auto", "cpu" or "cuda" (the first visible GPU; pick '
                          f"it with CUDA_VISIBLE_DEVICES); place a trained run on another with "
                          f"seqlab.load(run, device={name!r})")
    if "device" not in (cfg.train_keys or ()):
        return cfg
    if cfg.train.device not in ("auto", name):
        raise SeqlabError(f'device={name!r} but the config sets train.device = "{cfg.train.device}"; give one of '
                          "them (device= sets train.device)")
    return dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, device=name))


def _spooled(cfg: RunConfig, given: dict[str, Any], run_dir: Path,
             stack: contextlib.ExitStack) -> tuple[RunConfig, Path]:
    """Check each in-memory split's form, write them into a folder beside ``run_dir`` (:func:`staging_dir`, held
    by ``stack``) in the task's file format (:func:`seqlab.data.in_memory.spool_splits`); return ``cfg`` with
    ``data.train`` / ``valid`` / ``test`` naming where they will lie in the run (``RUN/input/``), and the folder. A
    split not given is cut from train by ``data.split``."""
    from seqlab.data.in_memory import check_form, has_date_index, spool_splits
    from seqlab.training.rundir import INPUT_DIR

    if "train" not in given:
        raise SeqlabError("valid_data / test_data need train_data too; give train_data, or name files in "
                          "config={'data': {'train': ..., 'valid': ..., 'test': ...}}")
    kind, data = cfg.task.kind, cfg.data
    for split, items in given.items():
        check_form(kind, items, f"{split}_data")  # the data's form, before the staging folder is made
    dated = kind == "forecast" and has_date_index(given["train"]) and not data.date_column
    src, tgt = (data.src or "src", data.tgt or "tgt") if kind == "translate" else ("src", "tgt")
    staged = Path(stack.enter_context(staging_dir(run_dir)))
    files = spool_splits(kind, given, staged, tokenizer=data.tokenizer if kind == "embed" else None, src=src, tgt=tgt)
    folder = run_dir.resolve() / INPUT_DIR
    keys: dict[str, Any] = {"valid": "", "test": "", **{split: str(folder / name) for split, name in files.items()}}
    keys["source"] = ""  # data.train names the data: no dataset (a preset's conll2003) was read
    if kind == "translate":
        keys.update(src=src, tgt=tgt)
    if dated:
        keys["date_column"] = "date"
    return dataclasses.replace(cfg, data=dataclasses.replace(data, **keys)), staged


@contextlib.contextmanager
def staging_dir(run_dir: Path):
    """A temporary folder beside the run directory (same file system, so the spooled files move by rename). The
    parent folders it had to create are removed again when they are left empty (bad data: nothing appears)."""
    import tempfile

    parent = run_dir.resolve().parent
    created = [folder for folder in (parent, *parent.parents) if not folder.exists()]
    parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix=f".{run_dir.name}.input-", dir=parent) as staging:
            yield staging
    finally:
        for folder in created:  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
