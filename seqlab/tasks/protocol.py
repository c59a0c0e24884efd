"""The task protocol: every hook a task module (one per ``task.kind``, :data:`seqlab.tasks.registry.TASK_MODULES`)
may define, with its default, in one place.

:class:`TaskHooks` declares them: a field without a default is required, a field with one is optional and takes
that default where the module does not define it. :func:`hooks` reads a module's hooks (the one place that looks
for them by name), so every caller reads ``registry.task_hooks(kind).BEST_BY`` and the like, typed, never a
``getattr`` with a default of its own. ``tests/test_task_protocol.py`` checks every task module against it: each
hook's form and each function's signature, and no public name that misspells a hook.

The hooks:

- ``MODEL_CONFIGS``: ``{model.arch: frozen dataclass}`` of the architectures the task can train;
- ``TRAIN_KEYS``: the ``train.*`` keys it uses (or ``{model.arch: keys}`` where they differ by arch); any other
  train key a config sets is refused (:mod:`seqlab.tasks.registry`);
- ``train(cfg, run_dir, *, resume, dist, log)``: prepare data, build the model, run the Trainer; returns the
  run's final state;
- ``load(run_dir, cfg, device=None, weights=None)``: the trained object (``.generate``, ``.predict``,
  ``.evaluate``) with the weights of the checkpoint in ``weights`` (the run directory or its ``best/``);
- ``BEST_BY``: the validation metrics ``train.best_by`` may name (``("loss",)``);
- ``LENGTH_KEY``: the ``train.*`` key a run's length is given in: ``"max_steps"``, or ``"epochs"`` where the
  Trainer counts epochs (word2vec and GloVe); a resume may not ask for less than the run has done;
- ``torch_free(cfg, *, loading=False)``: whether training the run (or, with ``loading``, reading it) imports no
  torch (never, by default);
- ``check_config(cfg)``: what is wrong with a config's inputs, raised before a run directory is written (``None``,
  by default: nothing to check);
- ``prepare(cfg, out, *, force=False, progress=True)``: ``seqlab data prepare``, the data prepared once for runs
  to reuse (``None``, by default: the task prepares its data in the run directory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from seqlab.base.config import RunConfig

if TYPE_CHECKING:
    import torch

    from seqlab.tasks.trained import Trained
    from seqlab.training.devices import Dist


class Train(Protocol):
    def __call__(self, cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist,
                 log: Callable[..., Any] = ...) -> dict: ...


class Load(Protocol):
    def __call__(self, run_dir: Path, cfg: RunConfig, device: str | torch.device | None = ...,
                 weights: Path | None = ...) -> Trained: ...


class TorchFree(Protocol):
    def __call__(self, cfg: RunConfig, *, loading: bool = ...) -> bool: ...


class CheckConfig(Protocol):
    def __call__(self, cfg: RunConfig) -> None: ...


class Prepare(Protocol):
    def __call__(self, cfg: RunConfig, out: Path, *, force: bool = ..., progress: bool = ...) -> dict: ...


def never_torch_free(cfg: RunConfig, *, loading: bool = False) -> bool:
    """The default ``torch_free``: training and loading import torch."""
    return False


@dataclass(frozen=True)
class TaskHooks:
    """A task module's hooks, its defaults filled in (the module docstring describes each)."""

    MODEL_CONFIGS: Mapping[str, type]
    TRAIN_KEYS: tuple[str, ...] | Mapping[str, tuple[str, ...]]
    train: Train
    load: Load
    BEST_BY: tuple[str, ...] = ("loss",)
    LENGTH_KEY: Literal["max_steps", "epochs"] = "max_steps"
    torch_free: TorchFree = never_torch_free
    check_config: CheckConfig | None = None
    prepare: Prepare | None = None


HOOK_NAMES = tuple(f.name for f in fields(TaskHooks))


def hooks(module: ModuleType) -> TaskHooks:
    """The hooks ``module`` defines, the protocol's defaults for the others."""
    return TaskHooks(**{name: getattr(module, name) for name in HOOK_NAMES if hasattr(module, name)})
