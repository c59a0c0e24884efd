"""The Trainer and run directories: config validation, exact resume after SIGKILL, SIGINT, DDP, bad input."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from seqlab import api
from seqlab.training import checkpoint
from seqlab.tasks import resolve
from seqlab.base.errors import SeqlabError
from seqlab.base.config import TrainConfig
from seqlab.training.optim import learning_rate

from helpers import PoisonedTask

ROOT = Path(__file__).resolve().parents[1]

TINY = ["model.n_layers=2", "model.n_heads=2", "model.d_model=32", "model.d_ff=64", "model.max_len=32",
        "train.batch_size=8", "train.precision=\"fp32\"", "train.progress=false", "train.warmup_steps=5",
        "train.eval_batches=2", "train.threads=1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from seqlab.data.sources import read_text

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:60_000], encoding="utf-8")
    return path


def config_file(tmp_path: Path, corpus: Path, steps: int, extra: list[str] = ()) -> Path:
    cfg = resolve("lm-char", [*TINY, f"data.source=\"{corpus}\"", f"train.max_steps={steps}", *extra])
    path = tmp_path / "run.toml"
    path.write_text(cfg.to_toml(), encoding="utf-8")
    return path


def seqlab(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqlab", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, **kw)


def test_config_overrides_are_validated():
    cfg = resolve("lm-char", ["train.lr=3e-4", "model.n_layers=3", "data.split=[0.8, 0.1, 0.1]"])
    assert cfg.train.lr == 3e-4 and cfg.model.n_layers == 3 and cfg.data.split == (0.8, 0.1, 0.1)
    with pytest.raises(SeqlabError, match="unknown key model.hidden_size; valid model keys: arch, n_layers"):
        resolve("lm-char", ["model.hidden_size=3"])
    with pytest.raises(SeqlabError, match="train.max_steps must be an integer"):
        resolve("lm-char", ["train.max_steps=ten"])
    with pytest.raises(SeqlabError, match="train.precision must be one of"):
        resolve("lm-char", ["train.precision=fp8"])
    with pytest.raises(SeqlabError, match="d_model"):
        resolve("lm-char", ["model.d_model=30", "model.n_heads=4"])
    with pytest.raises(SeqlabError, match="unknown preset"):
        resolve("no-such-preset")
    with pytest.raises(SeqlabError, match="section.key=value"):
        resolve("lm-char", ["lr=3"])


def test_learning_rate_schedule():
    cfg = TrainConfig(max_steps=110, warmup_steps=10, lr=1.0, min_lr=0.1)
    assert learning_rate(0, cfg) == pytest.approx(0.1)
    assert learning_rate(9, cfg) == pytest.approx(1.0)
    assert learning_rate(10, cfg) == pytest.approx(1.0)
    assert learning_rate(60, cfg) == pytest.approx(0.55)
    assert learning_rate(110, cfg) == pytest.approx(0.1)
    # word2vec's shape: linear from lr to min_lr over the total, never below min_lr; GloVe's: constant
    assert learning_rate(0, cfg, total=4, shape="linear") == pytest.approx(1.0)
    assert learning_rate(3, cfg, total=4, shape="linear") == pytest.approx(1.0 - 0.9 * 0.75)
    assert learning_rate(5, cfg, total=4, shape="linear") == pytest.approx(0.1)
    assert learning_rate(3, cfg, total=4, shape="constant") == pytest.approx(1.0)
    # wsd: the same warm-up, lr held, then linear to min_lr over the last 20 % of the 100 steps after warm-up
    wsd = TrainConfig(max_steps=110, warmup_steps=10, lr=1.0, min_lr=0.1, schedule="wsd", decay_fraction=0.2)
    assert learning_rate(0, wsd) == pytest.approx(0.1) and learning_rate(9, wsd) == pytest.approx(1.0)
    assert learning_rate(60, wsd) == learning_rate(90, wsd) == pytest.approx(1.0)
    assert learning_rate(100, wsd) == pytest.approx(0.55) and learning_rate(110, wsd) == pytest.approx(0.1)
    with pytest.raises(SeqlabError, match="train.schedule"):
        TrainConfig(schedule="step")
    with pytest.raises(SeqlabError, match=r"train.decay_fraction must be in \(0, 1\]"):
        TrainConfig(schedule="wsd", decay_fraction=0.0)


def test_train_writes_a_complete_run_directory(tmp_path, corpus):
    run = api.train_run(resolve("lm-char", [*TINY, f"data.source=\"{corpus}\"", "train.max_steps=6",
                                        "train.eval_every=3", "train.keep_best=true"]), tmp_path / "run",
                    log=lambda *a, **k: None)
    for name in ("config.toml", "model.safetensors", "trainer.safetensors", "state.json", "tokenizer.json",
                 "metrics.jsonl", "plots/loss.png", "best/model.safetensors", "data/train.bin"):
        assert (run / name).exists(), name
    state = json.loads((run / "state.json").read_text())
    assert state["step"] == 6 and state["format_version"] == checkpoint.FORMAT_VERSION
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "valid"] == [3, 6]
    lm = api.load(run)
    result = lm.evaluate("test")
    assert set(result) == {"loss", "perplexity", "tokens"} and result["perplexity"] == pytest.approx(
        torch.tensor(result["loss"]).exp().item())
    # an existing run is never overwritten without --force; a changed key is refused on resume
    with pytest.raises(SeqlabError, match="already exists"):
        api.train_run(resolve("lm-char", [*TINY, f"data.source=\"{corpus}\""]), run)
    with pytest.raises(SeqlabError, match="train.lr differ"):
        api.train_run(resolve("lm-char", [*TINY, f"data.source=\"{corpus}\"", "train.max_steps=6", "train.lr=0.5",
                                      "train.eval_every=3", "train.keep_best=true"]), run, resume=True)


@pytest.mark.heavy
def test_compiled_training_step_equals_eager(tmp_path, corpus):
    """``train.compile = true`` (torch.compile of the model, as bench/lm_throughput.py times it) trains the same
    run as eager: every logged train loss within 1e-4 (inductor reorders fp32 sums; measured about 1e-6), the
    same validation steps, and weights within 1e-4 after 6 AdamW steps. CI runs it: README advertises it."""
    from torch._dynamo.utils import counters

    rows = {}
    for compiled in (False, True):
        counters.clear()
        run = api.train_run(resolve("lm-char", [*TINY, f"data.source=\"{corpus}\"", "train.max_steps=6", "train.log_every=1",
                                            "train.eval_every=3", f"train.compile={str(compiled).lower()}"]),
                        tmp_path / f"compile-{compiled}", log=lambda *a, **k: None)
        rows[compiled] = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        rows[compiled, "weights"] = load_file(run / "model.safetensors")
        assert (counters["stats"]["unique_graphs"] > 0) == compiled  # it did compile, and only when asked
    train = {c: [(r["step"], r["loss"]) for r in rows[c] if r["split"] == "train"] for c in (False, True)}
    assert [s for s, _ in train[True]] == [s for s, _ in train[False]] == list(range(1, 7))
    assert max(abs(a - b) for (_, a), (_, b) in zip(train[False], train[True])) <= 1e-4
    assert [r["step"] for r in rows[True] if r["split"] == "valid"] == [3, 6]
    eager, compiled = rows[False, "weights"], rows[True, "weights"]
    assert eager.keys() == compiled.keys()
    assert max((eager[k] - compiled[k]).abs().max().item() for k in eager) <= 1e-4


def test_resume_after_sigkill_is_bit_identical(tmp_path, corpus, seqlab_cli):
    """Killed (SIGKILL) mid-way, --resume ends bit-identical to a run never stopped. The straight run and the
    resumes run in this process (one torch thread, train.threads=1, as the killed subprocess)."""
    steps = 40
    cfg = config_file(tmp_path, corpus, steps, ["train.save_every=4", "train.eval_every=10",
                                                "model.dropout=0.1"])
    code, _, err = seqlab_cli("train", cfg, "--out", tmp_path / "a")  # the straight run
    assert code == 0, err
    proc = subprocess.Popen([sys.executable, "-m", "seqlab", "train", str(cfg), "--out", str(tmp_path / "b")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = tmp_path / "b" / "state.json"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if state.exists() and json.loads(state.read_text())["step"] >= 8:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = json.loads(state.read_text())["step"]
    assert 8 <= killed_at < steps, f"the run was not killed mid-way (step {killed_at})"
    code, _, err = seqlab_cli("train", cfg, "--out", tmp_path / "b", "--resume")
    assert code == 0 and "resumed from step" in err, err
    for name in ("model.safetensors", "trainer.safetensors"):
        a, b = load_file(tmp_path / "a" / name), load_file(tmp_path / "b" / name)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), name
    train_rows = lambda d: [r for r in map(json.loads, (d / "metrics.jsonl").read_text().splitlines())]
    assert train_rows(tmp_path / "a") == [r for r in train_rows(tmp_path / "b")] or all(
        ra["step"] == rb["step"] and ra["loss"] == rb["loss"]
        for ra, rb in zip(train_rows(tmp_path / "a"), train_rows(tmp_path / "b")))
    code, _, err = seqlab_cli("train", cfg, "--out", tmp_path / "b", "--resume")  # finished: nothing to do
    assert code == 0 and "nothing to do" in err, err


@pytest.mark.heavy
def test_stop_signals_save_exit_cleanly_and_resume_bit_for_bit(tmp_path, corpus, seqlab_cli):
    """SIGINT (Ctrl-C) and SIGTERM (schedulers, docker stop) save at the next step and exit 128 + signal;
    --resume then ends bit-identical to a run that was never stopped (one straight run for both signals; it and
    the resumes run in this process)."""
    steps = 30
    cfg = config_file(tmp_path, corpus, steps, ["train.save_every=0", "train.eval_every=0", "train.log_every=1",
                                                "model.dropout=0.1"])
    code, _, err = seqlab_cli("train", cfg, "--out", tmp_path / "a")  # the straight run
    assert code == 0, err
    for signum, code in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]:
        run = tmp_path / signal.Signals(signum).name
        proc = subprocess.Popen([sys.executable, "-m", "seqlab", "train", str(cfg), "--out", str(run)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        metrics = run / "metrics.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline and not (metrics.exists() and len(metrics.read_text().splitlines()) >= 3):
            time.sleep(0.01)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == code, err
        assert "Traceback" not in err, err
        assert f"interrupted by {signal.Signals(signum).name}: checkpoint saved at step" in err, err
        stopped_at = json.loads((run / "state.json").read_text())["step"]
        assert 3 <= stopped_at < steps, f"the run was not stopped mid-way (step {stopped_at})"
        code, _, err = seqlab_cli("train", cfg, "--out", run, "--resume")
        assert code == 0, err
        for name in ("model.safetensors", "trainer.safetensors"):
            a, b = load_file(tmp_path / "a" / name), load_file(run / name)
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), (signum, name)


def test_non_finite_loss_stops_and_keeps_last_checkpoint(tmp_path):
    from seqlab.training.trainer import Trainer

    cfg = TrainConfig(max_steps=20, batch_size=4, save_every=3, eval_every=0, progress=False, precision="fp32")
    trainer = Trainer(PoisonedTask(poison_at=8), cfg, tmp_path)
    with pytest.raises(SeqlabError, match="non-finite loss .* at step 8; .* checkpoint \\(step 6\\) is kept"):
        trainer.fit()
    assert checkpoint.load_state(tmp_path)["step"] == 6
    assert all(torch.isfinite(t).all() for t in load_file(tmp_path / "model.safetensors").values())


class ScriptedValidation(PoisonedTask):
    """The regression task, whose validation losses follow a script (one per validation)."""

    def __init__(self, losses: list[float]):
        super().__init__(poison_at=-1)
        self.losses = iter(losses)

    def validate(self, model, device, max_batches):
        return {"loss": next(self.losses)}


def test_patience_stops_early_keeps_the_best_and_resume_does_nothing(tmp_path):
    from seqlab.training.trainer import Trainer

    cfg = TrainConfig(max_steps=100, batch_size=4, eval_every=2, save_every=0, patience=2, progress=False,
                      precision="fp32")
    lines = []
    trainer = Trainer(ScriptedValidation([1.0, 0.5, 0.6, 0.7, 0.1]), cfg, tmp_path, log=lines.append)
    state = trainer.fit()
    assert state["step"] == 8 and state["stopped_early"] and state["best_step"] == 4
    assert state["best_valid_loss"] == 0.5
    assert [line for line in lines if not line.startswith("step ")] == [
        "early stop at step 8: no new best validation loss in 2 validations (best 0.5000 at step 4)"]
    # with the progress bar off, each validation is one line in the log, with where training is and how fast
    assert re.fullmatch(r"step 2/100: valid loss 1\.0000; train loss \S+  [\d,]+ tok/s", lines[0]), lines[0]
    assert checkpoint.load_state(tmp_path / "best")["step"] == 4 and checkpoint.load_state(tmp_path)["step"] == 8
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["split"] == "valid"] == [2, 4, 6, 8]  # no second validation at the end
    again = Trainer(ScriptedValidation([]), cfg, tmp_path, log=lines.append)
    assert again.run(resume=True)["step"] == 8 and lines[-1] == "already trained to step 8; nothing to do"


def test_a_progress_line_under_a_time_budget_shows_the_budget_not_max_steps(tmp_path):
    """Under train.max_minutes (here the wsd-time schedule, whose max_steps is a ceiling) the line says the
    minutes left, never "step 2/12000", a step count the run may not reach (issue #52)."""
    from seqlab.training.trainer import Trainer

    cfg = TrainConfig(max_steps=12000, max_minutes=5, schedule="wsd-time", batch_size=4, eval_every=2,
                      save_every=0, patience=1, progress=False, precision="fp32")
    lines = []
    Trainer(ScriptedValidation([1.0, 2.0]), cfg, tmp_path, log=lines.append).fit()
    assert re.fullmatch(r"step 2, [45]\.\d of 5 min left: valid loss 1\.0000; train loss \S+  [\d,]+ tok/s",
                        lines[0]), lines
    assert not any("/12000" in line for line in lines)


def test_patience_counter_resumes_exactly(tmp_path):
    """An interrupted run resumes with its count of validations since the best (train.patience is exact)."""
    from seqlab.training.trainer import Trainer

    cfg = TrainConfig(max_steps=100, batch_size=4, eval_every=2, save_every=2, patience=3, progress=False,
                      precision="fp32")
    Trainer(ScriptedValidation([1.0, 0.5, 0.6, 0.7]), replace(cfg, max_steps=8), tmp_path).fit()
    assert checkpoint.load_state(tmp_path)["evals_since_best"] == 2
    state = Trainer(ScriptedValidation([0.8]), cfg, tmp_path).run(resume=True)
    assert state["step"] == 10 and state["stopped_early"] and state["best_step"] == 4


def test_readers_use_the_best_checkpoint_unless_last(tmp_path, corpus, seqlab_cli):
    """api.load and the reading verbs take best/ by default and the final checkpoint with --last."""
    cfg = config_file(tmp_path, corpus, 12, ["train.eval_every=4", "train.save_every=4"])
    run = api.train_run(str(cfg), tmp_path / "r", log=lambda *a, **k: None)
    best_step = checkpoint.load_state(run)["best_step"]
    best, last = api.load(run, device="cpu"), api.load(run, device="cpu", last=True)
    assert best.checkpoint["step"] == best_step and best.checkpoint["dir"] == str(run / "best")
    assert last.checkpoint["step"] == 12 and last.checkpoint["dir"] == str(run)
    weights = load_file(run / "best" / "model.safetensors")
    assert all(torch.equal(weights[k], v) for k, v in best.model.state_dict().items() if k in weights)
    for flag, expected in (([], best), (["--last"], last)):
        code, out, err = seqlab_cli("eval", run, "--split", "valid", *flag)
        assert code == 0, err
        assert json.loads(out)["loss"] == pytest.approx(expected.evaluate("valid")["loss"], rel=1e-5)
    no_best = api.train_run(str(cfg), tmp_path / "n", overrides=["train.keep_best=false"], log=lambda *a, **k: None)
    assert api.load(no_best, device="cpu").checkpoint["dir"] == str(no_best)  # no best/: the final checkpoint
