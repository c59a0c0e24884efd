"""``seqlab export RUN --format onnx``: the LM's forward pass, fine-tuned taggers/classifiers and a pretrained
sentence encoder as ONNX files, run here with onnxruntime (dynamic batch and sequence axes) against seqlab's own
fp32 outputs: max abs diff <= 1e-5."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from seqlab import api, tasks
from seqlab.cli import main
from seqlab.data.sources import read_text
from seqlab.base.errors import SeqlabError
from seqlab.exporters import export

from helpers import write_conll
from test_finetune import classify_config, tag_config, write_tiny_bert

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.usefixtures("one_thread")
QUIET = {"log": lambda *a, **k: None}
TRAIN = ["train.batch_size=8", "train.precision=\"fp32\"", "train.progress=false", "train.threads=1",
         "train.max_steps=10", "train.eval_every=0", "train.warmup_steps=2"]


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def metadata(path) -> dict[str, str]:
    return {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}


def padded(id_lists, pad_id=0):
    seq = max(len(i) for i in id_lists)
    ids = np.full((len(id_lists), seq), pad_id, dtype=np.int64)
    mask = np.zeros((len(id_lists), seq), dtype=np.int64)
    for row, i in enumerate(id_lists):
        ids[row, :len(i)], mask[row, :len(i)] = i, 1
    return ids, mask


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:60_000], encoding="utf-8")
    return path


@pytest.mark.parametrize("preset", ["lm-char", "lm-lstm"])
def test_lm_forward_pass(preset, corpus, tmp_path, capsys):
    size = (["model.n_layers=2", "model.n_heads=2", "model.d_model=32", "model.d_ff=64"] if preset == "lm-char"
            else ["model.hidden_size=32", "model.d_model=32"])
    run = api.train_run(tasks.resolve(preset, [*TRAIN, *size, "model.max_len=40", f"data.source=\"{corpus}\""]),
                    tmp_path / "run", **QUIET)
    out = tmp_path / "lm.onnx"
    assert main(["export", str(run), "--format", "onnx", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["format"] == "onnx" and printed["max_abs_diff"] <= 1e-5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lm.onnx", "run"]  # one file, no temporaries
    s = session(out)
    [inp], [output] = s.get_inputs(), s.get_outputs()
    assert (inp.name, inp.type, inp.shape) == ("input_ids", "tensor(int64)", ["batch", "seq"])
    lm = api.load(run, device="cpu")
    vocab = lm.tokenizer.vocab_size
    assert output.name == "logits" and output.shape == ["batch", "seq", vocab]
    tokens = lm.tokenizer.encode(read_text("pydocs")[-2000:])
    for batch, seq in ((1, 1), (3, 40), (2, 17)):
        ids = np.array([tokens[r * seq:(r + 1) * seq] for r in range(batch)], dtype=np.int64)
        with torch.no_grad():
            ours = lm.model(torch.from_numpy(ids)).numpy()
        diff = np.abs(s.run(None, {"input_ids": ids})[0] - ours).max()
        assert diff <= 1e-5, (batch, seq, diff)
    from tokenizers import Tokenizer

    meta = metadata(out)
    assert Tokenizer.from_str(meta["tokenizer"]).encode("def f(x): return x").ids == lm.tokenizer.encode(
        "def f(x): return x")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert")


@pytest.mark.parametrize("task", ["tag", "classify"])
def test_fine_tuned_heads(task, tiny_bert, tmp_path):
    make = tag_config if task == "tag" else classify_config
    run = api.train_run(make(tmp_path, tiny_bert, steps=10), tmp_path / "run", **QUIET)
    out = tmp_path / "model.onnx"
    export(run, "onnx", out)
    obj = api.load(run, device="cpu")
    tokenizer = obj.tokenizer
    texts = ["Bonn sees the Limas", "Kim", "the good film and Anna with Paris runs"]
    ids, mask = padded([tokenizer.encode(t) for t in texts])
    theirs = session(out).run(None, {"input_ids": ids, "attention_mask": mask})[0]
    with torch.no_grad():
        ours = obj.model(torch.from_numpy(ids), torch.from_numpy(mask).bool()).numpy()
    real = mask.astype(bool) if task == "tag" else slice(None)
    assert np.abs(theirs - ours)[real].max() <= 1e-5
    meta = metadata(out)
    assert json.loads(meta["labels"]) == obj.labels.names
    from tokenizers import Tokenizer

    assert Tokenizer.from_str(meta["tokenizer"]).encode(texts[2]).ids == tokenizer.encode(texts[2])


def test_transformer_tagger(tmp_path):
    rng = random.Random(0)
    words = ["Bonn", "Kim", "the", "a", "sees", "film"]
    sentences = [[(w, "B-LOC" if w[0].isupper() else "O") for w in rng.choices(words, k=rng.randint(2, 6))]
                 for _ in range(80)]
    files = {s: write_conll(tmp_path / f"{s}.conll", sentences) for s in ("train", "valid", "test")}
    cfg = tasks.resolve("ner-transformer", [*TRAIN, *[f"data.{k}=\"{v}\"" for k, v in files.items()],
                                             "model.d_model=16", "model.d_ff=32", "model.n_layers=1",
                                             "model.n_heads=2"])
    run = api.train_run(cfg, tmp_path / "run", **QUIET)
    export(run, "onnx", tmp_path / "tagger.onnx")
    tagger = api.load(run, device="cpu")
    ids, mask = padded([tagger.tokenizer.encode(s.split()) for s in ("Kim sees Bonn", "a", "the film sees a Kim")])
    theirs = session(tmp_path / "tagger.onnx").run(None, {"input_ids": ids, "attention_mask": mask})[0]
    with torch.no_grad():
        ours = tagger.model(torch.from_numpy(ids), torch.from_numpy(mask).bool()).numpy()
    assert np.abs(theirs - ours)[mask.astype(bool)].max() <= 1e-5
    assert json.loads(metadata(tmp_path / "tagger.onnx")["vocab"]) == tagger.tokenizer.tokens


def test_sentence_encoder(tiny_bert, tmp_path):
    from seqlab.models.sentence import SentenceEncoder

    out = tmp_path / "encoder.onnx"
    result = export(tiny_bert, "onnx", out)
    assert "checkpoint" not in result and result["max_abs_diff"] <= 1e-5
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(metadata(out)["tokenizer"])
    sentences = ["the cat sat", "bonn sees the limas and kim", "a"]
    ids, mask = padded([e.ids for e in tok.encode_batch(sentences)])
    theirs = session(out).run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]
    ours = SentenceEncoder.from_pretrained(tiny_bert, "cpu").embed(sentences)
    assert theirs.shape == ours.shape and np.abs(theirs - ours).max() <= 1e-5


def test_refusals(tiny_bert, tmp_path, monkeypatch):
    run = tmp_path / "bilstm"
    run.mkdir()
    (run / "config.toml").write_text(tasks.resolve("ner-bilstm").to_toml(), encoding="utf-8")
    with pytest.raises(SeqlabError, match=r"\(model.arch=lstm\) has no ONNX export"):
        export(run, "onnx", tmp_path / "x.onnx")
    with pytest.raises(SeqlabError, match="is a pretrained encoder, not a run; it exports with --format onnx"):
        export(tiny_bert, "hf", tmp_path / "x")
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxscript"
                        else find_spec(name, *a))
    with pytest.raises(SeqlabError, match=r"--format onnx needs the export extra \(onnxscript not installed\): "
                                          r"pip install 'seqlab\[export\]'"):
        export(tiny_bert, "onnx", tmp_path / "x.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bilstm"]
