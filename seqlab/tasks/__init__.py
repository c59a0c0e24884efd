"""Tasks: what `seqlab train` runs for each ``task.kind``, and what `seqlab.load` returns.

One module per task kind (:data:`seqlab.tasks.registry.TASK_MODULES`). :mod:`seqlab.tasks.protocol` declares the
hooks each may define (``MODEL_CONFIGS``, ``TRAIN_KEYS``, ``train``, ``load`` required; ``BEST_BY``,
``LENGTH_KEY``, ``torch_free``, ``check_config``, ``prepare`` optional, each with its default), and
:func:`~seqlab.tasks.registry.task_hooks` reads them.

:mod:`seqlab.tasks.registry` maps a config to its task and model config: :func:`resolve_run` resolves a run's
config in one pass (every entry point calls it); :func:`resolve` and :func:`from_dict` give the
:class:`~seqlab.base.config.RunConfig` of a preset, TOML file, RunConfig or dict.
"""

from __future__ import annotations

from seqlab.tasks.registry import (DERIVED_MODEL_KEYS, Resolved, from_dict, model_config_class, resolve, resolve_run,
                                   task_hooks, task_module, train_keys)

__all__ = ["DERIVED_MODEL_KEYS", "Resolved", "from_dict", "model_config_class", "resolve", "resolve_run",
           "task_hooks", "task_module", "train_keys"]
