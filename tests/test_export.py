"""``seqlab export`` to Hugging Face: language models as GPT2LMHeadModel (+ tokenizer.json), GPT-2's tanh GELU,
word vectors in word2vec's binary format, and the verb's contract (bad input, --force, nothing left behind).

Parity: the reloaded model's fp32 logits equal seqlab's within 1e-5 on the same ids and greedy generation gives the
same tokens; tensors that go out and come back are identical.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from seqlab import api, tasks
from seqlab.cli import main
from seqlab.data.sources import read_text
from seqlab.decoding.decode import Sampling, generate
from seqlab.base.errors import SeqlabError
from seqlab.exporters import export
from seqlab.models.gpt2_convert import from_gpt2, gpt2_config, gpt2_incompatibilities, to_gpt2_tensors
from seqlab.models.transformer import TransformerLMConfig
from seqlab.nn.feedforward import FeedForward
from seqlab.vectors.keyed import KeyedVectors

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")
QUIET = {"log": lambda *a, **k: None}
TINY = ["model.n_layers=2", "model.n_heads=2", "model.d_model=32", "model.d_ff=64", "model.max_len=48",
        "train.batch_size=8", "train.precision=\"fp32\"", "train.progress=false", "train.warmup_steps=5",
        "train.eval_batches=2", "train.threads=1", "train.max_steps=30", "train.lr=3e-3"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:80_000], encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["char", "bpe"])
def lm_run(request, corpus, tmp_path_factory):
    extra = ["data.tokenizer=\"bpe\"", "data.vocab_size=400"] if request.param == "bpe" else []
    if request.param == "char":
        extra = ["model.activation=\"gelu_tanh\""]  # GPT-2's own activation; the bpe run keeps exact GELU
    cfg = tasks.resolve("lm-char", [*TINY, f"data.source=\"{corpus}\"", "train.eval_every=10", *extra])
    return api.train_run(cfg, tmp_path_factory.mktemp("runs") / request.param, **QUIET)


def no_temporaries(folder) -> bool:
    return not [p.name for p in folder.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------------------------------------------
# GPT-2's GELU and GPT2Config() defaults


def test_gelu_tanh_is_gpt2s_gelu_new():
    from transformers.activations import ACT2FN

    x = torch.linspace(-8, 8, 2001, dtype=torch.float64)
    ff = FeedForward(4, 4, activation="gelu_tanh")
    assert (ff.act(x) - ACT2FN["gelu_new"](x)).abs().max().item() < 1e-12
    assert (FeedForward(4, 4, activation="gelu").act(x) - ACT2FN["gelu_new"](x)).abs().max().item() > 1e-4


@pytest.fixture(scope="module")
def gpt2_defaults():
    """A random GPT-2 with every GPT2Config() default (gelu_new, eps 1e-5, 0.1 dropouts) but a small size."""
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=53, n_positions=40, n_embd=32, n_layer=2, n_head=4)
    assert cfg.activation_function == transformers.GPT2Config().activation_function == "gelu_new"
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # GPT-2 initialises biases to zero: randomise them so a mapping slip shows
        for name, p in hf.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return hf


def test_gpt2_defaults_import_with_parity(gpt2_defaults):
    hf = gpt2_defaults
    ours = from_gpt2(hf).eval()
    assert ours.cfg.activation == "gelu_tanh" and ours.cfg.d_ff == 4 * 32
    ids = torch.randint(0, 53, (3, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert (hf(ids).logits - ours(ids)).abs().max().item() <= 1e-5
        prompt = ids[:1, :6]
        theirs = hf.generate(prompt, max_new_tokens=30, do_sample=False, pad_token_id=0)[0, 6:].tolist()
    assert generate(ours, [prompt[0].tolist()], 30, Sampling(0))[0] == theirs
    # and back: identical tensors under GPT-2's names, and a config.json that describes the same model
    back = to_gpt2_tensors(ours)
    state = hf.state_dict()
    assert set(back) == {k for k in state if k != "lm_head.weight" and not k.endswith(".attn.bias")}
    assert all(torch.equal(back[k], state[k]) for k in back)
    raw = gpt2_config(ours.cfg)
    again = transformers.GPT2Config(**raw)
    for key in ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head", "activation_function",
                "layer_norm_epsilon", "tie_word_embeddings"):
        assert getattr(again, key) == getattr(hf.config, key), key


def test_gpt2_compatibility_names_each_setting():
    cfg = TransformerLMConfig(vocab_size=9, n_layers=1, n_heads=1, d_model=4, d_ff=8, norm="post",
                              positions="sinusoidal", activation="relu", bias=False, tie_embeddings=False,
                              scale_embeddings=True)
    assert gpt2_incompatibilities(cfg) == [
        "model.norm=post (GPT-2: pre)", "model.positions=sinusoidal (GPT-2: learned)",
        "model.activation=relu (GPT-2: gelu_tanh, or gelu)", "model.bias=false (GPT-2: true)",
        "model.tie_embeddings=false (GPT-2: true)", "model.scale_embeddings=true (GPT-2: false)"]
    assert gpt2_incompatibilities(TransformerLMConfig(vocab_size=9, positions="learned")) == []


# ------------------------------------------------------------------------------------------------------
# a trained run -> GPT2LMHeadModel directory


def test_lm_exports_to_gpt2_with_parity(lm_run, tmp_path):
    out = tmp_path / "exports" / "hf"  # missing parents are created
    result = export(lm_run, "hf", out)
    assert result == {"format": "hf", "out": str(out), "model": "GPT2LMHeadModel", "checkpoint": "best",
                      "step": api.load(lm_run).checkpoint["step"]}
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "generation_config.json", "model.safetensors",
                                                     "tokenizer.json", "tokenizer_config.json"]
    assert no_temporaries(out.parent)
    lm = api.load(lm_run, device="cpu")
    hf = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
    tok = transformers.AutoTokenizer.from_pretrained(out)
    assert type(hf).__name__ == "GPT2LMHeadModel" and hf.config.activation_function == (
        "gelu_new" if lm.model.cfg.activation == "gelu_tanh" else "gelu")
    text = read_text("pydocs")[-3000:]
    ids = lm.tokenizer.encode(text)
    assert tok(text)["input_ids"] == ids and tok.decode(ids) == lm.tokenizer.decode(ids)
    max_len = lm.model.cfg.max_len
    batch = torch.tensor([ids[i:i + max_len] for i in range(0, 4 * max_len, max_len)])  # 4, max_len
    with torch.no_grad():
        diff = (hf(batch).logits - lm.model(batch)).abs().max().item()
    assert diff <= 1e-5, diff
    for start in (0, 100, 500):
        prompt = ids[start:start + 8]
        with torch.no_grad():
            theirs = hf.generate(torch.tensor([prompt]), max_new_tokens=max_len - 8, do_sample=False)[0, 8:]
        ours = generate(lm.model, [prompt], max_len - 8, Sampling(0), eos_id=lm.tokenizer.eos_id)[0]
        assert ours == theirs.tolist()
    assert (hf.generation_config.eos_token_id, hf.generation_config.pad_token_id) == (3, 0)


def test_incompatible_lm_is_refused_naming_each_setting(corpus, tmp_path, capsys):
    run = tmp_path / "post"
    run.mkdir()
    cfg = tasks.resolve("lm-char", [f"data.source=\"{corpus}\"", "model.norm=\"post\"",
                                     "model.positions=\"sinusoidal\"", "model.tie_embeddings=false"])
    (run / "config.toml").write_text(cfg.to_toml(), encoding="utf-8")
    assert main(["export", str(run), "--format", "hf", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    for part in ("model.norm=post (GPT-2: pre)", "model.positions=sinusoidal (GPT-2: learned)",
                 "model.tie_embeddings=false (GPT-2: true)"):
        assert part in err
    lstm = tmp_path / "lstm"
    lstm.mkdir()
    (lstm / "config.toml").write_text(tasks.resolve("lm-lstm").to_toml(), encoding="utf-8")
    with pytest.raises(SeqlabError, match=r"model.arch=lstm \(GPT-2: transformer\); --format onnx"):
        export(lstm, "hf", tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------------
# the verb: bad input, --force, atomic writes


def run_dir_with(tmp_path, name, preset):
    run = tmp_path / name
    run.mkdir()
    (run / "config.toml").write_text(tasks.resolve(preset).to_toml(), encoding="utf-8")
    return run


@pytest.mark.parametrize("case, message", [
    ("format", "unknown export format 'tflite'; use one of hf, onnx, word2vec, word2vec-binary"),
    ("forecast", "(task.kind=forecast) has no export; exports exist for lm"),
    ("translate", "(task.kind=translate) has no export"),
    ("embed-hf", "(task.kind=embed) has no --format hf export; use --format word2vec or word2vec-binary"),
    ("lm-word2vec", "(task.kind=lm) has no --format word2vec export; use --format hf or onnx"),
    ("tagger-hf", "(model.arch=lstm) has no Hugging Face form"),
    ("exists", "already exists; replace it with --force"),
    ("missing", "not found"),
    ("not-a-run", "is neither a run directory (no config.toml) nor a pretrained encoder"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(case, message, lm_run, tmp_path, capsys):
    out = tmp_path / "sub" / "out"
    run, fmt = lm_run, "hf"
    if case == "format":
        fmt = "tflite"
    elif case in ("forecast", "translate"):
        run = run_dir_with(tmp_path, case, {"forecast": "ar", "translate": "mt-transformer"}[case])
    elif case == "embed-hf":
        run = run_dir_with(tmp_path, case, "w2v-sgns")
    elif case == "lm-word2vec":
        fmt = "word2vec"
    elif case == "tagger-hf":
        run = run_dir_with(tmp_path, case, "ner-bilstm")
    elif case == "exists":
        out.mkdir(parents=True)
        (out / "keep.txt").write_text("mine")
    elif case == "missing":
        run = tmp_path / "nowhere"
    elif case == "not-a-run":
        run = tmp_path / "empty"
        run.mkdir()
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["export", str(run), "--format", fmt, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_force_replaces_and_a_failure_leaves_the_old_export(lm_run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "hf"
    assert main(["export", str(lm_run), "--format", "hf", "--out", str(out), "--last"]) == 0
    capsys.readouterr()
    assert main(["export", str(lm_run), "--format", "hf", "--out", str(out), "--force"]) == 0  # an export: replaced
    printed = json.loads(capsys.readouterr().out)
    assert printed["model"] == "GPT2LMHeadModel" and printed["checkpoint"] == "best"
    assert (out / "model.safetensors").exists()  # a folder of anything else is refused: tests/test_force.py

    from seqlab.exporters import hf

    def broken(lm, folder):
        (folder / "config.json").write_text("{}")
        raise SeqlabError("disk full")

    monkeypatch.setattr(hf, "export_lm", broken)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["export", str(lm_run), "--format", "hf", "--out", str(out), "--force"]) == 2
    assert "disk full" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and no_temporaries(tmp_path)
    fresh = tmp_path / "a" / "b" / "new"
    assert main(["export", str(lm_run), "--format", "hf", "--out", str(fresh)]) == 2
    assert not (tmp_path / "a").exists()  # the parents it made are gone too


def test_best_by_default_last_with_the_flag(lm_run, tmp_path, capsys):
    from safetensors.torch import load_file

    best, last = api.load(lm_run, device="cpu"), api.load(lm_run, device="cpu", last=True)
    for flag, obj in (([], best), (["--last"], last)):
        out = tmp_path / ("last" if flag else "best")
        assert main(["export", str(lm_run), "--format", "hf", "--out", str(out), *flag]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["checkpoint"] == ("last" if flag else "best") and printed["step"] == obj.checkpoint["step"]
        wte = load_file(str(out / "model.safetensors"))["transformer.wte.weight"]
        assert torch.equal(wte, obj.model.embed.tokens.weight)


# ------------------------------------------------------------------------------------------------------
# word vectors: word2vec binary


def test_word2vec_binary_is_what_gensim_reads(tmp_path):
    gensim = pytest.importorskip("gensim")
    rng = np.random.default_rng(0)
    words = ["the", "naïve", "日本", "x" * 40, "a,b"]
    kv = KeyedVectors(words, rng.normal(size=(5, 7)).astype(np.float32))
    path = kv.save_word2vec_format(tmp_path / "v.bin", binary=True)
    theirs = gensim.models.KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert theirs.index_to_key == words
    np.testing.assert_array_equal(theirs.vectors, kv.vectors)
    theirs.save_word2vec_format(str(tmp_path / "gensim.bin"), binary=True)
    again = gensim.models.KeyedVectors.load_word2vec_format(str(tmp_path / "gensim.bin"), binary=True)
    np.testing.assert_array_equal(again.vectors, kv.vectors)
    with pytest.raises(SeqlabError, match="holds whitespace"):
        KeyedVectors(["a b"], np.zeros((1, 2))).save_word2vec_format(tmp_path / "bad.bin", binary=True)
    assert not (tmp_path / "bad.bin").exists()


def test_embed_run_exports_word2vec_text_and_binary(tmp_path, capsys):
    gensim = pytest.importorskip("gensim")
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(0)
    corpus.write_text("\n".join(" ".join(f"w{rng.integers(40)}" for _ in range(12)) for _ in range(400)) + "\n")
    run = api.train_run("w2v-sgns", tmp_path / "w2v", overrides=[
        f"data.source={corpus}", "model.dim=8", "train.epochs=1", "train.threads=1", "train.progress=false"],
        **QUIET)
    vectors = api.load(run).vectors
    for fmt, name, binary in (("word2vec", "v.txt", False), ("word2vec-binary", "v.bin", True)):
        assert main(["export", str(run), "--format", fmt, "--out", str(tmp_path / name)]) == 0
        assert json.loads(capsys.readouterr().out)["model"] == "word2vec"
        theirs = gensim.models.KeyedVectors.load_word2vec_format(str(tmp_path / name), binary=binary)
        assert theirs.index_to_key == vectors.words
        np.testing.assert_array_equal(theirs.vectors, vectors.vectors)
    assert no_temporaries(tmp_path)


def test_python_api_is_re_exported():
    import seqlab

    assert seqlab.export is export
