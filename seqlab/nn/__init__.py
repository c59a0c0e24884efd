"""Building blocks, each from its equations: masks (the one mask convention), attention
(scaled dot-product, multi-head, KV cache), positions, feed-forward, norm placement, dropout, weight-only bf16/int8 linear layers.

Import from the modules (``seqlab.nn.attention`` ...) or from here.
"""

from seqlab.nn.attention import (
    Attended,
    KVCache,
    LayerKV,
    MultiHeadAttention,
    attention_equations,
    attention_fused,
    merge_heads,
    set_attention_impl,
    split_heads,
)
from seqlab.nn.dropout import Dropout
from seqlab.nn.feedforward import FeedForward
from seqlab.nn.masks import causal_mask, causal_mask_at, combine, key_padding_to_attn, padding_mask
from seqlab.nn.norm import Residual
from seqlab.nn.positions import LearnedPositions, SinusoidalPositions
from seqlab.nn.weight_only import WeightOnlyLinear, to_weight_only

__all__ = [
    "Attended",
    "Dropout",
    "FeedForward",
    "KVCache",
    "LayerKV",
    "LearnedPositions",
    "MultiHeadAttention",
    "Residual",
    "SinusoidalPositions",
    "WeightOnlyLinear",
    "attention_equations",
    "attention_fused",
    "causal_mask",
    "causal_mask_at",
    "combine",
    "key_padding_to_attn",
    "merge_heads",
    "padding_mask",
    "set_attention_impl",
    "split_heads",
    "to_weight_only",
]
