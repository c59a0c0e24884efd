"""Recurrent models: vanishing gradients (seed 004), the recurrent LM's interface (incremental decoding,
max_len, decoding/decode.py), configs and the lm-lstm preset, the encoder's padding invariance, and a short end-to-end
run through the LM task (train, eval, generate)."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace

import pytest
import torch

from seqlab.base import config
from seqlab.decoding.decode import Sampling, generate
from seqlab.base.errors import SeqlabError
from seqlab.models.recurrent import (
    LM_CONFIGS,
    GRULMConfig,
    LSTMLMConfig,
    RecurrentEncoder,
    RecurrentLM,
    RecurrentLMConfig,
    RecurrentModelConfig,
    RNNLMConfig,
    build_lm,
)
from seqlab.nn.recurrent import RecurrentConfig, RecurrentStack, set_forget_bias

F64 = torch.float64


# ------------------------------------------------------------------------------------------------------
# vanishing gradients (seed 004 "Vanishing gradients": input * w_2^n -> 0 when |w_2| < 1)


def grad_to_first_step(cell: str, T: int, forget_bias: float | None, seed: int = 0) -> float:
    """||∂L_T / ∂x_1||: the gradient reaching step 1 from a loss on the output at step T only.

    Comparable init: every weight of both models U(-1/sqrt(hidden), 1/sqrt(hidden)) (PyTorch's default);
    the LSTM optionally with its forget-gate bias at ``forget_bias``.
    """
    torch.manual_seed(seed)
    hidden, inputs, batch = 32, 8, 16
    s = RecurrentStack(RecurrentConfig(cell=cell, input_size=inputs, hidden_size=hidden, impl="equations")).double()
    if forget_bias is not None:
        set_forget_bias(s, forget_bias)
    x = torch.randn(batch, T, inputs, dtype=F64, requires_grad=True)
    out, _ = s(x)  # batch, T, hidden
    readout = torch.randn(hidden, dtype=F64, generator=torch.Generator().manual_seed(1))
    loss = (out[:, -1] @ readout).sum()  # depends on step T's output only
    (grad,) = torch.autograd.grad(loss, x)
    return grad[:, 0].norm().item()


@pytest.mark.parametrize("forget_bias", [1.0, None], ids=["lstm-forget-bias-1", "lstm-default-init"])
def test_vanishing_gradient_elman_vs_lstm(forget_bias):
    steps = (5, 20, 50)
    elman = [grad_to_first_step("rnn", T, None) for T in steps]
    lstm = [grad_to_first_step("lstm", T, forget_bias) for T in steps]
    ratios = [l / e for l, e in zip(lstm, elman)]
    # the Elman gradient shrinks by many orders of magnitude from T=5 to T=50 (measured ~4e-13)
    assert elman[2] / elman[0] < 1e-10
    assert elman[0] > elman[1] > elman[2] > 0
    # the LSTM's advantage grows with T, by orders of magnitude (measured ~3e2 and ~8e2 for the two inits)
    assert ratios[0] < ratios[1] < ratios[2]
    assert ratios[2] / ratios[0] > 1e2
    if forget_bias == 1.0:  # an open forget gate keeps the memory path: decay over 45 steps ~1e-4, not ~1e-13
        assert lstm[2] / lstm[0] > 1e-6
        assert ratios[2] > 1e6


# ------------------------------------------------------------------------------------------------------
# the language model's interface


def small_lm(arch="lstm", vocab=13, **kw) -> RecurrentLM:
    torch.manual_seed(0)
    defaults = {"n_layers": 2, "d_model": 8, "hidden_size": 8, "max_len": 12, "dropout": 0.1}
    return build_lm(LM_CONFIGS[arch](vocab_size=vocab, **{**defaults, **kw})).double().eval()


CASES = [("lstm", {}), ("gru", {}), ("rnn", {}), ("rnn", {"nonlinearity": "relu"}),
         ("gru", {"cell": "simple-gru", "impl": "equations"}), ("lstm", {"impl": "equations", "tie_embeddings": False,
                                                                         "hidden_size": 6})]


@pytest.mark.parametrize("arch,kw", CASES)
def test_incremental_equals_full_forward(arch, kw):
    m = small_lm(arch, **kw)
    ids = torch.randint(0, 13, (3, 11))
    full = m(ids)  # batch, seq, vocab
    assert full.shape == (3, 11, 13)
    cache = m.new_cache(3)
    parts = [m(ids[:, :4], cache=cache), m(ids[:, 4:5], cache=cache), m(ids[:, 5:], cache=cache)]
    assert cache.pos == 11
    assert (torch.cat(parts, dim=1) - full).abs().max().item() <= 1e-12


def test_forward_refuses_more_than_max_len():
    m = small_lm()
    with pytest.raises(SeqlabError, match="13 positions exceed max_len=12"):
        m(torch.zeros(1, 13, dtype=torch.long))
    cache = m.new_cache(1)
    m(torch.zeros(1, 10, dtype=torch.long), cache=cache)
    with pytest.raises(SeqlabError, match=r"10 cached \+ 3 new"):
        m(torch.zeros(1, 3, dtype=torch.long), cache=cache)


@pytest.mark.parametrize("arch", ["lstm", "gru"])
def test_generate_cached_equals_uncached_past_the_window(arch):
    m = small_lm(arch).float()
    prompts = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10, 11, 12]]  # 5 + 20 new tokens > max_len = 12: the window slides
    for sampling, seed in [(Sampling(0.0), None), (Sampling(1.0, top_k=5), 7)]:
        cached = generate(m, prompts, 20, sampling, seed=seed, use_cache=True)
        uncached = generate(m, prompts, 20, sampling, seed=seed, use_cache=False)
        assert cached == uncached
        assert all(len(t) == 20 for t in cached)


def test_num_params_counts_a_tied_matrix_once():
    tied, untied = small_lm(), small_lm(tie_embeddings=False)
    assert untied.num_params() - tied.num_params() == 13 * 8
    # embeddings 13*8, two LSTM layers 2 * 4*8*(8+8+2), head bias 13
    assert tied.num_params() == 13 * 8 + 2 * 4 * 8 * (8 + 8 + 2) + 13


def test_lstm_forget_bias_starts_at_one():
    m = small_lm()
    b = m.encoder.rnn.bias_ih_l1 + m.encoder.rnn.bias_hh_l1
    assert torch.equal(b[8:16], torch.ones(8, dtype=F64))


# ------------------------------------------------------------------------------------------------------
# configs and the preset


def test_arch_configs_choose_their_cell():
    assert LSTMLMConfig(vocab_size=5).cell == "lstm"
    assert GRULMConfig(vocab_size=5).cell == "gru"
    assert RNNLMConfig(vocab_size=5).cell == "rnn"
    assert GRULMConfig(vocab_size=5, cell="simple-gru", impl="equations").stack_config().cell == "simple-gru"
    assert RecurrentLMConfig(vocab_size=5, cell="gru").cell == "gru"  # the base class takes any cell


@pytest.mark.parametrize("cls,kw,message", [
    (LSTMLMConfig, {"cell": "gru"}, "does not fit this model.arch; use cell = 'lstm'"),
    (GRULMConfig, {"cell": "simple-gru"}, "set impl='equations'"),
    (RNNLMConfig, {"hidden_size": 64}, "tie_embeddings needs hidden_size == d_model"),
    (RNNLMConfig, {"max_len": 0}, "max_len=0 must be a positive"),
    (LSTMLMConfig, {"nonlinearity": "relu"}, "rnn cell only"),
    (LSTMLMConfig, {"dropout": -0.1}, "outside"),
])
def test_config_errors(cls, kw, message):
    with pytest.raises(SeqlabError, match=message):
        cls(vocab_size=5, **kw)


def test_build_lm_refuses_other_configs():
    with pytest.raises(SeqlabError, match="needs a RecurrentLMConfig"):
        build_lm(RecurrentModelConfig(vocab_size=5))


def test_lm_lstm_preset_builds():
    text = config.preset_text("lm-lstm")
    assert text.startswith("# ")  # the one-line description `seqlab presets` shows
    raw = tomllib.loads(text)
    assert raw["task"]["kind"] == "lm" and set(raw) == {"task", "data", "model", "train"}
    model = dict(raw["model"])
    cfg = LM_CONFIGS[model.pop("arch")](vocab_size=100, **model)  # every key is a config field
    assert cfg.cell == "lstm" and cfg.impl == "fused"
    lm = build_lm(cfg)
    assert lm(torch.zeros(2, cfg.max_len, dtype=torch.long)).shape == (2, cfg.max_len, 100)


# ------------------------------------------------------------------------------------------------------
# the shared encoder (tagger and classifier use it bidirectionally)


@pytest.mark.parametrize("impl", ["fused", "equations"])
def test_bidirectional_encoder_ignores_padding(impl):
    torch.manual_seed(0)
    cfg = RecurrentModelConfig(vocab_size=20, cell="gru", d_model=6, hidden_size=5, n_layers=2, impl=impl)
    enc = RecurrentEncoder(cfg, bidirectional=True, padding_idx=0).double().eval()
    assert enc.out_size == 10
    ids = torch.randint(1, 20, (3, 6))
    real = torch.tensor([[True] * 6, [True] * 2 + [False] * 4, [True] * 4 + [False] * 2])
    states, (h,) = enc(ids, padding=real)  # batch, seq, 2*hidden
    assert states.shape == (3, 6, 10) and h.shape == (4, 3, 5)
    other = torch.where(real, ids, torch.randint(1, 20, ids.shape))
    states2, (h2,) = enc(other, padding=real)
    assert torch.equal(states, states2) and torch.equal(h, h2)
    assert torch.equal(states[~real], torch.zeros_like(states[~real]))
    alone, _ = enc(ids[1:2, :2])
    assert (alone[0] - states[1, :2]).abs().max().item() <= 1e-12


# ------------------------------------------------------------------------------------------------------
# end to end through the LM task (seqlab/tasks/lm.py) and the Trainer


def test_trains_evaluates_and_generates_through_the_lm_task(tmp_path, monkeypatch):
    from seqlab import tasks
    from seqlab.tasks import lm
    from seqlab.training.devices import Dist

    if "lstm" not in lm.MODEL_CONFIGS:  # until seqlab/tasks/lm.py is wired: the wiring the lm-lstm preset needs
        for arch, cls in LM_CONFIGS.items():
            monkeypatch.setitem(lm.MODEL_CONFIGS, arch, cls)
        build = lm.build_model
        monkeypatch.setattr(lm, "build_model", lambda cfg, vocab_size: build_lm(
            replace(cfg.model, vocab_size=vocab_size)) if isinstance(cfg.model, RecurrentLMConfig)
            else build(cfg, vocab_size))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat.\n" * 120)
    cfg = tasks.from_dict({
        "task": {"kind": "lm"},
        "data": {"source": str(corpus), "tokenizer": "char", "split": [0.8, 0.1, 0.1]},
        "model": {"arch": "lstm", "n_layers": 1, "d_model": 32, "hidden_size": 32, "max_len": 24, "dropout": 0.0},
        "train": {"max_steps": 150, "batch_size": 16, "lr": 2e-2, "warmup_steps": 5, "eval_every": 0,
                  "save_every": 0, "progress": False, "device": "cpu", "precision": "fp32", "threads": 1},
    })
    run = tmp_path / "run"
    lm.train(cfg, run, resume=False, dist=Dist(), log=lambda *a, **k: None)
    trained = lm.load(run, cfg, device="cpu")
    assert isinstance(trained.model, RecurrentLM)
    result = trained.evaluate("test")
    assert result["perplexity"] < 2.0  # a 13-symbol periodic text; uniform guessing would give ~13
    assert math.isclose(result["loss"], math.log(result["perplexity"]), rel_tol=1e-9)
    text = trained.generate("the cat", max_new_tokens=20, temperature=0.0)
    assert text == trained.generate("the cat", max_new_tokens=20, temperature=0.0, use_cache=False)
    assert "sat on the mat" in "the cat" + text
