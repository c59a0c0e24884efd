"""train.report_to = ["tensorboard"]: event files under RUN/tensorboard/ that TensorBoard's own reader gives back
with the steps and values of metrics.jsonl (float32, as TensorBoard stores scalars), a language model's sample as
text at each evaluation, and after a crash and a resume no step twice (the events after the checkpoint purged)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqlab import api
from seqlab.base.config import TrainConfig
from seqlab.base.errors import SeqlabError
from seqlab.tasks import resolve

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
pytestmark = pytest.mark.usefixtures("one_thread")

TEXT = "the cat sat on the mat. a dog ran to the cat. " * 60
TINY = ["model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32", "model.max_len=16",
        "train.batch_size=4", 'train.precision="fp32"', "train.progress=false", "train.warmup_steps=1",
        "train.eval_batches=2", "train.threads=1", "train.log_every=1", "train.eval_every=4", "train.save_every=4",
        'train.report_to="tensorboard"', 'data.tokenizer="char"']


class Crash:
    """A callback that raises after ``at`` steps: a crash after the checkpoint of step 4, before the next."""

    def __init__(self, at: int):
        self.at = at

    def on_step(self, row):
        if row["step"] == self.at:
            raise RuntimeError("crash")


def events(run):
    acc = event_accumulator.EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    texts = {tag: [e.step for e in acc.Tensors(tag)] for tag in acc.Tags()["tensors"]}
    return scalars, texts


def expected(run):
    """{split/key: [(step, float32 value)]} of metrics.jsonl's rows."""
    out: dict[str, list] = {}
    for row in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()):
        for key, value in row.items():
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            if key not in ("step", "split", "epoch") and numeric:
                out.setdefault(f"{row['split']}/{key}", []).append((row["step"], float(np.float32(value))))
    return out


def test_tensorboard_events_equal_metrics_jsonl_after_a_crash_and_a_resume(tmp_path):
    run = tmp_path / "lm"
    overrides = [*TINY, "train.max_steps=10"]
    with pytest.raises(RuntimeError, match="crash"):
        api.train("lm-char", run, overrides=overrides, train_data=TEXT, callbacks=[Crash(7)],
                  log=lambda *a, **k: None)
    before, _ = events(run)
    assert max(step for step, _ in before["train/loss"]) == 7  # steps 5-7 were reported, then lost with the crash
    api.train("lm-char", run, overrides=overrides, train_data=TEXT, resume=True, log=lambda *a, **k: None)
    scalars, texts = events(run)
    want = expected(run)
    assert {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "valid/loss"} <= set(want)
    assert scalars == want  # every tag, every step once, the same values
    assert [s for s, _ in scalars["train/loss"]] == list(range(1, 11))
    assert texts == {"valid/sample/text_summary": [4, 8, 10]}


def test_report_to_takes_hf_values_and_refuses_the_others():
    assert TrainConfig(report_to="tensorboard").report_to == ("tensorboard",)
    assert TrainConfig(report_to=["none"]).report_to == () == TrainConfig().report_to
    assert TrainConfig(report_to="all").report_to == ("tensorboard",)
    assert resolve("ner-bilstm", ['train.report_to=["tensorboard"]']).train.report_to == ("tensorboard",)
    with pytest.raises(SeqlabError, match="train.report_to: 'wandb' is not supported; supported: \"tensorboard\""):
        resolve("lm-char", ['train.report_to="wandb"'])
