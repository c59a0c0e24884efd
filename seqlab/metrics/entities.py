"""Entities read out of tag sequences, as seqeval 1.2.2 reads them (../shared/specs/metrics.md §2.2-§2.5).

* default mode (§2.3, :func:`get_entities`): the conlleval-compatible chunker. It handles IOB1, IOB2, IOE
  and IOBES without being told the scheme and repairs ill-formed input (an ``I-`` after ``O`` opens an
  entity).
* strict mode (§2.4, :func:`get_entities_strict`): a :class:`Scheme` (IOB1, IOB2, IOE1, IOE2, IOBES, BILOU)
  says which prefix pairs start, continue and end an entity; spans that do not start and end legally are
  dropped, and prefixes foreign to the scheme are an error. :func:`detect_scheme` guesses it from gold tags.

An entity is (type, start, end) with ``end`` inclusive, as seqeval returns it; :mod:`seqlab.metrics.ner`
scores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seqlab.base.errors import SeqlabError

Tags = Sequence[str]  # one tag per token of one sentence


# --------------------------------------------------------------------------------------------
# Tag parsing (§2.2)


def _split_default(tag: str, suffix: bool) -> tuple[str, str]:
    """(prefix, type) as default mode reads a tag: ``B-PER-X`` -> (B, PER-X), ``O`` -> (O, _)."""
    if not tag:
        raise SeqlabError("empty tag string; every token needs a tag such as 'O' or 'B-PER'")
    if suffix:
        return tag[-1], tag[:-1].rsplit("-", maxsplit=1)[0] or "_"
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _split_strict(tag: str, suffix: bool) -> tuple[str, str]:
    """(prefix, type) as strict mode reads a tag: the type is the rest with '-' stripped, or '_'."""
    if not tag:
        raise SeqlabError("empty tag string; every token needs a tag such as 'O' or 'B-PER'")
    if suffix:
        return tag[-1], tag[:-1].strip("-") or "_"
    return tag[0], tag[1:].strip("-") or "_"


# --------------------------------------------------------------------------------------------
# Default mode (§2.3): the conlleval chunker


def _end_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    """Did a chunk end between the previous token and this one?"""
    return (
        prev_tag in ("E", "S")
        or (prev_tag in ("B", "I") and tag in ("B", "S", "O"))
        or (prev_tag != "O" and prev_tag != "." and prev_type != type_)
    )


def _start_of_chunk(prev_tag: str, tag: str, prev_type: str, type_: str) -> bool:
    """Did a chunk start at this token?"""
    return (
        tag in ("B", "S")
        or (prev_tag in ("E", "S", "O") and tag in ("E", "I"))
        or (tag != "O" and tag != "." and prev_type != type_)
    )


def get_entities(seq: Sequence[str] | Sequence[Tags], suffix: bool = False) -> list[tuple[str, int, int]]:
    """Entities of ``seq`` in default mode as ``(type, start, end_inclusive)``, in order of their end.

    ``seq`` is one tag sequence, or a list of sentences; sentences are joined with an ``'O'`` after
    every one, and offsets are positions in that joined sequence (seqeval's ``get_entities``).
    """
    if any(not isinstance(s, str) for s in seq):
        seq = [tag for sentence in seq for tag in [*sentence, "O"]]
    prev_tag, prev_type, begin = "O", "", 0
    chunks = []
    for i, tag_string in enumerate([*seq, "O"]):
        tag, type_ = _split_default(tag_string, suffix)
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


# --------------------------------------------------------------------------------------------
# Strict mode (§2.4): schemes as prefix patterns

ANY_PREFIX = "IOBESUL"
Pattern = tuple[str, str, str]  # (previous token's prefixes, current token's prefixes, type condition)


@dataclass(frozen=True)
class Scheme:
    """A tagging scheme as seqeval's ``seqeval.scheme`` defines it."""

    name: str  # IOB1, IOB2, IOE1, IOE2, IOBES or BILOU
    allowed: str  # prefixes a tag may carry under this scheme
    start: tuple[Pattern, ...]  # (prev, cur) pairs at which cur starts an entity
    inside: tuple[Pattern, ...]  # (prev, cur) pairs at which cur continues prev's entity
    end: tuple[Pattern, ...]  # (last, next) pairs at which the entity ending at last is well-formed


SCHEMES: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme(
            "IOB1", "IOB",
            start=(("O", "I", "any"), ("I", "I", "diff"), ("B", "I", "any"), ("I", "B", "same"), ("B", "B", "same")),
            inside=(("B", "I", "same"), ("I", "I", "same")),
            end=(("I", "I", "diff"), ("I", "O", "any"), ("I", "B", "any"), ("B", "O", "any"), ("B", "I", "diff"),
                 ("B", "B", "same")),
        ),
        # seqeval's own source says IOE1 "hasn't yet been able to handle some cases"; kept for parity
        Scheme(
            "IOE1", "IOE",
            start=(("O", "I", "any"), ("I", "I", "diff"), ("E", "I", "any"), ("E", "E", "same")),
            inside=(("I", "I", "same"), ("I", "E", "same")),
            end=(("I", "I", "diff"), ("I", "O", "any"), ("I", "E", "diff"), ("E", "I", "same"), ("E", "E", "same")),
        ),
        Scheme(
            "IOB2", "IOB",
            start=((ANY_PREFIX, "B", "any"),),
            inside=(("B", "I", "same"), ("I", "I", "same")),
            end=(("I", "O", "any"), ("I", "I", "diff"), ("I", "B", "any"), ("B", "O", "any"), ("B", "I", "diff"),
                 ("B", "B", "any")),
        ),
        Scheme(
            "IOE2", "IOE",
            start=(("O", "I", "any"), ("O", "E", "any"), ("E", "I", "any"), ("E", "E", "any"), ("I", "I", "diff"),
                   ("I", "E", "diff")),
            inside=(("I", "E", "same"), ("I", "I", "same")),
            end=(("E", ANY_PREFIX, "any"),),
        ),
        Scheme(
            "IOBES", "IOBES",
            start=((ANY_PREFIX, "B", "any"), (ANY_PREFIX, "S", "any")),
            inside=(("B", "I", "same"), ("B", "E", "same"), ("I", "I", "same"), ("I", "E", "same")),
            end=(("S", ANY_PREFIX, "any"), ("E", ANY_PREFIX, "any")),
        ),
        Scheme(
            "BILOU", "BILOU",
            start=((ANY_PREFIX, "B", "any"), (ANY_PREFIX, "U", "any")),
            inside=(("B", "I", "same"), ("B", "L", "same"), ("I", "I", "same"), ("I", "L", "same")),
            end=(("U", ANY_PREFIX, "any"), ("L", ANY_PREFIX, "any")),
        ),
    )
}


def _matches(patterns: tuple[Pattern, ...], prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    """Does the pair (prev, cur) of (prefix, type) tokens match any of the patterns?"""
    for prev_prefixes, cur_prefixes, condition in patterns:
        if prev[0] in prev_prefixes and cur[0] in cur_prefixes:
            if condition == "any" or (condition == "same") == (prev[1] == cur[1]):
                return True
    return False


def _strict_tokens(tags: Tags, scheme: Scheme, suffix: bool, sentence: int) -> list[tuple[str, str]]:
    """Parse one sentence for strict mode, refusing prefixes the scheme does not allow."""
    tokens = []
    for tag in tags:
        token = _split_strict(tag, suffix)
        if token[0] not in scheme.allowed:
            raise SeqlabError(
                f"invalid tag {tag!r} in sentence {sentence} for scheme {scheme.name}: "
                f"allowed prefixes are {'|'.join(scheme.allowed)}; fix the tag or choose another scheme"
            )
        tokens.append(token)
    return tokens


def get_entities_strict(
    sequences: Sequence[Tags], scheme: Any, suffix: bool = False
) -> list[tuple[int, str, int, int]]:
    """Entities in strict mode as ``(sentence, type, start, end_exclusive)`` (seqeval's ``Entities``).

    Walk each sentence (plus a sentinel ``O``): at a token that starts an entity after ``prev``,
    extend it while tokens are inside, and keep the span only if its last token and the next one
    form a legal end. The tokens are consumed either way.
    """
    scheme = resolve_scheme(scheme, sequences, suffix)
    entities = []
    outside = ("O", "_")
    for sentence, tags in enumerate(sequences):
        tokens = [*_strict_tokens(tags, scheme, suffix, sentence), outside]
        i, prev = 0, outside
        while i < len(tokens):
            if _matches(scheme.start, prev, tokens[i]):
                j = i + 1
                while _matches(scheme.inside, tokens[j - 1], tokens[j]):  # the sentinel O is never inside
                    j += 1
                if _matches(scheme.end, tokens[j - 1], tokens[j]):
                    entities.append((sentence, tokens[i][1], i, j))
                i = j
            else:
                i += 1
            prev = tokens[i - 1]
    return entities


# prefix sets seqeval's auto_detect accepts, per scheme, in the order it tries them
_DETECTABLE: dict[str, tuple[str, ...]] = {
    "IOB2": ("IOB", "IB", "BO", "B"),
    "IOE2": ("IOE", "IE", "EO", "E"),
    "IOBES": ("IOBES", "IBES", "IOBE", "OBES", "IBE", "BES", "OBE", "BE", "S"),
    "BILOU": ("IOBLU", "IBLU", "IOBL", "OBLU", "IBL", "BLU", "OBL", "BL", "U"),
}


def detect_scheme(y_true: Sequence[Tags], suffix: bool = False) -> Scheme:
    """The scheme seqeval's ``auto_detect`` picks from the set of prefixes in ``y_true``.

    IOB2, IOE2, IOBES or BILOU; IOB1 is never detected (its prefix set is IOB2's or {I, O}).
    """
    prefixes = {_split_strict(tag, suffix)[0] for tags in y_true for tag in tags}
    for name, accepted in _DETECTABLE.items():
        if any(prefixes == set(s) for s in accepted):
            return SCHEMES[name]
    raise SeqlabError(f"cannot detect the tagging scheme from the gold tags' prefixes {sorted(prefixes)}; "
                      f"name the scheme ({', '.join(SCHEMES)})")


def resolve_scheme(scheme: Any, y_true: Sequence[Tags] = (), suffix: bool = False) -> Scheme:
    """A :class:`Scheme` from a name, a seqeval scheme class, a Scheme, or ``'auto'`` (detect from y_true)."""
    if isinstance(scheme, Scheme):
        return scheme
    name = getattr(scheme, "__name__", scheme)
    if name == "auto":
        return detect_scheme(y_true, suffix)
    if not isinstance(name, str) or name.upper() not in SCHEMES:
        raise SeqlabError(f"unknown tagging scheme {scheme!r}; use one of {', '.join(SCHEMES)} or 'auto'")
    return SCHEMES[name.upper()]
