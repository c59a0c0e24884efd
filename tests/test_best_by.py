"""train.best_by: the validation metric that picks best/ and counts patience (loss, f1, accuracy, bleu, mae,
rmse; higher is better for f1, accuracy and bleu), refused where the task does not report it; the task presets
default to their metric."""

from __future__ import annotations

import json
import random

import pytest

from seqlab import api, tasks
from seqlab.base.config import TrainConfig
from seqlab.base.errors import SeqlabError
from seqlab.tasks import resolve
from seqlab.training import checkpoint
from seqlab.training.trainer import Trainer

from helpers import PoisonedTask, write_conll

pytestmark = pytest.mark.usefixtures("one_thread")


class Scripted(PoisonedTask):
    """The regression task (never poisoned), whose validations report scripted (loss, f1) pairs."""

    def __init__(self, rows: list[tuple[float, float]]):
        super().__init__(poison_at=-1)
        self.rows = iter(rows)

    def validate(self, model, device, max_batches):
        loss, f1 = next(self.rows)
        return {"loss": loss, "f1": f1}


def train_scripted(tmp_path, rows, **cfg):
    cfg = TrainConfig(**{"max_steps": 2 * len(rows), "batch_size": 4, "eval_every": 2, "save_every": 0,
                         "progress": False, "precision": "fp32", **cfg})
    lines = []
    tmp_path.mkdir(exist_ok=True)
    state = Trainer(Scripted(rows), cfg, tmp_path, log=lines.append).fit()
    return state, lines


def test_the_best_checkpoint_follows_the_chosen_metric_in_its_direction(tmp_path):
    rows = [(1.0, 0.50), (0.6, 0.55), (0.7, 0.70), (0.8, 0.65)]  # lowest loss at step 4, highest f1 at step 6
    by_loss, _ = train_scripted(tmp_path / "loss", rows)
    assert (by_loss["best_step"], by_loss["best_by"], by_loss["best_value"]) == (4, "loss", 0.6)
    by_f1, _ = train_scripted(tmp_path / "f1", rows, best_by="f1")
    assert (by_f1["best_step"], by_f1["best_by"], by_f1["best_value"]) == (6, "f1", 0.70)
    assert by_f1["best_valid_loss"] == 0.7  # the loss at the chosen step
    assert checkpoint.load_state(tmp_path / "f1" / "best")["step"] == 6


def test_patience_counts_validations_without_a_better_metric(tmp_path):
    rows = [(1.0, 0.5), (0.5, 0.6), (0.4, 0.6), (0.3, 0.59), (0.2, 0.9)]  # the loss keeps falling, f1 stalls
    state, lines = train_scripted(tmp_path, rows, best_by="f1", patience=2)
    assert state["step"] == 8 and state["stopped_early"] and state["best_step"] == 4
    assert "early stop at step 8: no new best validation f1 in 2 validations (best 0.6000 at step 4)" in lines


def test_a_metric_the_task_does_not_report_is_refused_naming_the_ones_it_does(tmp_path):
    for preset, metric, reported in (("lm-char", "f1", "loss"), ("ner-bilstm", "bleu", "loss, f1"),
                                     ("sentiment-lstm", "f1", "loss, accuracy"),
                                     ("mt-transformer", "mae", "loss, bleu"),
                                     ("forecast-lstm", "accuracy", "loss, mae, rmse")):
        with pytest.raises(SeqlabError, match=f'train.best_by = "{metric}": .* reports {reported} on its validation'):
            resolve(preset, [f'train.best_by="{metric}"'])
    with pytest.raises(SeqlabError, match="train.best_by is not used by task.kind = \"embed\""):
        resolve("glove", ['train.best_by="loss"'])
    with pytest.raises(SeqlabError, match="train.best_by must be one of loss, f1, accuracy, bleu, mae, rmse"):
        resolve("ner-bilstm", ['train.best_by="auc"'])


def test_the_task_presets_default_to_their_metric():
    chosen = {p: resolve(p).train.best_by for p in ("ner-bilstm", "ner-bilstm-crf", "ner-transformer", "ner-minilm",
                                                    "sentiment-lstm", "sentiment-transformer", "sentiment-minilm",
                                                    "mt-gru-attention", "mt-transformer", "forecast-lstm",
                                                    "forecast-transformer", "lm-char")}
    assert chosen == {**dict.fromkeys(["ner-bilstm", "ner-bilstm-crf", "ner-transformer", "ner-minilm"], "f1"),
                      **dict.fromkeys(["sentiment-lstm", "sentiment-transformer", "sentiment-minilm"], "accuracy"),
                      "mt-gru-attention": "bleu", "mt-transformer": "bleu", "forecast-lstm": "rmse",
                      "forecast-transformer": "rmse", "lm-char": "loss"}


def test_a_tiny_tagger_keeps_the_checkpoint_of_its_best_validation_f1(tmp_path):
    rng = random.Random(0)
    words = ["the", "a", "runs", "sees", "Paris", "Anna", "Bonn", "Kim"]

    def sentence():
        ws = [rng.choice(words) for _ in range(rng.randint(2, 7))]
        return [(w, "B-NAME" if w[0].isupper() else "O") for w in ws]

    files = {s: write_conll(tmp_path / f"{s}.txt", [sentence() for _ in range(n)])
             for s, n in (("train", 200), ("valid", 24), ("test", 10))}
    cfg = tasks.from_dict({
        "task": {"kind": "tag"}, "data": {**files, "tokenizer": "word"},
        "model": {"arch": "lstm", "d_model": 8, "hidden_size": 8, "n_layers": 1, "dropout": 0.0},
        "train": {"max_steps": 40, "batch_size": 8, "lr": 2e-2, "warmup_steps": 2, "eval_every": 5,
                  "save_every": 0, "progress": False, "precision": "fp32", "device": "cpu", "threads": 1,
                  "best_by": "f1"}})
    run = api.train_run(cfg, tmp_path / "run", log=lambda *a, **k: None)
    valid = [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["split"] == "valid"]
    best = max(valid, key=lambda r: (r["f1"], -r["step"]))  # the first row of the highest F1
    state = checkpoint.load_state(run)
    assert (state["best_by"], state["best_step"], state["best_value"]) == ("f1", best["step"], best["f1"])
    assert checkpoint.load_state(run / "best")["step"] == best["step"]
    assert api.load(run, device="cpu").checkpoint["step"] == best["step"]  # readers take best/
