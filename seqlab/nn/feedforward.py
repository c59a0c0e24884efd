"""Position-wise feed-forward network: FFN(x) = W2 · act(W1 · x + b1) + b2.

The notes' Transformer › Feed-forward network (with ReLU): W1 is (d_model -> d_ff), W2 is (d_ff -> d_model),
applied to every position independently. ``gelu`` is the exact form x·Φ(x) (erf; torch's default, BERT);
``gelu_tanh`` is the tanh approximation 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) that GPT-2 was
trained with (Hendrycks & Gimpel 2016, eq. in §2; Hugging Face calls it ``gelu_new``).
"""

from __future__ import annotations

from torch import Tensor, nn

from seqlab.base.errors import SeqlabError
from seqlab.nn.dropout import Dropout

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "gelu_tanh": lambda: nn.GELU(approximate="tanh")}


class FeedForward(nn.Module):
    r"""W2 · act(W1 · x + b1) + b2 with act in {relu, gelu, gelu_tanh} (notes: Transformer › Feed-forward network).

    !!! equation "Transformer › Feed-forward network"
        $\mathrm{FFN}(x) = W_2\, \mathrm{ReLU}(W_1 x + b_1) + b_2$: the notes' position-wise network, $d_{model}
        \to d_{ff} \to d_{model}$, applied to every position alone.
        option: model.activation = "relu"; presets: mt-transformer

    !!! equation "Transformer › Feed-forward network"
        $\mathrm{ReLU}(T) = \max(0, T)$: the notes' activation, element-wise.
        option: model.activation = "relu"; presets: mt-transformer

    !!! equation "Pretrained encoders › BERT (beyond the notes)"
        $\mathrm{FFN}(x) = W_2\, \mathrm{GELU}(W_1 x + b_1) + b_2,\ \mathrm{GELU}(x) = x\, \Phi(x)$: the
        feed-forward network with BERT's activation in place of ReLU, seqlab's default (``gelu_tanh``: GPT-2's
        $0.5 x (1 + \tanh(\sqrt{2/\pi}(x + 0.044715 x^3)))$).
        default: model.activation = "gelu"; presets: mt-transformer = "relu"

    !!! departure "Transformer › Feed-forward network"
        notes: ReLU.
        seqlab: GELU by default (the exact $x\, \Phi(x)$) and in every Transformer preset but ``mt-transformer``,
        which uses ReLU; ``model.activation`` chooses ``relu``, ``gelu`` or ``gelu_tanh``.
        default: model.activation = "gelu"; presets: mt-transformer = "relu"

    !!! departure "Transformer › Feed-forward network (slip in the notes)"
        notes: $F(x) = W_2\, \mathrm{ReLU}(W_1 x + b_1) + b_1$, the second bias written $b_1$ again (with
        another shape); in the named-tensor lecture $b^2 \in \mathbb{R}^{hid: d_{ff}}$.
        seqlab: two biases, $b_1 \in \mathbb{R}^{d_{ff}}$ and $b_2 \in \mathbb{R}^{d_{model}}$ (the output's
        width)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise SeqlabError(f"unknown activation {activation!r}; use one of {', '.join(ACTIVATIONS)}")
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)  # W1, b1
        self.act = ACTIVATIONS[activation]()
        self.dropout = Dropout(dropout)  # on the hidden units, as torch.nn.TransformerEncoderLayer does
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)  # W2, b2

    def forward(self, x: Tensor) -> Tensor:
        """x (batch, seq, d_model) -> (batch, seq, d_model), through (batch, seq, d_ff)."""
        return self.w2(self.dropout(self.act(self.w1(x))))
