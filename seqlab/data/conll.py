"""CoNLL-2003 reader for the tagging task of the notes (NER, many-to-many: one tag per token).

File layout (../shared/data/README.md §3): one token per line, whitespace-separated columns
``word POS chunk NE``; the NER tag is the *last* column, so files with only ``word NE`` (or any
2+ columns) read the same way. Blank lines end a sentence; ``-DOCSTART-`` lines start a document
and are not sentences.

Tagging schemes: the original ``eng.*`` files use IOB1 (``I-X`` inside entities, ``B-X`` only where
two entities of type X touch); most tools expect IOB2 (``B-X`` at the start of every entity).
:func:`detect_scheme` tells them apart (an ``I-`` tag that starts an entity means IOB1) and
:func:`to_iob2` converts. IOBES (``S-X`` a one-token entity, ``E-X`` an entity's last token) and BILOU (``U-``,
``L-``) mark both ends: :func:`convert_scheme` turns any of them into IOB2 or IOBES (``data.tag_scheme``),
the same entities written another way. :func:`iter_conll` streams a file's sentences one at a time (the tagging task's
preparation reads them so, never the whole file); :func:`read_conll` is the list.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from seqlab.base.errors import SeqlabError

DOCSTART = "-DOCSTART-"
TAG = re.compile(r"O|[BIESLU]-\S+")  # O, or a prefix (IOB1/IOB2/IOBES/BILOU) and a type


@dataclass(frozen=True)
class Sentence:
    """One sentence of a CoNLL file."""

    tokens: tuple[str, ...]  # the words (first column)
    tags: tuple[str, ...]  # the NER tags (last column), one per token
    columns: tuple[tuple[str, ...], ...]  # the columns in between, each one value per token (CoNLL-2003: POS, chunk)
    doc: int  # 0-based index of the document (counted by -DOCSTART- lines; 0 when the file has none)
    line: int  # 1-based line number of the first token, for messages


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline) for a UTF-8 text file, lines cut as ``bytes.splitlines``
    cuts them (at \\n, \\r\\n, \\r), read a block at a time (never the whole file); bad input -> SeqlabError."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise SeqlabError(f"{path}: no such file; check the path (data.train / data.valid / data.test)") from None
    except IsADirectoryError:
        raise SeqlabError(f"{path}: is a folder, not a file; point at the data file itself") from None
    except OSError as err:  # permissions, a name too long, ...
        raise SeqlabError(f"{path}: cannot read it ({err.strerror or err}); check the path and its permissions") from None
    with f:
        for number, raw in enumerate(_byte_lines(f), start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise SeqlabError(f"{path}:{number}: not valid UTF-8 ({err.reason} at byte {err.start}); "
                                  "re-encode the file as UTF-8") from None


def _byte_lines(f, block: int = 1 << 14) -> Iterator[bytes]:
    """``f.read().splitlines()``, a block at a time (a \\r\\n cut between two blocks stays one line end)."""
    carry = b""
    while data := f.read(block):
        lines = (carry + data).splitlines(keepends=True)
        carry = lines.pop() if lines[-1][-1:] != b"\n" else b""  # incomplete, or \r perhaps followed by \n
        for line in lines:
            yield line[:-2] if line.endswith(b"\r\n") else line[:-1]
    if carry:
        yield carry[:-1] if carry.endswith(b"\r") else carry


def iter_conll(path: str | Path) -> Iterator[Sentence]:
    """The sentences of a CoNLL file, tags as written, streamed one at a time (a file with none is refused at
    its end)."""
    rows: list[list[str]] = []
    first_line, n_columns, doc, found = 0, 0, -1, False

    def sentence() -> Sentence:
        fields = list(zip(*rows))
        rows.clear()
        return Sentence(tokens=fields[0], tags=fields[-1], columns=tuple(fields[1:-1]), doc=max(doc, 0),
                        line=first_line)

    for number, line in numbered_lines(path):
        fields = [field for field in line.replace("\t", " ").split(" ") if field]  # ASCII blanks only
        if not fields or fields[0] == DOCSTART:
            if rows:
                found = True
                yield sentence()
            doc += bool(fields)
            continue
        if len(fields) < 2:
            raise SeqlabError(f"{path}:{number}: expected at least 2 columns (token ... NER tag), found {len(fields)} "
                              f"in {line!r}; separate the columns with spaces and put the NER tag last")
        if n_columns and len(fields) != n_columns:
            raise SeqlabError(f"{path}:{number}: {len(fields)} columns, but earlier lines have {n_columns}; "
                              "every token line needs the same columns")
        if not TAG.fullmatch(fields[-1]):
            raise SeqlabError(f"{path}:{number}: {fields[-1]!r} is not a NER tag; the last column must be 'O' or "
                              "a prefix B/I/E/S/L/U, '-' and a type, e.g. 'B-PER'")
        n_columns = len(fields)
        if not rows:
            first_line = number
        rows.append(fields)
    if rows:
        found = True
        yield sentence()
    if not found:
        raise SeqlabError(f"{path}: no sentences found; expected token lines ('word ... TAG') separated by blank lines")


def read_conll(path: str | Path, *, iob2: bool = False) -> list[Sentence]:
    """Sentences of a CoNLL file, tags as written; with ``iob2=True`` IOB1 tags are converted to IOB2."""
    sentences = list(iter_conll(path))
    if iob2 and detect_scheme(s.tags for s in sentences) == "IOB1":
        sentences = [dataclasses.replace(s, tags=to_iob2(s.tags)) for s in sentences]
    return sentences


def _split(tag: str) -> tuple[str, str]:
    """(prefix, type); ``O`` has type ''."""
    return (tag, "") if tag == "O" else (tag[0], tag[2:])


def _starts_entity_iob1(prev: str, tag: str) -> bool:
    """Is ``tag`` an ``I-`` that opens an entity (after O, another type, or at the sentence start)?"""
    prefix, type_ = _split(tag)
    prev_prefix, prev_type = _split(prev)
    return prefix == "I" and (prev_prefix == "O" or prev_type != type_)


def detect_scheme(tag_sequences: Iterator[Sequence[str]] | Sequence[Sequence[str]]) -> str:
    """'IOBES' if any E-/S- tag, 'BILOU' if any L-/U- tag, else 'IOB1' if some I- tag opens an entity, else 'IOB2'."""
    prefixes: set[str] = set()
    iob1 = False
    for tags in tag_sequences:
        prev = "O"
        for tag in tags:
            prefixes.add(_split(tag)[0])
            iob1 = iob1 or _starts_entity_iob1(prev, tag)
            prev = tag
    if prefixes & set("ES") and prefixes & set("LU"):
        raise SeqlabError(f"tags mix IOBES (E-, S-) and BILOU (L-, U-) prefixes: {sorted(prefixes)}; use one scheme")
    if prefixes & set("ES"):
        return "IOBES"
    if prefixes & set("LU"):
        return "BILOU"
    return "IOB1" if iob1 else "IOB2"


def to_iob2(tags: Sequence[str]) -> tuple[str, ...]:
    """IOB1 -> IOB2: every ``I-X`` that opens an entity becomes ``B-X``; IOB2 input is returned unchanged."""
    out = []
    prev = "O"
    for tag in tags:
        out.append("B" + tag[1:] if _starts_entity_iob1(prev, tag) else tag)
        prev = tag
    return tuple(out)


# The prefixes of each scheme mapped to IOB2's (its I/B reading)
_TO_IOB2 = {"B": "B", "I": "I", "E": "I", "S": "B", "L": "I", "U": "B"}


def to_iobes(tags: Sequence[str]) -> tuple[str, ...]:
    """IOB2 -> IOBES: an entity's one token is ``S-X``; of a longer entity, the first token ``B-X``, the last
    ``E-X``, those between ``I-X``. An entity ends where the next tag is not ``I-`` of its type."""
    out = []
    for i, tag in enumerate(tags):
        prefix, type_ = _split(tag)
        if prefix == "O":
            out.append(tag)
            continue
        goes_on = i + 1 < len(tags) and _split(tags[i + 1]) == ("I", type_)
        out.append({("B", True): "B", ("B", False): "S", ("I", True): "I", ("I", False): "E"}[prefix, goes_on]
                   + "-" + type_)
    return tuple(out)


def convert_scheme(tags: Sequence[str], scheme: str, iob1: bool = False) -> tuple[str, ...]:
    """One sentence's tags in ``scheme`` (:data:`seqlab.base.config.TAG_SCHEMES`): "iob2" or "iobes" from any of IOB1 (``iob1``:
    the file's scheme, :func:`detect_scheme`), IOB2, IOBES and BILOU (an ``I-`` that opens an entity, as the
    entity F1 reads it, starts one: ``B-``); "auto" reads IOB1 as IOB2 and keeps the others as written."""
    if iob1:
        tags = to_iob2(tags)
    if scheme == "auto":
        return tuple(tags)
    iob2 = to_iob2([tag if tag == "O" else _TO_IOB2[tag[0]] + tag[1:] for tag in tags])  # an opening I- is a B-
    return iob2 if scheme == "iob2" else to_iobes(iob2)
