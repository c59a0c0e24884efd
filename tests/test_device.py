"""Tests that need a CUDA device: marked ``device``, skipped where torch sees no GPU (here and in CI).

bench/gpu.sh runs them on a lent GPU (``pytest -m device tests/test_device.py``). Each takes seconds there:
a tiny LM trained through ``seqlab.train`` with ``train.precision=auto`` (bf16 autocast on a bf16 GPU) whose loss
drops; compiled decoding equal to eager greedy decoding; the KV-cache ``generate`` on the GPU equal to the CPU's,
token for token (fp32); SDPA (the fused path) against the equations path in fp32 and bf16.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (bench/gpu.sh runs these on a GPU)"),
]

VOCAB = 40


def tiny_lm(seed: int = 0, **overrides):
    from seqlab.models.transformer import TransformerLM, TransformerLMConfig

    torch.manual_seed(seed)
    cfg = TransformerLMConfig(**{"vocab_size": VOCAB, "n_layers": 2, "n_heads": 2, "d_model": 32, "d_ff": 64,
                                 "max_len": 48, "dropout": 0.0, **overrides})
    return TransformerLM(cfg).eval()


def prompts() -> list[list[int]]:
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in (7, 3, 5)]


def greedy(model, rows, new=24, **kw):
    from seqlab.decoding.decode import Sampling, generate

    return generate(model, rows, new, Sampling(0), **kw)


def near_tie_divergence(model_cpu, row: list[int], got: list[int], want: list[int], margin: float = 1e-4) -> bool:
    """Whether ``got`` first leaves ``want`` where the CPU model's top two logits lie within ``margin`` (rounding
    may then pick either); False where they agree or diverge on a clear winner."""
    n = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    if n is None:
        return False
    with torch.inference_mode():
        logits = model_cpu(torch.tensor([row + want[:n]]))[0, -1]
    top2 = torch.topk(logits.double(), 2).values
    return float(top2[0] - top2[1]) < margin


def test_train_lm_on_cuda_with_bf16_autocast_and_the_loss_drops(tmp_path, monkeypatch):
    import seqlab
    from seqlab.training import trainer

    used = []
    autocast = trainer.autocast
    monkeypatch.setattr(trainer, "autocast", lambda precision, device: (used.append((precision, device.type)),
                                                                         autocast(precision, device))[1])
    text = "the cat sees the dog. the dog sees a cat. a big cat runs. " * 40
    lm = seqlab.train("lm-char", out=tmp_path / "run", train_data=text, config={
        "model": {"n_layers": 2, "n_heads": 2, "d_model": 64, "d_ff": 128, "max_len": 32},
        "train": {"device": "cuda", "precision": "auto", "max_steps": 60, "batch_size": 16, "lr": 3e-3,
                  "warmup_steps": 5, "eval_every": 30, "save_every": 30, "eval_batches": 2, "log_every": 5,
                  "progress": False}})
    expected = "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    assert (expected, "cuda") in used, used
    losses = [r["loss"] for r in lm.metrics if r.get("split") == "train"]
    assert len(losses) >= 4 and all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < 0.6 * losses[0], losses
    assert next(lm.model.parameters()).device.type == "cuda"
    assert isinstance(lm.generate("the ", max_new_tokens=8, seed=0), str)


def test_compiled_decoding_on_cuda_equals_eager_greedy():
    model = tiny_lm().cuda()
    rows = prompts()
    eager = greedy(model, rows)
    compiled = greedy(model, rows, compile=True)
    assert compiled == eager  # one batch shape: each new shape compiles again (about 30 s on an H200's host),
    # and batch 1's compiled shapes are checked on the CPU (tests/test_lm.py)


def test_kv_cache_generate_on_cuda_equals_the_cpu_token_for_token():
    cpu = tiny_lm(seed=1)
    gpu = tiny_lm(seed=1).cuda()
    rows = prompts()
    want = greedy(cpu, rows)
    got = greedy(gpu, rows)
    for row, g, w in zip(rows, got, want):  # fp32 on both; a divergence is allowed only at a rounding-size tie
        assert g == w or near_tie_divergence(cpu, row, g, w), (row, g, w)
    for row, u, g in zip(rows, greedy(gpu, rows, use_cache=False), got):  # without the cache: the same tokens
        assert u == g or near_tie_divergence(cpu, row, u, g), (row, u, g)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-4), (torch.bfloat16, 2e-2)])
def test_sdpa_on_cuda_matches_the_equations_path(dtype, tol):
    from seqlab.nn.attention import attention_equations, attention_fused

    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 4, 33, 16, generator=g, device="cuda", dtype=dtype) for _ in range(3))
    pad = torch.ones(2, 1, 1, 33, dtype=torch.bool, device="cuda")
    pad[1, ..., 25:] = False  # the second row's last keys are padding
    for mask, causal in ((None, True), (pad, False), (pad, True)):
        want, _ = attention_equations(q.float(), k.float(), v.float(), mask, is_causal=causal)
        got = attention_fused(q, k, v, mask, is_causal=causal)
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), want, atol=tol, rtol=tol)
    # one query against a longer cache (decoding's shape), bottom-right causal alignment
    want, _ = attention_equations(q[:, :, -1:].float(), k.float(), v.float(), is_causal=True)
    torch.testing.assert_close(attention_fused(q[:, :, -1:], k, v, is_causal=True).float(), want, atol=tol, rtol=tol)
