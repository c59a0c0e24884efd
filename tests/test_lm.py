"""Language modelling: metrics, decoding, the LM task, run directories."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seqlab.base.bounds import chain_bound, gamma, matmul_bound, u
from seqlab.decoding.decode import Sampling, filter_logits, generate
from seqlab.base.errors import SeqlabError
from seqlab.metrics.lm import eval_windows, ngram_nll, nll_sum, perplexity, score_stream
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn import gemv
from seqlab.nn.attention import KVCache


def tiny_lm(max_len=16, vocab=11, dtype=torch.float64, positions="learned", seed=0, layers=2) -> TransformerLM:
    torch.manual_seed(seed)
    cfg = TransformerLMConfig(vocab_size=vocab, n_layers=layers, n_heads=2, d_model=8, d_ff=16, max_len=max_len,
                              dropout=0.0, positions=positions)
    return TransformerLM(cfg).to(dtype).eval()


# Two float64 evaluations of a tiny_lm (batched or alone, cached or not): <= 20 chained reductions (2 layers × 9,
# the embeddings and the head) of length <= 16 (d_ff), terms <= 85 and a gain <= 200 as in tests/test_parity_nn.py
# (these models are smaller in every term): 20·γ_16·85·200 = 6e-10 per logit (Higham §3.1, §3.3).
LOGIT_TOL = chain_bound(products=20, n=16, magnitude=85, dtype=torch.float64, gain=200)


def _loss_rounding_bound(model: TransformerLM, ids: torch.Tensor, bf16: bool) -> float:
    """First-order worst-case bound on how far rounding moves the mean cross-entropy of ``model`` on ids[:, :-1] ->
    ids[:, 1:] (Higham §3.3 with the adjoints dL/dy from a float64 copy): every nn.Linear product's float32
    accumulation (γ_n of |x||W|ᵀ + |b|) and, under bf16 autocast, the roundings of its input, weight and output to
    bfloat16 (u = 2^-8 of each), each weighted by |dL/d·|. The attention scores' own rounding is not counted (they
    are small here: default init, |q·k| < 0.1)."""
    model64 = TransformerLM(model.cfg).double().eval()
    model64.load_state_dict(model.state_dict())
    calls = []

    def record(m, inp, out):  # returns None: the output stays as it is
        out.retain_grad()
        calls.append((m, inp[0], out))

    hooks = [m.register_forward_hook(record) for m in model64.modules() if isinstance(m, torch.nn.Linear)]
    loss = torch.nn.functional.cross_entropy(model64(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    for h in hooks:
        h.remove()
    total, ub = 0.0, u(torch.bfloat16)
    for m, x, y in calls:
        gy, x, w = y.grad.abs().flatten(0, -2), x.detach().abs().flatten(0, -2), m.weight.detach().abs()
        terms = x @ w.T + (m.bias.detach().abs() if m.bias is not None else 0)
        total += gamma(w.shape[1], torch.float32) * float((gy * terms).sum())
        if bf16:
            rounded = (gy * y.detach().abs().flatten(0, -2)).sum() + ((gy @ w) * x).sum() + ((gy.T @ x) * w).sum()
            total += ub * float(rounded)
    return total


# --- metrics (specs/metrics.md §4.4) ---

def test_perplexity_worked_example():
    logits = torch.tensor([[[2, 1, 0, -1], [0, 0, 3, 1], [1, 2, 0, 0], [0, 0, 0, 0]],
                           [[0, 3, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0], [5, 5, 5, 5]]], dtype=torch.float64)
    ids = torch.tensor([[1, 2, 3, 2], [3, 1, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    total, count = nll_sum(logits[:, :-1], ids[:, 1:], mask[:, 1:])  # the shift: logits at i predict i + 1
    assert count == 4
    # float64 on both sides (the spec's numbers and ours): each nll = logsumexp - x_y, within γ_{V+4} of
    # |logsumexp| + |x_y| (Higham §3.1), their sum and the division: two such bounds apart; perplexity = exp(mean)
    scored = logits[:, :-1][mask[:, 1:]]
    terms = float((scored.logsumexp(-1).abs() + scored.abs().max(-1).values).sum())
    mean_tol = 2 * gamma(4 + 4 + 2, torch.float64) * terms / count
    assert abs(float(total) / count - 1.8389991635274463) <= mean_tol
    assert abs(perplexity(float(total), count) - 6.2902396083706105) <= 6.3 * (mean_tol + 2 * u(torch.float64))
    assert math.isnan(perplexity(0.0, 0))


def test_label_smoothing_is_the_mixture_of_nll_and_uniform_cross_entropy():
    """(1 - eps) * -log p(y) + eps * mean_v -log p(v), summed over the unmasked positions only."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=gen, dtype=torch.float64)
    targets = torch.randint(7, (3, 5), generator=gen)
    mask = torch.rand(3, 5, generator=gen) > 0.3
    logp = logits.log_softmax(-1)
    nll = -logp.gather(-1, targets[..., None])[..., 0]  # batch, seq
    uniform = -logp.mean(-1)  # batch, seq
    # float64 both: per position log_softmax (γ_{V+3} of |x| + |logsumexp|), the mixture, the sum over <= 15
    # positions: two of γ_{V+3+15} · Σ_positions (max|x| + |logsumexp|) (Higham §3.1)
    terms = float((logits.abs().max(-1).values + logits.logsumexp(-1).abs()).sum())
    tol = 2 * gamma(7 + 3 + 15, torch.float64) * terms
    for eps in (0.0, 0.1, 0.5):
        expected = (((1 - eps) * nll + eps * uniform) * mask).sum()
        total, count = nll_sum(logits, targets, mask, label_smoothing=eps)
        assert count == int(mask.sum())
        assert abs(float(total) - float(expected)) <= tol, eps
        unmasked, _ = nll_sum(logits, targets, label_smoothing=eps)
        assert abs(float(unmasked) - float(((1 - eps) * nll + eps * uniform).sum())) <= tol, eps


def test_label_smoothing_config_is_checked():
    from seqlab import tasks

    assert tasks.resolve("mt-transformer", ["train.label_smoothing=0.1"]).train.label_smoothing == 0.1
    with pytest.raises(SeqlabError, match=r"train.label_smoothing=1.0 is outside \[0, 1\)"):
        tasks.resolve("mt-transformer", ["train.label_smoothing=1.0"])
    with pytest.raises(SeqlabError, match='train.label_smoothing is not used by task.kind = "forecast"'):
        tasks.resolve("ar", ["train.label_smoothing=0.1"])


def test_eval_windows_score_every_token_once():
    for n, T in [(2, 4), (10, 3), (100, 7), (64, 8), (65, 8)]:
        targets = [i + 1 + j for i, length in eval_windows(n, T) for j in range(length)]
        assert targets == list(range(1, n)), (n, T)
        assert all(1 <= length <= T for _, length in eval_windows(n, T))


def test_score_stream_equals_direct_sum():
    model = tiny_lm(max_len=8)
    tokens = np.random.default_rng(0).integers(0, 11, size=53).astype(np.uint16)
    total, count = score_stream(model, tokens, 8, batch_size=3, device=torch.device("cpu"))
    assert count == 52
    direct = 0.0
    for start, length in eval_windows(53, 8):
        x = torch.tensor(tokens[start:start + length], dtype=torch.long)[None]
        logp = torch.log_softmax(model(x)[0], -1)
        y = torch.tensor(tokens[start + 1:start + length + 1], dtype=torch.long)
        direct -= float(logp[torch.arange(length), y].sum().detach())
    # 52 log-probabilities, each from logits within LOGIT_TOL (batched against alone; log_softmax: |Δ| <= 2 max|Δx|)
    assert abs(total - direct) <= 52 * 2 * LOGIT_TOL + 2 * gamma(52, torch.float64) * abs(direct)


def test_ngram_baselines_match_brute_force():
    rng = np.random.default_rng(1)
    train, valid, V = rng.integers(0, 5, 300), rng.integers(0, 5, 40), 6
    for order in (1, 2):
        total, count = ngram_nll(train, valid, order, V)
        expect = 0.0
        for i in range(1, len(valid)):
            if order == 1:
                p = (np.sum(train == valid[i]) + 1) / (len(train) + V)
            else:
                ctx = train[:-1] == valid[i - 1]
                p = (np.sum(ctx & (train[1:] == valid[i])) + 1) / (np.sum(ctx) + V)
            expect -= math.log(p)
        assert count == len(valid) - 1
        # float64 both: 39 terms -log p (p a ratio of counts: a division and a log, 2 roundings), summed: the terms
        # share a sign, so within γ_{39+2} · |total| each (Higham §3.1)
        assert abs(total - expect) <= 2 * gamma(count + 2, np.float64) * abs(expect)


# --- decoding ---

def test_filter_logits_top_k_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.15, 0.1]]))
    assert torch.isinf(filter_logits(logits, top_k=2)).tolist() == [[False, False, True, True]]
    # nucleus 0.7: 0.5 < 0.7 so the second token is needed; 0.75 >= 0.7 so the rest go
    assert torch.isinf(filter_logits(logits, top_p=0.7)).tolist() == [[False, False, True, True]]
    assert torch.isinf(filter_logits(logits, top_p=0.5)).tolist() == [[False, True, True, True]]
    assert torch.isinf(filter_logits(logits, top_p=0.01)).tolist() == [[False, True, True, True]]


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_cached_greedy_equals_uncached_across_the_window(positions):
    model = tiny_lm(max_len=12, positions=positions)
    prompts = [[1, 2, 3, 4, 5], [7, 1, 9, 2, 2]]
    greedy = Sampling(temperature=0)
    cached = generate(model, prompts, 30, greedy, use_cache=True)  # slides past max_len = 12
    uncached = generate(model, prompts, 30, greedy, use_cache=False)
    assert cached == uncached
    assert all(len(c) == 30 for c in cached)


def test_batched_equals_unbatched_and_seeded_sampling_repeats():
    model = tiny_lm(max_len=16)
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8], [9]]
    for sampling in (Sampling(0), Sampling(0.9, top_k=5, top_p=0.9)):
        together = generate(model, prompts, 10, sampling, seed=3)
        alone = [generate(model, [p], 10, sampling, seed=3)[0] for p in prompts]
        assert together == alone
    assert generate(model, prompts, 10, Sampling(1.0), seed=5) == generate(model, prompts, 10, Sampling(1.0), seed=5)


def test_generation_stops_at_eos():
    model = tiny_lm(max_len=16)
    free = generate(model, [[1, 2]], 12, Sampling(0))[0]
    eos = free[3]
    stopped = generate(model, [[1, 2]], 12, Sampling(0), eos_id=eos)[0]
    assert stopped == free[:free.index(eos) + 1]


def test_decode_bad_input():
    model = tiny_lm()
    with pytest.raises(SeqlabError, match="top-p"):
        Sampling(1.0, top_p=0.0)
    with pytest.raises(SeqlabError, match="temperature"):
        Sampling(-1.0)
    with pytest.raises(SeqlabError, match="empty prompt"):
        generate(model, [[]], 5)


def test_left_padding_positions_and_key_mask():
    cache = KVCache(n_layers=1, batch=2, n_heads=1, max_len=6, depth=2)
    assert cache.token_positions(3).tolist() == [0, 1, 2] and cache.key_padding(3) is None
    cache.pad_left(torch.tensor([0, 2]))
    assert cache.token_positions(4).tolist() == [[0, 1, 2, 3], [0, 0, 0, 1]]  # padding slots at position 0
    assert cache.key_padding(4).tolist() == [[True] * 4, [False, False, True, True]]  # the 4 slots attended
    cache.advance(4)
    assert cache.key_padding(2).tolist() == [[True] * 6, [False, False, True, True, True, True]]
    cache.reset()
    assert cache.start is None


def test_left_padded_batch_equals_one_by_one_and_uncached():
    """Prompts of different lengths decode as one left-padded batch: each row's logits equal its own run's
    (float64, 1e-12), and the tokens equal one-by-one and uncached decoding (grouped by length)."""
    model = tiny_lm(max_len=24)
    prompts = [[1, 2, 3, 4, 5, 6, 7], [4], [6, 7, 8], [9, 1]]
    pads = [7 - len(p) for p in prompts]
    ids = torch.tensor([[0] * pad + p for pad, p in zip(pads, prompts)])  # batch, 7
    with torch.inference_mode():
        cache = model.new_cache(len(prompts))
        cache.pad_left(torch.tensor(pads))
        batched = [model(ids, cache=cache)[:, -1], model(torch.tensor([[3], [5], [7], [9]]), cache=cache)[:, -1]]
        for row, p in enumerate(prompts):
            own = model.new_cache(1)
            alone = [model(torch.tensor([p]), cache=own)[0, -1], model(torch.tensor([[3 + 2 * row]]), cache=own)[0, -1]]
            for b, a in zip(batched, alone):
                assert (b[row] - a).abs().max().item() <= LOGIT_TOL
    for sampling in (Sampling(0), Sampling(0.9, top_k=5)):
        together = generate(model, prompts, 12, sampling, seed=1)
        assert together == [generate(model, [p], 12, sampling, seed=1)[0] for p in prompts]
        assert together == generate(model, prompts, 12, sampling, seed=1, use_cache=False)


def test_generation_leaves_the_thread_count_to_the_process_owner(monkeypatch):
    """A library call never sets torch's process-wide thread count (it would race under `seqlab serve`'s thread
    pool); `seqlab generate --threads N` is the owner's way to choose it."""
    from seqlab import cli

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = []
        model = tiny_lm()
        monkeypatch.setattr(model, "new_cache", lambda *a, **k: seen.append(torch.get_num_threads())
                            or TransformerLM.new_cache(model, *a, **k))
        generate(model, [[1, 2]], 3, Sampling(0))
        assert seen == [2] and torch.get_num_threads() == 2
        ran = []
        monkeypatch.setattr("seqlab.commands.generate.run", lambda args: ran.append(torch.get_num_threads()) or 0)
        assert cli.main(["generate", "RUN", "--prompt", "x", "--threads", "1"]) == 0 and ran == [1]
        with pytest.raises(SystemExit) as e:
            cli.main(["generate", "RUN", "--prompt", "x", "--threads", "x"])
        assert e.value.code == 2
        assert cli.main(["generate", "RUN", "--prompt", "x", "--threads", "-1"]) == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("rows,width", [(1, 40), (3, 48), (8, 48), (gemv.ROWS, 48), (gemv.ROWS, 40)])
def test_gemv_reductions_equal_the_matrix_products(rows, width):
    """seqlab.nn.gemv's few-row products (what compiled decoding runs) equal torch's, float64: one row, a few rows
    in chunks of gemv.CHUNK inputs (padded to the vector lanes, the padding dropped), and a width no chunk divides."""
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*shape, dtype=torch.float64, generator=g) for shape in ((rows, width), (width, 24), (24,)))
    q, k = (torch.randn(*shape, dtype=torch.float64, generator=g) for shape in ((6, 1, 8), (6, 8, 30)))
    # two orders of one float64 product: each within γ_k |x||w| of it (Higham §3.5), so twice that apart
    assert gemv._mm(x, w).shape == (rows, 24)
    assert ((gemv._mm(x, w) - x @ w).abs() <= 2 * torch.from_numpy(matmul_bound(x, w, torch.float64))).all()
    bias_terms = torch.from_numpy(matmul_bound(torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1),
                                               torch.cat([w, b[None]]), torch.float64))  # [x 1] @ [w; b]
    assert ((gemv._addmm(b, x, w) - torch.addmm(b, x, w)).abs() <= 2 * bias_terms).all()
    assert ((gemv._bmm(q, k) - q @ k).abs() <= 2 * torch.from_numpy(matmul_bound(q, k, torch.float64))).all()
    many = torch.randn(gemv.ROWS + 1, width, dtype=torch.float64)  # a prompt's rows stay with the BLAS
    assert gemv._mm(many, w) is NotImplemented and gemv._addmm(b, many, w) is NotImplemented


# prompts of different lengths: the batch of 8 is left-padded, as `seqlab generate` batches them
PROMPTS = [[1, 2, 3, 4], [5, 6, 7, 8, 9, 10], [2], [3, 1], [9, 8, 7, 6, 5, 4, 3], [4, 4, 4], [10], [6, 2, 8, 1, 7]]


# A compile costs 20-45 s of the suite on a 2-core AVX2 EPYC, so each compiled product choice is checked once: the
# BLAS products' step cold and warm, in a left-padded batch of 2 and at one row, by the several-models test below;
# the streaming products' at 8 left-padded rows by the freezing test; here the streaming products' one-row step and
# the C++ GEMM template's step at 8 rows (the bench's batched path). One layer: every product of a layer and the
# head is there; the compiled stack of two layers is tests/test_transformer.py's one-graph test.
@pytest.mark.heavy
@pytest.mark.parametrize("products, rows", [("stream", 1), ("tiled", 8)])
def test_compiled_decode_step_equals_eager(products, rows):
    """The torch.compile'd static decode step (frozen weights, C++ wrapper; the products as streaming
    reductions or inductor's C++ GEMM template) gives the same tokens at batch 1 and in a left-padded
    batch of 8 (CI runs it: it is the path `seqlab generate --compile` and bench/generate.py advertise)."""
    model = tiny_lm(max_len=40, dtype=torch.float32, layers=1)
    prompts = PROMPTS[:rows]
    eager = generate(model, prompts, 30, Sampling(0))
    compiled = generate(model, prompts, 30, Sampling(0), compile=True, products=products)
    again = generate(model, prompts, 30, Sampling(0), compile=True, products=products)  # warm: guards skipped
    assert eager == compiled == again
    assert len(compiled) == rows and all(len(tokens) == 30 for tokens in compiled)
    with pytest.raises(SeqlabError, match="unknown decode products 'gemm'"):
        generate(model, prompts, 1, Sampling(0), compile=True, products="gemm")


@pytest.mark.heavy
def test_compiled_decode_step_freezes_the_weights_and_follows_them_when_they_change(monkeypatch):
    """Every weight is a constant of the compiled step's graph (freezing reached dynamo, which reads it while
    tracing: given to torch.compile's ``options`` alone it froze nothing), and a change in place, as an optimizer
    step or ``load_state_dict`` makes, compiles the step again: its tokens are then the new weights' eager ones."""
    import torch._inductor.freezing as freezing

    from seqlab.decoding.decode import weights_version

    frozen, real = [], freezing.freeze

    def counted(dynamo_gm, aot_gm, inputs):  # inductor's freezing pass: the inputs it made constants
        gm, kept = real(dynamo_gm, aot_gm, inputs)
        frozen.append(len(inputs) - len(kept))
        return gm, kept

    monkeypatch.setattr(freezing, "freeze", counted)
    model = tiny_lm(max_len=40, dtype=torch.float32, layers=1)  # one layer: its subject is freezing, not the stack
    eager = generate(model, PROMPTS, 12, Sampling(0))  # 8 left-padded rows: the streaming products' batched step
    assert generate(model, PROMPTS, 12, Sampling(0), compile=True, products="stream") == eager
    assert frozen == [len(list(model.parameters())) + len(list(model.buffers()))]  # all of them, once
    version = weights_version(model)
    with torch.no_grad():
        model.head.weight.copy_(model.head.weight.roll(1, 0))  # each token's row moved to the next id
    assert weights_version(model) > version
    moved = generate(model, PROMPTS, 12, Sampling(0))
    assert moved != eager
    assert generate(model, PROMPTS, 12, Sampling(0), compile=True, products="stream") == moved
    assert len(frozen) == 2  # compiled again


@pytest.mark.heavy
def test_compiled_steps_of_several_models_and_batch_sizes_stay_compiled_and_let_their_model_go(monkeypatch):
    """Each model's compiled step, per batch size, holds its own dynamo entry (seqlab.decoding.decode.own_code):
    with dynamo's recompile limit at 1, two models at two batch sizes still compile three graphs (each freezes
    once) and give their eager tokens, also warm with guards skipped (sharing TransformerLM.step's code, the
    second graph met the limit: it ran eagerly, and a warm call was refused a recompile); a model no longer
    referenced is freed with its compiled steps (a bound ``model.step`` kept it alive)."""
    import gc
    import weakref

    import torch._inductor.freezing as freezing

    from seqlab.decoding import decode

    frozen, real = [], freezing.freeze

    def counted(dynamo_gm, aot_gm, inputs):
        frozen.append(1)
        return real(dynamo_gm, aot_gm, inputs)

    monkeypatch.setattr(freezing, "freeze", counted)
    # one layer each: the subject is the compiled entries, not the stack (a compile of 2 layers costs ~1.6x as much)
    a, b = (tiny_lm(max_len=24, dtype=torch.float32, seed=seed, layers=1) for seed in (0, 1))
    with torch._dynamo.config.patch(recompile_limit=1):  # config.patch restores it (monkeypatch deleted the key)
        for model, prompts in ((a, PROMPTS[:2]), (b, PROMPTS[:2]), (b, PROMPTS[:1]), (a, PROMPTS[:2])):
            eager = generate(model, prompts, 8, Sampling(0))
            assert generate(model, prompts, 8, Sampling(0), compile=True, products="blas") == eager
    assert len(frozen) == 3  # a at 2 rows, b at 2 and 1; a's again from its entry
    gone, held = weakref.ref(b), len(decode._COMPILED_STEPS)
    del b
    gc.collect()
    assert gone() is None and len(decode._COMPILED_STEPS) == held - 1


def test_every_attention_choice_gives_the_same_tokens_and_losses():
    """model.impl = auto | fused | equations (seqlab.nn.attention.attention_path): one model, the same greedy tokens
    (cached decoding and without the cache) and the same training loss in fp32 and under bf16 autocast."""
    from seqlab.nn.attention import IMPLS, attention_path, set_attention_impl

    model = tiny_lm(max_len=40, dtype=torch.float32)
    ids = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(3))
    tokens, losses = {}, {}
    for impl in IMPLS:
        set_attention_impl(model, impl)
        tokens[impl] = [generate(model, PROMPTS, 12, Sampling(0), use_cache=cache) for cache in (True, False)]
        for bf16 in (False, True):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(ids[:, :-1])
            losses[impl, bf16] = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten()).item()
    assert tokens["auto"] == tokens["fused"] == tokens["equations"]
    assert tokens["auto"][0] == tokens["auto"][1]
    for bf16 in (False, True):  # two paths, each within the first-order rounding bound of the loss
        tol = 2 * _loss_rounding_bound(model, ids, bf16)
        assert max(abs(losses[impl, bf16] - losses["equations", bf16]) for impl in IMPLS) <= tol
    q32, q16 = torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4, dtype=torch.bfloat16)
    assert [attention_path("auto", q32, 0.0, False), attention_path("auto", q32, 0.0, True),
            attention_path("auto", q32, 0.1, False), attention_path("auto", q16, 0.0, False),
            attention_path("fused", q16, 0.1, True)] == ["fused", "equations", "equations", "equations", "fused"]


def test_decode_products_are_chosen_once_per_machine_and_overridable(tmp_path, monkeypatch):
    """seqlab.decoding.products.decode_products: the SEQLAB_DECODE_GEMV override, else the choice measured once on
    this CPU per row count and cached in $SEQLAB_CACHE/choices.json (keyed by CPU model and torch version); no measuring off the
    CPU or past the streaming products' rows; a file from before the per-row choice answers for one row."""
    import json

    from seqlab.decoding import products

    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path))
    products._measured_products.cache_clear()
    for choice in ("stream", "blas", "tiled"):
        monkeypatch.setenv("SEQLAB_DECODE_GEMV", choice)
        assert products.decode_products(torch.device("cpu")) == choice
    monkeypatch.setenv("SEQLAB_DECODE_GEMV", "fast")
    with pytest.raises(SeqlabError, match="SEQLAB_DECODE_GEMV='fast' is not a choice"):
        products.decode_products(torch.device("cpu"))
    monkeypatch.delenv("SEQLAB_DECODE_GEMV")
    assert products.decode_products(torch.device("cuda")) == "blas"
    timed = []
    fastest = {1: {"blas": 2e-5, "stream": 1e-5, "tiled": 3e-5}, 8: {"blas": 3e-5, "stream": 4e-5, "tiled": 5e-5},
               gemv.ROWS + 1: {"blas": 6e-5, "tiled": 5e-5}}  # stream at 1 row, BLAS at 8, tiled past ROWS
    monkeypatch.setattr(products, "_time_products", lambda rows: timed.append(rows) or fastest[rows])
    assert products.decode_products(torch.device("cpu")) == "stream" and timed == [1]
    assert products.decode_products(torch.device("cpu"), 8) == "blas" and timed == [1, 8]
    assert products.decode_products(torch.device("cpu"), gemv.ROWS + 1) == "tiled"  # no streaming past ROWS
    assert products.ways(gemv.ROWS + 1) == ("blas", "tiled") and timed == [1, 8, gemv.ROWS + 1]
    assert products.decode_products(torch.device("cpu"), products.MEASURED_ROWS + 1) == "blas"  # not measured
    products._measured_products.cache_clear()  # a new process: the file answers, nothing is timed again
    assert [products.decode_products(torch.device("cpu"), n) for n in (1, 8)] == ["stream", "blas"]
    assert timed == [1, 8, gemv.ROWS + 1]
    (key, entry), = json.loads((tmp_path / "choices.json").read_text()).items()
    assert key == f"{products.cpu_model()} | torch {torch.__version__} | products {products.products_revision()}"
    assert entry["decode_products"] == {"1": "stream", "8": "blas", str(gemv.ROWS + 1): "tiled"}
    assert set(entry["decode_products_ms"]) == {"1", "8", str(gemv.ROWS + 1)}
    (tmp_path / "choices.json").write_text(json.dumps({key: {"decode_products": "blas"}}))  # the old layout
    products._measured_products.cache_clear()
    assert products.decode_products(torch.device("cpu")) == "blas" and timed == [1, 8, gemv.ROWS + 1]
    products._measured_products.cache_clear()
