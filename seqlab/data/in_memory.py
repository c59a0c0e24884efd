"""In-memory data (a notebook's lists, generators, arrays) written once to the file its task reads.

A run trained from Python objects reads the same file format as a run trained from files, through the same
reader: :func:`spool` writes the objects in the task's own format, so there is no second code path and no
second set of checks. The forms and the files (``data.train`` / ``data.valid`` / ``data.test`` then name them):

============  ===================================================  =================================================
task.kind     in memory                                            file (the reader)
============  ===================================================  =================================================
lm            a ``str``, or an iterable of ``str`` (documents)     the text, items joined by newlines (data.sources)
embed         an iterable of token lists, or of ``str``            one sentence per line, tokens joined by spaces
                                                                   (tasks.word_vectors: split again by words)
tag           an iterable of ``[(token, tag), ...]``               CoNLL: ``token TAG`` lines, a blank line after
                                                                   each sentence (data.conll)
classify      an iterable of ``(text, label)``, or a DataFrame     TSV with a ``sentence<TAB>label`` header
              with ``text`` and ``label`` columns (or two          (data.labelled)
              columns, text first)
translate     an iterable of ``(source, target)``, or a DataFrame  two aligned files PREFIX.src and PREFIX.tgt, one
              with ``source`` and ``target`` columns (or two       sentence a line (data.parallel)
              columns, source first)
forecast      a 1-D sequence, numpy array or pandas Series         CSV ``value`` (or ``date,value`` for a Series with
                                                                   a date index), floats written exactly
                                                                   (data.series)
============  ===================================================  =================================================

Nothing is altered silently: an item the format cannot hold as it is (a token with a space, a tab or a line
break inside a classify text, a translate side with a line break, an empty sentence, a value that is not a
finite number, a token that is not a ``str``) is a one-line :class:`SeqlabError` naming the item's index and
the fix, as a bad file line is refused naming ``FILE:LINE``. What the reader does to every file it reads
happens alike to spooled items (a classify text's surrounding whitespace is stripped; IOB1 tags are read as
IOB2; ``data.lowercase`` lowercases). Classify pairs that look swapped, (label, text), and training pairs with a
single label are refused too (:class:`ClassLabels`): they would train silently into nonsense.

Memory: items stream to the file one at a time (a generator is consumed once). The file is written under a
temporary name and renamed into place (:func:`seqlab.base.io.atomic_path`): an error part-way leaves no file.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.data.conll import DOCSTART, TAG
from seqlab.base.errors import SeqlabError
from seqlab.base.io import atomic_path, naming
from seqlab.text.tokenizers import split_words

KINDS = ("lm", "embed", "tag", "classify", "translate", "forecast")
SUFFIXES = {"lm": ".txt", "embed": ".txt", "tag": ".conll", "classify": ".tsv", "translate": "", "forecast": ".csv"}
EXPECTED = {  # what one item is, as the messages say it
    "lm": "str (a document)", "embed": "a token list or a str (a sentence)", "tag": "[(token, tag), ...]",
    "classify": "(text, label)", "translate": "(source, target)", "forecast": "a number",
}
TSV_HEADER = "sentence\tlabel"  # data.labelled reads a TSV by the column names of its header
DATE_COLUMN, VALUE_COLUMN = "date", "value"  # forecast CSV header (set data.date_column = "date" to use the dates)
_CONLL_BLANKS = " \t\n\r"  # data.conll splits fields at spaces and tabs, lines at \n and \r (bytes.splitlines)


def data_file_name(kind: str, what: str) -> str:
    """The file name :func:`spool` is given for ``what`` (``train_data`` -> ``train.conll`` for tag); for translate
    the prefix of its two files (``train``: ``train.src`` and ``train.tgt``)."""
    _check_kind(kind)
    return (what.removesuffix("_data") or "data") + SUFFIXES[kind]


def spool(kind: str, data: Any, path: Path, what: str = "train_data", tokenizer: str | None = None, *,
          src: str = "src", tgt: str = "tgt") -> Path:
    """Write ``data`` once to ``path`` in task ``kind``'s file format (module docstring) and return the path
    to give as ``data.train`` (or valid / test). ``what`` is the argument name errors show; ``tokenizer``
    (``data.tokenizer``) is checked where it decides how the file is read (embed splits words: "word" only).
    translate writes ``PATH.src`` and ``PATH.tgt`` (suffixes ``src`` / ``tgt``, what data.src / data.tgt name)
    and returns the prefix ``path``."""
    _check_kind(kind)
    path = Path(path)
    if kind == "embed" and tokenizer not in (None, "word"):
        raise SeqlabError(f'embedding tasks split text into words: set data.tokenizer = "word" (got {tokenizer!r})')
    if kind == "translate":
        if not src or not tgt or src == tgt:
            raise SeqlabError(f"translate needs two different file suffixes (data.src, data.tgt); got {src!r}, "
                              f"{tgt!r}")
        paths = [Path(f"{os.fspath(path)}.{src}"), Path(f"{os.fspath(path)}.{tgt}")]
    else:
        paths = [path]
    header, rows = _rows(kind, data, what)
    with contextlib.ExitStack() as stack:
        temporaries = [stack.enter_context(atomic_path(p)) for p in paths]  # renamed into place on success only
        files = [stack.enter_context(open(t, "wb")) for t in temporaries]
        with naming(paths[0], temporaries[0]):
            _write(files, header, rows, what, text=kind in ("lm", "embed"))
    return path


def spool_splits(kind: str, splits: dict[str, Any], folder: Path, tokenizer: str | None = None, *, src: str = "src",
                 tgt: str = "tgt") -> dict[str, str]:
    """:func:`spool` each split ({"train": ..., "valid": ...}) into ``folder`` as :func:`data_file_name` names it
    (``what`` is ``train_data`` and so on); returns the file name of each split."""
    names = {split: data_file_name(kind, split) for split in splits}
    for split, data in splits.items():
        spool(kind, data, folder / names[split], what=f"{split}_data", tokenizer=tokenizer, src=src, tgt=tgt)
    return names


def check_form(kind: str, data: Any, what: str = "train_data") -> None:
    """Refuse ``data`` whose form as a whole is not ``kind``'s (not an iterable of items, a DataFrame the task
    cannot read as its items) as :func:`spool` would, without reading any item (a generator stays unconsumed):
    :func:`seqlab.train` asks before it makes any folder."""
    _check_kind(kind)
    _rows(kind, data, what)


def has_date_index(data: Any) -> bool:
    """Whether ``data`` is a pandas Series indexed by dates (:func:`spool` then writes a ``date`` column)."""
    if type(data).__module__.split(".")[0] != "pandas" or type(data).__name__ != "Series":
        return False
    import pandas as pd

    return isinstance(data.index, (pd.DatetimeIndex, pd.PeriodIndex))


# ---------------------------------------------------------------------------------------------------------
# writing: rows (one str per file: the item's lines) streamed to the temporary files


def _write(files: list, header: tuple[str, ...] | None, rows: Iterator[tuple[str, ...]], what: str,
           text: bool) -> None:
    """Each row's strs to their files, encoded as UTF-8; then flushed to disk. No row: the data is empty."""
    if header is not None:
        for f, line in zip(files, header):
            f.write(line.encode("utf-8"))
    n, blank = 0, True
    for n, row in enumerate(rows, start=1):
        for f, part in zip(files, row):
            f.write(part.encode("utf-8"))  # parts were checked to be encodable (no lone surrogates)
            blank = blank and not part.strip()
    if not n:
        raise SeqlabError(f"{what} is empty (no items); give at least one")
    if blank and text:
        raise SeqlabError(f"{what} holds no text (only whitespace); give text to train on")
    for f in files:
        f.flush()
        os.fsync(f.fileno())


def _rows(kind: str, data: Any, what: str) -> tuple[tuple[str, ...] | None, Iterator[tuple[str, ...]]]:
    """(the header lines, if the format has one; the rows of the items, one tuple of strs per item)."""
    if kind == "lm" and isinstance(data, str):
        return None, iter([(_utf8(data, f"{what}: the text"),)])
    if kind == "forecast":
        return _series_rows(data, what)
    items = _items(data, what, kind)
    row = {"lm": _lm_row, "embed": _embed_row, "tag": _tag_row, "classify": _classify_row,
           "translate": _translate_row}[kind]
    header = (TSV_HEADER + "\n",) if kind == "classify" else None

    labels = ClassLabels(what) if kind == "classify" else None

    def rows() -> Iterator[tuple[str, ...]]:
        for i, item in items:
            where = f"{what} item {i}"
            out = row(item, where, _bad(where, kind, item))
            if kind == "lm" and i:  # documents joined by newlines: a newline before every one but the first
                out = "\n" + out
            if labels is not None:
                labels.add(*item)
            yield out if isinstance(out, tuple) else (out,)
        if labels is not None:
            labels.check()

    return header, rows()


def _items(data: Any, what: str, kind: str) -> Iterator[tuple[int, Any]]:
    if is_data_frame(data):
        data = _frame_items(data, what, kind)
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise SeqlabError(f"{what} must be an iterable of items ({EXPECTED[kind]} each), got {_short(data)}; "
                          "give a list or a generator of them")
    return enumerate(data)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise SeqlabError(f"task.kind {kind!r} has no in-memory data; one of {', '.join(KINDS)}")


def _short(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _bad(where: str, kind: str, item: Any) -> Callable[[str], SeqlabError]:
    """The error for an item of the wrong shape: ``train_data item 3: expected (text, label), got int 5; FIX``."""
    return lambda fix: SeqlabError(f"{where}: expected {EXPECTED[kind]}, got {_short(item)}; {fix}")


def _utf8(text: str, where: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SeqlabError(f"{where} holds {text[e.start]!r} at character {e.start}, which is not valid Unicode "
                          "(a lone surrogate); decode the original bytes properly") from None
    return text


def _pair(item: Any, bad: Callable[[str], SeqlabError], fix: str) -> tuple[Any, Any]:
    if isinstance(item, (str, bytes)) or not isinstance(item, (tuple, list)) or len(item) != 2:
        raise bad(fix)
    return item[0], item[1]


# ---------------------------------------------------------------------------------------------------------
# one row per item, for each text task


def _lm_row(item: Any, where: str, bad) -> str:
    if not isinstance(item, str):
        raise bad("give each document as a str")
    return _utf8(item, where)


def _embed_row(item: Any, where: str, bad) -> str:
    """A str is a line of text (split by the word tokenizer as a file's); a token list is one sentence whose
    tokens must each be one word of that tokenizer, so the sentence reads back as given."""
    if isinstance(item, str):
        return _utf8(item, where) + "\n"
    if not isinstance(item, (list, tuple)):
        raise bad("give each sentence as a list of tokens or a str")
    if not item:
        raise SeqlabError(f"{where}: an empty sentence; give at least one token, or leave the item out")
    for j, token in enumerate(item):
        if not isinstance(token, str):
            raise SeqlabError(f"{where}: token {j} is {_short(token)}, not a str; give tokens as str")
        if split_words(token) != [token] or token.splitlines() != [token]:
            raise SeqlabError(f"{where}: token {j} {token!r} is not one word of the word tokenizer (it reads "
                              f"{split_words(token)!r}); give the sentence as a str, or split it into such words")
    return _utf8(" ".join(item), where) + "\n"


def _tag_row(item: Any, where: str, bad) -> str:
    if isinstance(item, (str, bytes)) or not isinstance(item, (list, tuple)):
        raise bad("give each sentence as a list of (token, tag) pairs")
    if not item:
        raise SeqlabError(f"{where}: an empty sentence; give at least one (token, tag) pair, or leave the item out")
    lines = []
    for j, pair in enumerate(item):
        token, tag = _pair(pair, lambda fix: SeqlabError(f"{where}: pair {j} expected (token, tag), got "
                                                         f"{_short(pair)}; {fix}"), "give (token, tag) pairs")
        if not isinstance(token, str) or not isinstance(tag, str):
            raise SeqlabError(f"{where}: pair {j} ({_short(token)}, {_short(tag)}) is not two str; give tokens and "
                              "tags as str")
        if not token or any(c in _CONLL_BLANKS for c in token) or token == DOCSTART:
            raise SeqlabError(f"{where}: token {j} {token!r} cannot be one CoNLL column (empty, a space, a tab or a "
                              f"line break, or {DOCSTART}); split it into tokens without them, or drop it")
        if not TAG.fullmatch(tag):
            raise SeqlabError(f"{where}: token {j}'s tag {tag!r} is not a NER tag; use 'O' or a prefix B/I/E/S/L/U, "
                              "'-' and a type, e.g. 'B-PER'")
        lines.append(f"{token} {tag}\n")
    return _utf8("".join(lines) + "\n", where)


def _one_line(text: str, where: str, side: str, tab: bool) -> str:
    """``text`` (a str with text in it) as one field of a line: no line break, and no tab in a TSV field."""
    if not text.strip():
        raise SeqlabError(f"{where}: the {side} is empty; every item needs text on both sides")
    if "\n" in text or "\r" in text or (tab and "\t" in text):
        breaks = "a tab or a line break" if tab else "a line break"
        raise SeqlabError(f"{where}: the {side} holds {breaks} ({_short(text)}); replace it with a space")
    return _utf8(text, f"{where}: the {side}")


def _classify_row(item: Any, where: str, bad) -> str:
    text, label = _pair(item, bad, "give (text, label) pairs")
    if not isinstance(text, str):
        raise bad("the text must be a str")
    if isinstance(label, bool) or type(label).__name__ == "bool_" or not isinstance(label, (str, numbers.Integral)):
        raise bad("the label must be a str (or an int, read back as its digits)")
    return f"{_one_line(text, where, 'text', True)}\t{_one_line(str(label), where, 'label', True)}\n"


# ---------------------------------------------------------------------------------------------------------
# classify: pairs that look swapped, a single label; DataFrames

SWAPPED_FROM = 8  # examples from which as many distinct labels as examples reads as swapped pairs
FRAME_COLUMNS = {"classify": ("text", "label"), "translate": ("source", "target")}  # a DataFrame's, by name
_SWAP_FIX = "give (text, label) pairs, the text first, e.g. [(text, label) for label, text in pairs]"


class ClassLabels:
    """What the labels of classify pairs say, gathered as the pairs stream by (:func:`spool`): the examples,
    the distinct labels and the words of the texts and of the labels. :meth:`check` refuses pairs that look
    swapped, (label, text): as many distinct labels as examples (from :data:`SWAPPED_FROM` examples on), or
    labels with more words than the texts while most labels are distinct; and, in the training data, a single
    label. Small legitimate data (4 examples of 2 labels, one-word texts) passes."""

    def __init__(self, what: str) -> None:
        self.what, self.examples, self.text_words, self.label_words = what, 0, 0, 0
        self.distinct: set[str] = set()

    def add(self, text: str, label: Any) -> None:
        label = str(label).strip()
        self.examples += 1
        self.distinct.add(label)
        self.text_words += len(text.split())
        self.label_words += len(label.split())

    def check(self) -> None:
        n, distinct = self.examples, len(self.distinct)
        if not n:
            return  # empty: spool says so
        if n >= SWAPPED_FROM and distinct == n:
            raise SeqlabError(f"{self.what} has as many distinct labels as examples ({n}): the pairs look swapped, "
                              f"(label, text); {_SWAP_FIX}")
        if 2 * distinct > n and self.label_words > self.text_words:
            raise SeqlabError(f"{self.what}'s labels are longer than its texts ({self.label_words / n:.1f} words "
                              f"against {self.text_words / n:.1f} on average): the pairs look swapped, (label, "
                              f"text); {_SWAP_FIX}")
        if distinct == 1 and self.what == "train_data":
            raise SeqlabError(f"{self.what} has a single label ({next(iter(self.distinct))!r}) in its {n} examples; "
                              "a classifier needs at least two classes: give examples of another label too")


def is_data_frame(data: Any) -> bool:
    """Whether ``data`` is a pandas DataFrame, by its looks (pandas is not imported: it may not be installed)."""
    return (type(data).__name__ == "DataFrame" and hasattr(data, "columns")
            and callable(getattr(data, "itertuples", None)))


def _frame_items(frame: Any, what: str, kind: str) -> Iterator[tuple[Any, Any]]:
    """A DataFrame's rows as the pairs of ``kind`` (classify, translate): its columns named as
    :data:`FRAME_COLUMNS`, else its two columns in order. Iterating a DataFrame itself yields its column
    names, so any other DataFrame is refused with the fix."""
    columns = [str(c) for c in frame.columns]
    names = FRAME_COLUMNS.get(kind)
    if names is None:
        raise SeqlabError(f"{what} is a DataFrame, whose iteration yields its column names ({', '.join(columns)}); "
                          f"give {EXPECTED[kind]} items, e.g. from df.itertuples(index=False)")
    first, second = names
    if first in columns and second in columns:
        at = (columns.index(first), columns.index(second))
    elif len(columns) == 2:
        at = (0, 1)
    else:
        raise SeqlabError(f"{what} is a DataFrame with columns {', '.join(columns)}; name two of them {first!r} and "
                          f"{second!r} (or give exactly two, {first} first), or give pairs: "
                          f"df[[{first.upper()}, {second.upper()}]].itertuples(index=False)")
    return ((row[at[0]], row[at[1]]) for row in frame.itertuples(index=False))


def _translate_row(item: Any, where: str, bad) -> tuple[str, str]:
    source, target = _pair(item, bad, "give (source, target) pairs")
    if not isinstance(source, str) or not isinstance(target, str):
        raise bad("the source and the target must be str")
    return _one_line(source, where, "source", False) + "\n", _one_line(target, where, "target", False) + "\n"


# ---------------------------------------------------------------------------------------------------------
# forecast: a series of numbers, with the dates of a pandas Series' date index


def _series_items(data: Any, what: str) -> Iterator[tuple[int, Any]]:
    """The (index, value) items of a series in memory, refusing what is not one 1-D series."""
    if type(data).__name__ == "DataFrame":
        raise SeqlabError(f"{what} is a DataFrame; give one column of it, e.g. df[\"sales\"]")
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) != 1:
        raise SeqlabError(f"{what} has shape {tuple(shape)}; give a 1-D series of numbers (one value a step)")
    return _items(data, what, "forecast")


def series_values(data: Any, what: str) -> np.ndarray:
    """A series in memory (a 1-D sequence, numpy array or pandas Series) as float64 values (n,), without a file:
    the values and the errors are those of :func:`spool` followed by :func:`seqlab.data.series.read_column` (each
    value must be a finite real number; ``what`` names the argument), so a forecast's ``history`` costs no file.
    A numeric array (numpy, or a pandas Series' values) is converted in one step, its values exactly."""
    array = getattr(data, "values", data) if type(data).__name__ == "Series" else data
    if isinstance(array, np.ndarray) and array.ndim == 1 and array.dtype.kind in "fiu" and len(array):
        values = array.astype(np.float64)  # every int64 and float value converts as float() does
        bad = ~np.isfinite(values)
        if not bad.any():
            return values
        i = int(bad.argmax())
        _number(array[i], f"{what} item {i}")  # raises, naming the item as spool does
    values = np.fromiter((float(_number(value, f"{what} item {i}")) for i, value in _series_items(data, what)),
                         dtype=np.float64)
    if not len(values):
        raise SeqlabError(f"{what} is empty (no items); give at least one")
    return values


def _series_rows(data: Any, what: str) -> tuple[tuple[str, ...], Iterator[tuple[str, ...]]]:
    items = _series_items(data, what)
    dates = _dates(data, what) if has_date_index(data) else None

    def rows() -> Iterator[tuple[str, ...]]:
        for i, value in items:
            number = _number(value, f"{what} item {i}")
            yield (f"{_csv_field(dates[i])},{number}\n" if dates is not None else f"{number}\n",)

    header = f"{DATE_COLUMN},{VALUE_COLUMN}\n" if dates is not None else f"{VALUE_COLUMN}\n"
    return (header,), rows()


def _number(value: Any, where: str) -> str:
    """A finite real number written so that ``float()`` reads back the same float64."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or type(value).__name__ == "bool_":
        raise SeqlabError(f"{where}: expected a number, got {_short(value)}; give numbers (convert or drop the "
                          "item)")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise SeqlabError(f"{where}: {value!r} is not a finite number; fill or drop it (e.g. series.interpolate() "
                          "or series.dropna())")
    return repr(number)


def _dates(data: Any, what: str) -> list[str]:
    missing = data.index.isna()
    if missing.any():
        raise SeqlabError(f"{what} item {int(missing.argmax())}: the date index is missing (NaT); fill or drop it")
    return [_utf8(d, f"{what}: a date") for d in data.index.astype(str)]


def _csv_field(text: str) -> str:
    """A CSV field (RFC 4180 quoting where it holds a comma, a quote or a line break), as csv.reader reads it."""
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\r\n') else text
