"""seqlab.base.forked: a call in a forked process, its value or its error sent back; a child that dies or is still
running when closed; the same result in this process where the system cannot fork."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import pytest

from seqlab.base.errors import SeqlabError
from seqlab.base.forked import Forked


def pid_and_sum(values: np.ndarray) -> tuple[int, float]:
    return os.getpid(), float(values.sum())


def refuse() -> None:
    raise SeqlabError("the file is bad: give another")


def crash() -> None:
    raise ValueError("a bug")


def die() -> None:
    os._exit(7)


def test_the_call_runs_in_another_process_on_this_process_data():
    values = np.arange(1000, dtype=np.float64)  # reached copy-on-write, never pickled on the way in
    worker = Forked(pid_and_sum, values)
    try:
        pid, total = worker.result()
    finally:
        worker.close()
    assert pid != os.getpid() and total == values.sum()


def test_errors_come_back_as_the_parent_raises_them():
    with pytest.raises(SeqlabError, match="^the file is bad: give another$"):
        Forked(refuse).result()
    with pytest.raises(RuntimeError, match="the worker process checking X failed: ValueError: a bug"):
        Forked(crash, what="checking X").result()
    with pytest.raises(SeqlabError, match=r"the worker process checking Y ended without a result \(exit code 7\)"):
        Forked(die, what="checking Y").result()


def write_after_a_minute(started: Path, cleaned: Path) -> None:
    try:
        started.write_text("started")
        time.sleep(60)
    finally:
        cleaned.write_text("the call unwound")


def test_close_ends_a_child_still_running_and_its_call_unwinds(tmp_path):
    started, cleaned = tmp_path / "started", tmp_path / "cleaned"
    worker = Forked(write_after_a_minute, started, cleaned)
    begun = time.perf_counter()
    while not started.exists() and time.perf_counter() - begun < 30:
        time.sleep(0.01)
    worker.close()
    assert not worker.process.is_alive() and time.perf_counter() - begun < 20
    assert cleaned.read_text() == "the call unwound"


def test_without_fork_the_call_runs_here_when_its_result_is_asked(monkeypatch):
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    worker = Forked(pid_and_sum, np.ones(3))
    assert worker.process is None and worker.result() == (os.getpid(), 3.0)
    worker.close()
    with pytest.raises(SeqlabError, match="the file is bad"):
        Forked(refuse).result()
