"""Residual connection with LayerNorm at one of three placements.

lnorm(X) = (X - mean(X)) / sqrt(var(X) + eps) * gamma + beta (notes: Transformer › Layer norm), over d_model.
A sublayer f (attention or feed-forward) joins the residual stream as

    "pre"       x + f(LN(x))      (GPT-2; the stack ends with a final LayerNorm)
    "post"      LN(x + f(x))      (the original Transformer; torch's norm_first=False)
    "sublayer"  LN(f(x)) + x      (the notes' Transformer: T = lnorm(MHA(X)) + X, X' = lnorm(FFN(T)) + T)

Dropout (when on) applies to f's output just before it joins x (after LN for "sublayer").
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn

from seqlab.base.errors import SeqlabError
from seqlab.nn.dropout import Dropout

PLACEMENTS = ("pre", "post", "sublayer")


class Residual(nn.Module):
    r"""One sublayer's LayerNorm, dropout and residual join, at placement "pre", "post" or "sublayer".

    ``forward(x, f)`` computes the whole connection; layers that need f's extra outputs (attention
    weights) call ``enter(x)`` (the sublayer's input) and ``leave(x, y)`` (the join) themselves.

    !!! equation "Transformer › Layer norm"
        $\mathrm{lnorm}(X; \gamma, \beta) = \frac{X - \mathrm{mean}(X)}{\sqrt{\mathrm{var}(X) + \epsilon}} \odot
        \gamma + \beta$: each position's vector normalised over $d_{model}$, then scaled and shifted
        (``torch.nn.LayerNorm``, tested against the formula).
    """

    def __init__(self, d_model: int, placement: str = "pre", dropout: float = 0.0, eps: float = 1e-5) -> None:
        super().__init__()
        if placement not in PLACEMENTS:
            raise SeqlabError(f"unknown norm placement {placement!r}; use one of {', '.join(PLACEMENTS)}")
        self.placement = placement
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = Dropout(dropout)

    def enter(self, x: Tensor) -> Tensor:
        """The sublayer's input: LN(x) for "pre", x otherwise."""
        return self.norm(x) if self.placement == "pre" else x

    def leave(self, x: Tensor, y: Tensor) -> Tensor:
        r"""Join y = f(enter(x)) with the residual stream x.

        !!! equation "Transformer › Residual connections"
            $T = \mathrm{lnorm}(\mathrm{MHA}(X)) + X$: the notes' placement ("sublayer"): the sublayer's output is
            normalised, then added to its input.
            option: model.norm = "sublayer"

        !!! equation "Transformer › Residual connections (beyond the notes)"
            $X' = \mathrm{lnorm}(X + f(X))$: "post", the original Transformer's and BERT's placement.
            option: model.norm = "post"

        !!! equation "Transformer › Residual connections (beyond the notes)"
            $X' = X + f(\mathrm{lnorm}(X))$: "pre", GPT-2's placement and seqlab's default; the residual stream is
            never normalised, so the stack ends with a LayerNorm.
            default: model.norm = "pre"

        !!! departure "Transformer › Residual connections"
            notes: one placement, $\mathrm{lnorm}(f(X)) + X$.
            seqlab: three, chosen by ``model.norm``: "pre" $X + f(\mathrm{lnorm}(X))$ (the default), "post"
            $\mathrm{lnorm}(X + f(X))$ and "sublayer", the notes'. Dropout, when on, applies to $f(X)$ before the
            join.
            default: model.norm = "pre"
        """
        if self.placement == "pre":
            return x + self.dropout(y)  # x + f(LN(x))
        if self.placement == "post":
            return self.norm(x + self.dropout(y))  # LN(x + f(x))
        return x + self.dropout(self.norm(y))  # LN(f(x)) + x

    def forward(self, x: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
        """x (batch, seq, d_model) -> (batch, seq, d_model)."""
        return self.leave(x, f(self.enter(x)))
