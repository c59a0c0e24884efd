"""Weight-only bf16 / int8 linear layers (seqlab.nn.weight_only) and `seqlab generate --dtype`."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqlab.base.bounds import gamma, u
from seqlab import api, cli
from seqlab.decoding import decode
from seqlab.decoding.decode import Sampling, generate
from seqlab.base.errors import SeqlabError
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn.weight_only import WeightOnlyLinear, to_weight_only

pytestmark = pytest.mark.usefixtures("one_thread")


def linear(seed=0, n_in=24, n_out=10) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(n_in, n_out)


def test_bf16_weights_are_the_rounded_weights_in_an_fp32_product():
    lin = linear()
    wo = WeightOnlyLinear(lin, "bf16")
    assert wo.weight.dtype == torch.bfloat16 and wo.weight.shape == lin.weight.shape
    x = torch.randn(5, 24)
    want = F.linear(x, lin.weight.detach().to(torch.bfloat16).float(), lin.bias.detach())
    assert torch.equal(wo(x), want)


def test_int8_rows_are_symmetric_per_row_quantisation():
    lin = linear()
    lin.weight.data[3] = 0.0  # an all-zero row: scale stays finite, row stays zero
    wo = WeightOnlyLinear(lin, "int8")
    w = lin.weight.detach()
    assert wo.weight.dtype == torch.int8 and wo.scale.shape == (10,)
    assert int(wo.weight.abs().max()) == 127  # each non-zero row's largest weight maps to +-127
    assert torch.equal(wo.weight[3], torch.zeros(24, dtype=torch.int8))
    # amax / 127 in float32: one rounding on each side, however it is written
    torch.testing.assert_close(wo.scale, w.abs().amax(dim=1).clamp_min(torch.finfo(torch.float32).tiny) / 127,
                               rtol=2 * u(torch.float32), atol=0)
    err = (wo.dequantized() - w).abs()  # rounding to the nearest step: at most half a step per row
    # plus float32's share: w / s rounded before the nearest integer is taken, q·s, the difference (<= 3u|w|)
    assert bool((err <= wo.scale[:, None] / 2 + gamma(3, torch.float32) * w.abs()).all())
    x = torch.randn(5, 24)
    deq = wo.weight.float() * wo.scale[:, None]
    # two float32 orders of one product (scale before or after the sum, + b): each within γ_{n+2} of
    # |x||W|ᵀ + |b| (Higham §3.5)
    tol = 2 * gamma(24 + 2, torch.float32) * (x.abs() @ deq.abs().T + lin.bias.detach().abs())
    assert bool(((wo(x) - (x @ deq.T + lin.bias.detach())).abs() <= tol).all())


def test_the_compiled_int8_product_reads_the_weights_as_words_and_equals_the_dequantized_product():
    """The compiled step's int8 product (four byte lanes of int32 words, the scale after the sum) is the same
    product as x · (Q·s)ᵀ + b summed in another order: within two float32 orders' bound of |x||W|ᵀ + |b|."""
    from seqlab.nn.weight_only import _packs

    lin = linear(n_in=32, n_out=10)
    wo = WeightOnlyLinear(lin, "int8")
    assert _packs(wo.weight) and not _packs(WeightOnlyLinear(linear(n_in=30), "int8").weight)
    x = torch.randn(3, 5, 32)
    words = wo.weight.view(torch.int32)  # the bytes of each word are four consecutive weights of a row
    assert torch.equal(torch.stack([(words << (24 - 8 * b)) >> 24 for b in range(4)], -1).reshape(10, 32),
                       wo.weight.to(torch.int32))
    deq = wo.dequantized()
    want = x @ deq.T + lin.bias.detach()  # 3, 5, 10
    tol = 2 * gamma(32 + 2, torch.float32) * (x.abs() @ deq.abs().T + lin.bias.detach().abs())
    got = wo._int8_packed(x)
    assert got.shape == want.shape and bool(((got - want).abs() <= tol).all())


def tiny_lm(layers: int = 2) -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(TransformerLMConfig(vocab_size=13, n_layers=layers, n_heads=2, d_model=16, d_ff=32, max_len=40,
                                             dropout=0.0)).eval()


def test_every_untied_linear_is_converted_and_the_tied_head_is_not():
    model = tiny_lm()
    assert to_weight_only(model, "fp32") == 0
    assert to_weight_only(model, "int8") == 2 * 4  # per layer: qkv, out, and the FFN's two
    assert model.head.weight is model.embed.tokens.weight and model.head.weight.dtype == torch.float32
    kinds = {type(m).__name__ for m in model.modules()}
    assert "WeightOnlyLinear" in kinds and "Linear" in kinds  # only the head stays an nn.Linear
    with pytest.raises(SeqlabError, match="unknown dtype 'int4'"):  # from Python; --dtype from the CLI
        to_weight_only(tiny_lm(), "int4")


@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_low_precision_logits_stay_close_to_fp32(dtype):
    fp32, low = tiny_lm(), tiny_lm()
    to_weight_only(low, dtype)
    ids = torch.randint(0, 13, (3, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        a, b = fp32(ids), low(ids)
    assert 0 < (a - b).abs().max().item() < {"bf16": 0.02, "int8": 0.05}[dtype]


@pytest.mark.heavy
@pytest.mark.parametrize("dtype", ["bf16", "int8"])
def test_compiled_decoding_of_low_precision_weights_equals_eager(dtype):
    """Compiled without freezing, the conversion fused into the products: the same tokens as eager, at batch 1
    and in a left-padded batch of 8 (CI runs it: `seqlab generate --compile --dtype` advertises it). One layer: its
    four converted products and the head are all there, and each compile of a layer costs seconds of the suite."""
    model = tiny_lm(layers=1)
    to_weight_only(model, dtype)
    batch = [[1, 2, 3, 4], [5, 6, 7, 8, 9, 10], [2], [3, 1], [9, 8, 7], [4, 4, 4], [10], [6, 2, 8, 1, 7]]
    for prompts in (batch[:1], batch):
        eager = generate(model, prompts, 25, Sampling(0))
        assert generate(model, prompts, 25, Sampling(0), compile=True) == eager


def test_generate_dtype_flag(serve_runs, capsys):
    runs, ids = serve_runs
    run = runs / ids["lm"].split("/")[1]
    lm = api.load(run, device="cpu")
    assert lm.use_weight_dtype("fp32") == 0
    decode._COMPILED_STEPS[lm.model] = {"blas": object()}  # as if compiled before: it held the fp32 layers
    assert lm.use_weight_dtype("int8") == 2 * 4
    assert lm.model not in decode._COMPILED_STEPS
    want = lm.generate("The ", max_new_tokens=20, temperature=0)
    assert cli.main(["generate", str(run), "--prompt", "The ", "--max-new-tokens", "20", "--temperature", "0",
                     "--device", "cpu", "--dtype", "int8"]) == 0
    assert capsys.readouterr().out == "The " + want + "\n"
    with pytest.raises(SystemExit) as e:
        cli.main(["generate", str(run), "--prompt", "x", "--dtype", "fp8"])
    assert e.value.code == 2
