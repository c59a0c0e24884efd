"""Additive (Bahdanau) attention: a small feed-forward network scores each source position.

The notes (Sequence to sequence › Bahdanau attention): the decoder producing ŷ_t pays attention alpha_{t,t'} to
the encoder state a_{t'} = (→a_{t'}, ←a_{t'}) of input x_{t'}; the weights of one output step sum to 1
over the input, and the context is their weighted sum:

    e_{t,t'}     = v^T tanh(W_s s_{t-1} + W_h a_{t'})                  (Bahdanau et al. 2015, eq. 6, A.1.2)
    alpha_{t,t'} = exp(e_{t,t'}) / sum_{t'=1}^{T_x} exp(e_{t,t'})     (the notes; they write the score c_{t,t'})
    c_t          = sum_{t'=1}^{T_x} alpha_{t,t'} a_{t'}                (the notes: G_1 = sum_t alpha_{1,t} a_t)

s_{t-1} is the decoder's previous state (the query). Source padding is excluded from the softmax
with a boolean mask, True = may attend (the one convention of :mod:`seqlab.nn.masks`); a row whose
positions are all masked gets zero weights and a zero context, never NaN (:func:`seqlab.nn.masks.masked_softmax`,
as in scaled dot-product attention).

Shapes: batch; src (source positions t'); query (size of s); key (size of a); attn (length of v).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError
from seqlab.nn.masks import masked_softmax


class AdditiveAttention(nn.Module):
    r"""alpha_t = softmax_{t'}(v^T tanh(W_s s_{t-1} + W_h a_{t'})), c_t = sum_{t'} alpha_{t,t'} a_{t'}.

    The key projection W_h a_{t'} does not depend on t: :meth:`project_keys` computes it once per
    source sentence and :meth:`forward` reuses it at every decoder step.

    !!! equation "Sequence to sequence › Bahdanau attention (beyond the notes)"
        $e_{t,t'} = v^\top \tanh(W_s s_{t-1} + W_h a_{t'})$: the additive score of input $x_{t'}$ for output
        step $t$, a one-layer network of the decoder's previous state and the input's annotation (Bahdanau
        et al.; the notes leave the score $c_{t,t'}$ unspecified).

    !!! equation "Sequence to sequence › Bahdanau attention"
        $\alpha_{t,t'} = \frac{\exp(e_{t,t'})}{\sum_{k=1}^{T_x} \exp(e_{t,k})}$: the attention output step $t$
        pays to input $x_{t'}$; the weights of one step sum to 1 over the input (padding gets 0).

    !!! equation "Sequence to sequence › Bahdanau attention"
        $c_t = \sum_{t'=1}^{T_x} \alpha_{t,t'} a_{t'}$: the context, the annotations $a_{t'} =
        (\overrightarrow{a}_{t'}, \overleftarrow{a}_{t'})$ weighted by the attention.

    !!! departure "Sequence to sequence › Bahdanau attention (slip in the notes)"
        notes: $\alpha_{t,t'} = \frac{\exp\{c_{t,t'}\}}{\sum_{t'=1}^{T_x} \exp\{c_{t,t'}\}}$, the summation
        index reusing the free $t'$; the score $c_{t,t'}$ is left unspecified.
        seqlab: a separate index, $\sum_{k=1}^{T_x} \exp(e_{t,k})$; the score is Bahdanau et al.'s additive
        $e_{t,t'} = v^\top \tanh(W_s s_{t-1} + W_h a_{t'})$, written $e$ because $c_t$ is the context.
    """

    def __init__(self, query_size: int, key_size: int, attn_size: int) -> None:
        super().__init__()
        for name, value in (("query_size", query_size), ("key_size", key_size), ("attn_size", attn_size)):
            if value < 1:
                raise SeqlabError(f"additive attention {name}={value} must be >= 1")
        self.W_s = nn.Linear(query_size, attn_size, bias=False)  # query -> attn
        self.W_h = nn.Linear(key_size, attn_size, bias=False)  # key -> attn
        self.v = nn.Linear(attn_size, 1, bias=False)  # attn -> 1

    def project_keys(self, keys: Tensor) -> Tensor:
        """W_h a_{t'} for every source position: keys (batch, src, key) -> (batch, src, attn)."""
        return self.W_h(keys)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        mask: Tensor | None = None,
        projected_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """query s_{t-1} (batch, query), keys a (batch, src, key), mask (batch, src) True = may attend
        -> context c_t (batch, key), weights alpha_t (batch, src)."""
        wh = self.project_keys(keys) if projected_keys is None else projected_keys  # batch, src, attn
        ws = self.W_s(query)[:, None, :]  # batch, 1, attn
        e = self.v(torch.tanh(ws + wh)).squeeze(-1)  # batch, src: e_{t,t'}
        alpha = masked_softmax(e, mask)  # batch, src: alpha_{t,t'}
        context = torch.bmm(alpha[:, None, :], keys).squeeze(1)  # (batch, 1, src) @ (batch, src, key) -> batch, key
        return context, alpha
