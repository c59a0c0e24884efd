"""Word vectors -> a model's embedding E: the config keys and their one check, the vocabulary join with its coverage
logged, and the initialisers, for the tagger, the classifier and either side of a translator alike.

The keys (:class:`EmbeddingInit` for taggers and classifiers, :class:`TranslationVectors` for both translate archs;
one :meth:`VectorKeys.check_vectors` for all): ``model.vectors`` starts E (E_src for a translator) from word vectors
(:func:`load_vectors`: word2vec text or binary, GloVe text, ``.safetensors``, an embedding run or a name such as
``glove-6b-50d``), ``model.tgt_vectors`` E_tgt, ``model.freeze_vectors`` keeps the started matrices fixed, and
``model.vectors_vocab = N`` appends the vectors' first N words that the learned word vocabulary lacks
(:func:`extend_vocabulary`, Lample et al. 2016).

The join (notes: Word embeddings › Embedding matrix, E · o_j = e_j): each vocabulary token's row of E is its vector
(exact match, else case-folded), the others random with the vectors' spread, <pad> zeros
(:meth:`~seqlab.vectors.keyed.KeyedVectors.embedding_matrix`); :func:`start_vectors` logs how many tokens had a
vector, ``embeddings: FOUND of N WHAT from PATH``.

Shapes: vocab (the model's token ids), d_model (the vectors' dimension, E's width). torch is imported only inside the
initialisers (:func:`init_embeddings`), so reading vectors and checking a config never load it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError
from seqlab.text.tokenizers import CaseFoldVocab, Tokenizer, WordTokenizer, extend_vocab, vector_words
from seqlab.text.vocab import Vocab

if TYPE_CHECKING:
    from torch import nn

    from seqlab.vectors.keyed import KeyedVectors

PAD_ID = Vocab.pad_id  # <pad> = 0 in every vocabulary and tokenizer (seqlab.text.vocab): its row of E is zeros


# ------------------------------------------------------------------------------------------------------
# the config keys and their one check


class VectorKeys:
    """The check every model config with word-vector keys runs (:class:`EmbeddingInit`, :class:`TranslationVectors`):
    each rule reads only the keys its config has."""

    vectors: str
    freeze_vectors: bool

    def vector_sides(self) -> dict[str, str]:
        """{"source" | "target": the vectors' path} of the embeddings that start from word vectors (a tagger's or
        classifier's E is its "source")."""
        paths = (("source", self.vectors), ("target", getattr(self, "tgt_vectors", "")))
        return {side: path for side, path in paths if path}

    def check_vectors(self) -> None:
        translates = hasattr(self, "tgt_vectors")
        if self.freeze_vectors and not self.vector_sides():
            raise SeqlabError("model.freeze_vectors needs model.vectors or model.tgt_vectors (word-vectors files); "
                              "set one or model.freeze_vectors=false" if translates else
                              "model.freeze_vectors needs model.vectors (a word-vectors file); set model.vectors "
                              "or model.freeze_vectors=false")
        n = getattr(self, "vectors_vocab", 0)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise SeqlabError(f"model.vectors_vocab={n!r} must be 0 (off) or a positive whole number (words of "
                              "model.vectors to add to the vocabulary); set e.g. model.vectors_vocab=100000")
        if n and not self.vectors:
            raise SeqlabError(f"model.vectors_vocab={n} adds words of model.vectors to the vocabulary, but "
                              "model.vectors is empty; set model.vectors or model.vectors_vocab=0")
        if translates and getattr(self, "tgt_vectors") and getattr(self, "share_embeddings", False):
            raise SeqlabError("model.share_embeddings makes one matrix for both sides, started from model.vectors; "
                              "leave model.tgt_vectors empty")


@dataclass(frozen=True, kw_only=True)
class EmbeddingInit(VectorKeys):
    """The embedding-initialisation fields every tagger and classifier config has."""

    vectors: str = ""  # word vectors for E: word2vec text/binary, GloVe text, .safetensors, an embed run or a name
    # (glove-6b-50d, an installed package's); "" = random
    freeze_vectors: bool = False  # keep E fixed during training (needs vectors)
    vectors_vocab: int = 0  # add the vectors' first N words to the word vocabulary (data.tokenizer=word); 0 = none


@dataclass(frozen=True, kw_only=True)
class TranslationVectors(VectorKeys):
    """The word-vector keys of both translate archs (the recurrent Seq2SeqConfig and the Transformer's
    EncoderDecoderConfig): E_src starts from ``vectors``, E_tgt (and W_o tied to it) from ``tgt_vectors``."""

    vectors: str = ""  # E_src from word vectors: word2vec text/binary, GloVe text, .safetensors or an embed run
    tgt_vectors: str = ""  # E_tgt from word vectors (the target language's), as vectors; "" = random init
    freeze_vectors: bool = False  # keep the matrices started from vectors fixed during training


def check_vectors_vocab(cfg: RunConfig) -> None:
    """``model.vectors_vocab`` > 0 extends a word vocabulary: refused with another ``data.tokenizer`` (before any
    data is read)."""
    n = getattr(cfg.model, "vectors_vocab", 0)
    if n and cfg.data.tokenizer != "word":
        raise SeqlabError(f"model.vectors_vocab={n} adds words of model.vectors to a word vocabulary, but "
                          f"data.tokenizer={cfg.data.tokenizer!r}; set data.tokenizer=word or model.vectors_vocab=0")


# ------------------------------------------------------------------------------------------------------
# reading


def load_vectors(path: str | Path, key: str = "model.vectors") -> KeyedVectors:
    """KeyedVectors from the file, embedding run or name that the config ``key`` names
    (:func:`seqlab.vectors.keyed.read_vectors`: word2vec text or binary, GloVe text, a KeyedVectors ``.safetensors``
    file, an embed run's directory, or ``glove-6b-50d`` and the other names of
    :data:`seqlab.vectors.formats.NAMED_VECTORS` when no file or folder of that name exists)."""
    from seqlab.vectors.formats import NAMED_VECTORS, named_vectors
    from seqlab.vectors.keyed import read_vectors

    if named_vectors(path) is not None:
        return read_vectors(path, key)
    path = Path(path).expanduser()
    if not path.exists():
        raise SeqlabError(f"{key}: {path} is not a file or a run directory; give a word-vectors file (word2vec "
                          "text or binary, GloVe text, .safetensors), an embedding run's directory or a name: "
                          f"{', '.join(NAMED_VECTORS)}")
    return read_vectors(path, key)


class RunVectors:
    """``model.vectors`` read at most once while a run starts: extending the word vocabulary
    (``model.vectors_vocab``) and starting E share one read; :meth:`release` lets them go once E holds them."""

    def __init__(self, cfg: RunConfig):
        self.source: str = getattr(cfg.model, "vectors", "")  # "" for a config without the key (pretrained)
        self._vectors: KeyedVectors | None = None

    def get(self) -> KeyedVectors:
        if self._vectors is None:
            self._vectors = load_vectors(self.source)
        return self._vectors

    def release(self) -> None:
        self._vectors = None


# ------------------------------------------------------------------------------------------------------
# the vocabulary join


V = TypeVar("V", Vocab, Tokenizer)


def extend_vocabulary(cfg: RunConfig, learned: V, vectors: RunVectors, log) -> V:
    """The vocabulary just learned from the training split (a word :class:`Vocab` or a word tokenizer) as is, or
    with ``model.vectors_vocab`` > 0 extended with the vectors' first words that it lacks (lowercased with
    ``data.lowercase``; with ``data.digits_to_zero`` only those whose digits are all 0, the words a split can
    hold; see :mod:`seqlab.tasks.labelling`) and looking unknown words up lowercased."""
    n = getattr(cfg.model, "vectors_vocab", 0)
    if not n:
        return learned
    words = vectors.get().words
    if isinstance(learned, WordTokenizer):
        tokenizer = learned.extended(words, n)  # the words its split can produce
        before, after, out = learned.vocab_size, tokenizer.vocab_size, cast(V, tokenizer)
    elif isinstance(learned, Vocab):  # with data.digits_to_zero (tagging) a word with another digit never occurs
        fits = _zeroed if getattr(cfg.data, "digits_to_zero", False) else None
        vocab = CaseFoldVocab(extend_vocab(learned, vector_words(words, n, cfg.data.lowercase, fits)))
        before, after, out = len(learned), len(vocab), cast(V, vocab)
    else:
        raise SeqlabError("model.vectors_vocab extends a word vocabulary; set data.tokenizer=word")
    log(f"vocabulary: {before:,} from the training data + {after - before:,} of the first {n:,} words of "
        f"{vectors.source} (model.vectors_vocab); unknown words are looked up lowercased too")
    return out


def _zeroed(word: str) -> bool:
    """No decimal digit but 0 (``\\d`` of the tag task's ``zero_digits``): a word ``data.digits_to_zero`` can give."""
    return not any(ch.isdecimal() and ch != "0" for ch in word)


def vocabulary_tokens(tokenizer) -> list[str]:
    """The token strings in id order of a tagger's or classifier's tokenizer, to look up in word vectors: a word
    vocabulary, or a word or char tokenizer (its ``vocab``); sub-word pieces are refused."""
    vocab = tokenizer if isinstance(tokenizer, Vocab) else getattr(tokenizer, "vocab", None)
    if vocab is None:
        raise SeqlabError("model.vectors needs a word (or char) vocabulary, but data.tokenizer=bpe; set "
                          "data.tokenizer=word or leave model.vectors empty")
    return vocab.tokens


def token_texts(tok: Tokenizer) -> list[str]:
    """Each id's text of a translator's tokenizer, to look up in word vectors: a word or char vocabulary's tokens;
    a BPE piece decoded, its leading space dropped (specials and pieces of a character decode to no word)."""
    vocab = getattr(tok, "vocab", None)
    return list(vocab.tokens) if vocab is not None else [tok.decode([i]).strip() for i in range(tok.vocab_size)]


# ------------------------------------------------------------------------------------------------------
# the initialisers (torch inside)


def init_embeddings(embedding: nn.Embedding, tokens: Sequence[str], path: str | Path, seed: int = 0,
                    key: str = "model.vectors", vectors: KeyedVectors | None = None) -> int:
    """Copy word vectors (the file, embedding run or name the config ``key`` names; ``vectors``: those already
    read from it) into E (vocab, d_model): each vocabulary token's vector (exact, else case-folded match), random
    rows with the vectors' spread for the others, zeros for <pad>. Returns how many tokens had a vector."""
    import torch

    kv = load_vectors(path, key) if vectors is None else vectors
    if kv.dim != embedding.embedding_dim:
        raise SeqlabError(f"the vectors in {path} have {kv.dim} dimensions but model.d_model is "
                          f"{embedding.embedding_dim}; set model.d_model={kv.dim}")
    matrix, found = kv.embedding_matrix(tokens, seed=seed)  # vocab, d_model
    matrix[PAD_ID] = 0.0
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(matrix))
    return found


class Side(NamedTuple):
    """One embedding to start from word vectors."""

    key: str  # the config key that names the vectors: model.vectors | model.tgt_vectors
    path: str  # what it names: a file, an embedding run or a name
    embedding: nn.Embedding  # E, (vocab, d_model)
    tokens: Sequence[str]  # the vocabulary's token texts in id order
    what: str  # the tokens in the log line: "words", "tokens", "source word tokens", ...
    seed: int  # seeds the random rows of the tokens without a vector
    vectors: KeyedVectors | None = None  # the vectors already read from path (one read per run), or None


def start_vectors(sides: Iterable[Side], frozen: bool, log) -> None:
    """Start each side's E from its word vectors, logging the vocabulary's coverage, ``embeddings: FOUND of N WHAT
    from PATH`` (`` (frozen)`` with ``model.freeze_vectors``). A resumed run skips this: its checkpoint has E."""
    for side in sides:
        found = init_embeddings(side.embedding, side.tokens, side.path, seed=side.seed, key=side.key,
                                vectors=side.vectors)
        log(f"embeddings: {found:,} of {len(side.tokens):,} {side.what} from {side.path}"
            + (" (frozen)" if frozen else ""))
