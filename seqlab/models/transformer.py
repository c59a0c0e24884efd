"""The Transformer: encoder, decoder, encoder-decoder and decoder-only language model.

Equations (notes: Transformer): the tags of :class:`Embedding`, :class:`EncoderLayer` and :class:`TransformerLM`;
the norm placements :mod:`seqlab.nn.norm`, attention :mod:`seqlab.nn.attention`, positions :mod:`seqlab.nn.positions`,
FFN :mod:`seqlab.nn.feedforward`. Masks: boolean, True = may attend (:mod:`seqlab.nn.masks`); padding True = real.

One return type per method: ``forward`` (``encode``/``decode`` of the encoder-decoder) returns the output, and
``forward_with_weights`` (``encode_with_weights``/``decode_with_weights``) the same output with every layer's
attention weights, an :class:`AttendedLayers` (computed on the equations path): the same ``forward`` called with an
:class:`AttentionRecord` that collects them, one flow. ``TransformerLM.step`` is
the compiled decoding step: it skips ``forward``'s checks and reads no Python counter, so that torch.compile makes
one graph for every position.

Shapes: batch; seq (src, tgt: source and target lengths); d_model; head; vocab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_positive, check_size
from seqlab.nn.attention import IMPLS, KVCache, LayerKV, MultiHeadAttention, check_heads
from seqlab.nn.dropout import Dropout
from seqlab.nn.feedforward import ACTIVATIONS, FeedForward
from seqlab.nn.masks import combine, key_padding_to_attn
from seqlab.nn.norm import PLACEMENTS, Residual
from seqlab.nn.positions import LearnedPositions, SinusoidalPositions, check_positions
from seqlab.vectors.start import TranslationVectors

POSITIONS = {"sinusoidal": SinusoidalPositions, "learned": LearnedPositions}


@dataclass(frozen=True, kw_only=True)
class TransformerConfig:
    """The fields every Transformer shares; layers and stacks take any config derived from it."""

    n_layers: int = 6  # layers per stack (the encoder-decoder has n_layers in each)
    n_heads: int = 8  # attention heads; depth = d_model / n_heads
    d_model: int = 512  # width of the residual stream
    d_ff: int = 2048  # hidden width of the feed-forward network
    max_len: int = 512  # most positions a forward pass may see (cache included)
    dropout: float = 0.1  # on embeddings, attention weights, FFN hidden units and residual branches
    norm: str = "pre"  # LayerNorm placement: "pre" x+f(LN(x)), "post" LN(x+f(x)), "sublayer" LN(f(x))+x
    positions: str = "sinusoidal"  # "sinusoidal" (the notes' positional encoding) or "learned"
    activation: str = "gelu"  # FFN activation: "gelu" (exact), "gelu_tanh" (GPT-2's approximation) or "relu"
    bias: bool = True  # biases in the attention and FFN projections
    tie_embeddings: bool = True  # the output projection shares the (target) token embedding matrix
    scale_embeddings: bool = False  # multiply token embeddings by sqrt(d_model) (the notes; not their worked example)
    layer_norm_eps: float = 1e-5  # epsilon of every LayerNorm
    impl: str = "auto"  # attention path: "auto" (measured rule: seqlab.nn.attention.attention_path), "fused", "equations"

    def __post_init__(self) -> None:
        for name in ("n_layers", "n_heads", "d_model", "d_ff", "max_len"):
            check_positive(name, getattr(self, name))
        check_heads(self.d_model, self.n_heads)
        _check_choice("norm", self.norm, PLACEMENTS)
        _check_choice("positions", self.positions, POSITIONS)
        _check_choice("activation", self.activation, ACTIVATIONS)
        _check_choice("impl", self.impl, IMPLS)
        if not 0.0 <= self.dropout < 1.0:
            raise SeqlabError(f"dropout={self.dropout} is outside [0, 1); use e.g. 0.1, or 0 to turn it off")
        if not self.layer_norm_eps > 0:
            raise SeqlabError(f"layer_norm_eps={self.layer_norm_eps} must be > 0; use e.g. 1e-5")


@dataclass(frozen=True, kw_only=True)
class TransformerLMConfig(TransformerConfig):
    """Decoder-only language model (GPT-style)."""

    vocab_size: int | None = None  # tokens in the vocabulary (from the data: None in a run config until read)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("vocab_size", self.vocab_size)


@dataclass(frozen=True, kw_only=True)
class EncoderDecoderConfig(TranslationVectors, TransformerConfig):
    """Encoder-decoder (translation). Separate source and target vocabularies; a joint vocabulary is
    the same size twice, with ``share_embeddings`` to use one matrix for both."""

    src_vocab_size: int | None = None  # tokens in the source vocabulary (from the data, like vocab_size)
    tgt_vocab_size: int | None = None  # tokens in the target vocabulary (from the data, like vocab_size)
    share_embeddings: bool = False  # source and target token embeddings are one matrix (needs equal sizes)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("src_vocab_size", self.src_vocab_size)
        check_size("tgt_vocab_size", self.tgt_vocab_size)
        sized = self.src_vocab_size is not None and self.tgt_vocab_size is not None
        if self.share_embeddings and sized and self.src_vocab_size != self.tgt_vocab_size:
            raise SeqlabError(
                f"share_embeddings needs src_vocab_size == tgt_vocab_size (got {self.src_vocab_size} and "
                f"{self.tgt_vocab_size}); use a joint vocabulary or share_embeddings=false"
            )
        self.check_vectors()


def _check_choice(name: str, value: str, choices) -> None:
    if value not in choices:
        raise SeqlabError(f"unknown {name} {value!r}; use one of {', '.join(choices)}")


class Embedding(nn.Module):
    r"""embed(I) = E·I (· sqrt(d_model)) + P, then dropout (notes: Transformer › Embedding; worked example step 1).

    !!! equation "Transformer › Embedding"
        $\mathrm{embed}(X) = E X + P$: the token vectors plus the positions, unscaled (as the notes' worked
        example adds them).
        default: model.scale_embeddings = false; presets: mt-transformer = true

    !!! equation "Transformer › Embedding"
        $\mathrm{embed}(X) = (E X) \sqrt{d_{model}} + P$: the notes' embedding, the token vectors scaled by
        $\sqrt{d_{model}}$ before the positions are added.
        option: model.scale_embeddings = true; presets: mt-transformer

    !!! departure "Transformer › Embedding"
        notes: $\mathrm{embed}(X; E) = (E \cdot X) \sqrt{d_{model}} + P$ in the named-tensor lecture; the worked
        example adds embeddings and PE unscaled.
        seqlab: $E X + P$ by default (the worked example's); ``model.scale_embeddings = true`` scales by
        $\sqrt{d_{model}}$ (the ``mt-transformer`` preset does).
        default: model.scale_embeddings = false; presets: mt-transformer = true"""

    def __init__(self, vocab_size: int, cfg: TransformerConfig) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size)  # a model needs the sizes read from the data
        self.tokens = nn.Embedding(vocab_size, cfg.d_model)  # E: vocab, d_model
        self.positions = POSITIONS[cfg.positions](cfg.d_model, cfg.max_len)  # P: max_len, d_model
        self.scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else None
        self.dropout = Dropout(cfg.dropout)

    def forward(self, ids: Tensor, positions: Tensor) -> Tensor:
        """ids (batch, seq), positions (seq,) or (batch, seq) -> (batch, seq, d_model)."""
        e = self.tokens(ids)  # batch, seq, d_model
        if self.scale is not None:
            e = e * self.scale
        return self.dropout(e + self.positions(positions))  # batch, seq, d_model


class AttendedLayers(NamedTuple):
    """An output with the attention weights of the layers that produced it, first layer first: what every
    ``forward_with_weights`` (``encode_with_weights``, ``decode_with_weights``) below returns."""

    output: Tensor  # a stack's states (batch, seq, d_model) or a model's logits (batch, seq, vocab)
    self_attn: list[Tensor]  # per layer: batch, head, seq_q, seq_k (seq_k = max_len cache slots with a cache)
    cross_attn: list[Tensor]  # per layer: batch, head, tgt, src; empty without cross-attention


@dataclass
class AttentionRecord:
    """The attention weights one pass collects, layer after layer: the ``record`` argument of the layers', stacks'
    and models' ``forward`` (given, each attention takes the equations path and appends its weights), so every
    ``*_with_weights`` method is its ``forward`` with a record, one flow."""

    self_attn: list[Tensor] = field(default_factory=list)  # per layer: batch, head, seq_q, seq_k
    cross_attn: list[Tensor] = field(default_factory=list)  # per layer: batch, head, tgt, src

    def attended(self, output: Tensor) -> AttendedLayers:
        """``output`` with the weights recorded."""
        return AttendedLayers(output, self.self_attn, self.cross_attn)


def _self(record: AttentionRecord | None) -> list[Tensor] | None:
    """Where a self-attention puts its weights: the record's list, or nowhere."""
    return None if record is None else record.self_attn


class EncoderLayer(nn.Module):
    r"""Self-attention then feed-forward, each a residual sublayer (notes: Transformer › Encoder and decoder).

    !!! equation "Transformer › Encoder and decoder (beyond the notes)"
        $T = X + \mathrm{MHA}(\mathrm{lnorm}(X)),\ X' = T + \mathrm{FFN}(\mathrm{lnorm}(T))$: an encoder layer as
        seqlab computes it by default and in every preset that builds seqlab's Transformer ("pre": each sublayer
        reads the normalised stream and adds to it; the stack ends with one more lnorm).
        default: model.norm = "pre"

    !!! equation "Transformer › Encoder and decoder"
        $T = \mathrm{lnorm}(\mathrm{MHA}(X)) + X,\ X' = \mathrm{lnorm}(\mathrm{FFN}(T)) + T$: the notes' layer,
        each sublayer's output normalised before it joins the stream.
        option: model.norm = "sublayer"

    !!! departure "Transformer › Encoder and decoder"
        notes: $T^1 = \mathrm{lnorm}(\mathrm{MHA}(X^0)) + X^0$, $X^1 = \mathrm{lnorm}(\mathrm{FFN}(T^1)) + T^1$:
        each sublayer's output normalised, then added to its input.
        seqlab: "pre" by default and in every preset that builds seqlab's Transformer, $X + f(\mathrm{lnorm}(X))$
        with a final lnorm after the last layer (GPT-2's placement); ``model.norm = "sublayer"`` computes the
        notes' layer, and ``"post"`` the original Transformer's $\mathrm{lnorm}(X + f(X))$. The MiniLM presets
        (``ner-minilm``, ``sentiment-minilm``: ``model.arch = "pretrained"``) are not built here: they load BERT's
        encoder, post-LN as it was pretrained (seqlab.models.pretrained).
        default: model.norm = "pre"
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.bias, cfg.impl)
        self.self_res = Residual(cfg.d_model, cfg.norm, cfg.dropout, cfg.layer_norm_eps)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.dropout, cfg.bias)
        self.ff_res = Residual(cfg.d_model, cfg.norm, cfg.dropout, cfg.layer_norm_eps)

    def forward(self, x: Tensor, mask: Tensor | None = None, record: AttentionRecord | None = None) -> Tensor:
        """x (batch, seq, d_model), mask broadcastable to (batch, head, seq, seq) -> (batch, seq, d_model);
        ``record`` collects the self-attention weights (batch, head, seq, seq)."""
        y = self.self_attn(self.self_res.enter(x), mask=mask, weights=_self(record))  # batch, seq, d_model
        x = self.self_res.leave(x, y)  # batch, seq, d_model
        return self.ff_res(x, self.ff)  # batch, seq, d_model

    def forward_with_weights(self, x: Tensor, mask: Tensor | None = None) -> AttendedLayers:
        """As :meth:`forward`: a one-layer AttendedLayers (self_attn: [(batch, head, seq, seq)])."""
        record = AttentionRecord()
        return record.attended(self(x, mask, record))


class DecoderLayer(nn.Module):
    """Masked (causal) self-attention, cross-attention over the encoder's memory, feed-forward.
    With ``cross_attention=False`` it is a decoder-only (GPT) block."""

    def __init__(self, cfg: TransformerConfig, cross_attention: bool = True) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.bias, cfg.impl, causal=True)
        self.self_res = Residual(cfg.d_model, cfg.norm, cfg.dropout, cfg.layer_norm_eps)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.bias, cfg.impl,
                                                 cross=True)
            self.cross_res = Residual(cfg.d_model, cfg.norm, cfg.dropout, cfg.layer_norm_eps)
        else:
            self.cross_attn = self.cross_res = None
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.dropout, cfg.bias)
        self.ff_res = Residual(cfg.d_model, cfg.norm, cfg.dropout, cfg.layer_norm_eps)

    def forward(self, x: Tensor, memory: Tensor | None = None, mask: Tensor | None = None,
                memory_mask: Tensor | None = None, cache: LayerKV | None = None,
                record: AttentionRecord | None = None) -> Tensor:
        """x (batch, tgt, d_model), memory (batch, src, d_model) -> (batch, tgt, d_model).

        ``mask`` is added to the causal mask of self-attention; ``memory_mask`` masks the memory keys;
        ``cache`` is this layer's :class:`~seqlab.nn.attention.LayerKV`; ``record`` collects the self-attention
        weights (batch, head, tgt, tgt|keys) and the cross-attention weights (batch, head, tgt, src).
        """
        y = self.self_attn(self.self_res.enter(x), mask=mask, cache=cache, weights=_self(record))  # batch, tgt, d
        x = self.self_res.leave(x, y)  # batch, tgt, d_model
        if self.cross_attn is not None:
            cross = None if record is None else record.cross_attn
            y = self.cross_attn(self.cross_res.enter(x), memory, memory_mask, weights=cross)  # batch, tgt, d_model
            x = self.cross_res.leave(x, y)  # batch, tgt, d_model
        return self.ff_res(x, self.ff)  # batch, tgt, d_model

    def forward_with_weights(self, x: Tensor, memory: Tensor | None = None, mask: Tensor | None = None,
                             memory_mask: Tensor | None = None, cache: LayerKV | None = None) -> AttendedLayers:
        """As :meth:`forward`: a one-layer AttendedLayers (self_attn: [(batch, head, tgt, tgt|max_len)],
        cross_attn: [(batch, head, tgt, src)] or [])."""
        record = AttentionRecord()
        return record.attended(self(x, memory, mask, memory_mask, cache, record))


def _final_norm(cfg: TransformerConfig) -> nn.Module:
    """"pre" leaves the residual stream un-normalised, so the stack ends with a LayerNorm (GPT-2)."""
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm == "pre" else nn.Identity()


class Encoder(nn.Module):
    """A stack of n_layers EncoderLayers (+ final LayerNorm for "pre")."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_layers))
        self.norm = _final_norm(cfg)

    def forward(self, x: Tensor, padding: Tensor | None = None, record: AttentionRecord | None = None) -> Tensor:
        """x (batch, src, d_model), padding (batch, src) True = real token -> (batch, src, d_model); ``record``
        collects each layer's self-attention weights (batch, head, src, src).

        ``padding`` is :func:`seqlab.nn.masks.padding_mask`'s polarity, True = a real token (attended), the
        opposite of PyTorch's ``key_padding_mask`` (True = padding, ignored): invert a PyTorch mask (``~mask``)
        before passing it here."""
        mask = None if padding is None else key_padding_to_attn(padding)  # batch, 1, 1, src
        for layer in self.layers:
            x = layer(x, mask, record)  # batch, src, d_model
        return self.norm(x)  # batch, src, d_model

    def forward_with_weights(self, x: Tensor, padding: Tensor | None = None) -> AttendedLayers:
        """As :meth:`forward`: an AttendedLayers with each layer's self-attention weights (batch, head, src, src)."""
        record = AttentionRecord()
        return record.attended(self(x, padding, record))  # batch, src, d_model


class Decoder(nn.Module):
    """A stack of n_layers DecoderLayers (+ final LayerNorm for "pre"), with an optional KV cache."""

    def __init__(self, cfg: TransformerConfig, cross_attention: bool = True) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg, cross_attention) for _ in range(cfg.n_layers))
        self.norm = _final_norm(cfg)

    def _layer_inputs(self, tgt: int, padding: Tensor | None, memory_padding: Tensor | None,
                      cache: KVCache | None) -> tuple[Tensor | None, Tensor | None, list[LayerKV | None]]:
        """The self-attention mask (batch, 1, 1, tgt|keys), the memory mask (batch, 1, 1, src) and each
        layer's slice of the cache (None without one), for ``tgt`` new positions. With a cache the keys are the
        slots up to the new tokens (cache.keys(tgt)), and a padding of max_len slots is cut to them."""
        if cache is not None and padding is not None:
            padding = padding.narrow(1, 0, cache.keys(tgt))  # batch, keys
        mask = None if padding is None else key_padding_to_attn(padding)  # batch, 1, 1, tgt|keys
        memory_mask = None if memory_padding is None else key_padding_to_attn(memory_padding)  # batch, 1, 1, src
        if cache is None:
            return mask, memory_mask, [None] * len(self.layers)
        positions = cache.positions(tgt)  # tgt
        return mask, memory_mask, [cache.layer(i, positions) for i in range(len(self.layers))]

    def forward(self, x: Tensor, memory: Tensor | None = None, padding: Tensor | None = None,
                memory_padding: Tensor | None = None, cache: KVCache | None = None,
                record: AttentionRecord | None = None) -> Tensor:
        """x (batch, tgt, d_model) -> (batch, tgt, d_model).

        ``padding`` marks the self-attention keys (batch, tgt), or (batch, max_len) cache slots with a
        cache; ``memory_padding`` (batch, src). The caller advances the cache afterwards. ``record`` collects
        each layer's weights (:meth:`DecoderLayer.forward`).
        """
        mask, memory_mask, caches = self._layer_inputs(x.shape[1], padding, memory_padding, cache)
        for layer, layer_cache in zip(self.layers, caches):
            x = layer(x, memory, mask, memory_mask, layer_cache, record)  # batch, tgt, d_model
        return self.norm(x)  # batch, tgt, d_model

    def forward_with_weights(self, x: Tensor, memory: Tensor | None = None, padding: Tensor | None = None,
                             memory_padding: Tensor | None = None, cache: KVCache | None = None) -> AttendedLayers:
        """As :meth:`forward`: an AttendedLayers with each layer's self-attention weights (batch, head, tgt,
        tgt|max_len) and, with cross-attention, its cross-attention weights (batch, head, tgt, src)."""
        record = AttentionRecord()
        return record.attended(self(x, memory, padding, memory_padding, cache, record))  # batch, tgt, d_model


def _init_gpt2(model: nn.Module, n_layers: int) -> None:
    """GPT-2 init: weights N(0, 0.02), biases 0, residual projections (W^O, W2) N(0, 0.02 / sqrt(2 n_layers))."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
    for m in model.modules():
        residual_out = m.out if isinstance(m, MultiHeadAttention) else m.w2 if isinstance(m, FeedForward) else None
        if residual_out is not None:
            nn.init.normal_(residual_out.weight, mean=0.0, std=0.02 / math.sqrt(2 * n_layers))


def _new_cache(model: nn.Module, cfg: TransformerConfig, batch: int, device, dtype) -> KVCache:
    p = next(model.parameters())
    depth = cfg.d_model // cfg.n_heads
    return KVCache(cfg.n_layers, batch, cfg.n_heads, cfg.max_len, depth, device or p.device, dtype or p.dtype)


def _check_padding(padding: Tensor | None, batch: int, keys: int) -> None:
    if padding is not None and tuple(padding.shape) != (batch, keys):
        raise SeqlabError(
            f"padding mask has shape {tuple(padding.shape)} but the keys are ({batch}, {keys}); "
            f"pass one True/False per key (with a KV cache: per cache slot)"
        )


class TransformerLM(nn.Module):
    r"""Decoder-only causal language model: embed, n_layers causal blocks, (final LN), W·X^L logits.

    !!! equation "Transformer › Output layer"
        $O = \mathrm{softmax}(W X^L)$: the next-token distribution (logits returned); $W = E$, the token
        embedding matrix, unless ``model.tie_embeddings = false``.
        default: model.tie_embeddings = true for lm/transformer

    !!! departure "Transformer › Output layer"
        notes: $O = \mathrm{softmax}(W X^L)$ with an output matrix $W$ of its own, learned apart from the
        embedding matrix $E$.
        seqlab: $W = E$, one matrix for the embedding and the readout (tied, Press & Wolf 2017), by default and in
        every language-model and translation preset (the Transformer's, and the RNN LMs' and the GRU translator's
        readout the same way); ``model.tie_embeddings = false`` learns a separate $W$.
        default: model.tie_embeddings = true for lm/transformer, lm/lstm, lm/gru, lm/rnn, translate/transformer, translate/seq2seq-attention

    !!! departure "Transformer › Encoder and decoder"
        notes: the Transformer as taught: sinusoidal positions, a ReLU feed-forward network, lnorm after each
        sublayer, embeddings scaled by $\sqrt{d_{model}}$.
        seqlab: ``TransformerLM`` defaults to "pre" norm, sinusoidal positions, GELU and unscaled embeddings, and
        the ``lm-char`` and ``lm-bpe`` presets (tutorial 6's language model) learn their positions; the table
        "The Transformer presets against the notes" below gives every preset's choice.
        default: model.norm = "pre" for lm/transformer
        default: model.positions = "sinusoidal" for lm/transformer; presets: lm-bpe = "learned", lm-char = "learned"
        default: model.activation = "gelu" for lm/transformer
    """

    def __init__(self, cfg: TransformerLMConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = Embedding(cfg.vocab_size, cfg)
        self.decoder = Decoder(cfg, cross_attention=False)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)  # W: d_model -> vocab
        _init_gpt2(self, cfg.n_layers)
        if cfg.tie_embeddings:
            self.head.weight = self.embed.tokens.weight  # one (vocab, d_model) matrix

    def _embed(self, ids: Tensor, cache: KVCache | None, padding: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """The checks of a forward pass, then embed(ids) (batch, seq, d_model) at their positions, and the keys'
        padding (batch, keys) or None."""
        batch, seq = ids.shape
        start = 0 if cache is None else cache.pos
        check_positions(start + seq, self.cfg.max_len, start)
        _check_padding(padding, batch, seq if cache is None else cache.max_len)
        if cache is None:
            positions = torch.arange(seq, device=ids.device)  # seq
        else:
            positions = cache.token_positions(seq)  # seq, or batch, seq with left padding
            padding = combine(None if padding is None else padding.narrow(1, 0, cache.keys(seq)),
                              cache.key_padding(seq))  # batch, keys (or None)
        return self.embed(ids, positions), padding  # batch, seq, d_model

    def forward(self, ids: Tensor, cache: KVCache | None = None, padding: Tensor | None = None,
                record: AttentionRecord | None = None) -> Tensor:
        """ids (batch, seq) -> logits (batch, seq, vocab).

        With a cache the tokens sit at positions cache.pos .. cache.pos + seq - 1, the keys are the
        cache's max_len slots and the cache is advanced by seq. ``padding``: (batch, keys), True = real.
        ``record`` collects each layer's self-attention weights (batch, head, seq, keys).
        """
        x, padding = self._embed(ids, cache, padding)  # batch, seq, d_model
        x = self.decoder(x, None, padding, None, cache, record)  # batch, seq, d_model
        if cache is not None:
            cache.advance(ids.shape[1])
        return self.head(x)  # logits: batch, seq, vocab

    def forward_with_weights(self, ids: Tensor, cache: KVCache | None = None,
                             padding: Tensor | None = None) -> AttendedLayers:
        """As :meth:`forward`: an AttendedLayers, output = the logits (batch, seq, vocab), self_attn = per-layer
        weights (batch, head, seq, keys); cross_attn is empty."""
        record = AttentionRecord()
        return record.attended(self(ids, cache, padding, record))  # logits: batch, seq, vocab

    def step(self, ids: Tensor, cache: KVCache) -> Tensor:
        """The incremental-decoding step: logits (batch, seq, vocab) for ids (batch, seq) at positions
        cache.pos_tensor .., writing their keys/values into the cache.

        Unlike ``forward`` it neither checks the position count nor advances the cache (the caller does
        both), and it reads no Python-side counter, so ``torch.compile`` makes one graph for every position.
        """
        x = self.embed(ids, cache.token_positions(ids.shape[1]))  # batch, seq, d_model
        return self.head(self.decoder(x, padding=cache.key_padding(ids.shape[1]), cache=cache))  # batch, seq, vocab

    @torch.no_grad()
    def attention_maps(self, ids: Tensor, padding: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention weights (batch, head, seq, seq) for ids (batch, seq), for visualisation."""
        return self.forward_with_weights(ids, padding=padding).self_attn

    def new_cache(self, batch: int, device=None, dtype=None) -> KVCache:
        """An empty KV cache for ``batch`` sequences of up to max_len tokens (default: the model's device/dtype)."""
        return _new_cache(self, self.cfg, batch, device, dtype)

    def num_params(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())


class EncoderDecoder(nn.Module):
    """Encoder-decoder Transformer: memory = Encoder(embed(src)); logits = W · Decoder(embed(tgt), memory)."""

    def __init__(self, cfg: EncoderDecoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = Embedding(cfg.src_vocab_size, cfg)
        self.tgt_embed = Embedding(cfg.tgt_vocab_size, cfg)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg, cross_attention=True)
        self.head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)  # W: d_model -> tgt vocab
        _init_gpt2(self, cfg.n_layers)
        if cfg.share_embeddings:
            self.tgt_embed.tokens.weight = self.src_embed.tokens.weight
        if cfg.tie_embeddings:
            self.head.weight = self.tgt_embed.tokens.weight

    def _embed_src(self, src: Tensor, src_padding: Tensor | None) -> Tensor:
        """The checks of an encoder pass, then embed(src) (batch, src, d_model)."""
        check_positions(src.shape[1], self.cfg.max_len)
        _check_padding(src_padding, *src.shape)
        return self.src_embed(src, torch.arange(src.shape[1], device=src.device))  # batch, src, d_model

    def encode(self, src: Tensor, src_padding: Tensor | None = None, record: AttentionRecord | None = None
               ) -> Tensor:
        """src (batch, src) -> memory (batch, src, d_model); ``record`` collects the encoder's weights."""
        return self.encoder(self._embed_src(src, src_padding), src_padding, record)  # batch, src, d_model

    def encode_with_weights(self, src: Tensor, src_padding: Tensor | None = None) -> AttendedLayers:
        """As :meth:`encode`: an AttendedLayers with the memory and the encoder's per-layer self-attention
        weights (batch, head, src, src)."""
        record = AttentionRecord()
        return record.attended(self.encode(src, src_padding, record))  # batch, src, d_model

    def _embed_tgt(self, tgt: Tensor, tgt_padding: Tensor | None, cache: KVCache | None) -> Tensor:
        """The checks of a decoder pass, then embed(tgt) (batch, tgt, d_model) at its positions."""
        batch, seq = tgt.shape
        start = 0 if cache is None else cache.pos
        check_positions(start + seq, self.cfg.max_len, start)
        _check_padding(tgt_padding, batch, seq if cache is None else cache.max_len)
        positions = torch.arange(seq, device=tgt.device) if cache is None else cache.positions(seq)  # tgt
        return self.tgt_embed(tgt, positions)  # batch, tgt, d_model

    def decode(self, tgt: Tensor, memory: Tensor, src_padding: Tensor | None = None,
               tgt_padding: Tensor | None = None, cache: KVCache | None = None,
               record: AttentionRecord | None = None) -> Tensor:
        """tgt (batch, tgt), memory (batch, src, d_model) -> logits (batch, tgt, tgt_vocab).

        The cache holds the decoder's self-attention keys/values (cross-attention is recomputed from memory).
        ``record`` collects the decoder's self- and cross-attention weights."""
        x = self._embed_tgt(tgt, tgt_padding, cache)  # batch, tgt, d_model
        x = self.decoder(x, memory, tgt_padding, src_padding, cache, record)  # batch, tgt, d_model
        if cache is not None:
            cache.advance(tgt.shape[1])
        return self.head(x)  # logits: batch, tgt, tgt_vocab

    def decode_with_weights(self, tgt: Tensor, memory: Tensor, src_padding: Tensor | None = None,
                            tgt_padding: Tensor | None = None, cache: KVCache | None = None) -> AttendedLayers:
        """As :meth:`decode`: an AttendedLayers with the logits, the decoder's per-layer self-attention
        (batch, head, tgt, tgt|max_len) and cross-attention (batch, head, tgt, src) weights."""
        record = AttentionRecord()
        return record.attended(self.decode(tgt, memory, src_padding, tgt_padding, cache, record))

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_padding: Tensor | None = None,
        tgt_padding: Tensor | None = None,
    ) -> Tensor:
        """src (batch, src), tgt (batch, tgt) -> logits (batch, tgt, tgt_vocab) (teacher forcing)."""
        return self.decode(tgt, self.encode(src, src_padding), src_padding, tgt_padding)

    def new_cache(self, batch: int, device=None, dtype=None) -> KVCache:
        """An empty decoder KV cache for ``batch`` sequences."""
        return _new_cache(self, self.cfg, batch, device, dtype)

    def num_params(self) -> int:
        """Number of distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())
