"""Load GPT-2 weights (Hugging Face ``GPT2LMHeadModel`` layout) into our :class:`TransformerLM`.

GPT-2 is the decoder-only Transformer of seed 001 with pre-LN placement, learned positions, GELU,
biases and tied input/output embeddings. Its ``Conv1D`` layers store weights as (in, out), the
transpose of ``nn.Linear``; the name table below is the whole mapping.
"""

from __future__ import annotations


from seqlab.errors import SeqlabError
from seqlab.models.transformer import TransformerLM, TransformerLMConfig

# ours <- theirs; {i} is the layer index; "T" marks a Conv1D weight to transpose
LAYER_TABLE = [
    ("decoder.layers.{i}.self_res.norm.weight", "transformer.h.{i}.ln_1.weight", False),
    ("decoder.layers.{i}.self_res.norm.bias", "transformer.h.{i}.ln_1.bias", False),
    ("decoder.layers.{i}.self_attn.qkv.weight", "transformer.h.{i}.attn.c_attn.weight", True),
    ("decoder.layers.{i}.self_attn.qkv.bias", "transformer.h.{i}.attn.c_attn.bias", False),
    ("decoder.layers.{i}.self_attn.out.weight", "transformer.h.{i}.attn.c_proj.weight", True),
    ("decoder.layers.{i}.self_attn.out.bias", "transformer.h.{i}.attn.c_proj.bias", False),
    ("decoder.layers.{i}.ff_res.norm.weight", "transformer.h.{i}.ln_2.weight", False),
    ("decoder.layers.{i}.ff_res.norm.bias", "transformer.h.{i}.ln_2.bias", False),
    ("decoder.layers.{i}.ff.w1.weight", "transformer.h.{i}.mlp.c_fc.weight", True),
    ("decoder.layers.{i}.ff.w1.bias", "transformer.h.{i}.mlp.c_fc.bias", False),
    ("decoder.layers.{i}.ff.w2.weight", "transformer.h.{i}.mlp.c_proj.weight", True),
    ("decoder.layers.{i}.ff.w2.bias", "transformer.h.{i}.mlp.c_proj.bias", False),
]
GLOBAL_TABLE = [
    ("embed.tokens.weight", "transformer.wte.weight", False),
    ("embed.positions.table.weight", "transformer.wpe.weight", False),
    ("decoder.norm.weight", "transformer.ln_f.weight", False),
    ("decoder.norm.bias", "transformer.ln_f.bias", False),
]


def config_from_gpt2(hf_config) -> TransformerLMConfig:
    """Our config for a ``transformers.GPT2Config`` (exact GELU only: ``activation_function="gelu"``)."""
    if hf_config.activation_function != "gelu":
        raise SeqlabError(f"GPT-2 activation {hf_config.activation_function!r} is not supported; use 'gelu'")
    return TransformerLMConfig(
        vocab_size=hf_config.vocab_size, n_layers=hf_config.n_layer, n_heads=hf_config.n_head,
        d_model=hf_config.n_embd, d_ff=hf_config.n_inner or 4 * hf_config.n_embd, max_len=hf_config.n_positions,
        dropout=0.0, norm="pre", positions="learned", activation="gelu", bias=True, tie_embeddings=True,
        scale_embeddings=False, layer_norm_eps=hf_config.layer_norm_epsilon)


def from_gpt2(hf_model) -> TransformerLM:
    """Our TransformerLM holding a ``GPT2LMHeadModel``'s weights (copied, same dtype)."""
    # in the source dtype before loading, so float64 weights are not rounded through float32
    model = TransformerLM(config_from_gpt2(hf_model.config)).to(next(hf_model.parameters()).dtype)
    theirs = hf_model.state_dict()
    table = GLOBAL_TABLE + [(a.format(i=i), b.format(i=i), t) for i in range(model.cfg.n_layers)
                            for a, b, t in LAYER_TABLE]
    ours = {}
    for name, source, transpose in table:
        if source not in theirs:
            raise SeqlabError(f"GPT-2 weights lack {source}; is this a GPT2LMHeadModel?")
        w = theirs[source]
        ours[name] = w.t().contiguous() if transpose else w
    ours["head.weight"] = ours["embed.tokens.weight"]
    missing, unexpected = model.load_state_dict(ours, strict=False)
    if missing or unexpected:
        raise SeqlabError(f"GPT-2 mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model
