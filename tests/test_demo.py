"""`seqlab demo`, the main job: its plan (a pure function of the machine's speed, the budget and the corpora's
sizes) and the whole command end to end at a tiny size (the probe, training, the test and validation blocks,
the sample, the plots). The plan's model size and the schedule's time clock: tests/test_demo_plan.py."""

from __future__ import annotations

import re

import pytest

from seqlab.cli import main
from seqlab.tasks.demo_plan import (CORPORA, DROPOUT_FROM_PASSES, LATE_DROPOUT, MAX_STEPS, PYDOCS_MAX_PASSES, STEP_TIME,
                                    TOKENS_PER_STEP, plan, plan_steps, train_chars)

CHARS = {"pydocs": 418_543, "pyprose": 1_678_845}  # Python 3.11.7's train splits


def test_the_plan_is_a_pure_function_of_speed_budget_and_corpus_size():
    assert plan(6.0, 4.0, CHARS) == plan(6.0, 4.0, CHARS)
    assert plan(6.0, 4.0, CHARS).affordable == int(6.0 * 240 * 0.9)  # the budget's share for steps
    slow = plan_steps(1000, CHARS)
    assert (slow.corpus, slow.steps, slow.dropout) == ("pydocs", 1000, 0.0)
    assert slow.passes == pytest.approx(1000 * TOKENS_PER_STEP / CHARS["pydocs"])
    assert plan_steps(1500, CHARS).corpus == "pyprose"  # 14.7 passes over pydocs: more than PYDOCS_MAX_PASSES


@pytest.mark.parametrize("steps", [100, 1000, 2000, 2100, 3000, 6000, 6600, 7000, 12_000, 50_000])
def test_more_steps_buy_more_text_then_dropout_never_more_passes_than_measured(steps):
    p = plan_steps(steps, CHARS)
    assert p.steps == min(int(steps / STEP_TIME[p.n_layers, p.d_model]), MAX_STEPS)
    pydocs_passes = p.steps * TOKENS_PER_STEP / CHARS["pydocs"]
    assert p.corpus == ("pydocs" if pydocs_passes <= PYDOCS_MAX_PASSES else "pyprose")
    assert p.dropout == (LATE_DROPOUT if p.passes > DROPOUT_FROM_PASSES else 0.0)
    assert p.passes <= MAX_STEPS * TOKENS_PER_STEP / CHARS["pyprose"]  # a faster machine stops at MAX_STEPS
    assert p.overrides()[:3] == [f"data.source={p.corpus}", f"train.max_steps={p.steps}", f"model.dropout={p.dropout}"]


def test_a_fixed_corpus_keeps_the_plan_s_steps_and_dropout():
    p = plan_steps(12_000, {**CHARS, "pystdlib": 7_000_000}, corpus="pystdlib")
    assert p.corpus == "pystdlib" and p.dropout == 0.0


def test_train_chars_is_the_default_train_split():
    from seqlab.data.sources import read_text

    assert train_chars("pydocs") == round(0.9 * len(read_text("pydocs")))
    assert set(CORPORA) == {"pydocs", "pyprose"}


@pytest.mark.heavy
def test_demo_end_to_end_probe_plan_test_and_validation_blocks(tmp_path, capsys, monkeypatch):
    import seqlab.commands.demo

    import seqlab.training.optim as optim

    monkeypatch.setattr(seqlab.commands.demo, "free_threads", lambda: 0)  # one probe, whatever else runs
    # the probe runs whole, for 8 steps instead of PROBE_STEPS (40 one-thread steps: 11 s)
    probe_rate = optim.probe_rate
    monkeypatch.setattr(optim, "probe_rate", lambda probe, out: probe_rate(probe, out, 8))
    out = tmp_path / "demo"
    assert main(["demo", "--minutes", "0.02", "--out", str(out)]) == 0  # the probe fits a handful of steps
    printed, log = capsys.readouterr()
    assert re.search(r"demo: [\d.]+ steps/s on this machine.*; [\d,]+ steps fit 0.02 min", log)
    assert re.search(r"plan: [\d,]+ steps on 'pydocs', [\d.]+ passes over its training text, dropout 0, 2 layers "
                     r"of width 128", printed)  # few steps fit: the small model
    test_block = printed.index("test split: ")
    valid_block = printed.index("validation split (it chose the checkpoint): ")
    assert test_block < valid_block
    for block in (printed[test_block:valid_block], printed[valid_block:]):
        for row in ("seqlab Transformer", "unigram (add-one)", "bigram (add-one)"):
            assert re.search(re.escape(row) + r" +\d+\.\d{4} +\d+\.\d{3}", block)
    assert "checkpoint: step" in printed and "sample (temperature 0.8, top-p 0.95), prompt '" in printed
    assert (out / "plots" / "loss.png").exists() and (out / "plots" / "attention.png").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".demo-probe")]
    import tomllib

    train = tomllib.loads((out / "config.toml").read_text())["train"]  # the budget's clock times the schedule
    assert (train["schedule"], train["max_minutes"], train["max_steps"]) == ("wsd-time", 0.02, MAX_STEPS)


@pytest.mark.heavy
def test_demo_steps_runs_exactly_those_steps_with_no_budget(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--steps", "12", "--corpus", "pyprose", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    steps = int(12 / STEP_TIME[2, 128])  # 12 steps of the probe's size buy more of the small model
    assert f"plan: {steps} steps on 'pyprose'" in printed and f"trained to step {steps}" in printed
    import tomllib

    cfg = tomllib.loads((out / "config.toml").read_text())
    assert cfg["train"]["max_minutes"] == 0 and cfg["train"]["max_steps"] == steps
    assert cfg["train"]["schedule"] == "wsd" and cfg["data"]["source"] == "pyprose"
