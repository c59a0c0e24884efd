"""One pass resolves a run's config (issue #57): every entry point calls :func:`seqlab.tasks.registry.resolve_run`
once, and the pass goes through each module once (traced with ``sys.setprofile``, tests/call_trace.py).

The entries the check counts are the calls into a module from another one (:meth:`call_trace.Trace.entries`). Left
out, and why:

- ``seqlab.base.errors``: it spells values and argument names inside messages (``shown``, ``given``) and holds the
  size checks every layer shares (``check_positive``); any module calls it, and it calls nothing back;
- the construction of a dataclass value (its generated ``__init__`` and the ``__post_init__`` checks that runs):
  the value checks its own fields; building a TrainConfig or a model config is no visit to the module declaring it;
- a module's calls to its own functions: the flow is back in the module, not entering it again.

The one return the pass may make is to ``seqlab.base.config``: it reads the text before the task is known (the text
names the task), and once the task's hooks give the model's dataclass it builds the model section with the same
typed section builder (base knows no task). Any other module entered twice fails the test, naming the path.
"""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
from call_trace import Trace, trace

import seqlab
from seqlab import api
from seqlab.tasks import registry

EXEMPT = {"seqlab.base.errors"}
RETURNS = {"seqlab.base.config": 1}  # the re-entries a pass may make (module docstring)
TEXT = "the cat sat on the mat. " * 60
PAIRS = [(f"the film was {'good' if i % 2 else 'bad'} number {i}", "pos" if i % 2 else "neg") for i in range(40)]
OVERRIDES = ["train.max_steps=3", "model.n_layers=1", "train.lr=0.01"]


class Stop(Exception):
    """Raised where the run directory would be prepared: the config is resolved by then, nothing is written."""


def _stop(*args, **kwargs):
    raise Stop


def doubling_back(t: Trace) -> list[str]:
    """The modules the traced pass re-entered more often than :data:`RETURNS` allows."""
    counts = Counter(module for _, module in t.entries(EXEMPT).reentries)
    return [f"{module} {n}x" for module, n in sorted(counts.items()) if n > RETURNS.get(module, 0)]


@contextlib.contextmanager
def passes(monkeypatch):
    """The traces of the passes made inside (each call of ``resolve_run``, however reached) and the number of times
    a task's hooks were asked for; the run stops where its directory would be prepared (:class:`Stop`)."""
    traces: list[Trace] = []
    asked, inside = [], []
    resolve_run, task_hooks = registry.resolve_run, registry.task_hooks

    def traced(*args, **kwargs):
        traces.append(Trace(()))  # a pass inside a pass is counted, and traced as part of the outer one
        if inside:
            return resolve_run(*args, **kwargs)
        at = len(traces) - 1
        inside.append(at)
        try:
            traces[at] = trace(lambda: resolve_run(*args, **kwargs), catch=Exception)
        finally:
            inside.clear()
        if isinstance(traces[at].result, Exception):
            raise traces[at].result
        return traces[at].result

    def counted(kind):
        asked.append(kind)
        return task_hooks(kind)

    with monkeypatch.context() as patch:
        patch.setattr(registry, "resolve_run", traced)
        patch.setattr(api, "resolve_run", traced)
        patch.setattr(registry, "task_hooks", counted)
        patch.setattr(api, "prepare_run_dir", _stop)
        with pytest.raises(Stop):
            yield traces, asked


ENTRIES = {  # each starts a run into ``out``; ``command`` runs the command line (the seqlab_cli fixture)
    "seqlab.train, in-memory text, device": lambda out, command: seqlab.train(
        "lm-char", out, train_data=TEXT, config={"train": {"max_steps": 3}}, overrides=["model.n_layers=1"],
        device="cpu"),
    "seqlab.train, in-memory pairs (a task without check_config)": lambda out, command: seqlab.train(
        "sentiment-lstm", out, train_data=PAIRS, valid_data=PAIRS[:10], config={"train": {"max_steps": 3}}),
    "api.train_run, preset and overrides": lambda out, command: api.train_run("lm-char", out, overrides=OVERRIDES),
    "seqlab train PRESET --set": lambda out, command: command("train", "lm-char", *[f"--set={o}" for o in OVERRIDES],
                                                              "--out", out),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_each_entry_resolves_the_config_once_without_doubling_back(entry, tmp_path, monkeypatch, seqlab_cli):
    start = ENTRIES[entry]
    with passes(monkeypatch):  # the first start imports the task's modules: not part of a pass
        start(tmp_path / "warm", seqlab_cli)
    with passes(monkeypatch) as (traces, asked):
        start(tmp_path / "run", seqlab_cli)
    assert len(traces) == 1, f"{len(traces)} passes resolved the config"
    assert len(asked) == 1, f"the task's hooks were asked for {len(asked)} times: {asked}"
    (t,) = traces
    assert isinstance(t.result, registry.Resolved)
    assert doubling_back(t) == [], f"the pass re-entered modules it had left: {t.entries(EXEMPT).path()}"
    assert not (tmp_path / "run").exists()


def test_the_check_sees_a_resolution_that_doubles_back():
    """Two passes in a row (what seqlab.train did before: the config, then again with the in-memory data's keys)
    re-enter the registry and the task protocol; one pass does not."""
    registry.resolve("lm-char")
    twice = trace(lambda: registry.resolve(registry.resolve("lm-char"), ["train.max_steps=3"]))
    assert {"seqlab.tasks.registry", "seqlab.tasks.protocol"} <= {m.split(" ")[0] for m in doubling_back(twice)}
    assert doubling_back(trace(lambda: registry.resolve("lm-char", ["train.max_steps=3"]))) == []


def test_the_command_line_and_seqlab_train_resolve_a_preset_and_overrides_alike(tmp_path, monkeypatch, seqlab_cli):
    sections = {"train": {"max_steps": 3, "lr": 0.01}, "model": {"n_layers": 1}}
    starts = [lambda: seqlab_cli("train", "lm-char", *[f"--set={o}" for o in OVERRIDES], "--out", tmp_path / "c"),
              lambda: seqlab.train("lm-char", tmp_path / "o", overrides=OVERRIDES),
              lambda: seqlab.train("lm-char", tmp_path / "s", config=sections),
              lambda: api.train_run("lm-char", tmp_path / "r", overrides=OVERRIDES)]
    configs = []
    for start in starts:
        with passes(monkeypatch) as (traces, _):
            start()
        configs.append(traces[0].result.config)
    assert all(c == registry.resolve("lm-char", OVERRIDES) for c in configs), configs
    assert configs[0].train.max_steps == 3 and configs[0].model.n_layers == 1


def test_the_trace_counts_visits_and_reentries():
    from call_trace import Call

    t = Trace(tuple(Call(m, "f", True, False) for m in ["a", "a", "b", "a", "c", "b"]))
    assert t.visits == ["a", "b", "a", "c", "b"] and t.reentries == [(2, "a"), (4, "b")]
    assert t.counts() == {"calls": 6, "modules": 3, "visits": 5, "reentries": 2}
