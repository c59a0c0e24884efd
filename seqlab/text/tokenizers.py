"""Tokenizers with one interface: text -> ids -> text (notes: Tokens, "Tokenisation").

Every tokenizer has ``encode(text) -> list[int]``, ``decode(ids) -> str``, ``vocab_size``, the
special ids ``pad_id``, ``unk_id``, ``sos_id``, ``eos_id`` and ``to_dict()`` / ``save(path)``
(JSON, written atomically); :func:`load_tokenizer` reads any of them back, dispatching on the
``"kind"`` key. The three kinds:

- ``char``  one id per character (a :class:`Vocab` of characters). ``decode(encode(s)) == s`` for
  text drawn from the trained alphabet; other characters encode to ``<unk>`` and decode as
  U+FFFD (``UNK_CHAR``, the Unicode replacement character), one character per id.
- ``word``  regex split ``\\w+|[^\\w\\s]`` (Unicode-aware, the ``regex`` module), optional
  lowercasing. Whitespace is not kept: decode joins tokens with single spaces, so the round trip
  holds for text whose tokens are separated by single spaces. Unknown words decode as ``<unk>``.
  A vocabulary extended with word vectors' words (:meth:`WordTokenizer.extended`, ``model.vectors_vocab``)
  sets ``case_fallback``: an unknown word is looked up lowercased before it reads as ``<unk>`` (GloVe is
  uncased); :class:`CaseFoldVocab` is the same for a bare word vocabulary (the tagger's).
- ``bpe``   byte-level BPE trained with Hugging Face ``tokenizers`` (GPT-2 style: every byte is a
  base symbol, so nothing is ever unknown and ``decode(encode(s)) == s`` for every str that is
  valid Unicode, i.e. has no lone surrogates). Special-token strings in the text, such as a
  literal ``"<eos>"``, are encoded as ordinary text, never as the special ids.

All kinds use the ids of the notes' vocabulary (Tokens › Vocabulary): ``<pad>`` = 0, ``<unk>`` = 1, ``<sos>`` = 2,
``<eos>`` = 3, and decode drops ``<pad>``, ``<sos>`` and ``<eos>``. ``sos_id`` / ``eos_id`` are ``None`` only for a
BPE tokenizer loaded from a plain ``tokenizer.json`` that lacks those tokens.
"""

from __future__ import annotations

import abc
import functools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import regex

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json, write_json_atomic
from seqlab.text.vocab import EOS, PAD, SOS, SPECIALS, UNK, Vocab

UNK_CHAR = "\ufffd"  # how CharTokenizer.decode shows <unk>: U+FFFD REPLACEMENT CHARACTER
WORD_PATTERN = r"\w+|[^\w\s]"  # a run of word characters, or one other non-space character
_WORD_RE = regex.compile(WORD_PATTERN)
_ONE_WORD_CHAR, _ONE_SPACE = regex.compile(r"\w"), regex.compile(r"\s")

# The array path of split_words: each character's part in WORD_PATTERN. A word character joins its neighbours,
# whitespace separates, any other character is a token of its own ("alone"). A few characters are whitespace to
# str.split but not to the pattern, or the reverse (\x1c-\x1f, U+180E, ...): a text holding one takes the regex.
_WORD, _SPACE, _ALONE, _DISAGREE = range(4)
_ARRAYS_FROM = 256  # characters: below this the regex is as fast as the arrays' set-up


@functools.lru_cache(maxsize=None)
def _kind(code: int) -> int:
    """A character's part in WORD_PATTERN (_WORD, _SPACE, _ALONE) or _DISAGREE."""
    char = chr(code)
    if _ONE_WORD_CHAR.fullmatch(char):
        return _WORD
    space = _ONE_SPACE.fullmatch(char) is not None
    if space != char.isspace():
        return _DISAGREE
    return _SPACE if space else _ALONE


_ASCII_KIND = np.array([_kind(c) for c in range(128)], dtype=np.uint8)


def split_words(text: str, lowercase: bool = False) -> list[str]:
    """The word tokenizer's split: ``\\w+|[^\\w\\s]`` over the (optionally lowercased) text.

    A longer text takes a path about three times faster with the same result (tests/test_tokenizers.py checks
    the two against each other): a space on both sides of every character that is a token of its own, found with
    arrays, then ``str.split``."""
    if lowercase:
        text = text.lower()
    if len(text) < _ARRAYS_FROM:
        return _WORD_RE.findall(text)
    try:
        codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)  # (n,) code points
    except UnicodeEncodeError:  # a lone surrogate
        return _WORD_RE.findall(text)
    if text.isascii():
        kind = _ASCII_KIND[codes]
    else:
        kind = _ASCII_KIND[np.minimum(codes, 127)]
        wide = np.flatnonzero(codes > 127)
        distinct, which = np.unique(codes[wide], return_inverse=True)
        kind[wide] = np.array([_kind(int(c)) for c in distinct], dtype=np.uint8)[which]
    if (kind == _DISAGREE).any():
        return _WORD_RE.findall(text)
    alone = np.flatnonzero(kind == _ALONE)
    if not alone.size:
        return text.split()
    spaced = np.insert(codes, np.concatenate([alone, alone + 1]), ord(" "))  # " c " for every lone c
    return spaced.tobytes().decode("utf-32-le").split()


class _Texts:
    """A str or an iterable of str as an iterator of str (a bare str is never iterated by characters), read
    lazily so that a corpus streams through training; :meth:`check` after the pass refuses a corpus with no
    text (only whitespace, or nothing)."""

    def __init__(self, text: str | Iterable[str]):
        self._items = iter([text] if isinstance(text, str) else text)
        self._seen_text = False

    def __iter__(self):
        for t in self._items:
            self._seen_text = self._seen_text or bool(t.strip())
            yield t

    def check(self) -> None:
        if not self._seen_text:
            raise SeqlabError("empty corpus: no text to train the tokenizer on; give a non-empty text or file")


class Tokenizer(abc.ABC):
    """The interface every tokenizer implements (see the module docstring)."""

    kind: ClassVar[str]
    pad_id: int
    unk_id: int
    sos_id: int | None
    eos_id: int | None

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids: every id in ``range(vocab_size)`` can be decoded."""

    @abc.abstractmethod
    def encode(self, text: str) -> list[int]:
        """Text -> token ids (no <sos>/<eos> added)."""

    @abc.abstractmethod
    def decode(self, ids: Iterable[int]) -> str:
        """Token ids -> text, dropping <pad>, <sos> and <eos>."""

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict with a ``"kind"`` key; :func:`load_tokenizer` reverses it."""

    @classmethod
    @abc.abstractmethod
    def from_dict(cls, d: dict[str, Any]) -> Tokenizer:
        """The inverse of :meth:`to_dict`."""

    def decode_generated(self, ids: Iterable[int]) -> str:
        """Token ids a model generated -> text, every special token dropped: <pad>, <sos> and <eos> as
        :meth:`decode` drops them, and <unk> too, which :meth:`decode` shows (a character vocabulary as U+FFFD,
        which in generated text reads as a broken character)."""
        return self.decode(i for i in ids if int(i) != self.unk_id)

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_dict` as JSON, atomically (temporary file, then rename)."""
        return write_json_atomic(path, self.to_dict())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"


class _VocabTokenizer(Tokenizer):
    """Shared body of the char and word tokenizers: split text into tokens, look them up in a Vocab."""

    unk_text: ClassVar[str]  # what decode writes for <unk>

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self.pad_id, self.unk_id, self.sos_id, self.eos_id = vocab.pad_id, vocab.unk_id, vocab.sos_id, vocab.eos_id
        self._dropped = {vocab.pad_id, vocab.sos_id, vocab.eos_id}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @abc.abstractmethod
    def split(self, text: str) -> list[str]:
        """Text -> tokens."""

    @abc.abstractmethod
    def join(self, tokens: list[str]) -> str:
        """Tokens -> text."""

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(self.split(text))

    def decode(self, ids: Iterable[int]) -> str:
        tokens = []
        for i in ids:
            i = int(i)
            if i in self._dropped:
                continue
            tokens.append(self.unk_text if i == self.unk_id else self.vocab.itos(i))
        return self.join(tokens)


class CharTokenizer(_VocabTokenizer):
    """One token per character; ``<unk>`` decodes as U+FFFD."""

    kind = "char"
    unk_text = UNK_CHAR

    @classmethod
    def train(cls, text: str | Iterable[str], min_freq: int = 1, max_size: int | None = None) -> CharTokenizer:
        """Vocabulary of the characters of ``text`` (a str or an iterable of str, read once, piece by piece), by
        frequency."""
        texts, counts = _Texts(text), Counter()
        for t in texts:
            counts.update(t)  # in text order: first occurrences break ties
        texts.check()
        return cls(Vocab.from_counts(counts, min_freq=min_freq, max_size=max_size))

    def split(self, text: str) -> list[str]:
        return list(text)

    def join(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "vocab": self.vocab.tokens}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CharTokenizer:
        return cls(Vocab(_field(d, "vocab", list)))


def vector_words(words: Sequence[str], n: int, lowercase: bool = False,
                 fits: Callable[[str], bool] | None = None) -> list[str]:
    """The words to add to a vocabulary from word vectors (Lample et al. 2016 add the pretrained embeddings'
    words): the first ``n`` of ``words`` (a vectors file's order, most frequent first for GloVe and word2vec),
    lowercased with ``lowercase`` (each form once), without those holding whitespace or, with ``fits``, those it
    refuses (words a tokenizer would never produce)."""
    out: dict[str, None] = {}  # insertion-ordered set
    for word in words[:n]:
        word = word.lower() if lowercase else word
        if word and not any(ch.isspace() for ch in word) and (fits is None or fits(word)):
            out[word] = None
    return list(out)


def extend_vocab(vocab: Vocab, words: Iterable[str]) -> list[str]:
    """The tokens of ``vocab`` (id order) followed by those of ``words`` it lacks, in their order: the ids of the
    words already in it are kept."""
    tokens = vocab.tokens
    seen = set(tokens)
    for word in words:
        if word not in seen:
            seen.add(word)
            tokens.append(word)
    return tokens


def _fold_encode(stoi: dict[str, int], tokens: Iterable[str], unk: int) -> list[int]:
    """Token ids, an unknown token looked up lowercased before it reads as <unk>."""
    get = stoi.get
    return [i if (i := get(t)) is not None else get(t.lower(), unk) for t in tokens]


class CaseFoldVocab(Vocab):
    """A word :class:`Vocab` whose unknown tokens are looked up lowercased before they read as ``<unk>``: a
    vocabulary extended with uncased word vectors' words (the tagger's ``vocab.json`` with ``model.vectors_vocab``
    > 0, saved with ``"case_fallback": true``; :func:`load_word_vocab` reads either kind back)."""

    def stoi(self, token: str) -> int:
        return _fold_encode(self._stoi, (token,), self.unk_id)[0]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        return _fold_encode(self._stoi, tokens, self.unk_id)

    def to_dict(self) -> dict:
        return {**super().to_dict(), "case_fallback": True}


def load_word_vocab(path: str | os.PathLike) -> Vocab:
    """A word vocabulary saved by :meth:`Vocab.save`: a :class:`CaseFoldVocab` when saved as one (``"case_fallback":
    true``), else a plain :class:`Vocab` (every vocabulary saved before the flag existed)."""
    d = read_json(path, "vocabulary", "check the path, or re-create it with save()")
    vocab = Vocab.from_dict(d)
    return CaseFoldVocab(vocab.tokens) if d.get("case_fallback") else vocab


class WordTokenizer(_VocabTokenizer):
    """Regex word split (``\\w+|[^\\w\\s]``), optional lowercasing; decode joins with single spaces. With
    ``case_fallback`` (set by :meth:`extended`) an unknown word is looked up lowercased before it reads as
    <unk>."""

    kind = "word"
    unk_text = UNK

    def __init__(self, vocab: Vocab, lowercase: bool = False, case_fallback: bool = False):
        super().__init__(CaseFoldVocab(vocab.tokens) if case_fallback and not isinstance(vocab, CaseFoldVocab)
                         else vocab)
        self.lowercase = lowercase

    @property
    def case_fallback(self) -> bool:
        """Whether an unknown word is looked up lowercased before it reads as <unk> (a vocabulary extended with
        word vectors' words, :meth:`extended`)."""
        return isinstance(self.vocab, CaseFoldVocab)

    @classmethod
    def train(
        cls,
        text: str | Iterable[str],
        lowercase: bool = False,
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> WordTokenizer:
        """Vocabulary of the words of ``text`` (a str or an iterable of str, read once, piece by piece), by
        frequency. Pieces must be cut at whitespace (a word cut in two would count as two)."""
        texts, counts = _Texts(text), Counter()
        for t in texts:
            counts.update(split_words(t, lowercase))
        texts.check()
        return cls(Vocab.from_counts(counts, min_freq=min_freq, max_size=max_size), lowercase)

    def extended(self, words: Sequence[str], n: int) -> WordTokenizer:
        """This tokenizer with the words of :func:`vector_words` (the first ``n`` of a vectors file's ``words``,
        lowercased when this tokenizer lowercases, each a word its split produces) it lacks appended in order,
        and ``case_fallback`` on: a word never seen in training but known to the vectors gets its own id, and so
        its pretrained vector, instead of <unk>."""
        new = vector_words(words, n, self.lowercase, fits=lambda w: split_words(w) == [w])
        return WordTokenizer(Vocab(extend_vocab(self.vocab, new)), self.lowercase, case_fallback=True)

    def split(self, text: str) -> list[str]:
        return split_words(text, self.lowercase)

    def join(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "lowercase": self.lowercase, "pattern": WORD_PATTERN, "vocab": self.vocab.tokens}
        return {**d, "case_fallback": True} if self.case_fallback else d  # absent: the JSON of earlier versions

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WordTokenizer:
        if d.get("pattern", WORD_PATTERN) != WORD_PATTERN:
            raise SeqlabError(
                f"word tokenizer uses pattern {d['pattern']!r}, this seqlab splits with {WORD_PATTERN!r}; retrain it"
            )
        return cls(Vocab(_field(d, "vocab", list)), lowercase=bool(d.get("lowercase", False)),
                   case_fallback=bool(d.get("case_fallback", False)))


class BPETokenizer(Tokenizer):
    """Byte-level BPE (Hugging Face ``tokenizers``): ByteLevel pre-tokenizer without a prefix space,
    ByteLevel decoder, no normalizer (so no text is changed), specials at ids 0..3."""

    kind = "bpe"
    BYTES = 256  # the base alphabet: one symbol per byte value

    def __init__(self, hf_tokenizer):
        tok = hf_tokenizer
        # A literal "<eos>" in the text is ordinary text: without this, HF matches special-token strings
        # in the input and decode(skip_special_tokens) would drop them, breaking the round trip.
        # (The flag is not stored in tokenizer.json, so it is set here on every construction.)
        tok.encode_special_tokens = True
        ids = {s: tok.token_to_id(s) for s in SPECIALS}
        missing = [s for s in (PAD, UNK) if ids[s] is None]
        if missing:
            raise SeqlabError(f"BPE tokenizer has no {' or '.join(missing)} token; train it with BPETokenizer.train()")
        self._tok = tok
        self.pad_id, self.unk_id, self.sos_id, self.eos_id = ids[PAD], ids[UNK], ids[SOS], ids[EOS]

    @classmethod
    def train(cls, texts: str | Iterable[str], vocab_size: int, min_frequency: int = 2) -> BPETokenizer:
        """Learn ``vocab_size - 260`` merges (256 byte symbols and 4 specials come first) from ``texts`` (a str or
        an iterable of str, read once; pieces cut where a pre-token starts give the merges of the whole text)."""
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, models, pre_tokenizers, trainers

        smallest = cls.BYTES + len(SPECIALS)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < smallest:
            raise SeqlabError(
                f"BPE vocab_size must be an integer >= {smallest} ({cls.BYTES} byte symbols + {len(SPECIALS)} "
                f"special tokens), got {vocab_size!r}; raise it"
            )
        if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
            raise SeqlabError(f"min_frequency must be an integer >= 1, got {min_frequency!r}")
        tok = HFTokenizer(models.BPE(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(SPECIALS),  # ids 0..3 in this order
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        stream = _Texts(texts)
        tok.train_from_iterator(stream, trainer)
        stream.check()
        return cls(tok)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        try:
            return self._tok.encode(text, add_special_tokens=False).ids
        except TypeError:
            if not isinstance(text, str):
                raise
            # tokenizers refuses a str that cannot be UTF-8 encoded (a lone surrogate): say where it is
            bad = next(i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff")
            raise SeqlabError(
                f"text has a lone surrogate at character {bad}, which is not valid Unicode; remove it"
            ) from None

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Encode many texts at once (in parallel threads inside ``tokenizers``)."""
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        # skip_special_tokens drops <pad>, <sos>, <eos> (and <unk>, which byte-level BPE never produces)
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def to_json(self) -> str:
        """The Hugging Face ``tokenizer.json`` text (loadable by ``tokenizers``, ``transformers`` and
        :func:`load_tokenizer`)."""
        return self._tok.to_str()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tokenizer": self.to_json()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BPETokenizer:
        return cls.from_json(_field(d, "tokenizer", str))

    @classmethod
    def from_json(cls, text: str) -> BPETokenizer:
        from tokenizers import Tokenizer as HFTokenizer

        try:
            tok = HFTokenizer.from_str(text)
            # a damaged file can load and then panic in Rust on first use: try it once here, so that it is refused
            tok.decode(tok.encode(_PROBE, add_special_tokens=False).ids)
        except BaseException as e:  # tokenizers' own Exception type, or pyo3's PanicException (a BaseException)
            if isinstance(e, SeqlabError) or not (isinstance(e, Exception) or type(e).__name__ == "PanicException"):
                raise
            raise SeqlabError(f"not a valid Hugging Face tokenizer JSON ({e}); re-create it with save()") from None
        return cls(tok)


_PROBE = "the cat, <eos> \u00e9 \U0001f600 \n\t 123"  # letters, a special, accents, an emoji, spaces


KINDS: dict[str, type[Tokenizer]] = {cls.kind: cls for cls in (CharTokenizer, WordTokenizer, BPETokenizer)}


def _field(d: dict[str, Any], key: str, typ: type) -> Any:
    value = d.get(key)
    if not isinstance(value, typ):
        raise SeqlabError(
            f"{d.get('kind')} tokenizer JSON lacks a {typ.__name__} field {key!r}; re-create it with save()"
        )
    return value


def train_configured(data, text) -> Tokenizer:
    """The tokenizer ``data.tokenizer`` names ("char" | "word" | "bpe"), trained on ``text`` (a str or an iterable
    of str, read once) with the ``data.*`` keys that shape it: min_freq, max_size (0 = no limit), lowercase
    (word), vocab_size (bpe)."""
    max_size = data.max_size or None
    if data.tokenizer == "char":
        return CharTokenizer.train(text, min_freq=data.min_freq, max_size=max_size)
    if data.tokenizer == "word":
        return WordTokenizer.train(text, lowercase=data.lowercase, min_freq=data.min_freq, max_size=max_size)
    return BPETokenizer.train(text, vocab_size=data.vocab_size)


def load_tokenizer(path_or_dict: str | os.PathLike | dict[str, Any]) -> Tokenizer:
    """Load a tokenizer saved by ``save()`` (or given as its ``to_dict()``), dispatching on ``"kind"``.

    A plain Hugging Face ``tokenizer.json`` (no ``"kind"``, has a ``"model"``) loads as a
    :class:`BPETokenizer`; it must contain the ``<pad>`` and ``<unk>`` tokens.
    """
    if isinstance(path_or_dict, dict):
        d = path_or_dict
    else:
        d = read_json(path_or_dict, "tokenizer", "check the path, or re-create it with save()")
    if not isinstance(d, dict):
        raise SeqlabError("tokenizer JSON must be an object with a \"kind\" key; re-create it with save()")
    if "kind" not in d and "model" in d:
        return BPETokenizer.from_json(json.dumps(d))
    cls = KINDS.get(d.get("kind")) if isinstance(d.get("kind"), str) else None  # a list or dict is unhashable
    if cls is None:
        raise SeqlabError(f"unknown tokenizer kind {d.get('kind')!r}; expected one of {sorted(KINDS)}")
    return cls.from_dict(d)
