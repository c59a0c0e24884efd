"""A library call leaves the caller's process state as it found it (docs/manual.md, "Rules of the code"):
torch's random state, the thread counts of torch and numba, matplotlib's backend and the environment, after ``seqlab.train`` (with
``train.threads`` set to another count than the caller's) and after the docs' dataset-cache helper; and, read
from the source, no ``matplotlib.use`` or pyplot in the library and no environment writes outside the one
module that puts its variable back."""

from __future__ import annotations

import ast
import os

import matplotlib
import numpy as np
import pytest
import torch

import seqlab
from seqlab.data.download import link_cache
from test_rules import sources

TINY_LM = {"model": {"n_layers": 1, "n_heads": 2, "d_model": 16, "d_ff": 32, "max_len": 16},
           "train": {"max_steps": 4, "batch_size": 4, "eval_every": 2, "save_every": 2, "warmup_steps": 1,
                     "eval_batches": 1, "progress": False, "device": "cpu", "threads": 1, "seed": 7}}
WORDS = ["the", "a", "cat", "dog", "sees", "runs", "big", "old"]
# modules that write os.environ -> why (each puts the variable back before it returns)
ENVIRON_WRITERS = {"data/workers.py": "TOKENIZERS_PARALLELISM for the pool's lifetime, then as it was",
                   "api.py": "puts back what a library call changed (torch's import of torch._dynamo sets a variable)"}


def sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 7))) for _ in range(n)]


@pytest.fixture()
def caller(tmp_path, monkeypatch):
    """A caller with its own state, each part unlike what training sets: torch on 3 threads (training: 1),
    seeded with 1234 (training: 7), matplotlib on the svg backend (the library once switched to Agg); yields a
    function that reads that state, and puts the test process's own back afterwards."""
    monkeypatch.chdir(tmp_path)
    threads, backend = torch.get_num_threads(), matplotlib.get_backend()
    torch.set_num_threads(3)
    torch.manual_seed(1234)
    matplotlib.use("svg")

    def state() -> dict:
        return {"rng": torch.random.get_rng_state(), "threads": torch.get_num_threads(),
                "backend": matplotlib.get_backend(), "environ": dict(os.environ)}

    yield state
    torch.set_num_threads(threads)
    matplotlib.use(backend)


def assert_same(before: dict, after: dict) -> None:
    assert torch.equal(after.pop("rng"), before.pop("rng")), "torch's global random state changed"
    assert after == before


def test_train_leaves_rng_threads_backend_and_environment_as_they_were(caller):
    before = caller()
    lm = seqlab.train("lm-char", out="lm", train_data=". ".join(sentences(200)) + ".", config=TINY_LM)
    assert_same(before, caller())
    png = lm.run_dir / "plots" / "loss.png"
    assert png.read_bytes()[:4] == b"\x89PNG"  # drawn with Agg from the object API, whatever the backend is


def test_train_threads_hold_inside_the_run_and_a_trainer_built_in_a_notebook_takes_the_callers(caller):
    """The entry point (seqlab.train / train_run) sets train.threads for the run: a callback inside it sees 1
    thread where the caller has 3; a Trainer built directly (a notebook's own loop) sets none: the caller's 3 stay."""
    from seqlab.tasks import resolve
    from seqlab.training.trainer import Trainer

    seen = []

    class Threads:
        def on_step(self, row):
            seen.append(torch.get_num_threads())

    seqlab.train("lm-char", out="lm", train_data=". ".join(sentences(200, seed=3)) + ".", config=TINY_LM,
                 callbacks=[Threads()])
    assert seen and set(seen) == {1} and caller()["threads"] == 3
    cfg = resolve("lm-char", ["train.threads=1"])

    class Task:  # the least a Trainer reads at construction
        model = torch.nn.Linear(2, 2)

    Trainer(Task(), cfg.train, "notebook-run")
    assert caller()["threads"] == 3


def test_the_callers_stream_continues_where_it_was(caller):
    expected = torch.rand(3)  # what the caller's next draw is, seeded 1234 then one draw
    torch.manual_seed(1234)
    seqlab.train("lm-char", out="lm", train_data=". ".join(sentences(200, seed=1)) + ".", config=TINY_LM)
    assert torch.equal(torch.rand(3), expected)


def test_word2vec_leaves_numbas_thread_count(caller):
    numba = pytest.importorskip("numba")
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # the caller's pool at full size; training asks for 1
    before = {**caller(), "numba": numba.get_num_threads()}
    vectors = seqlab.train("w2v-sgns", out="w2v", train_data=[s.split() for s in sentences(100, seed=2)],
                           config={"data": {"min_freq": 1}, "model": {"dim": 8, "window": 2},
                                   "train": {"epochs": 1, "threads": 1, "progress": False, "device": "cpu"}})
    assert vectors.most_similar("cat", topn=1)
    assert_same(before, {**caller(), "numba": numba.get_num_threads()})


def test_link_cache_returns_the_cache_and_leaves_the_environment(tmp_path):
    shared = tmp_path / "shared"
    (shared / "conll2003").mkdir(parents=True)
    environ = dict(os.environ)
    cache = link_cache(shared, tmp_path / "cache")
    assert dict(os.environ) == environ
    assert cache == tmp_path / "cache" and (cache / "conll2003").resolve() == (shared / "conll2003").resolve()


# ---- read from the source ---------------------------------------------------------------------------------------

def test_no_backend_switch_or_pyplot_in_the_library():
    found = []
    for path, tree in sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("matplotlib.use", "mpl.use"):
                found.append(f"{path}:{node.lineno} {ast.unparse(node.func)}")
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path}:{node.lineno} import {n}" for n in names if n.startswith("matplotlib.pyplot")]
    assert found == []


def test_the_environment_is_written_only_where_it_is_put_back():
    found, modules = [], sources()
    for path, tree in modules.items():
        if path in ENVIRON_WRITERS:
            continue
        for node in ast.walk(tree):
            targets = (node.targets if isinstance(node, ast.Assign) else node.targets if isinstance(node, ast.Delete)
                       else [node.target] if isinstance(node, ast.AugAssign) else [])
            written = [t for t in targets if isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ"]
            calls = (isinstance(node, ast.Call) and ast.unparse(node.func) in
                     {"os.putenv", "os.unsetenv", *(f"os.environ.{m}" for m in ("update", "setdefault", "pop",
                                                                                 "popitem", "clear"))})
            if written or calls:
                found.append(f"{path}:{node.lineno}")
    assert found == []
    assert all(path in modules for path in ENVIRON_WRITERS), "a module named here no longer exists"
