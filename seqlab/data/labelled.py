"""Labelled-sentence readers for the classification task of the notes (sentiment, many-to-one).

The format is detected from the file's content (the first non-blank line), never from a config key:

``tsv``          a header row naming a ``sentence`` and a ``label`` column, then tab-separated rows
                 (SST-2 as GLUE ships it; the sentence's trailing space before the tab is stripped)
``fasttext``     ``__label__N<TAB>sentence`` (SST-5 ``*.tsv``; the label is N, here 1..5)
``tree``         one labelled PTB parse tree per line, ``(3 (2 It) (4 ...))``; the label is the
                 root's, the sentence the leaves joined by spaces (SST-5 ``trees/``, labels 0..4)
``label-first``  ``label sentence``: the first whitespace-separated field is the label
                 (SST-2 ``sentence_level``)

Labels are returned as strings spelled as in the file (so SST-5 reads as 1..5 from ``*.tsv`` and
0..4 from ``trees/``, as the data has them). Blank lines are skipped. A malformed line raises
:class:`SeqlabError` naming ``file:line``. :func:`iter_labelled` streams a file's examples one line at a
time (the classification task's preparation reads them so); :func:`read_labelled` gives the lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from seqlab.data.conll import numbered_lines
from seqlab.base.errors import SeqlabError

FORMATS = ("tsv", "fasttext", "tree", "label-first")
FASTTEXT = re.compile(r"__label__(\S+)(?:[\t ]+(.*))?")
TREE_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def detect_format(first_line: str) -> str:
    """The format of a file whose first non-blank line is ``first_line``."""
    text = first_line.strip()
    if text.startswith("("):
        return "tree"
    if text.startswith("__label__"):
        return "fasttext"
    if "\t" in text:
        return "tsv"
    return "label-first"


def _tsv_columns(header: str, where: str) -> tuple[int, int, int]:
    """(number of columns, index of the sentence column, index of the label column) from a TSV header."""
    names = [name.strip().lower() for name in header.split("\t")]
    if "sentence" not in names or "label" not in names:
        missing = [name for name in ("sentence", "label") if name not in names]
        raise SeqlabError(f"{where}: tab-separated file whose header {names} has no {' or '.join(map(repr, missing))} "
                          "column; labelled TSV needs a header row naming 'sentence' and 'label' columns")
    return len(names), names.index("sentence"), names.index("label")


def _parse_tree(line: str, where: str) -> tuple[str, str]:
    """(root label, leaves joined by spaces) of one bracketed tree ``(label (label word) ...)``."""
    tokens = TREE_TOKEN.findall(line)
    root, words, depth, i = None, [], 0, 0
    while i < len(tokens):
        token = tokens[i]
        if token == ")":
            depth -= 1
            if depth < 0:
                raise SeqlabError(f"{where}: unbalanced ')' in the tree; check the brackets")
            i += 1
            continue
        if token != "(":
            raise SeqlabError(f"{where}: word {token!r} outside a '(label word)' leaf; check the brackets")
        if i + 1 >= len(tokens) or tokens[i + 1] in "()":
            raise SeqlabError(f"{where}: '(' not followed by a label; each node is '(label children...)'")
        if root is None:
            root = tokens[i + 1]
        elif depth == 0:
            raise SeqlabError(f"{where}: more than one tree on the line; put one tree per line")
        depth += 1
        i += 2
        leaf = []
        while i < len(tokens) and tokens[i] not in "()":  # a leaf: (label word), where a word may hold spaces
            leaf.append(tokens[i])
            i += 1
        if leaf:
            if i >= len(tokens) or tokens[i] != ")":
                raise SeqlabError(f"{where}: a leaf's word is followed by a subtree; each leaf is '(label word)'")
            words.append(" ".join(leaf))
        elif i < len(tokens) and tokens[i] == ")":
            raise SeqlabError(f"{where}: node '({tokens[i - 1]})' has neither a word nor subtrees; "
                              "each node is '(label word)' or '(label subtree ...)'")
    if depth != 0:
        raise SeqlabError(f"{where}: {depth} unclosed '(' in the tree; check the brackets")
    return str(root), " ".join(words)  # never empty: every node above holds a word or a subtree


def read_labelled(path: str | Path) -> tuple[list[str], list[str]]:
    """(sentences, labels) of a labelled-sentence file in any of :data:`FORMATS` (detected from its content)."""
    sentences: list[str] = []
    labels: list[str] = []
    for _, sentence, label in iter_labelled(path):
        sentences.append(sentence)
        labels.append(label)
    return sentences, labels


def iter_labelled(path: str | Path) -> Iterator[tuple[int, str, str]]:
    """(line number, sentence, label) of each example of a labelled-sentence file, streamed one line at a time
    (a file with none is refused at its end)."""
    found = False
    fmt = None
    columns = (0, 0, 0)
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        if fmt is None:
            fmt = detect_format(line)
            if fmt == "tsv":
                columns = _tsv_columns(line, where)
                continue
        if fmt == "tsv":
            fields = line.split("\t")
            if len(fields) != columns[0]:
                raise SeqlabError(f"{where}: {len(fields)} tab-separated fields, but the header has {columns[0]}; "
                                  "remove stray tabs or add the missing column")
            sentence, label = fields[columns[1]].strip(), fields[columns[2]].strip()
        elif fmt == "fasttext":
            match = FASTTEXT.fullmatch(line.strip())
            if match is None:
                raise SeqlabError(f"{where}: expected '__label__N<TAB>sentence', got {line[:60]!r}; "
                                  "every line of this file must start with its label")
            label, sentence = match.group(1), (match.group(2) or "").strip()
        elif fmt == "tree":
            if not line.lstrip().startswith("("):
                raise SeqlabError(f"{where}: expected a bracketed tree '(label ...)', got {line[:60]!r}; "
                                  "put one tree per line")
            label, sentence = _parse_tree(line, where)
        else:
            label, sentence = (line.split(None, 1) + [""])[:2]
            sentence = sentence.strip()
        if not label:
            raise SeqlabError(f"{where}: empty label; every example needs a label")
        if not sentence:
            raise SeqlabError(f"{where}: label {label!r} with an empty sentence; every example needs text")
        found = True
        yield number, sentence, label
    if not found:
        raise SeqlabError(f"{path}: no labelled sentences found; expected one of the formats {', '.join(FORMATS)}")
