"""The vocabulary: token <-> id, with the special tokens of the notes (Tokens › Vocabulary).

The notes ("Construct Vocabulary"): every token gets "some number based on the index of the
constructed dictionary"; a "word not in Vocabulary -> <unk>"; sequences of different lengths
are padded. So the vocabulary starts with four special tokens at fixed ids::

    <pad> = 0   padding (batching.pad_batch fills with it; masks ignore it)
    <unk> = 1   any token that is not in the vocabulary
    <sos> = 2   start of sequence (decoder input)
    <eos> = 3   end of sequence (generation stops here)

and the other ids follow frequency, most frequent first (docs/manual.md, "Rules of the code": "ids follow frequency,
with the special tokens first", never alphabetical). Ties in frequency are broken by first
occurrence in the training data, so the same corpus always gives the same ids.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json, write_json_atomic

PAD = "<pad>"
UNK = "<unk>"
SOS = "<sos>"
EOS = "<eos>"
SPECIALS: tuple[str, ...] = (PAD, UNK, SOS, EOS)  # in id order: <pad>=0, <unk>=1, <sos>=2, <eos>=3


class Vocab:
    """Token <-> id mapping with ``<pad>``=0, ``<unk>``=1, ``<sos>``=2, ``<eos>``=3 (notes: Tokens › Vocabulary).

    Build one from data with :meth:`Vocab.build`; ``Vocab(tokens)`` takes the id-ordered token list
    (specials first), as stored by :meth:`to_dict`.
    """

    pad_id: int = SPECIALS.index(PAD)
    unk_id: int = SPECIALS.index(UNK)
    sos_id: int = SPECIALS.index(SOS)
    eos_id: int = SPECIALS.index(EOS)

    def __init__(self, tokens: Sequence[str]):
        tokens = list(tokens)
        if tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise SeqlabError(
                f"vocabulary must start with the special tokens {list(SPECIALS)}, got {tokens[:len(SPECIALS)]}; "
                "build it with Vocab.build()"
            )
        if not all(isinstance(t, str) for t in tokens):
            raise SeqlabError("vocabulary tokens must all be strings; build it with Vocab.build()")
        index = {t: i for i, t in enumerate(tokens)}
        if len(index) != len(tokens):
            dup = next(t for t, c in Counter(tokens).items() if c > 1)
            raise SeqlabError(f"vocabulary lists the token {dup!r} twice; build it with Vocab.build()")
        self._itos: list[str] = tokens
        self._stoi: dict[str, int] = index

    @classmethod
    def build(
        cls,
        tokens: Iterable[str] | Iterable[Iterable[str]],
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> Vocab:
        r"""Count tokens and assign ids by frequency (descending), ties by first occurrence.

        ``tokens`` is a flat iterable of tokens or an iterable of token lists (one per sentence);
        an item that is a ``str`` is one token. Tokens seen fewer than ``min_freq`` times are left
        out (they will map to ``<unk>``); ``max_size`` caps the total size *including* the four
        specials. Occurrences of the special strings themselves in the data are not counted.

        !!! equation "Tokens › Vocabulary"
            $V = (\langle pad \rangle, \langle unk \rangle, \langle sos \rangle, \langle eos \rangle, w_1, w_2,
            \dots),\ c(w_1) \ge c(w_2) \ge \dots$: the constructed dictionary, four special tokens at fixed ids
            and then the words most frequent first (those seen fewer than ``min_freq`` times left out).

        !!! departure "Tokens › Vocabulary"
            notes: a word's number is its index in a constructed dictionary ("I am enjoying my studies" as
            0 1 2 3 4; an Oxford-dictionary order, "country" = 242), and a word not in the vocabulary is
            $\langle unk \rangle$.
            seqlab: ids 0 to 3 are $\langle pad \rangle$, $\langle unk \rangle$, $\langle sos \rangle$ and
            $\langle eos \rangle$, then the words of the training data, most frequent first; a word seen fewer
            than ``data.min_freq`` times is left out and read as $\langle unk \rangle$.
            default: data.min_freq = 1; presets: glove = 5, ner-bilstm = 2, ner-transformer = 2, w2v-hs = 5,
            w2v-sgns = 5
        """
        cls._check_limits(min_freq, max_size)
        counts: Counter[str] = Counter()  # insertion order = first occurrence, which breaks ties below
        for item in tokens:
            if isinstance(item, str):
                counts[item] += 1
            else:
                counts.update(item)
        return cls.from_counts(counts, min_freq, max_size)

    @classmethod
    def from_counts(cls, counts: Counter[str], min_freq: int = 1, max_size: int | None = None) -> Vocab:
        """:meth:`build` from counts already made (e.g. streamed over a corpus chunk by chunk): ``counts``
        in first-occurrence order (a Counter updated in text order), which breaks ties in frequency."""
        cls._check_limits(min_freq, max_size)
        counts = Counter({t: c for t, c in counts.items() if t not in SPECIALS})
        # sorted() is stable, so equal counts keep first-occurrence order
        ranked = [t for t, c in sorted(counts.items(), key=lambda tc: -tc[1]) if c >= min_freq]
        if max_size is not None:
            ranked = ranked[: max_size - len(SPECIALS)]
        return cls([*SPECIALS, *ranked])

    @staticmethod
    def _check_limits(min_freq: int, max_size: int | None) -> None:
        if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
            raise SeqlabError(f"min_freq must be an integer >= 1, got {min_freq!r}; use 1 to keep every token")
        if max_size is not None and (
            isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < len(SPECIALS)
        ):
            raise SeqlabError(
                f"max_size must be an integer >= {len(SPECIALS)} (it counts the {len(SPECIALS)} special tokens), "
                f"got {max_size!r}; or leave it unset for no limit"
            )

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._itos == other._itos

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, first={self._itos[len(SPECIALS):len(SPECIALS) + 5]})"

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy)."""
        return list(self._itos)

    def stoi(self, token: str) -> int:
        """The id of ``token``; ``<unk>``'s id when it is not in the vocabulary."""
        return self._stoi.get(token, self.unk_id)

    def itos(self, id: int) -> str:
        """The token with id ``id``."""
        if not 0 <= id < len(self._itos):
            raise SeqlabError(f"token id {id} is out of range for a vocabulary of {len(self)}; use 0..{len(self) - 1}")
        return self._itos[id]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        r"""Token list -> id list; unknown tokens map to ``<unk>``.

        !!! equation "Tokens › Vocabulary"
            $\mathrm{id}(w) = \mathrm{index}_V(w) \text{ if } w \in V, \text{ else } \mathrm{id}(\langle unk
            \rangle) = 1$: each token's number, its index in the constructed dictionary; a word not in the
            vocabulary becomes $\langle unk \rangle$."""
        get, unk = self._stoi.get, self.unk_id
        return [get(t, unk) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Id list -> token list (specials included, as their strings)."""
        return [self.itos(int(i)) for i in ids]

    def to_dict(self) -> dict:
        return {"kind": "vocab", "tokens": list(self._itos)}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        if not isinstance(d, dict) or d.get("kind") != "vocab" or not isinstance(d.get("tokens"), list):
            raise SeqlabError(
                'not a vocabulary: expected {"kind": "vocab", "tokens": [...]}; save it with Vocab.save()'
            )
        return cls(d["tokens"])

    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary as JSON (atomically)."""
        return write_json_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocab:
        return cls.from_dict(read_json(path, "vocabulary", "check the path, or re-create it with save()"))
