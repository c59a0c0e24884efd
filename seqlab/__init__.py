"""seqlab: sequence models from AR(p) to the Transformer, written from their equations,
verified against reference implementations.

The public API is re-exported here; each name is imported on first use (:func:`seqlab.base.lazy.lazy_exports`,
seqlab's one lazy-loading mechanism) so that ``import seqlab`` (and ``seqlab --help``) stays fast. The folders
below are the layers of docs/architecture.md; a module moved from here is refused with a pointer to its new path
(``seqlab.devices``: docs/architecture.md, "Moved paths").
"""

import typing as _typing

from seqlab.base.lazy import lazy_exports as _lazy_exports
from seqlab.base.version import __version__

# public name -> module that defines it (imported on first attribute access)
_EXPORTS: dict[str, str] = {
    "SeqlabError": "seqlab.base.errors",
    # running and loading
    "train": "seqlab.api",
    "train_run": "seqlab.api",
    "load": "seqlab.api",
    "prepare": "seqlab.api",
    "presets": "seqlab.api",
    "preset_config": "seqlab.api",
    "open_encoder": "seqlab.api",
    "open_vectors": "seqlab.api",
    "Interrupted": "seqlab.api",
    # the trained objects seqlab.train and seqlab.load return, and what their verbs return
    "Trained": "seqlab.tasks.trained",
    "LanguageModel": "seqlab.tasks.lm",
    "Translator": "seqlab.tasks.translate",
    "SequenceTagger": "seqlab.tasks.tag",
    "SentenceClassifier": "seqlab.tasks.classify",
    "Forecaster": "seqlab.tasks.forecast",
    "Embeddings": "seqlab.tasks.word_vectors",
    "TokenScores": "seqlab.tasks.results",
    "Entity": "seqlab.tasks.results",
    "LMAttention": "seqlab.tasks.results",
    "TranslationAttention": "seqlab.tasks.results",
    "EmbeddingMap": "seqlab.tasks.results",
    "export": "seqlab.exporters",
    "RunConfig": "seqlab.base.config",
    "TrainConfig": "seqlab.base.config",
    "DataConfig": "seqlab.base.config",
    "Trainer": "seqlab.training.trainer",
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
    "generate": "seqlab.decoding.decode",
    "Sampling": "seqlab.decoding.decode",
    "to_weight_only": "seqlab.nn.weight_only",
    "perplexity": "seqlab.metrics.lm",
    "from_pretrained": "seqlab.models.pretrained",
    "SentenceEncoder": "seqlab.models.sentence",
    "KeyedVectors": "seqlab.vectors.keyed",
    "BLEU": "seqlab.metrics.bleu",
    "BLEUScore": "seqlab.metrics.bleu",
    "corpus_bleu": "seqlab.metrics.bleu",
    "sentence_bleu": "seqlab.metrics.bleu",
    "corpus_chrf": "seqlab.metrics.chrf",
    "entity_f1": "seqlab.metrics.ner",
}


# The same names for type checkers, which cannot read _EXPORTS (tests/test_typing.py checks that the two agree);
# at run time __getattr__ imports each on first use.
if _typing.TYPE_CHECKING:
    from seqlab.api import (Interrupted as Interrupted, load as load, open_encoder as open_encoder,
                            open_vectors as open_vectors, prepare as prepare, preset_config as preset_config,
                            presets as presets, train as train, train_run as train_run)
    from seqlab.base.config import DataConfig as DataConfig, RunConfig as RunConfig, TrainConfig as TrainConfig
    from seqlab.data.series import read_series as read_series
    from seqlab.data.sources import read_text as read_text
    from seqlab.decoding.decode import generate as generate, Sampling as Sampling
    from seqlab.base.errors import SeqlabError as SeqlabError
    from seqlab.exporters import export as export
    from seqlab.metrics.bleu import (BLEU as BLEU, BLEUScore as BLEUScore, corpus_bleu as corpus_bleu,
                                     sentence_bleu as sentence_bleu)
    from seqlab.metrics.chrf import corpus_chrf as corpus_chrf
    from seqlab.metrics.lm import perplexity as perplexity
    from seqlab.metrics.ner import entity_f1 as entity_f1
    from seqlab.models.autoregressive import (AR as AR, ARConfig as ARConfig, FittedAR as FittedAR,
                                              select_order as select_order)
    from seqlab.models.pretrained import from_pretrained as from_pretrained
    from seqlab.models.sentence import SentenceEncoder as SentenceEncoder
    from seqlab.models.transformer import (EncoderDecoder as EncoderDecoder,
                                           EncoderDecoderConfig as EncoderDecoderConfig, TransformerLM as TransformerLM,
                                           TransformerLMConfig as TransformerLMConfig)
    from seqlab.nn.attention import KVCache as KVCache, MultiHeadAttention as MultiHeadAttention
    from seqlab.nn.weight_only import to_weight_only as to_weight_only
    from seqlab.tasks.classify import SentenceClassifier as SentenceClassifier
    from seqlab.tasks.word_vectors import Embeddings as Embeddings
    from seqlab.tasks.forecast import Forecaster as Forecaster
    from seqlab.tasks.lm import LanguageModel as LanguageModel
    from seqlab.tasks.results import (EmbeddingMap as EmbeddingMap, Entity as Entity, LMAttention as LMAttention,
                                      TokenScores as TokenScores, TranslationAttention as TranslationAttention)
    from seqlab.tasks.tag import SequenceTagger as SequenceTagger
    from seqlab.tasks.trained import Trained as Trained
    from seqlab.tasks.translate import Translator as Translator
    from seqlab.text.tokenizers import (BPETokenizer as BPETokenizer, CharTokenizer as CharTokenizer,
                                        load_tokenizer as load_tokenizer, WordTokenizer as WordTokenizer)
    from seqlab.text.vocab import Vocab as Vocab
    from seqlab.training.trainer import Trainer as Trainer
    from seqlab.vectors.keyed import KeyedVectors as KeyedVectors


__all__ = ["__version__", *_EXPORTS]
__getattr__ = _lazy_exports(__name__, _EXPORTS, globals())[0]  # __dir__ below lists the public names only


def __dir__():
    """The public names only (``__all__``): what the module imports for itself keeps a leading underscore."""
    return sorted(__all__)
