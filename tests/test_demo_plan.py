"""The demo's plan chooses the model's size for the compute, and its schedule's time clock spends the budget:
``seqlab.tasks.demo_plan.plan_steps`` / ``choose_size``, ``seqlab.training.optim.clock_position`` and ``train.schedule =
"wsd-time"`` in the Trainer (a few steps of a tiny model on a clock that the test advances)."""

from __future__ import annotations

import json

import pytest

from seqlab import api
from seqlab.tasks.demo_plan import (MAX_STEPS, SIZE_FROM, SIZES, STEP_TIME, TOKENS_PER_STEP, choose_size, plan,
                                    plan_steps)
from seqlab.base.config import TrainConfig
from seqlab.base.errors import SeqlabError
from seqlab.training.optim import clock_position, learning_rate
from seqlab.tasks import resolve

CHARS = {"pydocs": 418_543, "pyprose": 1_678_845}  # Python 3.11.7's train splits


def test_sizes_are_largest_first_the_probe_s_size_costs_one_and_thresholds_fall():
    assert SIZES[0] == (3, 192) and STEP_TIME[SIZES[0]] == 1.0
    assert all(STEP_TIME[a] > STEP_TIME[b] for a, b in zip(SIZES, SIZES[1:]))  # smaller sizes: cheaper steps
    assert all(SIZE_FROM[a] > SIZE_FROM[b] for a, b in zip(SIZES[:-1], SIZES[1:-1]))


@pytest.mark.parametrize("affordable", [1, 100, 250, 399, 400, 500, 999, 1000, 1336, 3000, 50_000])
def test_the_plan_s_size_follows_the_compute_and_buys_its_steps(affordable):
    size = choose_size(affordable)
    reached = [s for s in SIZES[:-1] if affordable >= SIZE_FROM[s]]
    assert size == (reached[0] if reached else SIZES[-1])
    p = plan_steps(affordable, CHARS)
    assert (p.n_layers, p.d_model) == size and p.affordable == affordable
    assert p.steps == min(max(1, int(affordable / STEP_TIME[size])), MAX_STEPS)  # the same compute, in its steps
    assert p.passes == pytest.approx(p.steps * TOKENS_PER_STEP / CHARS[p.corpus])
    assert f"model.n_layers={size[0]}" in p.overrides() and f"model.d_ff={4 * size[1]}" in p.overrides()
    assert p.describe().endswith(f", {size[0]} layers of width {size[1]}")


def test_more_compute_never_buys_a_smaller_model():
    order = [SIZES.index(choose_size(n)) for n in range(1, 3000, 7)]
    assert order == sorted(order, reverse=True)
    assert choose_size(1000) == (3, 192)  # the plan from 1,000 steps up is the one measured before this rule


def test_a_given_size_is_kept_and_the_plan_of_a_budget_is_its_steps_at_the_measured_rate():
    assert (plan_steps(300, CHARS, size=(3, 192)).n_layers, plan_steps(300, CHARS, size=(3, 192)).steps) == (3, 300)
    assert plan(2.1, 4.0, CHARS) == plan_steps(int(2.1 * 240 * 0.9), CHARS)


def test_a_budgeted_plan_follows_the_clock_a_benchmark_plan_counts_steps():
    p = plan_steps(1336, CHARS)
    timed = p.overrides(4.0)
    assert "train.schedule=wsd-time" in timed and "train.max_minutes=4" in timed
    assert f"train.max_steps={MAX_STEPS}" in timed  # a machine faster than measured trains on, to MAX_STEPS
    assert "train.max_steps=1336" in p.overrides() and not any("schedule" in o for o in p.overrides())


@pytest.mark.parametrize("busy, default, expected", [(0.0, 2, 0), (0.05, 2, 0), (1.0, 2, 1), (2.0, 2, 1),
                                                     (1.0, 1, 0), (3.0, 16, 13)])
def test_fewer_threads_are_tried_where_other_work_keeps_cores_busy(tmp_path, monkeypatch, busy, default, expected):
    import os
    import time

    import seqlab.commands.demo as demo

    cpus = 16
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    stat = tmp_path / "stat"

    def snapshot(total: int, idle: int) -> None:  # user nice system idle iowait irq softirq steal, over all CPUs
        stat.write_text(f"cpu  {total - idle} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4\n", encoding="ascii")

    snapshot(1000, 500)
    monkeypatch.setattr(time, "sleep", lambda s: snapshot(1000 + 100 * cpus, 500 + round(100 * (cpus - busy))))
    monkeypatch.setattr(demo, "default_threads", lambda: default)
    assert demo.free_threads(stat=str(stat)) == expected
    assert demo.free_threads(stat=str(tmp_path / "missing")) == 0  # no /proc/stat: the default only


def test_the_faster_thread_count_is_kept_and_fewer_are_probed_only_where_cores_are_busy():
    from seqlab.commands.demo import fastest_threads

    probed = []

    def rate_on(threads):  # a 2-core machine with one core busy (measured: 1.0 steps/s on 2 threads, 6.8 on 1)
        probed.append(threads)
        return {2: 1.0, 1: 6.8}[threads]

    assert fastest_threads(rate_on, 2, 1) == (1, {2: 1.0, 1: 6.8}) and probed == [2, 1]
    probed.clear()
    assert fastest_threads(rate_on, 2, 0) == (2, {2: 1.0}) and probed == [2]  # idle: one probe
    assert fastest_threads(lambda t: 10.0 - t, 1, 1) == (1, {1: 9.0})


def test_clock_position_is_the_larger_of_the_step_and_the_budget_s_share():
    assert clock_position(10, 1000, 0.0) == 10
    assert clock_position(10, 1000, 0.5) == 500  # slower than planned: the time clock leads
    assert clock_position(800, 1000, 0.5) == 800  # faster: the steps lead
    assert clock_position(10, 1000, 1.0) == 1000  # the budget spent: the schedule's end
    assert clock_position(0, 1000, 0.5, start=600) == 800  # resumed at 600: the rest over this budget


def test_a_clock_ahead_of_the_step_moves_wsd_s_decay_and_leaves_the_warm_up_in_steps():
    cfg = TrainConfig(max_steps=110, warmup_steps=10, lr=1.0, min_lr=0.1, schedule="wsd-time", max_minutes=1.0)
    wsd = TrainConfig(max_steps=110, warmup_steps=10, lr=1.0, min_lr=0.1, schedule="wsd")
    for step in (0, 9, 50, 100, 110):  # on time: the same rates as wsd
        assert learning_rate(step, cfg, position=step) == learning_rate(step, wsd)
    assert learning_rate(20, cfg, position=100) == pytest.approx(0.55)  # late: decayed by the clock
    assert learning_rate(20, cfg, position=110) == pytest.approx(0.1)
    assert learning_rate(0, cfg, position=100) == pytest.approx(0.1)  # the warm-up's rate, if lower
    with pytest.raises(SeqlabError, match="train.schedule=wsd-time follows the time budget"):
        TrainConfig(schedule="wsd-time")


class Clock:
    """A stand-in for the trainer's ``time`` module: every reading is ``tick`` seconds after the last."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def perf_counter(self) -> float:
        self.now += self.tick
        return self.now


TINY = ["model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32", "model.max_len=16",
        "train.batch_size=4", "train.precision=fp32", "train.progress=false", "train.warmup_steps=2",
        "train.eval_every=0", "train.save_every=0", "train.log_every=1", "train.eval_batches=1", "train.threads=1",
        "train.lr=1e-2", "train.min_lr=1e-4"]


def lm_config(tmp_path, extra: list[str]):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat. " * 400, encoding="utf-8")
    return resolve("lm-char", [*TINY, f'data.source="{corpus}"', *extra])


def train_rows(tmp_path, name: str, extra: list[str]) -> tuple[list[dict], dict]:
    run = api.train_run(lm_config(tmp_path, extra), tmp_path / name, log=lambda *a, **k: None)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r["split"] == "train"], json.loads((run / "state.json").read_text())


def test_a_run_slower_than_its_steps_decays_on_the_clock_and_ends_with_its_budget(tmp_path, monkeypatch):
    import seqlab.training.trainer

    monkeypatch.setattr(seqlab.training.trainer, "time", Clock(tick=0.02))  # a slow machine: 12 s, a few dozen steps
    rows, state = train_rows(tmp_path, "timed", ["train.schedule=wsd-time", "train.max_minutes=0.2",
                                                 "train.max_steps=1000"])
    assert 5 < state["step"] < 1000 and state["schedule_position"] >= 1000  # the budget ended it, decayed
    lrs = [r["lr"] for r in rows]
    assert lrs[1] == pytest.approx(1e-2)  # the warm-up's 2 steps, in steps
    assert 1e-4 <= lrs[-1] < 0.2 * 1e-2  # the clock's decay reached its end with the budget
    assert all(a >= b for a, b in zip(lrs[1:], lrs[2:]))  # held, then falling
    lines = []  # the clock's position is kept: resuming the run that the budget ended does nothing
    extra = ["train.schedule=wsd-time", "train.max_minutes=0.2", "train.max_steps=1000"]
    api.train_run(lm_config(tmp_path, extra), tmp_path / "timed", resume=True, log=lines.append)
    assert any("nothing to do" in line for line in lines)


def test_a_run_on_time_or_without_the_clock_keeps_the_schedule_of_steps(tmp_path, monkeypatch):
    import seqlab.training.trainer

    monkeypatch.setattr(seqlab.training.trainer, "time", Clock(tick=1e-6))  # fast: the steps lead the clock
    timed, state = train_rows(tmp_path, "timed", ["train.schedule=wsd-time", "train.max_minutes=1",
                                                  "train.max_steps=12"])
    plain, plain_state = train_rows(tmp_path, "plain", ["train.schedule=wsd", "train.max_steps=12"])
    assert state["step"] == 12 and "schedule_position" not in plain_state
    assert [r["lr"] for r in timed] == [r["lr"] for r in plain]
    assert [r["loss"] for r in timed] == [r["loss"] for r in plain]


def test_the_plan_is_a_library_module_below_the_command_line():
    """The plan lives in seqlab.tasks.demo_plan: the command imports it, and the benchmark of the plans reads it
    without the command line (docs/architecture.md: commands are thin)."""
    import ast
    from pathlib import Path

    import seqlab.commands.demo
    import seqlab.tasks.demo_plan

    assert seqlab.commands.demo.plan is seqlab.tasks.demo_plan.plan
    bench = Path(__file__).resolve().parents[1] / "bench" / "demo_scaling.py"
    imported = {node.module for node in ast.walk(ast.parse(bench.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.module}
    assert "seqlab.tasks.demo_plan" in imported and not {m for m in imported if m.startswith("seqlab.commands")}
