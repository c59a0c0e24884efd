"""Positional encodings: sinusoidal (a fixed table) and learned (an embedding per position).

Sinusoidal (notes: Transformer › Positional encoding):
    PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))
Both modules map positions (...,) -> (..., d_model); the model adds the result to the token
embeddings (notes: Transformer › Embedding: embed(X) = E·X + P). :func:`check_positions` is the one rule every
model with a ``max_len`` applies: a forward pass sees at most max_len positions.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError


def check_positions(n: int, max_len: int, cached: int = 0) -> None:
    """A forward pass may see at most max_len positions (``cached`` ones of a cache included in ``n``)."""
    if n > max_len:
        held = f" ({cached} cached + {n - cached} new)" if cached else ""
        raise SeqlabError(
            f"{n} positions{held} exceed max_len={max_len}; feed at most the last {max_len} tokens "
            f"or raise model.max_len"
        )


def sinusoidal_table(max_len: int, d_model: int, dtype: torch.dtype | None = None) -> Tensor:
    r"""(max_len, d_model) table of PE(pos, j), computed in float64 then cast to ``dtype``.

    !!! equation "Transformer › Positional encoding"
        $PE_{(pos, 2i)} = \sin\left(\frac{pos}{10000^{2i/d_{model}}}\right),\ PE_{(pos, 2i+1)} =
        \cos\left(\frac{pos}{10000^{2i/d_{model}}}\right)$: the sinusoidal encoding of a position; the
        wavelength grows geometrically with the column, from $2\pi$ to $2\pi \cdot 10^4$.
        default: model.positions = "sinusoidal"; presets: lm-bpe = "learned", lm-char = "learned"

    !!! departure "Transformer › Positional encoding (notation)"
        notes: three index conventions for one table: $PE_{(pos, 2i)} = \sin(pos / 10000^{2i/d_{model}})$ and
        $PE_{(pos, 2i+1)} = \cos(\dots)$; $E_{pos}^{\delta, \beta} = \sin(\beta / 10^{4\delta/d})$ for even
        $\delta$ and $\cos(\beta / 10^{4(\delta - 1)/d})$ for odd $\delta$; and 1-based
        $P_{i, p} = \sin((p - 1) / 10000^{(i - 1)/d_{model}})$ for odd $i$, $\cos((p - 1) / 10000^{(i -
        2)/d_{model}})$ for even $i$.
        seqlab: the first, 0-based, row $pos$ and column $j$ ($j = 2i$ or $2i + 1$); the three are the same table.

    !!! departure "Transformer › Positional encoding (slip in the notes)"
        notes: the worked example writes $PE_{(pos, i=0)} = [\sin 0, \sin 0, \sin 0, \sin 0]$ and
        $PE_{(pos, i=1)} = [\cos 0, \cos 0, \cos 0, \cos 0]$ for $pos = 0, \dots, 3$.
        seqlab: column 0 is $\sin(pos)$, $[0, 0.841, 0.909, 0.141]$ for $pos = 0, \dots, 3$, and column 1
        $\cos(pos)$, $[1, 0.540, -0.416, -0.990]$; only position 0 is $[\sin 0, \cos 0, \sin 0, \cos 0] = [0, 1, 0,
        1]$ (with $d_{model} = 4$)."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # max_len, 1
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # d_model/2 (rounded up): the even columns 2i
    angle = pos / 10000.0 ** (two_i / d_model)  # max_len, d_model/2
    table = torch.zeros(max_len, d_model, dtype=torch.float64)  # max_len, d_model
    table[:, 0::2] = torch.sin(angle)  # PE(pos, 2i)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # PE(pos, 2i + 1)
    return table.to(dtype or torch.get_default_dtype())


class SinusoidalPositions(nn.Module):
    """Fixed sinusoidal encodings, PE(pos, 2i) = sin(pos/10000^(2i/d)), PE(pos, 2i+1) = cos(...) (notes: Transformer ›
    Positional encoding; the table is :func:`sinusoidal_table`)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        # not a parameter and not saved: recomputed from the formula
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)  # max_len, d_model

    def forward(self, positions: Tensor) -> Tensor:
        """positions (...,) LongTensor -> (..., d_model)."""
        return self.table[positions]


class LearnedPositions(nn.Module):
    r"""One trained vector per position (as in GPT-2): P[pos] with P of shape (max_len, d_model).

    !!! equation "Pretrained encoders › BERT (beyond the notes)"
        $P_{pos} = \mathrm{row}_{pos}(P),\ P \in \mathbb{R}^{max\_len \times d_{model}}$: learned positions, the
        notes' $P$ as a trained table (BERT, GPT-2) instead of the sinusoids.
        option: model.positions = "learned"; presets: lm-bpe, lm-char"""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)  # max_len, d_model

    def forward(self, positions: Tensor) -> Tensor:
        """positions (...,) LongTensor -> (..., d_model)."""
        return self.table(positions)
