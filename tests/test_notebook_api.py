"""The notebook API: ``seqlab.train`` from in-memory data returning the trained object, ``config`` sections checked
as ``--set`` is, callbacks, interrupt then resume, and save -> load."""

from __future__ import annotations

import math
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

import seqlab
from seqlab.base.errors import SeqlabError

FAST = {"train": {"progress": False, "device": "cpu", "threads": 1}}
WORDS = ["the", "a", "cat", "dog", "sees", "runs", "big", "old"]


def sections(**more):
    out = {k: dict(v) for k, v in FAST.items()}
    for section, keys in more.items():
        out.setdefault(section, {}).update(keys)
    return out


def lm_config(steps=6, **train):
    return sections(model={"n_layers": 1, "n_heads": 2, "d_model": 16, "d_ff": 32, "max_len": 16},
                    train={"max_steps": steps, "batch_size": 4, "eval_every": 3, "save_every": 3,
                           "warmup_steps": 1, "eval_batches": 2, **train})


def sentences(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 7))) for _ in range(n)]


@pytest.fixture()
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_lm_from_a_string_returns_the_object_with_metrics_and_a_fresh_run_dir(in_tmp):
    text = ". ".join(sentences(300)) + "."
    lm = seqlab.train("lm-char", train_data=text, config=lm_config())
    assert isinstance(lm, seqlab.LanguageModel) and lm.run_dir.parent.name == "runs"
    assert lm.run_dir.name.startswith("lm-char-")
    assert (lm.run_dir / "input" / "train.txt").read_text(encoding="utf-8") == text
    assert 'train = "input/train.txt"' in (lm.run_dir / "config.toml").read_text(encoding="utf-8")  # in the run
    assert Path(lm.config.data.train).samefile(lm.run_dir / "input" / "train.txt")
    splits = {r["split"] for r in lm.metrics}
    assert splits == {"train", "valid"} and lm.metrics[-1]["step"] == 6
    assert list(lm.metrics_frame().columns)[:2] == ["step", "split"]
    assert isinstance(lm.generate("the ", max_new_tokens=5, seed=0), str)
    scores = lm.score("the cat sees a dog")
    assert math.isclose(scores.perplexity, math.exp(-np.mean(scores.logprobs)), rel_tol=1e-9)
    again = seqlab.load(lm.run_dir)  # the same object as load gives
    assert type(again) is type(lm) and again.evaluate("test") == lm.evaluate("test")


def test_every_task_trains_from_in_memory_data(in_tmp):
    rng = np.random.default_rng(1)
    tagged = [[(w, "O") for w in s.split()] + [("Paris", "B-LOC")] for s in sentences(40)]
    tagger = seqlab.train("ner-bilstm", out="ner", train_data=tagged[:30], valid_data=tagged[30:35],
                          test_data=tagged[35:], config=sections(
                              data={"min_freq": 1}, model={"n_layers": 1, "d_model": 8, "hidden_size": 8},
                              train={"max_steps": 4, "batch_size": 8, "eval_every": 2, "save_every": 2,
                                     "warmup_steps": 1}))
    assert isinstance(tagger, seqlab.SequenceTagger) and len(tagger.tag("the cat sees Paris")) == 4
    labelled = [(s, "pos" if "cat" in s else "neg") for s in sentences(40, seed=2)]
    classifier = seqlab.train("sentiment-lstm", out="cls", train_data=labelled, config=sections(
        model={"d_model": 8, "hidden_size": 8},
        train={"max_steps": 3, "batch_size": 8, "eval_every": 3, "save_every": 3, "warmup_steps": 1}))
    probs = classifier.classify("the cat runs")
    assert set(probs) == {"pos", "neg"} and math.isclose(sum(probs.values()), 1.0, rel_tol=1e-6)
    pairs = [(s, s.upper()) for s in sentences(60, seed=3)]
    translator = seqlab.train("mt-transformer", out="mt", train_data=pairs, config=sections(
        data={"tokenizer": "word"}, model={"n_layers": 1, "n_heads": 2, "d_model": 16, "d_ff": 32, "max_len": 16},
        train={"max_steps": 3, "batch_size": 8, "eval_every": 3, "save_every": 3, "warmup_steps": 1}))
    assert isinstance(translator.translate("the cat", beam=2), str)
    assert (translator.run_dir / "input" / f"train.{translator.config.data.src or 'src'}").exists()
    words = [s.split() for s in sentences(200, seed=4)]
    vectors = seqlab.train("w2v-sgns", out="w2v", train_data=iter(words),  # a generator: consumed once
                           config=sections(data={"min_freq": 1}, model={"dim": 8, "window": 2},
                                           train={"epochs": 1}))
    assert vectors.most_similar("cat", topn=3)[0][0] in WORDS
    series = np.sin(np.arange(200) / 3.0) + 0.01 * rng.standard_normal(200)
    forecaster = seqlab.train("forecast-lstm", out="fc", train_data=series, config=sections(
        model={"max_len": 8, "hidden_size": 8},
        train={"max_steps": 3, "batch_size": 8, "eval_every": 3, "save_every": 3, "warmup_steps": 1}))
    assert forecaster.forecast(4, history=series[:50]).shape == (4,)


def test_config_errors_leave_no_run_directory(in_tmp):
    with pytest.raises(SeqlabError, match="n_layerz.*valid"):
        seqlab.train("lm-char", out="bad", train_data="some text " * 50, config={"model": {"n_layerz": 2}})
    with pytest.raises(SeqlabError, match="model.max_p"):
        seqlab.train("ar", out="bad", train_data=np.arange(100.0), config={"model": {"p": 9}})
    with pytest.raises(SeqlabError, match="item 1"):
        seqlab.train("sentiment-lstm", out="bad", train_data=[("good", "pos"), ("bad",)])
    with pytest.raises(SeqlabError, match="need train_data"):
        seqlab.train("sentiment-lstm", out="bad", valid_data=[("good", "pos")])
    with pytest.raises(SeqlabError, match="callbacks\\[0\\]"):
        seqlab.train("lm-char", out="bad", train_data="x" * 100, callbacks=[object()])
    assert not (in_tmp / "bad").exists() and not any(p.name.startswith(".bad") for p in in_tmp.iterdir())


def test_overrides_on_a_run_config_are_applied_never_dropped(in_tmp):
    from seqlab.tasks import resolve

    cfg = resolve("lm-char", ["train.max_steps=50"])
    lm = seqlab.train(cfg, out="r", train_data="the cat sees a dog. " * 60, config=lm_config(),
                      overrides=["train.max_steps=4"])
    assert lm.config.train.max_steps == 4 and lm.metrics[-1]["step"] == 4


class Recorder:
    def __init__(self, stop_at=None):
        self.rows, self.stop_at = {"on_step": [], "on_eval": [], "on_checkpoint": []}, stop_at

    def on_step(self, row):
        self.rows["on_step"].append(row)
        return False if row["step"] == self.stop_at else None

    def on_eval(self, row):
        self.rows["on_eval"].append(row)

    def on_checkpoint(self, row):
        self.rows["on_checkpoint"].append(row)


def test_callbacks_see_steps_evaluations_checkpoints_and_false_stops_with_a_checkpoint(in_tmp):
    text = "the cat sees a dog. " * 80
    seen = Recorder(stop_at=4)
    lm = seqlab.train("lm-char", out="run", train_data=text, config=lm_config(steps=9), callbacks=[seen])
    assert [r["step"] for r in seen.rows["on_step"]] == [1, 2, 3, 4]
    assert [r["step"] for r in seen.rows["on_eval"]] == [3, 4] and "loss" in seen.rows["on_eval"][0]
    assert {r["step"] for r in seen.rows["on_checkpoint"]} == {3, 4}
    assert lm.checkpoint["step"] in (3, 4) and seqlab.load(lm.run_dir, last=True).checkpoint["step"] == 4
    more = Recorder()
    lm = seqlab.train("lm-char", out="run", train_data=text, config=lm_config(steps=9), resume=True, callbacks=[more])
    assert [r["step"] for r in more.rows["on_step"]] == list(range(5, 10))
    with pytest.raises(SeqlabError, match="train_data differs"):
        seqlab.train("lm-char", out="run", train_data=text + "more", config=lm_config(steps=12), resume=True)


def test_resume_never_silently_restarts_and_auto_starts_a_missing_run(in_tmp, seqlab_cli):
    """resume=True (--resume) on a missing path is an error that creates nothing; an existing folder without a
    checkpoint starts at step 0; max_steps below the steps done is an error naming both, equal is nothing to do;
    resume="auto" (--resume auto) starts a missing run and continues an existing one; a resume without the
    run's in-memory data asks for the same train_data."""
    text = "the cat sees a dog. " * 80
    with pytest.raises(SeqlabError, match="cannot resume typo: no such run directory.*auto"):
        seqlab.train("lm-char", out="typo", train_data=text, config=lm_config(), resume=True)
    code, _, err = seqlab_cli("train", "lm-char", "--out", "typo", "--resume")
    assert code == 2 and err.count("\n") == 1 and "no such run directory" in err, err
    code, _, err = seqlab_cli("train", "lm-char", "--out", "typo", "--resume", "again")
    assert code == 2 and "'auto'" in err, err
    with pytest.raises(SeqlabError, match="resume must be"):
        seqlab.train("lm-char", out="typo", train_data=text, config=lm_config(), resume="yes")
    assert sorted(p.name for p in in_tmp.iterdir()) == []
    (in_tmp / "empty").mkdir()
    assert seqlab.train("lm-char", out="empty", train_data=text, config=lm_config(steps=3),
                        resume=True).checkpoint["step"] == 3
    lm = seqlab.train("lm-char", out="auto", train_data=text, config=lm_config(steps=3), resume="auto")
    assert lm.metrics[0]["step"] == 1 and lm.checkpoint["step"] == 3
    with pytest.raises(SeqlabError, match="already trained 3 steps, more than train.max_steps = 2; set train.max_steps to 3"):
        seqlab.train("lm-char", out="auto", train_data=text, config=lm_config(steps=2), resume=True)
    assert seqlab.load("auto", last=True).config.train.max_steps == 3  # the refused resume wrote nothing
    logged = []
    seqlab.train("lm-char", out="auto", train_data=text, config=lm_config(steps=3), resume="auto",
                 log=logged.append)
    assert any("nothing to do" in line for line in logged), logged
    lm = seqlab.train("lm-char", out="auto", train_data=text, config=lm_config(steps=5), resume="auto")
    assert seqlab.load(lm.run_dir, last=True).checkpoint["step"] == 5
    with pytest.raises(SeqlabError, match="in-memory data; pass the same train_data to resume"):
        seqlab.train("lm-char", out="auto", config=lm_config(steps=6), resume=True)
    (in_tmp / "text.txt").write_text(text, encoding="utf-8")
    tiny = [f"--set={section}.{key}={str(value).lower()}" for section, keys in lm_config(steps=2).items()
            for key, value in keys.items()]
    for _ in range(2):  # --resume auto: starts the missing run, then finds it finished
        code, out, err = seqlab_cli("train", "lm-char", "--out", "cli", "--resume", "auto",
                                    "--set=data.source=text.txt", *tiny)
        assert code == 0 and out.strip() == "cli", err
    assert "nothing to do" in err and seqlab.load("cli", last=True).checkpoint["step"] == 2


PAIRS = [(s, "pos" if "cat" in s else "neg") for s in sentences(40, seed=3)]
# the probe of bad inputs from Python (the command line's is tests/test_cli.py): each one line, before any
# folder is written or any training step (issue #52: device="gpu" used to train a whole run, then fail)
API_MISTAKES = [
    (dict(device="gpu"), r'^device must be "auto", "cpu", "cuda" or "cuda:N", got \'gpu\'$'),
    (dict(device=3), r'^device must be "auto", "cpu", "cuda" or "cuda:N", got 3$'),
    (dict(device="cpu", config={"train": {"device": "cuda"}}),
     r"^device='cpu' but the config sets train.device = \"cuda\"; give one of them"),
    (dict(config={"train": {"device": "cuda"}}), r'^train.device = "cuda" but no CUDA device is available'),
    (dict(out="afile.txt"), r"^afile.txt is a file, not a folder; give out= a folder path$"),
    (dict(out={"train": {}}), r"^out must be a folder path .*config sections go in config="),
    (dict(resume=1), r'^resume must be True, False or "auto", got 1$'),
    (dict(force="yes"), r"^force must be True or False, got 'yes'$"),
    (dict(resume=True, force=True), r"^resume=True continues the run and force=True replaces it; give one of them$"),
    (dict(log="quiet"), r"^log must be a function"),
    (dict(callbacks=object()), r"^callbacks must be a list of objects with on_step.*callbacks=\[\.\.\.\]$"),
    (dict(callbacks=[5]), r"^callbacks\[0\] \(int\) has none of the methods"),
    (dict(overrides="train.max_steps=3"), r"^overrides must be a list of .*overrides=\['train.max_steps=3'\]$"),
    (dict(config={"train": {"max_stepz": 3}}), r"train.max_stepz"),
    (dict(preset="no-such-preset"), r"unknown preset"),
    (dict(preset={"train": {}}), r"^the first argument must be a preset name, a TOML path or a RunConfig, got a dict"),
    (dict(train_data=5), r"^train_data must be an iterable of items \(\(text, label\) each\), got int 5"),
    (dict(train_data=[(label, text) for text, label in PAIRS]), r"^train_data has as many distinct labels as "
                                                                 r"examples \(40\): the pairs look swapped"),
    (dict(train_data=[(text, "pos") for text, _ in PAIRS]), r"^train_data has a single label \('pos'\)"),
    (dict(train_data=PAIRS, valid_data=[("good", "pos"), ("bad",)]), r"^valid_data item 1: expected"),
    (dict(valid_data=PAIRS), r"^valid_data / test_data need train_data too"),
]


@pytest.mark.parametrize("kwargs, message", API_MISTAKES, ids=[str(i) for i in range(len(API_MISTAKES))])
def test_the_probe_of_bad_inputs_from_python_fails_before_any_write_or_training(kwargs, message, in_tmp,
                                                                                 monkeypatch):
    """Each mistake of seqlab.train is one SeqlabError line, leaves no folder (not the run's, not its parents)
    and trains nothing (the task's train is never called); seqlab.load's likewise."""
    from seqlab.tasks import classify
    from seqlab.training import devices

    monkeypatch.setattr(devices, "cuda_present", lambda: False)  # the CUDA cases read the same on a GPU machine
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    trained = []
    monkeypatch.setattr(classify, "train", lambda *a, **k: trained.append(1))
    (in_tmp / "afile.txt").write_text("mine")
    kwargs = {"out": "runs/deep/run", "config": sections(), **kwargs}
    with pytest.raises(SeqlabError, match=message) as raised:
        seqlab.train(kwargs.pop("preset", "sentiment-lstm"), **kwargs)
    assert "\n" not in str(raised.value) and not trained
    assert sorted(p.name for p in in_tmp.iterdir()) == ["afile.txt"]


def test_load_checks_its_arguments_before_reading(in_tmp):
    for kwargs, message in [(dict(run_dir=3), r"^run_dir must be a run directory's path .*got a int$"),
                            (dict(run_dir="nope", last="yes"), r"^last must be True or False, got 'yes'$"),
                            (dict(run_dir="nope", device="gpu"), r'^device must be "auto", "cpu", "cuda" or')]:
        with pytest.raises(SeqlabError, match=message):
            seqlab.load(**kwargs)


def test_device_is_where_training_runs_and_the_object_is_placed(in_tmp):
    """device= sets train.device (recorded in the run's config.toml) and places the returned object; None
    keeps train.device; "cuda:N" is refused (training runs on "cuda"); the docstrings name every parameter."""
    import inspect

    tiny = sections(data={"min_freq": 1}, model={"d_model": 8, "hidden_size": 8},
                    train={"max_steps": 1, "batch_size": 4, "eval_every": 1, "save_every": 1, "warmup_steps": 1})
    del tiny["train"]["device"]
    cls = seqlab.train("sentiment-lstm", out="cls", train_data=PAIRS, config=tiny, device="cpu")
    assert cls.config.train.device == "cpu" and cls.device.type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(SeqlabError, match="no CUDA device is available"):
            seqlab.train("sentiment-lstm", out="cuda", train_data=PAIRS, config=tiny, device="cuda:1")
    for function in (seqlab.train, seqlab.load):
        doc = inspect.getdoc(function)
        for name in inspect.signature(function).parameters:
            assert f"``{name}``" in doc, (function.__name__, name)
    assert ".predict" not in inspect.getdoc(seqlab.load) and "_caller_state_kept" not in inspect.getdoc(seqlab.load)


def test_argument_mistakes_are_one_line_errors_that_create_nothing(in_tmp):
    """A dict where out goes, sampling arguments of the wrong type or range, a device that is none, a verb given
    a number: each a one-line SeqlabError naming the argument, not a TypeError or a torch error."""
    with pytest.raises(SeqlabError, match="out must be a folder path.*got a dict; config sections go in config="):
        seqlab.train("lm-char", {"train": {"max_steps": 3}})
    assert list(in_tmp.iterdir()) == []
    text = "the cat sees a dog. " * 80
    lm = seqlab.train("lm-char", out="run", train_data=text, config=lm_config(steps=2))
    mistakes = [(dict(temperature="0.8"), "temperature .* must be a number, got '0.8' \\(str\\)"),
                (dict(temperature=-1.0), "temperature .* must be >= 0"),
                (dict(top_k=-2), "top_k .* must be >= 0"), (dict(top_k=2.5), "top_k .* must be an integer"),
                (dict(top_p=0.0), "top_p .* must be in \\(0, 1\\]"), (dict(top_p=1.5), "top_p .* must be in"),
                (dict(max_new_tokens="5"), "max_new_tokens .* must be an integer"),
                (dict(seed=1.5), "seed .* must be an integer")]
    for kwargs, message in mistakes:
        with pytest.raises(SeqlabError, match=message) as raised:
            lm.generate("the ", **kwargs)
        assert "\n" not in str(raised.value)
    with pytest.raises(SeqlabError, match="prompt 2 is a int"):
        lm.generate(["the ", 5], max_new_tokens=2)
    with pytest.raises(SeqlabError, match="got a int; give a text as a str"):
        lm.score(5)
    for device in ("gpu", 3):
        with pytest.raises(SeqlabError, match='device must be "auto", "cpu", "cuda" or "cuda:N"'):
            seqlab.load("run", device=device)
    assert seqlab.load("run", device="cpu").device.type == "cpu"
    tagged = [[(w, "O") for w in s.split()] + [("Paris", "B-LOC")] for s in sentences(20)]
    tagger = seqlab.train("ner-bilstm", out="ner", train_data=tagged, config=sections(
        data={"min_freq": 1}, model={"n_layers": 1, "d_model": 8, "hidden_size": 8},
        train={"max_steps": 1, "batch_size": 4, "eval_every": 1, "save_every": 1, "warmup_steps": 1}))
    with pytest.raises(SeqlabError, match="got a int; give a sentence as a str"):
        tagger.tag(5)
    with pytest.raises(SeqlabError, match="sentence 2 is a int"):
        tagger.entities(["the cat", 5])


def test_interrupt_checkpoints_and_resume_continues_to_the_same_weights(in_tmp):
    text = "the cat sees a dog. " * 80

    class Interrupt:  # what a notebook's Interrupt button does: SIGINT to the kernel process, between steps
        def on_step(self, row):
            if row["step"] == 3:
                os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(seqlab.Interrupted, match="resume=True"):
        seqlab.train("lm-char", out="cut", train_data=text, config=lm_config(steps=8), callbacks=[Interrupt()])
    assert seqlab.load("cut", last=True).checkpoint["step"] == 3
    cut = seqlab.train("lm-char", out="cut", train_data=text, config=lm_config(steps=8), resume=True)
    whole = seqlab.train("lm-char", out="whole", train_data=text, config=lm_config(steps=8))
    for p, q in zip(seqlab.load(cut.run_dir, last=True).model.state_dict().values(),
                    seqlab.load(whole.run_dir, last=True).model.state_dict().values()):
        assert torch.equal(p, q)


def test_save_then_load_gives_the_same_model_without_the_run(in_tmp):
    text = "the cat sees a dog. " * 80
    lm = seqlab.train("lm-char", out="run", train_data=text, config=lm_config())
    saved = lm.save(in_tmp / "saved")
    assert not (saved / "data").exists() and (saved / "tokenizer.json").exists()
    with pytest.raises(SeqlabError, match="already exists"):
        lm.save(saved)
    lm.save(saved, force=True)
    again = seqlab.load(saved)
    for p, q in zip(lm.model.state_dict().values(), again.model.state_dict().values()):
        assert torch.equal(p, q)
    assert again.generate("the ", max_new_tokens=8, seed=1) == lm.generate("the ", max_new_tokens=8, seed=1)
    assert again.score("the cat") == lm.score("the cat")
    ar = seqlab.train("ar", out="ar", train_data=np.sin(np.arange(120) / 4.0), config={"train": {"progress": False}})
    ar_again = seqlab.load(ar.save(in_tmp / "ar-saved"))
    np.testing.assert_array_equal(ar_again.forecast(5), ar.forecast(5))


@pytest.mark.heavy
def test_every_torchrun_process_returns_the_trained_object(tmp_path):
    """Under torchrun (2 processes, gloo on CPU) each process spools its in-memory data, rank 0 alone writes the
    run, and every rank gets the trained object once the last checkpoint is committed."""
    import socket
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, seqlab
        lm = seqlab.train("lm-char", out={str(tmp_path / 'run')!r}, train_data="the cat sees a dog. " * 80,
                          config={{"model": {{"n_layers": 1, "n_heads": 2, "d_model": 16, "d_ff": 32, "max_len": 16}},
                                   "train": {{"max_steps": 4, "batch_size": 4, "progress": False, "threads": 1,
                                             "eval_every": 2, "save_every": 2, "warmup_steps": 1}}}})
        line = " ".join(map(str, ("rank", os.environ["RANK"], type(lm).__name__, lm.checkpoint["step"],
                                  lm.metrics[-1]["step"])))
        sys.stdout.write(line + "\\n")  # one write of one short line: the processes' lines never interleave
        sys.stdout.flush()
    """), encoding="utf-8")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          f"--master-port={port}", str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    lines = sorted(line for line in run.stdout.splitlines() if line.startswith("rank"))
    assert lines == ["rank 0 LanguageModel 4 4", "rank 1 LanguageModel 4 4"], run.stdout
    assert sorted(p.name for p in (tmp_path / "run" / "input").iterdir()) == ["train.txt"]


def test_presets_and_their_configs_from_python_and_dir_lists_public_names_only():
    names = seqlab.presets()
    assert names == sorted(names) and {"lm-char", "ner-bilstm-crf"} <= set(names)
    cfg = seqlab.preset_config("ner-bilstm-crf")
    assert cfg["train"]["max_steps"] == 12000 and cfg["task"]["kind"] == "tag" and cfg["data"]["source"] == "conll2003"
    assert set(cfg) == {"task", "data", "model", "train"} and cfg["model"]["arch"] == "lstm"
    with pytest.raises(SeqlabError, match="unknown preset 'ner-bilstm-crff'; valid presets: .*ner-bilstm-crf"):
        seqlab.preset_config("ner-bilstm-crff")
    listed = dir(seqlab)
    assert not {"TYPE_CHECKING", "annotations", "importlib", "sys"} & set(listed)
    assert all(not name.startswith("_") or name == "__version__" for name in listed), listed
    assert {"presets", "preset_config", "train", "load", "SeqlabError", "__version__"} <= set(listed)
    namespace: dict = {}
    exec(f"from seqlab import {', '.join(seqlab.__all__)}", namespace)  # every public name imports
    assert namespace["presets"] is seqlab.presets


@pytest.mark.parametrize("first", [
    "import importlib.resources as r; r.files('seqlab.base').joinpath('presets', 'lm-char.toml').read_text()",
    "from seqlab.base import config; config.preset_names(); import seqlab.base.presets",
    "import seqlab.api; import seqlab.tasks.registry",
    "import seqlab\ntry:\n    import seqlab.presets\nexcept ModuleNotFoundError:\n    pass",
], ids=["package-data", "config", "api", "import-presets"])
def test_seqlab_presets_is_the_function_whatever_was_imported_first(first):
    """The preset files are data of seqlab.base (no package named seqlab.presets): nothing imported before can
    make ``seqlab.presets`` anything but :func:`seqlab.api.presets`."""
    import subprocess
    import sys

    code = (f"{first}\nimport types\nimport seqlab\nfrom seqlab import presets\n"
            "assert isinstance(seqlab.presets, types.FunctionType) and presets is seqlab.presets, seqlab.presets\n"
            "assert 'lm-char' in seqlab.presets()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_progress_is_a_bar_only_on_a_terminal_or_in_a_notebook_and_else_one_log_line_per_evaluation(
        in_tmp, capsys, caplog, monkeypatch):
    """stderr captured (not a terminal) and no notebook: no tqdm stream, one summary line per evaluation on the
    seqlab logger, with train.progress on or off; a notebook is told by IPython's kernel, never imported for it."""
    import logging
    import sys
    import types

    from seqlab.base.console import bars_shown

    text = "the cat sees a dog. " * 80
    for progress in (True, False):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="seqlab"):
            seqlab.train("lm-char", out=f"run-{progress}", train_data=text, config=lm_config(progress=progress))
        assert "\r" not in capsys.readouterr().err
        evaluations = [r.getMessage() for r in caplog.records if ": valid loss" in r.getMessage()]
        assert [line.partition(":")[0] for line in evaluations] == ["step 3/6", "step 6/6"], evaluations
        assert all("; train loss" in line and "tok/s" in line for line in evaluations), evaluations
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not bars_shown() and "IPython" not in sys.modules
    kernel = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel))
    assert bars_shown()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))  # IPython, no kernel
    assert not bars_shown()


def test_a_moved_run_evaluates_its_in_memory_data_recorded_relative_to_the_run(in_tmp, seqlab_cli):
    tagged = [[(w, "O") for w in s.split()] + [("Paris", "B-LOC")] for s in sentences(24, seed=5)]
    tagger = seqlab.train("ner-bilstm", out="ner", train_data=tagged[:20], test_data=tagged[20:], config=sections(
        data={"min_freq": 1}, model={"n_layers": 1, "d_model": 8, "hidden_size": 8},
        train={"max_steps": 2, "batch_size": 4, "eval_every": 2, "save_every": 2, "warmup_steps": 1}))
    recorded = (tagger.run_dir / "config.toml").read_text(encoding="utf-8")
    assert 'train = "input/train.conll"' in recorded and 'test = "input/test.conll"' in recorded, recorded
    assert 'source = ""' in recorded and str(in_tmp) not in recorded  # no preset dataset, no absolute path
    before = tagger.evaluate("test")
    (in_tmp / "elsewhere").mkdir()
    moved = shutil.move(str(tagger.run_dir), str(in_tmp / "elsewhere" / "ner-moved"))
    again = seqlab.load(moved)
    assert Path(again.config.data.test).samefile(Path(moved) / "input" / "test.conll")
    assert again.evaluate("test") == before
    code, out, err = seqlab_cli("eval", moved, "--split", "test")
    assert code == 0 and '"f1"' in out, err
    resumed = seqlab.train("ner-bilstm", out=moved, train_data=tagged[:20], test_data=tagged[20:], resume=True,
                           config=sections(data={"min_freq": 1}, model={"n_layers": 1, "d_model": 8, "hidden_size": 8},
                                           train={"max_steps": 3, "batch_size": 4, "eval_every": 2, "save_every": 2,
                                                  "warmup_steps": 1}))
    assert seqlab.load(resumed.run_dir, last=True).checkpoint["step"] == 3  # the moved run resumes in place
