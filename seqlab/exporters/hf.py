"""Hugging Face directories: a language model as ``GPT2LMHeadModel``, a fine-tuned encoder with its head as
``BertForTokenClassification`` / ``BertForSequenceClassification``, each with its tokenizer.

Written with safetensors and JSON only. The weight names come from the importers' tables
(:mod:`seqlab.models.gpt2_convert`, :mod:`seqlab.models.pretrained`) read backwards, so import and export are one
mapping. ``AutoModelForCausalLM`` / ``AutoModelForTokenClassification`` /
``AutoModelForSequenceClassification`` and ``AutoTokenizer`` load the directories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import Tensor

from seqlab.base.errors import SeqlabError
from seqlab.models import pretrained
from seqlab.models.gpt2_convert import gpt2_config, gpt2_incompatibilities, to_gpt2_tensors
from seqlab.text.hf_tokenizer import hf_tokenizer_files

TO_HF_ACTIVATION = {ours: theirs for theirs, ours in pretrained.HF_ACTIVATIONS.items() if theirs != "gelu_pytorch_tanh"}


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_weights(path: Path, tensors: dict[str, Tensor]) -> None:
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(path), metadata={"format": "pt"})


def export_lm(lm, out: Path) -> str:
    """A GPT-2-compatible run (``lm``, what :func:`seqlab.load` returns) as a ``GPT2LMHeadModel`` directory:
    config.json, generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json."""
    cfg, tok = lm.model.cfg, lm.tokenizer
    bad = gpt2_incompatibilities(cfg, lm.config.arch)
    if bad:
        raise SeqlabError(f"{lm.run_dir} is not GPT-2-compatible: {', '.join(bad)}")
    _write_json(out / "config.json", gpt2_config(cfg, tok.sos_id, tok.eos_id, tok.pad_id))
    ids = {"bos_token_id": tok.sos_id, "eos_token_id": tok.eos_id, "pad_token_id": tok.pad_id}
    _write_json(out / "generation_config.json", {k: v for k, v in ids.items() if v is not None})
    _write_weights(out / "model.safetensors", to_gpt2_tensors(lm.model))
    for name, text in hf_tokenizer_files(tok, cfg.max_len).items():
        (out / name).write_text(text, encoding="utf-8")
    return "GPT2LMHeadModel"


# ------------------------------------------------------------------------------------------------------
# BERT with a head


def bert_config(cfg: pretrained.BertConfig) -> dict[str, Any]:
    """The ``config.json`` of a BertModel computing what our :class:`BertEncoder` with ``cfg`` computes
    (the inverse of :func:`seqlab.models.pretrained.config_from_json`)."""
    return {
        "model_type": "bert", "vocab_size": cfg.vocab_size, "hidden_size": cfg.d_model,
        "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads, "intermediate_size": cfg.d_ff,
        "max_position_embeddings": cfg.max_len, "type_vocab_size": cfg.type_vocab_size,
        "hidden_act": TO_HF_ACTIVATION[cfg.activation], "layer_norm_eps": cfg.layer_norm_eps,
        "hidden_dropout_prob": cfg.dropout, "attention_probs_dropout_prob": cfg.dropout,
        "pad_token_id": cfg.pad_id, "position_embedding_type": "absolute", "initializer_range": 0.02,
        "dtype": "float32",
    }


def bert_tensors(encoder: pretrained.BertEncoder, prefix: str = "bert.") -> dict[str, Tensor]:
    """The encoder's weights under BertModel's names (our packed W^Q;W^K;W^V rows split in three)."""
    params = dict(encoder.named_parameters())
    out = {}
    for ours, theirs in pretrained.weight_table(encoder.cfg.n_layers):
        for part, name in zip(params[ours].detach().chunk(len(theirs)), theirs):
            out[prefix + name] = part
    return out


def _wordpiece_files(tokenizer, max_len: int) -> dict[str, str]:
    """tokenizer.json (no padding, no truncation: transformers sets those per call) and tokenizer_config.json."""
    raw = json.loads(tokenizer.json)
    raw["padding"] = raw["truncation"] = None
    specials = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                "mask_token": "[MASK]"}
    vocab = raw.get("model", {}).get("vocab", {})
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": max_len,
              **{role: t for role, t in specials.items() if t in vocab}, "clean_up_tokenization_spaces": False}
    return {"tokenizer.json": json.dumps(raw, ensure_ascii=False),
            "tokenizer_config.json": json.dumps(config, indent=2) + "\n"}


def export_bert(run, out: Path) -> str:
    """A tagger or classifier fine-tuned from a BERT-style encoder as ``BertForTokenClassification`` or
    ``BertForSequenceClassification`` (``model.pooling = "cls"``), ``id2label`` / ``label2id`` from its labels."""
    from seqlab.models.pretrained_heads import SequenceClassifier, TokenClassifier

    model = run.model
    tokenizer = run.tokenizer  # WordPiece (SubwordTokenizer)
    names = run.labels.names
    tensors = bert_tensors(model.encoder)
    if isinstance(model, TokenClassifier):
        arch = "BertForTokenClassification"
    elif isinstance(model, SequenceClassifier) and model.cfg.pooling == "cls":
        arch = "BertForSequenceClassification"
        tensors["bert.pooler.dense.weight"] = model.pooler.weight
        tensors["bert.pooler.dense.bias"] = model.pooler.bias
    else:
        raise SeqlabError(f"{run.run_dir} has no Hugging Face form: BertForSequenceClassification pools [CLS] "
                          "(model.pooling=cls), this run averages the tokens (model.pooling=mean)")
    tensors["classifier.weight"], tensors["classifier.bias"] = model.head.weight, model.head.bias
    config = {"architectures": [arch], **bert_config(model.encoder.cfg),
              "classifier_dropout": model.cfg.dropout, "hidden_dropout_prob": model.cfg.dropout,
              "attention_probs_dropout_prob": model.cfg.dropout,
              "id2label": {str(i): name for i, name in enumerate(names)},
              "label2id": {name: i for i, name in enumerate(names)}}
    if isinstance(model, SequenceClassifier):
        config["problem_type"] = "single_label_classification"
    _write_json(out / "config.json", config)
    _write_weights(out / "model.safetensors", tensors)
    for name, text in _wordpiece_files(tokenizer, model.cfg.max_len).items():
        (out / name).write_text(text, encoding="utf-8")
    return arch
