"""seqlab: sequence models from AR(p) to the Transformer, written from their equations,
verified against reference implementations.

The public API is re-exported here; heavy submodules are imported lazily so that
``import seqlab`` (and ``seqlab --help``) stays fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it (imported on first attribute access)
_EXPORTS: dict[str, str] = {
    "SeqlabError": "seqlab.errors",
    # running and loading
    "train": "seqlab.api",
    "train_run": "seqlab.api",
    "load": "seqlab.api",
    "prepare": "seqlab.api",
    "open_encoder": "seqlab.api",
    "open_vectors": "seqlab.api",
    "Interrupted": "seqlab.api",
    # the trained objects seqlab.train and seqlab.load return, and what their verbs return
    "Trained": "seqlab.tasks.trained",
    "LanguageModel": "seqlab.tasks.language_model",
    "Translator": "seqlab.tasks.translate",
    "SequenceTagger": "seqlab.tasks.tag",
    "SentenceClassifier": "seqlab.tasks.classify",
    "Forecaster": "seqlab.tasks.forecast",
    "Embeddings": "seqlab.tasks.embed",
    "TokenScores": "seqlab.tasks.results",
    "Entity": "seqlab.tasks.results",
    "LMAttention": "seqlab.tasks.results",
    "TranslationAttention": "seqlab.tasks.results",
    "EmbeddingMap": "seqlab.tasks.results",
    "export": "seqlab.exporters",
    "RunConfig": "seqlab.config",
    "TrainConfig": "seqlab.config",
    "DataConfig": "seqlab.config",
    "Trainer": "seqlab.trainer",
    # text and data
    "Vocab": "seqlab.text.vocab",
    "CharTokenizer": "seqlab.text.tokenizers",
    "WordTokenizer": "seqlab.text.tokenizers",
    "BPETokenizer": "seqlab.text.tokenizers",
    "load_tokenizer": "seqlab.text.tokenizers",
    "read_text": "seqlab.data.sources",
    "read_series": "seqlab.data.series",
    # models
    "TransformerLM": "seqlab.models.transformer",
    "TransformerLMConfig": "seqlab.models.transformer",
    "EncoderDecoder": "seqlab.models.transformer",
    "EncoderDecoderConfig": "seqlab.models.transformer",
    "MultiHeadAttention": "seqlab.nn.attention",
    "KVCache": "seqlab.nn.attention",
    "AR": "seqlab.models.autoregressive",
    "ARConfig": "seqlab.models.autoregressive",
    "FittedAR": "seqlab.models.autoregressive",
    "select_order": "seqlab.models.autoregressive",
    # decoding and metrics
    "generate": "seqlab.decode",
    "Sampling": "seqlab.decode",
    "to_weight_only": "seqlab.nn.weight_only",
    "perplexity": "seqlab.metrics.lm",
    "from_pretrained": "seqlab.models.pretrained",
    "SentenceEncoder": "seqlab.models.sentence",
    "KeyedVectors": "seqlab.vectors",
    "BLEU": "seqlab.metrics.bleu",
    "BLEUScore": "seqlab.metrics.bleu",
    "corpus_bleu": "seqlab.metrics.bleu",
    "sentence_bleu": "seqlab.metrics.bleu",
    "corpus_chrf": "seqlab.metrics.chrf",
    "entity_f1": "seqlab.metrics.ner",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seqlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = ["__version__", *_EXPORTS]
