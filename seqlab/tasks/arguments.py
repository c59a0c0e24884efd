"""What :func:`seqlab.train` and :func:`seqlab.api.train_run` check of their arguments before any work, so that a
mistake is one :class:`SeqlabError` line before any folder is written or any step trained: the run directory,
the flags, the callbacks and ``log``, the config's source. The config itself, the device and in-memory data are
the one pass's (:func:`seqlab.tasks.registry.resolve_run`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError, shown, spelled


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


def placed_on(cfg: RunConfig) -> str | None:
    """Where :func:`train` places the object it returns: on the device training ran on (``train.device``, "auto"
    resolving as it did for training); None (CUDA when present) for a task fitted without one (AR(p))."""
    return cfg.train.device if cfg.train_keys is None or "device" in cfg.train_keys else None
