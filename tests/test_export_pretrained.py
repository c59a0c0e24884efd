"""``model.arch = "pretrained"`` for language models: continue training a GPT-2-format directory (what
``seqlab export --format hf`` writes, or a GPT2LMHeadModel saved by transformers), and the round trip
export -> model.pretrained -> export with identical tensors."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from seqlab import api, tasks
from seqlab.cli import main
from seqlab.data.sources import read_text
from seqlab.base.errors import SeqlabError
from seqlab.exporters import export
from seqlab.models.gpt2_convert import gpt2_config, to_gpt2_tensors
from seqlab.tasks import lm as lm_task
from seqlab.text import BPETokenizer
from seqlab.text.hf_tokenizer import hf_tokenizer_files

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")
QUIET = {"log": lambda *a, **k: None}
TRAIN = {"max_steps": 4, "batch_size": 8, "precision": "fp32", "progress": False, "warmup_steps": 2, "threads": 1,
         "eval_batches": 2, "eval_every": 2, "lr": 1e-3}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:60_000], encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def exported(corpus, tmp_path_factory):
    """A trained lm-char run (GPT-2's tanh GELU) and its Hugging Face export."""
    tmp = tmp_path_factory.mktemp("a")
    cfg = tasks.resolve("lm-char", ["model.n_layers=2", "model.n_heads=2", "model.d_model=32", "model.d_ff=64",
                                    "model.max_len=48", "model.activation=\"gelu_tanh\"", "model.dropout=0.1",
                                    f"data.source=\"{corpus}\"",
                                    *[f"train.{k}={json.dumps(v).lower()}" for k, v in TRAIN.items()],
                                    "train.max_steps=30", "train.eval_every=10", "train.lr=3e-3"])
    run = api.train_run(cfg, tmp / "run", **QUIET)
    export(run, "hf", tmp / "hf")
    return run, tmp / "hf"


def pretrained_config(corpus, directory, model=None, data=None, train=None):
    return tasks.from_dict({"task": {"kind": "lm"},
                            "data": {"source": str(corpus), **(data or {})},
                            "model": {"arch": "pretrained", "pretrained": str(directory), **(model or {})},
                            "train": {**TRAIN, **(train or {})}})


def test_round_trip_export_pretrained_export_is_identical(exported, corpus, tmp_path):
    run, directory = exported
    cfg = pretrained_config(corpus, directory, data={"tokenizer": "char"})
    model = lm_task.start_pretrained(cfg, tmp_path)
    tensors = load_file(str(directory / "model.safetensors"))
    back = to_gpt2_tensors(model)
    assert back.keys() == tensors.keys() and all(torch.equal(back[k], tensors[k]) for k in back)
    tokenizer = api.load(run).tokenizer
    assert lm_task.load_tokenizer(tmp_path / "tokenizer.json").to_dict() == tokenizer.to_dict()
    files = hf_tokenizer_files(lm_task.load_tokenizer(tmp_path / "tokenizer.json"), model.cfg.max_len)
    assert all(files[name] == (directory / name).read_text(encoding="utf-8") for name in files)
    written = json.loads((directory / "config.json").read_text())
    assert gpt2_config(model.cfg, 2, 3, 0) == written and model.cfg.activation == "gelu_tanh"
    assert model.cfg.dropout == 0.1 == written["resid_pdrop"]


def test_training_continues_from_the_directory(exported, corpus, tmp_path, capsys):
    run, directory = exported
    sets = [f"model.pretrained={directory}", "model.dropout=0.0", "data.tokenizer=char", f"data.source={corpus}",
            *[f"train.{k}={json.dumps(v).lower()}" for k, v in TRAIN.items()], "train.lr=1e-5", "train.min_lr=1e-6"]
    assert main(["train", "lm-gpt2", *[a for s in sets for a in ("--set", s)], "--out", str(tmp_path / "b")]) == 0
    b = tmp_path / "b"
    recorded = (b / "config.toml").read_text()
    assert 'arch = "pretrained"' in recorded and f'pretrained = "{directory}"' in recorded
    saved = json.loads((b / "pretrained.json").read_text())
    assert saved["directory"] == str(directory.resolve()) and saved["model"]["dropout"] == 0.0
    # it starts where the first run stopped, not from scratch (a random char model scores ~log(vocab))
    first = api.load(run, device="cpu").evaluate("valid")["loss"]
    continued = api.load(b, device="cpu").evaluate("valid")["loss"]
    assert abs(continued - first) < 0.05, (first, continued)
    capsys.readouterr()
    assert main(["export", str(b), "--format", "hf", "--out", str(tmp_path / "b-hf")]) == 0
    again = load_file(str(tmp_path / "b-hf" / "model.safetensors"))
    before = load_file(str(directory / "model.safetensors"))
    assert max((again[k] - before[k]).abs().max().item() for k in before) < 1e-3  # 4 steps at lr 1e-5
    assert (tmp_path / "b-hf" / "tokenizer.json").read_text() == (directory / "tokenizer.json").read_text()
    # the directory is not needed any more: the run holds the architecture and the tokenizer
    import shutil

    moved = tmp_path / "moved"
    shutil.move(str(directory), moved)
    try:
        assert api.load(b, device="cpu").generate("def ", max_new_tokens=5, temperature=0)
    finally:
        shutil.move(str(moved), directory)


def test_a_gpt2_saved_by_transformers(corpus, tmp_path):
    """A random GPT-2 with GPT2Config() defaults (gelu_new) but small, saved by save_pretrained, with a seqlab BPE
    tokenizer.json beside it."""
    torch.manual_seed(0)
    tokenizer = BPETokenizer.train([read_text("pydocs")[:60_000]], vocab_size=300)
    cfg = transformers.GPT2Config(vocab_size=320, n_positions=32, n_embd=32, n_layer=2, n_head=4)
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    hf.save_pretrained(tmp_path / "gpt2")
    assert (tmp_path / "gpt2" / "model.safetensors").exists()
    for name, text in hf_tokenizer_files(tokenizer, 32).items():
        (tmp_path / "gpt2" / name).write_text(text, encoding="utf-8")
    run_cfg = pretrained_config(corpus, tmp_path / "gpt2", data={"tokenizer": "bpe"})
    model = lm_task.start_pretrained(run_cfg, tmp_path).eval()
    assert model.cfg.activation == "gelu_tanh" and model.cfg.vocab_size == 320
    state = hf.state_dict()
    assert all(torch.equal(v, state[k]) for k, v in to_gpt2_tensors(model).items())
    ids = torch.tensor([tokenizer.encode(read_text("pydocs")[-400:])[:32]])
    with torch.no_grad():
        assert (hf(ids).logits - model(ids)).abs().max().item() <= 1e-5
    run = api.train_run(run_cfg, tmp_path / "run", **QUIET)
    assert api.load(run, device="cpu").model.cfg.vocab_size == 320


def write_toml(tmp_path, cfg_dict) -> str:
    from seqlab.base.config import dumps_toml

    path = tmp_path / "run.toml"
    path.write_text(dumps_toml(cfg_dict), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("case, message", [
    ("no-config", "has no config.json; give a GPT-2-format directory"),
    ("bert", "model_type 'bert' is not a GPT-2"),
    ("pickle", "only pytorch_model.bin (pickle files, which seqlab never loads)"),
    ("missing", "not found; give a GPT-2-format directory"),
    ("no-tokenizer", "has no tokenizer.json"),
    ("model-key", "model.n_layers comes from the pretrained checkpoint (its config.json, model.pretrained) with "
                  "model.arch = \"pretrained\"; remove it (valid model keys: arch, pretrained, dropout)"),
    ("tokenizer-key", "data.tokenizer=bpe (the directory's: char)"),
    ("vocab-key", "data.min_freq=2 (no tokenizer is trained)"),
])
def test_bad_directories_and_conflicting_keys(case, message, exported, corpus, tmp_path, capsys):
    import shutil

    _, good = exported
    directory = tmp_path / "dir"
    shutil.copytree(good, directory)
    model, data = {}, {"tokenizer": "char"}
    if case == "no-config":
        (directory / "config.json").unlink()
    elif case == "bert":
        (directory / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 32}))
    elif case == "pickle":
        (directory / "model.safetensors").unlink()
        (directory / "pytorch_model.bin").write_bytes(b"\x80\x04 never opened")
    elif case == "missing":
        directory = tmp_path / "nowhere"
    elif case == "no-tokenizer":
        (directory / "tokenizer.json").unlink()
    elif case == "model-key":
        model = {"n_layers": 2}
    elif case == "tokenizer-key":
        data = {"tokenizer": "bpe"}
    elif case == "vocab-key":
        data = {"tokenizer": "char", "min_freq": 2}
    path = write_toml(tmp_path, {"task": {"kind": "lm"}, "data": {"source": str(corpus), **data},
                                 "model": {"arch": "pretrained", "pretrained": str(directory), **model},
                                 "train": TRAIN})
    assert main(["train", path, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "run").exists()  # nothing written


def test_pretrained_config_needs_a_directory():
    with pytest.raises(SeqlabError, match="model.pretrained is empty"):
        tasks.from_dict({"task": {"kind": "lm"}, "model": {"arch": "pretrained"}})
