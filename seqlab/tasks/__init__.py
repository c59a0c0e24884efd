"""Tasks: what `seqlab train` runs for each ``task.kind``, and what `seqlab.load` returns.

Each task module exposes:

- ``MODEL_CONFIGS``: ``{model.arch: frozen dataclass}`` of the architectures it can train;
- ``train(config, run_dir, *, resume, dist) -> dict``: prepare data, build the model, run the Trainer;
- ``load(run_dir, device=None)``: the trained object (``.generate``, ``.predict``, ``.evaluate``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from seqlab.errors import SeqlabError

TASK_MODULES = {
    "lm": "seqlab.tasks.lm",
    "embed": "seqlab.tasks.embed",
    "translate": "seqlab.tasks.translate",
    "forecast": "seqlab.tasks.forecast",
    "tag": "seqlab.tasks.tag",
    "classify": "seqlab.tasks.classify",
}


def task_module(kind: str) -> ModuleType:
    name = TASK_MODULES.get(kind)
    if name is None:
        raise SeqlabError(f"task.kind={kind!r} is not available in this version; available: "
                          f"{', '.join(TASK_MODULES)}")
    return importlib.import_module(name)


def model_config_class(kind: str, arch: str) -> type:
    configs = task_module(kind).MODEL_CONFIGS
    if arch not in configs:
        raise SeqlabError(f"model.arch={arch!r} is not available for task.kind={kind}; available: "
                          f"{', '.join(configs)}")
    return configs[arch]
