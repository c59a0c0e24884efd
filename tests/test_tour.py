"""The notebook tour (docs/notebooks/tour.py, jupytext percent format: every cell in order) runs end to end, as a
user would run it in Jupyter: every task trained from in-memory data, every verb, save and load, a plot."""

from __future__ import annotations

import os
import runpy
import time
from pathlib import Path

TOUR = Path(__file__).resolve().parents[1] / "docs" / "notebooks" / "tour.py"


def test_the_tour_runs_in_under_two_minutes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    t0 = time.perf_counter()
    runpy.run_path(str(TOUR), run_name="__main__")
    assert time.perf_counter() - t0 < 120
    assert (tmp_path / "runs" / "tour-attention.png").stat().st_size > 1000  # the one plot, rendered
    assert (tmp_path / "runs" / "tour-lm-saved" / "model.safetensors").exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")) == [
        "tour-ar", "tour-cls", "tour-fc", "tour-lm", "tour-lm-saved", "tour-mt", "tour-ner", "tour-stop",
        "tour-w2v"]
    assert os.environ["MPLBACKEND"] == "Agg"
