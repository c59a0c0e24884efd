"""seqlab.nn.dropout: inverted dropout with the keep decision from 16-bit slices of 64-bit random integers."""

from __future__ import annotations

import math

import pytest
import torch

from seqlab.nn.dropout import Dropout, dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate_and_exact_expectation(p):
    torch.manual_seed(0)
    n = 400_003  # not a multiple of 4
    mask = keep_mask((n,), p)
    assert mask.shape == (n,) and mask.dtype == torch.bool
    q = round(p * 65536) / 65536
    sd = math.sqrt(q * (1 - q) / n)
    assert abs((1 - mask.float().mean().item()) - q) < 5 * sd  # the drop rate is p (to 2^-16)
    x = torch.ones(n, dtype=torch.float64)
    y = dropout(x, p)
    kept = y != 0
    assert torch.equal(y[kept], torch.full_like(y[kept], 1 / (1 - q)))  # kept units scaled by 1 / (1 - p)
    assert abs(y.mean().item() - 1.0) < 5 * sd / (1 - q)


def test_bits_are_independent_across_the_four_slices_of_a_word():
    torch.manual_seed(1)
    mask = keep_mask((4 * 100_000,), 0.5).view(-1, 4).float()  # the 4 int16 slices of each int64
    corr = torch.corrcoef(mask.T)
    assert (corr - torch.eye(4)).abs().max() < 0.02


def test_reproducible_under_the_seed_and_identity_in_eval():
    x = torch.randn(3, 5, 7)
    torch.manual_seed(3)
    a = dropout(x, 0.3)
    torch.manual_seed(3)
    b = dropout(x, 0.3)
    assert torch.equal(a, b) and not torch.equal(a, x)
    module = Dropout(0.3).eval()
    assert module(x) is x and dropout(x, 0.3, training=False) is x and dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    assert "p=0.3" in repr(module)
    with pytest.raises(ValueError):
        Dropout(1.5)


def test_gradient_is_the_mask_times_the_scale_and_dtype_is_kept():
    torch.manual_seed(4)
    x = torch.randn(64, 33, requires_grad=True)
    y = dropout(x, 0.25)
    y.sum().backward()
    expected = (y != 0).float() / 0.75
    assert torch.allclose(x.grad, expected)
    assert dropout(torch.randn(8, 8, dtype=torch.bfloat16), 0.1).dtype == torch.bfloat16
