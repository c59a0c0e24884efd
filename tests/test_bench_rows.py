"""bench/common.py's resumable ablation rows: a row cut off mid-training (a killed process, a session's end)
continues from its last checkpoint when the same key trains it again, its minutes adding up the tries; another
key starts it over."""

from __future__ import annotations

import json
import os
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from seqlab import api, tasks

from helpers import write_conll

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import train_resumable  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_tagger(tmp_path: Path, max_steps: int):
    rng = random.Random(0)
    words = ["the", "a", "runs", "Paris", "Anna", "Bonn"]

    def sentence():
        return [(w, "B-NAME" if w[0].isupper() else "O") for w in rng.choices(words, k=rng.randint(2, 6))]

    files = {s: write_conll(tmp_path / f"{s}.txt", [sentence() for _ in range(n)])
             for s, n in (("train", 60), ("valid", 8), ("test", 4))}
    return tasks.from_dict({
        "task": {"kind": "tag"}, "data": {**files, "tokenizer": "word"},
        "model": {"arch": "lstm", "d_model": 8, "hidden_size": 8, "n_layers": 1, "dropout": 0.0},
        "train": {"max_steps": max_steps, "batch_size": 8, "log_every": 1, "eval_every": 0, "save_every": 4,
                  "progress": False, "precision": "fp32", "device": "cpu", "threads": 1}})


def cut_off_after_four_steps(tmp_path: Path, key: list[str]) -> Path:
    """A run trained to its step-4 checkpoint by a try that started two minutes before that checkpoint, after 0.5
    minutes of earlier tries, and never finished (its pending note left beside the run)."""
    run = tmp_path / "row"
    api.train_run(tiny_tagger(tmp_path, 4), run, log=lambda *a, **k: None)
    # a marker of the shape a run holds (force replaces only seqlab's own files): a resumed run keeps it
    (run / "plots").mkdir(exist_ok=True)
    (run / "plots" / "kept-by-resume.png").write_bytes(b"a resumed run keeps its directory")
    checkpoint_time = time.time()
    os.utime(run / "state.json", (checkpoint_time, checkpoint_time))
    (tmp_path / "row.pending.json").write_text(json.dumps(
        {"overrides": key, "started": checkpoint_time - 120, "minutes_before": 0.5}))
    return run


def train_steps(run: Path) -> list[int]:
    rows = map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
    return [r["step"] for r in rows if r["split"] == "train"]


def test_a_row_cut_off_resumes_from_its_checkpoint_and_adds_up_its_minutes(tmp_path):
    key = ["model.d_model=8", "train.max_steps=8"]
    run = cut_off_after_four_steps(tmp_path, key)
    started = time.perf_counter()
    minutes, coverage = train_resumable(tiny_tagger(tmp_path, 8), run, key)
    this_try = (time.perf_counter() - started) / 60
    assert (run / "plots" / "kept-by-resume.png").exists() and train_steps(run) == list(range(1, 9))
    assert 2.5 <= minutes <= 2.5 + this_try  # 0.5 before, 2 to the checkpoint, then this try
    assert coverage is None and not (tmp_path / "row.pending.json").exists()


def test_a_row_with_another_key_starts_over(tmp_path):
    run = cut_off_after_four_steps(tmp_path, ["train.max_steps=8"])
    minutes, _ = train_resumable(tiny_tagger(tmp_path, 8), run, ["train.max_steps=8", "model.crf=true"])
    assert not (run / "plots" / "kept-by-resume.png").exists() and train_steps(run) == list(range(1, 9))
    assert minutes < 0.5 and not (tmp_path / "row.pending.json").exists()


def test_a_resumed_row_keeps_the_coverage_line_of_its_first_try(tmp_path, monkeypatch):
    """Training logs the vectors' coverage when it starts E from them; a resumed run starts from its checkpoint's E
    and logs none, so the row keeps the line its first try noted beside the run."""
    words = ["the", "a", "runs", "Paris", "Anna", "Bonn"]
    (tmp_path / "vectors.txt").write_text(f"{len(words) - 1} 8\n" + "".join(
        f"{w} " + " ".join(f"{(i + j) % 5 / 10:.1f}" for j in range(8)) + "\n" for i, w in enumerate(words[1:])))
    key = ["model.vectors", "train.max_steps=8"]

    def cfg(steps):
        base = tiny_tagger(tmp_path, steps)
        return tasks.from_dict({**base.to_dict(), "model": {**base.to_dict()["model"],
                                                             "vectors": str(tmp_path / "vectors.txt")}})

    run, real = tmp_path / "row", api.train_run

    def cut_off(c, run_dir, **options):  # the first try: killed after its step-4 checkpoint
        real(replace(c, train=replace(c.train, max_steps=4)), run_dir, **options)
        raise api.Interrupted("cut off")

    monkeypatch.setattr(api, "train_run", cut_off)
    with pytest.raises(api.Interrupted):
        train_resumable(cfg(8), run, key)
    monkeypatch.undo()
    minutes, coverage = train_resumable(cfg(8), run, key)
    assert coverage is not None and coverage.startswith("embeddings: 5 of ") and "vectors.txt" in coverage
    assert train_steps(run) == list(range(1, 9))


def test_a_row_stopped_short_of_its_steps_by_the_time_budget_continues_with_to_max_steps(tmp_path, monkeypatch):
    """With ``to_max_steps`` the row's budget is its steps: a try that ``train.max_minutes`` ended short of them keeps
    the note, so the next try with the same key continues from its checkpoint; without it the row counts as done."""
    key, run, real = ["train.max_steps=8"], tmp_path / "row", api.train_run

    def stopped_at_four(c, run_dir, **options):  # a try the time budget stopped at step 4
        return real(replace(c, train=replace(c.train, max_steps=4)), run_dir, **options)

    monkeypatch.setattr(api, "train_run", stopped_at_four)
    train_resumable(tiny_tagger(tmp_path, 8), run, key, to_max_steps=True)
    assert (tmp_path / "row.pending.json").exists()
    monkeypatch.undo()
    train_resumable(tiny_tagger(tmp_path, 8), run, key, to_max_steps=True)
    assert train_steps(run) == list(range(1, 9)) and not (tmp_path / "row.pending.json").exists()
