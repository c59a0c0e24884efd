"""GPT-2 (Hugging Face ``GPT2LMHeadModel`` layout) <-> our :class:`TransformerLM`, both directions.

GPT-2 is the decoder-only Transformer of the notes (Transformer) with pre-LN placement, learned positions, GELU (the
tanh approximation, ``gelu_new``; ours ``gelu_tanh``), biases and tied input/output embeddings. Its
``Conv1D`` layers store weights as (in, out), the transpose of ``nn.Linear``; the name table below is the
whole mapping, read one way by the importer (:func:`from_gpt2`, :func:`from_gpt2_tensors`) and the other
way by the exporter (:func:`to_gpt2_tensors`, :func:`gpt2_config`). ``config.json`` <-> our config goes
through :func:`config_from_gpt2` / :func:`gpt2_config`; :func:`gpt2_incompatibilities` names what keeps
one of our LMs from being a GPT-2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.text.tokenizers import Tokenizer

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
# GPT-2's entries that hold no weights of their own: the tied output matrix (= wte) and, in older
# checkpoints, the causal-mask buffers
IGNORED_SUFFIXES = ("lm_head.weight", ".attn.bias", ".attn.masked_bias")

# Hugging Face activation_function -> ours (gelu_new and gelu_pytorch_tanh are both the tanh approximation)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
TO_HF_ACTIVATION = {"gelu": "gelu", "gelu_tanh": "gelu_new"}
# our settings GPT-2 has no switch for, and the value GPT-2 fixes (model.activation: see TO_HF_ACTIVATION)
GPT2_SETTINGS = {"norm": "pre", "positions": "learned", "bias": True, "tie_embeddings": True,
                 "scale_embeddings": False}


def weight_table(n_layers: int) -> list[tuple[str, str, bool]]:
    """(our name, GPT-2 name, transpose) for every weight of an ``n_layers`` model."""
    return GLOBAL_TABLE + [(a.format(i=i), b.format(i=i), t) for i in range(n_layers) for a, b, t in LAYER_TABLE]


def _toml(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def gpt2_incompatibilities(cfg, arch: str = "transformer") -> list[str]:
    """What keeps the LM config ``cfg`` (of ``model.arch`` ``arch``) from being a GPT-2:
    ``"model.key=ours (GPT-2: theirs)"`` for each setting that differs."""
    if not isinstance(cfg, TransformerLMConfig):
        return [f"model.arch={arch} (GPT-2: transformer)"]
    bad = [f"model.{key}={_toml(getattr(cfg, key))} (GPT-2: {_toml(value)})"
           for key, value in GPT2_SETTINGS.items() if getattr(cfg, key) != value]
    if cfg.activation not in TO_HF_ACTIVATION:
        bad.insert(2, f"model.activation={cfg.activation} (GPT-2: gelu_tanh, or gelu)")
    return bad


def config_from_gpt2(hf_config, source: str = "the GPT-2 config") -> TransformerLMConfig:
    """Our config for a ``transformers.GPT2Config`` or a GPT-2 ``config.json`` dict; refuses what differs.
    GPT-2's three dropouts become one: its resid_pdrop."""
    raw = hf_config if isinstance(hf_config, dict) else hf_config.to_dict()
    if raw.get("model_type", "gpt2") != "gpt2":
        raise SeqlabError(f"{source}: model_type {raw.get('model_type')!r} is not a GPT-2; give a directory a "
                          "GPT2LMHeadModel was saved to (model_type \"gpt2\")")
    act = raw.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise SeqlabError(f"{source}: GPT-2 activation {act!r} is not supported; use one of "
                          f"{', '.join(ACTIVATIONS)}")
    for key, value in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                       ("add_cross_attention", False)):
        if raw.get(key, value) != value:
            raise SeqlabError(f"{source}: {key}={_toml(raw[key])} is not supported; seqlab's attention has "
                              f"{key}={_toml(value)}")
    try:
        n_embd = raw.get("n_embd", 768)
        return TransformerLMConfig(
            vocab_size=raw.get("vocab_size", 50257), n_layers=raw.get("n_layer", 12), n_heads=raw.get("n_head", 12),
            d_model=n_embd, d_ff=raw.get("n_inner") or 4 * n_embd, max_len=raw.get("n_positions", 1024),
            dropout=float(raw.get("resid_pdrop", 0.1)), norm="pre", positions="learned", activation=ACTIVATIONS[act],
            bias=True,
            tie_embeddings=True, scale_embeddings=False, layer_norm_eps=float(raw.get("layer_norm_epsilon", 1e-5)))
    except SeqlabError as e:  # our field names: say which file they came from
        raise SeqlabError(f"{source}: {e}") from None


def gpt2_config(cfg: TransformerLMConfig, bos_id: int | None = None, eos_id: int | None = None,
                pad_id: int | None = None) -> dict[str, Any]:
    """The ``config.json`` of a ``GPT2LMHeadModel`` computing what ``cfg`` computes (check
    :func:`gpt2_incompatibilities` first). One ``dropout`` becomes GPT-2's three."""
    bad = gpt2_incompatibilities(cfg)
    if bad:
        raise SeqlabError(f"this language model is not GPT-2-compatible: {', '.join(bad)}")
    ids = {"bos_token_id": bos_id, "eos_token_id": eos_id, "pad_token_id": pad_id}
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": cfg.vocab_size, "n_positions": cfg.max_len, "n_embd": cfg.d_model, "n_layer": cfg.n_layers,
        "n_head": cfg.n_heads, "n_inner": cfg.d_ff, "activation_function": TO_HF_ACTIVATION[cfg.activation],
        "layer_norm_epsilon": cfg.layer_norm_eps, "resid_pdrop": cfg.dropout, "embd_pdrop": cfg.dropout,
        "attn_pdrop": cfg.dropout, "initializer_range": 0.02, "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False, "tie_word_embeddings": True,
        "use_cache": True, "dtype": "float32", **{k: v for k, v in ids.items() if v is not None},
    }


def to_gpt2_tensors(model: TransformerLM) -> dict[str, Tensor]:
    """Our weights under GPT-2's names (Conv1D weights transposed; the tied output matrix left out, as
    ``save_pretrained`` does), contiguous, on the CPU."""
    ours = model.state_dict()
    return {theirs: (ours[name].t() if transpose else ours[name]).detach().cpu().contiguous()
            for name, theirs, transpose in weight_table(model.cfg.n_layers)}


def from_gpt2_tensors(cfg: TransformerLMConfig, tensors: dict[str, Tensor], source: str = "the GPT-2 weights",
                      dtype: torch.dtype | None = None) -> TransformerLM:
    r"""A TransformerLM for ``cfg`` holding GPT-2-named ``tensors`` (copied); refuses, naming the entry, a
    missing weight, one the table does not use, or a shape that does not fit the config.

    !!! equation "Pretrained encoders › GPT-2 (beyond the notes)"
        $X' = X + \mathrm{MHA}(\mathrm{lnorm}(X)),\ X'' = X' + \mathrm{FFN}(\mathrm{lnorm}(X'))$: GPT-2's block
        (pre-LN, causal, GELU), our TransformerLM; its ``Conv1D`` computes $x W + b$, so four weight kinds are
        transposed into our ``nn.Linear``'s $x W^\top + b$."""
    # a GPT2LMHeadModel's names, or a bare GPT2Model's (no "transformer." prefix)
    theirs = {k if k.startswith(("transformer.", "lm_head.")) else f"transformer.{k}": v for k, v in tensors.items()}
    table = weight_table(cfg.n_layers)
    used = {name for _, name, _ in table}
    unexpected = sorted(k for k in theirs if k not in used and not k.endswith(IGNORED_SUFFIXES))
    if unexpected:
        raise SeqlabError(f"{source} has weights the config does not describe: {unexpected[:5]}; "
                          "check n_layer in config.json")
    # in the source dtype, so float64 weights are not rounded through float32
    if dtype is None and "transformer.wte.weight" in theirs:
        dtype = theirs["transformer.wte.weight"].dtype
    model = TransformerLM(cfg).to(dtype or torch.float32)
    params = model.state_dict()
    state = {}
    for name, source_name, transpose in table:
        if source_name not in theirs:
            raise SeqlabError(f"{source} lacks {source_name}; is this a GPT2LMHeadModel matching config.json?")
        w = theirs[source_name].t() if transpose else theirs[source_name]
        if tuple(w.shape) != tuple(params[name].shape):
            raise SeqlabError(f"{source}: {source_name} has shape {tuple(theirs[source_name].shape)}, the config "
                              f"gives {tuple(params[name].t().shape if transpose else params[name].shape)}; "
                              "config.json does not describe these weights")
        state[name] = w
    head = theirs.get("lm_head.weight")
    if head is not None and not torch.equal(head, theirs["transformer.wte.weight"]):
        raise SeqlabError(f"{source}: lm_head.weight differs from transformer.wte.weight; seqlab's GPT-2 ties them")
    state["head.weight"] = state["embed.tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise SeqlabError(f"GPT-2 mapping incomplete: missing {missing}, unexpected {unexpected}")
    return model


def from_gpt2(hf_model) -> TransformerLM:
    """Our TransformerLM holding a ``GPT2LMHeadModel``'s weights (copied, same dtype)."""
    return from_gpt2_tensors(config_from_gpt2(hf_model.config), hf_model.state_dict(),
                             "the GPT2LMHeadModel", next(hf_model.parameters()).dtype)


# ------------------------------------------------------------------------------------------------------
# a GPT-2-format directory (model.pretrained of a language model)

DIRECTORY_FILES = "config.json, model.safetensors and tokenizer.json"


class GPT2Directory(NamedTuple):
    """What a GPT-2-format directory holds, read by :func:`read_gpt2_directory`."""

    directory: Path
    config: TransformerLMConfig  # the architecture (config.json); dropout = its resid_pdrop
    tokenizer: Tokenizer  # tokenizer.json as a seqlab tokenizer
    tensors: dict[str, Tensor] | None  # model.safetensors under GPT-2's names (None unless asked for)


def read_gpt2_directory(path: str | Path, weights: bool = True) -> GPT2Directory:
    """A directory a ``GPT2LMHeadModel`` was saved to (Hugging Face layout, safetensors only; a pickle
    ``.bin`` is refused, never opened), e.g. one ``seqlab export RUN --format hf`` wrote. ``weights=False``
    checks that the weights are there without reading them."""
    from seqlab.models.pretrained import read_weights
    from seqlab.text.hf_tokenizer import from_hf_tokenizer

    directory = Path(path).expanduser()
    if not directory.is_dir():
        what = "is a file" if directory.exists() else "not found"
        raise SeqlabError(f"model.pretrained: {directory} {what}; give a GPT-2-format directory ({DIRECTORY_FILES}), "
                          "e.g. one `seqlab export RUN --format hf` wrote")
    if not (directory / "config.json").is_file():
        raise SeqlabError(f"{directory} has no config.json; give a GPT-2-format directory ({DIRECTORY_FILES})")
    raw = read_json(directory / "config.json", "model config", "give a GPT-2 config.json", expect=dict)
    if "model_type" not in raw and "n_embd" not in raw:
        raise SeqlabError(f"{directory / 'config.json'} is not a GPT-2 config (no model_type, no n_embd); give a "
                          "directory a GPT2LMHeadModel was saved to")
    cfg = config_from_gpt2(raw, str(directory / "config.json"))
    has_weights = any((directory / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json"))
    tensors = read_weights(directory) if weights or not has_weights else None  # no weights: read_weights says why
    if not (directory / "tokenizer.json").is_file():
        raise SeqlabError(f"{directory} has no tokenizer.json; seqlab trains the model with the directory's "
                          "tokenizer (`seqlab export` writes one)")
    tokenizer = from_hf_tokenizer((directory / "tokenizer.json").read_text(encoding="utf-8"),
                                  str(directory / "tokenizer.json"))
    if tokenizer.vocab_size > cfg.vocab_size:
        raise SeqlabError(f"{directory}: tokenizer.json has {tokenizer.vocab_size} tokens but config.json only "
                          f"{cfg.vocab_size} embeddings (vocab_size); the tokenizer belongs to another model")
    return GPT2Directory(directory, cfg, tokenizer, tensors)
