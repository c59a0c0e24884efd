"""bench/ner.py's Lample et al. rows (issue #56): the run specs, and the ``ner-lample`` section written from run
folders (fabricated here: a finished run's stored result, an unfinished run's state and plan, absent runs), with the
target verdicts on the mean of a row's seeds, the passes from the row's batch size and the dev curve's tail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import ner  # noqa: E402
from bench.common import store_row  # noqa: E402


def test_run_specs_name_rows_seeds_or_all():
    assert ner.lample_runs("char-dropout") == [("char-dropout", 1), ("char-dropout", 2), ("char-dropout", 3)]
    assert ner.lample_runs("pretrain, pretrain-dropout-char:2,pretrain") == [("pretrain", 1),
                                                                           ("pretrain-dropout-char", 2)]
    assert len(ner.lample_runs("all")) == 9
    with pytest.raises(SystemExit, match="unknown Lample row"):
        ner.lample_runs("chars")


def test_a_key_names_overrides_seed_and_budget():
    assert ner.lample_key("pretrain-dropout", 2, 0, 180, "glove-6b-50d") == ner.COMPUTE + [
        "model.vectors=glove-6b-50d", "model.d_model=50", "model.vectors_vocab=100000", "model.char_dim=0",
        "model.char_hidden_size=0", "train.seed=2", "steps fitted to 180 minutes"]
    assert ner.lample_key("char-dropout", 1, 5000, 180, "g")[-2:] == ["train.seed=1", "train.max_steps=5000"]


def finished(out: Path, row: str, seed: int, f1: float, steps: int = 3000, curve=()) -> None:
    run = ner.lample_dir(out, row, seed)
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "split": "valid", "loss": 0.1, "f1": v, "validated": "all"}) + "\n" for s, v in curve))
    store_row(run, ["key"], {"row": row, "seed": seed, "steps": steps, "budget_steps": steps, "budget_minutes": 180,
                             "batch_size": 1, "threads": 1, "train_minutes": 170.0, "best_step": 2000,
                             "valid_f1_best": 0.9, "precision": f1, "recall": f1, "f1": f1,
                             "per_type_f1": {"PER": 0.9, "LOC": 0.8}, "vectors_found": None, "device": "CPU"})


def test_the_section_from_finished_unfinished_and_absent_runs(tmp_path):
    curve = [(1000, 0.80), (2000, 0.85), (3000, 0.84)]
    for seed, f1 in ((1, 0.83), (2, 0.84), (3, 0.85)):
        finished(tmp_path, "char-dropout", seed, f1, curve=curve)
    finished(tmp_path, "pretrain-dropout-char", 1, 0.91)
    unfinished = ner.lample_dir(tmp_path, "pretrain", 1)
    unfinished.mkdir(parents=True)
    (unfinished / "state.json").write_text(json.dumps({"step": 1200, "best_step": 1000, "best_value": 0.7}))
    ner.plan_file(unfinished).write_text(json.dumps({"key": [], "steps": 4000}))

    text, verdicts = ner.lample_section(tmp_path, sentences=1000, note="two at a time")
    assert "| char-dropout | none (the preset) | 83.63 | **0.8400 ± 0.0100 (sd; 0.8300-0.8500)** |" in text
    assert "seed 1: 0.8300; seed 2: 0.8400; seed 3: 0.8500 | 3 of 3 |" in text
    assert "| pretrain, seed 1 | unfinished (so far) | 1,200 / 4,000 | 1,000 | 0.7000 |" in text
    assert "| pretrain-char, seed 1 | not started |" in text
    assert "| 3,000 / 3,000 (180 min), 3.0 passes | 2,000 | 0.9000 | **0.8300** |" in text  # batch 1, 1,000 sentences
    assert "4 of 9 runs finished" in text and "covered all of dev" in text
    assert "cannot be fetched here" in text and "Note (the operator's, not measured): two at a time" in text
    assert verdicts["char-dropout"] == {"target": 0.836, "mean": pytest.approx(0.84), "seeds": 3, "met": True}
    assert verdicts["pretrain-dropout-char"]["met"] is None  # one of three seeds: no verdict yet
    assert "char-dropout >= 0.836 (mean of 3 seeds): 0.8400, **met**" in text
    assert "pretrain-dropout-char >= 0.900: not yet (1 of 3 seeds)" in text
    assert ("- char-dropout, seed 1 (step 3,000 of 3,000): 1,000: 0.8000, 2,000: 0.8500, 3,000: 0.8400; the last "
            "quarter of the steps moved the best dev F1 by -0.0100") in text


def test_a_missed_target_is_reported_not_raised(tmp_path):
    for seed in (1, 2, 3):
        finished(tmp_path, "pretrain-dropout-char", seed, 0.89)
    text, verdicts = ner.lample_section(tmp_path, sentences=1000)
    assert verdicts["pretrain-dropout-char"]["met"] is False and "0.8900, **missed**" in text
    assert "0 of 9" not in text and "4 of 9" not in text and "3 of 9 runs finished" in text


def test_no_runs_at_all_still_writes_a_section(tmp_path):
    text, verdicts = ner.lample_section(tmp_path, sentences=1000)
    assert "0 of 9 runs finished" in text and text.count("not started") == 9
    assert all(v["met"] is None for v in verdicts.values())


def test_the_char_dropout_row_measures_the_bilstm_crf_preset():
    """ner-bilstm-crf is ner-lample's model and data with the optimiser settings that won on dev (issue #56 item 5):
    the char-dropout row (ner-lample + COMPUTE, at the preset's step count) trains exactly the preset."""
    from seqlab import tasks

    preset = tasks.resolve("ner-bilstm-crf")
    row = tasks.resolve(ner.LAMPLE_PRESET, ner.COMPUTE + [f"train.max_steps={preset.train.max_steps}"])
    assert (preset.data, preset.model, preset.train) == (row.data, row.model, row.train)
