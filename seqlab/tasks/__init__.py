"""Tasks: what `seqlab train` runs for each ``task.kind``, and what `seqlab.load` returns.

Each task module exposes:

- ``MODEL_CONFIGS``: ``{model.arch: frozen dataclass}`` of the architectures it can train;
- ``TRAIN_KEYS``: the ``train.*`` keys it uses (or ``{model.arch: keys}`` where they differ by arch);
  any other train key a config sets is refused (:mod:`seqlab.tasks.registry`);
- ``train(config, run_dir, *, resume, dist) -> dict``: prepare data, build the model, run the Trainer;
- ``load(run_dir, cfg, device=None, weights=None)``: the trained object (``.generate``, ``.predict``,
  ``.evaluate``) with the weights of the checkpoint in ``weights`` (the run directory or its ``best/``).

:mod:`seqlab.tasks.registry` maps a config to its task and model config: :func:`resolve` and
:func:`from_dict` build the :class:`~seqlab.base.config.RunConfig` of a preset, TOML file or dict.
"""

from __future__ import annotations

from seqlab.tasks.registry import (DERIVED_MODEL_KEYS, from_dict, model_config_class, resolve, task_module,
                                   train_keys)

__all__ = ["DERIVED_MODEL_KEYS", "from_dict", "model_config_class", "resolve", "task_module", "train_keys"]
