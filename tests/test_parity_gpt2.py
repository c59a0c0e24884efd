"""Our decoder-only TransformerLM vs Hugging Face GPT2LMHeadModel with the same weights.

Tolerances: float64 logits max abs diff <= LOGITS_TOL (a rounding bound, see there); greedy tokens identical
(cached and uncached, and a left-padded batch against HF's batched greedy with its attention mask).
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from seqlab.base.bounds import chain_bound  # noqa: E402
from seqlab.decoding.decode import Sampling, generate  # noqa: E402
from seqlab.models.gpt2_convert import from_gpt2  # noqa: E402


# float64 logits: <= 28 chained reductions (3 layers × 9: qkv, scores, weights·V, out, 2 LayerNorm, fc, proj, plus
# the head) of length <= 40 (n_inner), their terms summing to <= 1 in absolute value (GPT-2's N(0, 0.02) weights,
# biases N(0, 0.1), LayerNorm outputs); a rounding is carried on with a gain <= 100 (LayerNorm's 1/σ, σ >= 0.01
# for these small activations; the weights shrink everything else). 28·γ_40·1·100 = 1.2e-11 (Higham §3.1, §3.3).
LOGITS_TOL = chain_bound(products=28, n=40, magnitude=1.0, dtype=torch.float64, gain=100)


@pytest.fixture(scope="module")
def pair():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=37, n_positions=24, n_embd=24, n_layer=3, n_head=4, n_inner=40,
                                  activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                  layer_norm_epsilon=1e-5)
    hf = transformers.GPT2LMHeadModel(cfg).double().eval()
    with torch.no_grad():  # GPT-2 initialises biases to zero: randomise them so a mapping slip shows
        for name, p in hf.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return hf, from_gpt2(hf).eval()


def test_logits_equal(pair):
    hf, ours = pair
    ids = torch.randint(0, 37, (3, 24), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (hf(ids).logits - ours(ids)).abs().max().item()
    assert diff <= LOGITS_TOL, diff


def test_greedy_tokens_equal(pair):
    hf, ours = pair
    prompt = torch.tensor([[3, 1, 4, 1, 5]])
    with torch.no_grad():
        theirs = hf.generate(prompt, max_new_tokens=19, do_sample=False, pad_token_id=0)[0, 5:].tolist()
    assert generate(ours, [prompt[0].tolist()], 19, Sampling(0))[0] == theirs
    assert generate(ours, [prompt[0].tolist()], 19, Sampling(0), use_cache=False)[0] == theirs


def test_left_padded_batch_greedy_equals_hf(pair):
    """Prompts of different lengths, left-padded: our batch's tokens equal HF's batched greedy (attention
    mask, position ids from its cumsum) row by row."""
    hf, ours = pair
    prompts = [[3, 1, 4, 1, 5], [9, 2], [6, 5, 3, 5], [8]]
    ids = torch.tensor([[0] * (5 - len(p)) + p for p in prompts])  # batch, 5
    mask = torch.tensor([[0] * (5 - len(p)) + [1] * len(p) for p in prompts])  # batch, 5
    with torch.no_grad():
        theirs = hf.generate(ids, attention_mask=mask, max_new_tokens=15, do_sample=False, pad_token_id=0)
    assert generate(ours, prompts, 15, Sampling(0)) == theirs[:, 5:].tolist()
