"""What :func:`seqlab.train` (and :func:`seqlab.api.train_run`, :func:`seqlab.load`) check before any work, so that a
mistake is one :class:`SeqlabError` line before any folder is written or any step trained: the run directory,
the flags, the callbacks and ``log``, the config's source, the device; and the in-memory data, checked and
staged beside the run directory in the task's file format (:mod:`seqlab.data.in_memory`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError, shown, spelled
from seqlab.tasks import registry


def check_out(out: object) -> None:
    """``out`` is a folder path (a str or a Path) or None: ``seqlab.train("lm-char", {...})`` passes config
    sections where the run directory goes, an error saying where they belong; an existing file is no folder."""
    if out is not None and not isinstance(out, (str, os.PathLike)):
        hint = "; config sections go in config={...}" if isinstance(out, dict) else ""
        raise SeqlabError(f"out must be a folder path (a str or a Path), got a {type(out).__name__}{hint}")
    if out and Path(out).is_file():
        raise SeqlabError(f"{shown(out)} is a file, not a folder; give {spelled('out')} a folder path")


def check_run_arguments(*, overrides: object = None, resume: object = False, force: object = False,
                        log: object = None) -> None:
    """The arguments :func:`train_run` and :func:`train` share, checked before any work: ``overrides`` a list
    of "section.key=value" strings, ``resume`` True, False or "auto", ``force`` a bool (and not with
    ``resume``: one continues a run, the other replaces it), ``log`` a function or None."""
    if overrides is not None and (isinstance(overrides, str) or not isinstance(overrides, (list, tuple))
                                  or not all(isinstance(o, str) for o in overrides)):
        hint = f"; wrap it in a list: overrides=[{overrides!r}]" if isinstance(overrides, str) else ""
        raise SeqlabError(f'overrides must be a list of "section.key=value" strings, got {overrides!r}{hint}')
    if not isinstance(resume, bool) and resume != "auto":
        raise SeqlabError(f'resume must be True, False or "auto", got {resume!r}')
    if not isinstance(force, bool):
        raise SeqlabError(f"force must be True or False, got {force!r}")
    if force and resume:
        raise SeqlabError(f"{spelled('resume')} continues the run and {spelled('force')} replaces it; give one "
                          "of them")
    if log is not None and not callable(log):
        raise SeqlabError(f"log must be a function taking the message (like print) or None, got a "
                          f"{type(log).__name__}")


def check_config_source(preset_or_config: object) -> None:
    """``seqlab.train``'s first argument: a preset name, a TOML path or a RunConfig."""
    if isinstance(preset_or_config, (str, RunConfig)):
        return
    hint = "; config sections go in config={...}" if isinstance(preset_or_config, dict) else ""
    raise SeqlabError(f"the first argument must be a preset name, a TOML path or a RunConfig, got a "
                      f"{type(preset_or_config).__name__}{hint}; seqlab.presets() lists the presets")


def checked_callbacks(callbacks: object) -> tuple:
    """:func:`seqlab.training.callbacks.check`, before any work."""
    from seqlab.training.callbacks import check

    return check(cast("Iterable[Any]", callbacks))


def check_training_device(cfg: RunConfig) -> None:
    """``train.device = "cuda"`` on a machine without a CUDA device is refused before any write, not when the
    Trainer starts (a task that does not use the key, AR(p), is not asked)."""
    from seqlab.training.devices import cuda_present

    if cfg.train.device == "cuda" and (cfg.train_keys is None or "device" in cfg.train_keys) and not cuda_present():
        raise SeqlabError('train.device = "cuda" but no CUDA device is available; set train.device = "cpu" '
                          '(or "auto")')


def with_device(cfg: RunConfig, device: object) -> RunConfig:
    """``seqlab.train(..., device=)``: the device training runs on (it sets ``train.device``) and the returned
    object is placed on. None keeps ``train.device``; "auto", "cpu" or "cuda" (the first visible GPU; pick one
    with ``CUDA_VISIBLE_DEVICES``). A config whose ``train.device`` names another device than "auto" is a
    contradiction, refused; so is "cuda:N" (``seqlab.load(run, device="cuda:N")`` places a trained run there)
    and a CUDA device on a machine without one. AR(p), fitted without a device, only places the object."""
    from seqlab.training.devices import check_inference_device

    if device is None:
        return cfg
    check_inference_device(cast(str, device))  # the spelling, a CUDA device that is not there: the one check
    name = str(device)
    if name not in ("auto", "cpu", "cuda"):
        raise SeqlabError(f'device={name!r}: training runs on "auto", "cpu" or "cuda" (the first visible GPU; pick '
                          f"it with CUDA_VISIBLE_DEVICES); place a trained run on another with "
                          f"seqlab.load(run, device={name!r})")
    if cfg.train_keys is not None and "device" not in cfg.train_keys:
        return cfg
    if cfg.train.device not in ("auto", name):
        raise SeqlabError(f'device={name!r} but the config sets train.device = "{cfg.train.device}"; give one of '
                          "them (device= sets train.device)")
    return registry.from_sections(cfg, {"train": {"device": name}})


def placed_on(cfg: RunConfig) -> str | None:
    """Where :func:`train` places the object it returns: on the device training ran on (``train.device``, "auto"
    resolving as it did for training); None (CUDA when present) for a task fitted without one (AR(p))."""
    return cfg.train.device if cfg.train_keys is None or "device" in cfg.train_keys else None


def spooled(cfg: RunConfig, given: dict[str, Any], staged: Path, folder: Path) -> RunConfig:
    """Write each in-memory split into ``staged`` in the task's file format (:func:`seqlab.data.in_memory.spool`)
    and return ``cfg`` with ``data.train`` / ``valid`` / ``test`` naming where they will lie in the run
    (``folder``); a split not given is cut from train by ``data.split``."""
    from seqlab.data.in_memory import data_file_name, has_date_index, spool

    kind, data = cfg.task.kind, cfg.data
    src, tgt = (data.src or "src", data.tgt or "tgt") if kind == "translate" else ("src", "tgt")
    keys: dict[str, Any] = {"valid": "", "test": ""}
    for split, items in given.items():
        file = data_file_name(kind, split)
        spool(kind, items, staged / file, what=f"{split}_data", tokenizer=data.tokenizer if kind == "embed" else None,
              src=src, tgt=tgt)
        keys[split] = str(folder / file)
    keys["source"] = ""  # data.train names the data: no dataset (a preset's conll2003) was read
    if kind == "translate":
        keys.update(src=src, tgt=tgt)
    if kind == "forecast" and has_date_index(given["train"]) and not data.date_column:
        keys["date_column"] = "date"
    return registry.from_sections(cfg, {"data": keys})


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
