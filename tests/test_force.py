"""``--force`` / ``force=True`` replaces a seqlab output only (seqlab.base.outputs): per verb (train from the CLI and
from Python, data prepare, export in every format, Trained.save), a planted folder with a user's file and a
folder of runs are refused with the file byte-identical, a real output and a half-written run are replaced.
And errors in the caller's words: the same check says ``force=True`` / ``out=`` from Python, ``--force`` /
``--out`` from the command line. Two tiny runs (an lm of a few steps, word vectors of one epoch) serve it all."""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

import seqlab
from seqlab import api
from seqlab.base.errors import SeqlabError, command_line
from seqlab.base.outputs import RUN, check_replaceable, output_kind

pytestmark = pytest.mark.usefixtures("one_thread")
QUIET = {"log": lambda *a, **k: None}
TINY = ["model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32", "model.max_len=24",
        "model.activation=\"gelu_tanh\"", "train.batch_size=4", "train.max_steps=3", "train.eval_every=3",
        "train.save_every=3", "train.warmup_steps=1", "train.eval_batches=1", "train.progress=false",
        "train.device=\"cpu\"", "train.threads=1"]
THESIS = b"chapter 1\n\xe2\x80\x94 my own words\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """{"corpus": text file, "lm": a tiny GPT-2-compatible lm-char run, "w2v": a tiny word-vectors run}."""
    base = tmp_path_factory.mktemp("force")
    rng = np.random.default_rng(0)
    words = ["the", "cat", "dog", "sees", "runs", "big", "old", "near"]
    corpus = base / "corpus.txt"
    corpus.write_text("".join(" ".join(rng.choice(words, 6)) + ".\n" for _ in range(300)), encoding="utf-8")
    lm = api.train_run("lm-char", base / "lm", overrides=[*TINY, f"data.source=\"{corpus}\""], **QUIET)
    w2v = api.train_run("w2v-sgns", base / "w2v", overrides=[
        f"data.source=\"{corpus}\"", "data.min_freq=1", "model.dim=4", "model.window=2", "train.epochs=1",
        "train.progress=false", "train.threads=1"], **QUIET)
    return {"corpus": corpus, "lm": lm, "w2v": w2v}


def planted(folder: Path) -> Path:
    """A user's folder: their thesis beside nothing of seqlab's."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.txt").write_bytes(THESIS)
    return folder


def runs_folder(folder: Path, run: Path) -> Path:
    """A folder of two runs (a/, b/), as ``runs/`` is."""
    for name in ("a", "b"):
        shutil.copytree(run, folder / name)
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def half_written(folder: Path, run: Path) -> Path:
    """What a start killed before its first checkpoint leaves: config.toml, a stale lock (a PID that is gone)
    whose journal says the folder was made by it, and a temporary of an atomic write."""
    folder.mkdir(parents=True)
    shutil.copy(run / "config.toml", folder / "config.toml")
    (folder / "lock.json").write_text(json.dumps({"pid": 2**22 + 7, "host": socket.gethostname(), "token": "x",
                                                  "journal": {"made": str(folder.absolute())}}))
    (folder / ".model.k3j2.tmp.safetensors").write_bytes(b"half")
    return folder


# ------------------------------------------------------------------------------------------------------
# the rule: what counts as seqlab's


def test_the_writers_names_are_in_the_run_shape():
    """Every name a writer module defines for a run's files is one the rule knows (a new file needs a line there)."""
    from seqlab.data import lm_tokens, prepared
    from seqlab.tasks import char_inputs, classify, word_vectors, labelling, lm, series_parts, singletons, splits, tag, trained
    from seqlab.training import checkpoint, rundir
    from seqlab.vectors.formats import RUN_VECTORS

    names = [*checkpoint.FILES, checkpoint.ARCHIVE, rundir.LOCK, str(rundir.INPUT_DIR), classify.TOKENIZER,
             labelling.LABELS, char_inputs.CHARS, tag.VOCAB, series_parts.SERIES_FILE, singletons.SINGLETONS,
             lm.PRETRAINED, "wordpiece.json", trained.SAVED_MARK, RUN_VECTORS, splits.DATA_DIR, lm_tokens.DATA_DIR,
             word_vectors.DATA_DIR, str(classify.CONFUSION_PLOT.parent), "best", "metrics.jsonl", "config.toml",
             "src_tokenizer.json", "tgt_tokenizer.json", "tensorboard", "data.preparing.json", ".next"]
    unknown = [n for n in names if not any(re.fullmatch(pattern, n) for pattern in RUN)]
    assert not unknown
    assert prepared.MANIFEST == "manifest.json"


def test_what_counts_as_seqlabs(tiny, tmp_path):
    assert output_kind(tiny["lm"]) == output_kind(tiny["w2v"]) == "a run"
    assert output_kind(seqlab.load(tiny["lm"]).save(tmp_path / "saved")) == "a run"
    (tmp_path / "empty").mkdir()
    assert output_kind(tmp_path / "empty") == "an empty folder"
    assert output_kind(planted(tmp_path / "mine")) is None
    assert output_kind(runs_folder(tmp_path / "runs", tiny["lm"])) is None
    inside = shutil.copytree(tiny["lm"], tmp_path / "run-plus")
    (inside / "plots" / "notes.txt").write_text("mine")  # at any depth
    with pytest.raises(SeqlabError, match=r"holds plots/notes\.txt, which seqlab did not write"):
        check_replaceable(inside)
    user_toml = tmp_path / "config-only"
    user_toml.mkdir()
    (user_toml / "config.toml").write_text("[tool]\nname = 'mine'\n")  # a TOML that is no seqlab config
    assert output_kind(user_toml) is None


def test_onnx_and_word2vec_files_are_read_by_their_content(tiny, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    graph = helper.make_graph([], "g", [], [])
    for meta, kind in (({"seqlab.model": "lm transformer"}, "an ONNX export"), ({}, None)):
        model = helper.make_model(graph, producer_name="pytorch")
        helper.set_model_props(model, meta)
        path = tmp_path / f"m{len(meta)}.onnx"
        onnx.save(model, path)
        assert output_kind(path) == kind
    vectors = seqlab.load(tiny["w2v"]).vectors
    for binary in (False, True):
        path = vectors.save_word2vec_format(tmp_path / f"v{binary}.txt", binary=binary)
        assert output_kind(path) == "a word2vec export"
        path.write_bytes(path.read_bytes()[:-3])  # cut short: not the shape its header says
        assert output_kind(path) is None
    (tmp_path / "notes.txt").write_text("2 3\nsome words of mine\n")
    assert output_kind(tmp_path / "notes.txt") is None


# ------------------------------------------------------------------------------------------------------
# per verb: train


def test_train_refuses_a_users_folder_and_a_folder_of_runs(tiny, tmp_path, seqlab_cli):
    args = ["train", "lm-char", *(a for s in TINY for a in ("--set", s)), "--set", f"data.source={tiny['corpus']}"]
    mine = planted(tmp_path / "mine")
    code, _, err = seqlab_cli(*args, "--out", mine, "--force")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: --out {mine} holds thesis.txt, which seqlab did not write; --force replaces only")
    assert "give another --out, or remove it yourself" in err
    runs = runs_folder(tmp_path / "runs", tiny["lm"])
    before = snapshot(runs)
    with pytest.raises(SeqlabError, match=r"^out=\S+runs holds 2 runs \(a/ and b/\) and no run of its own; "
                                          r"force=True replaces only what seqlab wrote; give another out="):
        seqlab.train("lm-char", runs, overrides=[*TINY, f"data.source=\"{tiny['corpus']}\""], force=True, **QUIET)
    assert snapshot(runs) == before and sorted(p.name for p in runs.iterdir()) == ["a", "b"]
    assert (mine / "thesis.txt").read_bytes() == THESIS and [p.name for p in mine.iterdir()] == ["thesis.txt"]


def test_train_replaces_a_run_and_a_half_written_one(tiny, tmp_path):
    overrides = [*TINY, f"data.source=\"{tiny['corpus']}\"", "train.seed=7"]
    run = shutil.copytree(tiny["lm"], tmp_path / "run")
    old = (run / "model.safetensors").read_bytes()
    api.train_run("lm-char", run, overrides=overrides, force=True, **QUIET)
    assert (run / "model.safetensors").read_bytes() != old and output_kind(run) == "a run"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # the old run, set aside, is gone
    half = half_written(tmp_path / "half", tiny["lm"])
    api.train_run("lm-char", half, overrides=overrides, force=True, **QUIET)
    assert output_kind(half) == "a run" and not (half / ".model.k3j2.tmp.safetensors").exists()
    config_only = tmp_path / "config-only"
    config_only.mkdir()
    shutil.copy(tiny["lm"] / "config.toml", config_only / "config.toml")
    api.train_run("lm-char", config_only, overrides=overrides, force=True, **QUIET)
    assert (config_only / "state.json").is_file()


# ------------------------------------------------------------------------------------------------------
# per verb: data prepare, export, Trained.save


def test_data_prepare(tiny, tmp_path, seqlab_cli):
    mine = planted(tmp_path / "mine")
    code, _, err = seqlab_cli("data", "prepare", "lm-char", "--set", f"data.source={tiny['corpus']}", "--out", mine,
                              "--force", "--no-progress")
    assert code == 2 and "holds thesis.txt, which seqlab did not write" in err
    assert (mine / "thesis.txt").read_bytes() == THESIS and len(list(mine.iterdir())) == 1
    out = tmp_path / "prepared"
    overrides = [f"data.source=\"{tiny['corpus']}\""]
    api.prepare("lm-char", out, overrides=overrides, progress=False)
    assert output_kind(out) == "a prepared corpus"
    api.prepare("lm-char", out, overrides=[*overrides, "data.split=[0.8, 0.1, 0.1]"], force=True, progress=False)
    assert json.loads((out / "manifest.json").read_text())["data"]["split"] == [0.8, 0.1, 0.1]
    with pytest.raises(SeqlabError, match="holds 2 runs"):
        api.prepare("lm-char", runs_folder(tmp_path / "runs", tiny["lm"]), overrides=overrides, force=True)


@pytest.mark.parametrize("format", ["hf", "onnx", "word2vec", "word2vec-binary"])
def test_export_refuses_what_is_not_an_export(tiny, tmp_path, seqlab_cli, format):
    run = tiny["w2v" if format.startswith("word2vec") else "lm"]
    mine = tmp_path / "thesis.txt"
    mine.write_bytes(THESIS)
    for out in (mine, planted(tmp_path / "mine"), runs_folder(tmp_path / "runs", tiny["lm"])):
        before = snapshot(out) if out.is_dir() else out.read_bytes()
        code, _, err = seqlab_cli("export", run, "--format", format, "--out", out, "--force")
        assert code == 2 and err.startswith(f"error: --out {out} ") and "--force replaces only" in err, err
        assert (snapshot(out) if out.is_dir() else out.read_bytes()) == before


def test_export_replaces_an_export(tiny, tmp_path):
    out = tmp_path / "hf"
    seqlab.export(tiny["lm"], "hf", out)
    assert output_kind(out) == "a Hugging Face export"
    seqlab.export(tiny["lm"], "hf", out, force=True, last=True)
    for binary in ("word2vec", "word2vec-binary"):
        path = tmp_path / f"{binary}.txt"
        seqlab.export(tiny["w2v"], binary, path)
        seqlab.export(tiny["w2v"], binary, path, force=True)
        assert output_kind(path) == "a word2vec export"


def test_save_refuses_a_users_folder_and_replaces_a_saved_copy(tiny, tmp_path):
    lm = seqlab.load(tiny["lm"])
    mine = planted(tmp_path / "mine")
    with pytest.raises(SeqlabError, match=r"^directory=\S+mine holds thesis\.txt, which seqlab did not write; "
                                          r"force=True replaces only"):
        lm.save(mine, force=True)
    assert (mine / "thesis.txt").read_bytes() == THESIS
    saved = lm.save(tmp_path / "saved")
    assert lm.save(saved, force=True) == saved and output_kind(saved) == "a run"


# ------------------------------------------------------------------------------------------------------
# errors in the caller's words


def test_errors_name_the_callers_arguments(tiny, tmp_path, seqlab_cli):
    overrides = [*TINY, f"data.source=\"{tiny['corpus']}\""]
    with pytest.raises(SeqlabError, match="continue it with resume=True or replace it with force=True$"):
        api.train_run("lm-char", tiny["lm"], overrides=overrides, **QUIET)
    args = ["train", "lm-char", "--set", f"data.source={tiny['corpus']}", "--out"]
    code, _, err = seqlab_cli(*args, tiny["lm"])
    assert code == 2 and err.rstrip().endswith("continue it with --resume or replace it with --force")
    afile = tmp_path / "afile.txt"
    afile.write_text("x")
    with pytest.raises(SeqlabError, match="out="):
        api.train_run("lm-char", afile, overrides=overrides, **QUIET)
    code, _, err = seqlab_cli(*args, afile)
    assert code == 2 and "--out" in err and "out=" not in err
    with pytest.raises(SeqlabError, match=r"^out=\S+afile\.txt already exists; replace it with force=True"):
        seqlab.export(tiny["w2v"], "word2vec", afile)
    code, _, err = seqlab_cli("export", tiny["w2v"], "--format", "word2vec", "--out", afile)
    assert code == 2 and err.startswith(f"error: --out {afile} already exists; replace it with --force")
    from seqlab.nn.weight_only import to_weight_only

    model = seqlab.load(tiny["lm"]).model
    with pytest.raises(SeqlabError, match="^unknown dtype 'int4'"):
        to_weight_only(model, "int4")
    with command_line(), pytest.raises(SeqlabError, match="^unknown --dtype 'int4'"):  # the caller's words
        to_weight_only(model, "int4")
