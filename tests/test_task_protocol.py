"""The task protocol (seqlab/tasks/protocol.py): every task module against its declaration, and no reader of a task
module's hooks but :func:`seqlab.tasks.protocol.hooks`."""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import inspect
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import pytest

from seqlab.base.config import TrainConfig
from seqlab.tasks import protocol, registry

ROOT = Path(__file__).resolve().parents[1]
SIGNATURES = {"train": protocol.Train, "load": protocol.Load, "torch_free": protocol.TorchFree,
              "check_config": protocol.CheckConfig, "prepare": protocol.Prepare}
TRAIN_KEYS = {f.name for f in dataclasses.fields(TrainConfig)}


def _keys(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(k, str) for k in value) and set(value) <= TRAIN_KEYS


def _signature(fn) -> list[tuple[str, object, bool]]:
    """(name, kind, has a default) of each parameter, ``self`` left out."""
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty) for p in inspect.signature(fn).parameters.values()
            if p.name != "self"]


def form_problems(module: ModuleType) -> list[str]:
    """What in ``module`` does not have the form its hook declares."""
    out = []
    for field in dataclasses.fields(protocol.TaskHooks):
        name, given = field.name, hasattr(module, field.name)
        value = getattr(module, name, None)
        if not given:
            if field.default is dataclasses.MISSING:
                out.append(f"{name}: required, not defined")
            continue
        if name in SIGNATURES:
            if value is None and field.default is None:
                continue
            if not callable(value) or _signature(value) != _signature(SIGNATURES[name].__call__):
                out.append(f"{name}: not a function of {SIGNATURES[name].__name__}'s parameters")
        elif name == "MODEL_CONFIGS":
            if not (isinstance(value, Mapping) and value and all(
                    isinstance(arch, str) and dataclasses.is_dataclass(cls) and isinstance(cls, type)
                    and cls.__dataclass_params__.frozen for arch, cls in value.items())):
                out.append(f"{name}: not a mapping of model.arch to frozen dataclasses")
        elif name == "TRAIN_KEYS":
            per_arch = isinstance(value, Mapping) and set(value) == set(getattr(module, "MODEL_CONFIGS", {}))
            if not (_keys(value) or (per_arch and all(_keys(keys) for keys in value.values()))):
                out.append(f"{name}: not a tuple of train keys, nor one per model.arch")
        elif name == "BEST_BY":
            if not (isinstance(value, tuple) and value and all(isinstance(m, str) for m in value)):
                out.append(f"{name}: not a tuple of metric names")
        elif name == "LENGTH_KEY":
            keys = getattr(module, "TRAIN_KEYS", ())
            every = list(keys.values()) if isinstance(keys, Mapping) else [keys]
            if value not in ("max_steps", "epochs") or not all(value in k for k in every):
                out.append(f"{name}: not max_steps or epochs, or not among the task's train keys")
        else:
            out.append(f"{name}: a hook this test does not check; add its check")
    return out


def misspelt_hooks(module: ModuleType) -> list[str]:
    """The public names ``module`` defines itself (read from its source) that are near a hook's name without being
    it (``best_by``, ``TRAIN_KEY``, ``check_configs``): a hook misspelt would silently take its default."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    hooks = {h.lower(): h for h in protocol.HOOK_NAMES}
    return sorted(f"{name} (the hook {hooks[near[0]]}?)" for name in names - set(protocol.HOOK_NAMES)
                  if not name.startswith("_")
                  and (near := difflib.get_close_matches(name.lower(), hooks, n=1, cutoff=0.8)))


@pytest.mark.parametrize("kind", sorted(registry.TASK_MODULES))
def test_every_task_module_keeps_the_protocol(kind):
    module = registry.task_module(kind)
    assert form_problems(module) == []
    assert misspelt_hooks(module) == []
    hooks = registry.task_hooks(kind)
    assert hooks.train is module.train and hooks.BEST_BY == getattr(module, "BEST_BY", ("loss",))


def test_a_planted_module_breaking_the_protocol_is_caught(tmp_path):
    path = tmp_path / "planted_task.py"
    path.write_text("MODEL_CONFIGS = {'x': dict}\nTRAIN_KEYS = ('max_steps', 'nope')\nBEST_BY = 'loss'\n"
                    "LENGTH_KEY = 'epochs'\n\ndef train(cfg, run_dir, *, resume, dist):\n    pass\n\n"
                    "def check_configs(cfg):\n    pass\n\ndef torch_free(cfg, loading=False):\n    return True\n",
                    encoding="utf-8")
    spec = importlib.util.spec_from_file_location("planted_task", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert form_problems(module) == [
        "MODEL_CONFIGS: not a mapping of model.arch to frozen dataclasses",
        "TRAIN_KEYS: not a tuple of train keys, nor one per model.arch",
        "train: not a function of Train's parameters",
        "load: required, not defined",
        "BEST_BY: not a tuple of metric names",
        "LENGTH_KEY: not max_steps or epochs, or not among the task's train keys",
        "torch_free: not a function of TorchFree's parameters",
    ]
    assert misspelt_hooks(module) == ["check_configs (the hook check_config?)"]


def test_the_defaults_are_what_a_task_without_the_hook_gets():
    hooks = registry.task_hooks("translate")  # defines none of the optional hooks but BEST_BY
    assert hooks.LENGTH_KEY == "max_steps" and hooks.prepare is None and hooks.check_config is None
    assert hooks.torch_free(None, loading=True) is False
    assert registry.task_hooks("embed").LENGTH_KEY == "epochs" and registry.task_hooks("lm").prepare is not None


def test_task_modules_are_read_through_the_protocol_only():
    """Outside the registry, seqlab reads a task module through ``task_hooks`` (typed, its defaults declared once),
    never ``task_module(kind).NAME`` nor a ``getattr`` on it."""
    found = []
    for path in sorted((ROOT / "seqlab").rglob("*.py")):
        if path.name in ("registry.py", "protocol.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "task_module":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_a_resume_counts_the_run_in_its_tasks_length_key(monkeypatch, tmp_path):
    """Training knows no task: the word-vector runs' epochs reach the resume check as the embed task's
    ``LENGTH_KEY``, the other tasks' steps as the default."""
    from seqlab.base.errors import SeqlabError
    from seqlab.training import checkpoint, rundir

    monkeypatch.setattr(checkpoint, "exists", lambda run_dir: True)
    monkeypatch.setattr(checkpoint, "load_state", lambda run_dir: {"step": 30, "steps_per_epoch": 10})
    for preset, key, done in (("w2v-sgns", "epochs", "3 epochs"), ("lm-char", "max_steps", "30 steps")):
        length_key = registry.task_hooks(registry.resolve(preset).task.kind).LENGTH_KEY
        with pytest.raises(SeqlabError, match=f"already trained {done}, more than train.{key} = 2; "):
            rundir.check_resume_length(registry.resolve(preset, [f"train.{key}=2"]), tmp_path, length_key)
        rundir.check_resume_length(registry.resolve(preset, [f"train.{key}=30"]), tmp_path, length_key)
