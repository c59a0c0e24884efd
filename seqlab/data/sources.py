"""Where text comes from: embedded corpora, downloadable datasets, user files; deterministic splits.

``data.source`` (docs/manual.md, "Config conventions") is one of
- an embedded corpus that every Python has, no network needed:
  ``pydocs``   the running interpreter's documentation topics (``pydoc_data.topics.topics``, the text
               of ``help('topic')``: English prose), values joined in sorted key order;
  ``pystdlib`` the standard library's ``.py`` source files (:mod:`seqlab.data.bundled`);
  ``pyprose``  the documentation topics and the docstrings of a fixed list of standard-library modules, read
               from their source, tables and code removed: English prose, ~1.8M chars (:mod:`seqlab.data.prose`);
- a downloadable dataset name (:mod:`seqlab.data.download`), read from the cache, downloaded when missing;
- a path to a UTF-8 text file.
The text depends on the Python version (the embedded corpora come from the running interpreter)
but is identical from run to run.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from seqlab.data import download
from seqlab.data.bundled import PYSTDLIB_MAX_CHARS, pydocs_text, pystdlib_text
from seqlab.data.text_split import split_points, split_text  # noqa: F401 (split_text: callers import it from here)
from seqlab.base.errors import SeqlabError, shown

EMBEDDED: dict[str, str] = {  # name -> description
    "pydocs": "the running Python's documentation topics (pydoc_data), English prose, ~0.5M chars",
    "pystdlib": f"the running Python's standard-library .py source, up to {PYSTDLIB_MAX_CHARS / 1e6:.0f}M chars",
    "pyprose": "pydocs plus standard-library docstrings, tables and code removed, English prose, ~1.8M chars",
}


def _pyprose_text() -> str:
    """:func:`seqlab.data.prose.pyprose_text` (imported when asked for)."""
    from seqlab.data.prose import pyprose_text

    return pyprose_text()


_EMBEDDED_TEXT = {"pydocs": pydocs_text, "pystdlib": pystdlib_text, "pyprose": _pyprose_text}


def source_names() -> list[str]:
    """Every corpus name ``read_text`` accepts besides a path."""
    return [*EMBEDDED, *download.DATASETS]


def _expand(name: str | os.PathLike) -> Path:
    """``Path(name).expanduser()``; ``~user`` of a user that does not exist is a SeqlabError."""
    try:
        return Path(name).expanduser()
    except (RuntimeError, ValueError):  # "Could not determine home directory." / "embedded null byte" (~user\0)
        raise SeqlabError(f"cannot expand {os.fspath(name)!r}: no such user's home folder; give the full path") from None


def check_text_path(path: str | os.PathLike) -> Path:
    """``path`` expanded, once it is known to be a file that can be opened: a missing path, a directory or an
    unreadable file is a one-line SeqlabError with the fix."""
    path = _expand(path)
    where = shown(path)
    try:
        if not path.exists():
            raise SeqlabError(f"file not found: {where}; check the path")
        if path.is_dir():
            some = sorted(p.name for p in path.iterdir() if p.is_file())[:3]
            hint = f" (it holds {', '.join(map(shown, some))})" if some else ""
            raise SeqlabError(f"{where} is a directory{hint}; give the path of a text file inside it")
        with open(path, "rb"):
            pass
    except OSError as e:  # permissions, a name too long, ...
        raise SeqlabError(f"cannot read {where}: {e.strerror or e}; check the path and its permissions") from None
    return path


def not_utf8_error(path: Path, byte: int, offset: int, reason: str) -> SeqlabError:
    where = shown(path)
    return SeqlabError(f"{where} is not UTF-8: byte 0x{byte:02x} at byte offset {offset} ({reason}); "
                       f"convert it, e.g. `iconv -f latin1 -t utf-8 {where} > {where}.utf8`")


def empty_file_error(path: Path) -> SeqlabError:
    return SeqlabError(f"{shown(path)} is empty (no text); give a file with text in it")


def read_text_file(path: str | os.PathLike) -> str:
    """Read a user's UTF-8 text file; every problem is a one-line SeqlabError with the fix."""
    path = check_text_path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SeqlabError(f"cannot read {shown(path)}: {e.strerror or e}; check the path and its permissions") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise not_utf8_error(path, data[e.start], e.start, e.reason) from None
    if not text.strip():
        raise empty_file_error(path)
    return text


def _unreadable(path: Path, e: OSError) -> SeqlabError:
    return SeqlabError(f"cannot read {shown(path)}: {e.strerror or e}; check the path and its permissions")


def read_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a user's UTF-8 text file as ``text.split("\\n")`` gives them (a final newline ends the last
    line), read one at a time: the whole text is never held. The checks and messages of :func:`read_text_file`
    (a missing file or a folder before the first line, bytes that are not UTF-8 when reached, an empty file at
    the end)."""
    path = check_text_path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise _unreadable(path, e) from None
    offset, blank = 0, True
    with f:
        for raw in f:  # split at b"\n" only
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise not_utf8_error(path, raw[e.start], offset + e.start, e.reason) from None
            offset += len(raw)
            blank = blank and line.isspace()
            yield line[:-1] if line.endswith("\n") else line
    if blank:
        raise empty_file_error(path)


def read_text(source: str | os.PathLike) -> str:
    """The text of ``source``: an embedded corpus name, a downloadable dataset name (its main file,
    downloaded into the cache when missing), or a path to a UTF-8 text file."""
    found = source_file(source)
    return found if isinstance(found, str) else read_text_file(found)


def source_file(source: str | os.PathLike) -> Path | str:
    """Where the text of ``source`` is, without reading it: the text itself for an embedded corpus (it is in
    memory anyway), else the path of the file (a downloadable dataset's main file, downloaded into the cache
    when missing, or a user's file, checked to be a readable file)."""
    name = os.fspath(source)
    if name in _EMBEDDED_TEXT:
        return _EMBEDDED_TEXT[name]()
    if name in download.DATASETS:
        return check_text_path(download.main_file(name))
    if not os.path.exists(_expand(name)) and not _looks_like_path(name):  # os.path: False for a name too long
        raise SeqlabError(
            f"unknown corpus {name!r}: not a corpus name and no such file; use one of "
            f"{', '.join(source_names())}, or the path of a UTF-8 text file"
        )
    return check_text_path(name)


BLOCK_CHARS = 1 << 20  # characters per block of a streamed text
_TRAILING_WORD = re.compile(r"\S*\Z")
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines cuts


class TextStream:
    """A text read in fresh passes: each call yields it in blocks of at most :data:`BLOCK_CHARS` characters;
    ``chars`` is its length in characters (what :func:`line_parts` cuts by)."""

    def __init__(self, blocks: Callable[[], Iterator[str]], chars: int):
        self.blocks, self.chars = blocks, chars

    def __call__(self) -> Iterator[str]:
        return self.blocks()


def stream_text(source: str | os.PathLike, fractions: Sequence[float] = (1.0, 0.0, 0.0)) -> TextStream:
    """The train part of ``source``'s text (cut by ``fractions`` exactly as :func:`split_text` cuts the text of
    :func:`read_text`), as a :class:`TextStream` whose every call is a fresh pass yielding it in blocks of at most
    :data:`BLOCK_CHARS` characters: a file is never held whole in memory. A file is checked in one pass before
    this returns (missing, a directory, not UTF-8, empty: :func:`read_text_file`'s errors; the split's)."""
    found = source_file(source)
    if isinstance(found, str):  # an embedded corpus: its text is in memory anyway
        train = split_text(found, fractions)[0]
        return TextStream(lambda: (train[i:i + BLOCK_CHARS] for i in range(0, len(train), BLOCK_CHARS)), len(train))
    n, blank = 0, True
    for block in _decoded_blocks(found):
        n += len(block)
        blank = blank and block.isspace()
    if blank:
        raise empty_file_error(found)
    a = split_points(n, fractions)[0]
    return TextStream(lambda: _decoded_blocks(found, a), a)


def _decoded_blocks(path: Path, limit: int | None = None) -> Iterator[str]:
    """The UTF-8 text of ``path`` in blocks of at most BLOCK_CHARS characters, the first ``limit`` of them."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0  # bytes read before this block
    try:
        with open(path, "rb") as f:
            while limit is None or limit > 0:
                data = f.read(BLOCK_CHARS)
                try:
                    block = decoder.decode(data, final=not data)
                except UnicodeDecodeError as e:  # e.start counts from the bytes the decoder held back
                    pending = len(e.object) - len(data)
                    raise not_utf8_error(path, e.object[e.start], offset - pending + e.start, e.reason) from None
                offset += len(data)
                if limit is not None:
                    block = block[:limit]
                    limit -= len(block)
                if block:
                    yield block
                if not data:
                    return
    except OSError as e:
        raise _unreadable(path, e) from None


def line_pieces(blocks: Iterable[str], max_chars: int = BLOCK_CHARS) -> Iterator[tuple[str, bool]]:
    """The lines of the text that ``blocks`` make up, as ``str.splitlines`` cuts it, each as pieces
    ``(text, ends)``: a line longer than ``max_chars`` comes in several, cut after a whitespace character (so no
    word is cut), ``ends`` True on the line's last piece. Memory: a block and a piece, never the whole text."""
    carry = ""
    for block in blocks:
        lines = (carry + block).splitlines(keepends=True)
        carry = lines.pop() if lines and (lines[-1][-1] not in _LINE_BREAKS or lines[-1][-1] == "\r") else ""
        for line in lines:  # complete lines, with their line break
            yield line[:-2] if line.endswith("\r\n") else line[:-1], True
        if len(carry) > max_chars and carry[-1] != "\r":  # a long line: pass on what ends in whitespace
            cut = _TRAILING_WORD.search(carry).start()  # after the last whitespace (\s, as the tokenizers')
            if cut:
                yield carry[:cut], False
                carry = carry[cut:]
    if carry:
        yield carry[:-1] if carry[-1] in _LINE_BREAKS else carry, True


def line_parts(text: TextStream, parts: int,
               max_chars: int = BLOCK_CHARS) -> list[Callable[[], Iterator[tuple[str, bool]]]]:
    """:func:`line_pieces` of ``text`` in ``parts`` consecutive runs of whole lines, each a function whose every
    call is a fresh pass: run k holds the lines that start at a position in [k c, (k + 1) c) of the text without
    its line breaks, c = text.chars / parts (a position every run computes alike from the same pieces), the last
    run every line after (a line cut into pieces of at most ``max_chars`` stays in one run). Together they are
    ``line_pieces(text())`` in order; run k reads the text before its lines (blocks and line cuts, no more) and
    stops after them. So several processes can each take a run."""
    step = text.chars / parts

    def run(k: int) -> Iterator[tuple[str, bool]]:
        lo, hi = k * step, (k + 1) * step if k < parts - 1 else float("inf")
        position = line_start = 0  # characters (line breaks not counted) before this piece, before its line
        for piece, ends in line_pieces(text(), max_chars):
            if line_start >= hi:
                return
            if line_start >= lo:
                yield piece, ends
            position += len(piece)
            if ends:
                line_start = position

    return [lambda k=k: run(k) for k in range(parts)]


def _looks_like_path(name: str) -> bool:
    return os.sep in name or "/" in name or "." in name or name.startswith("~")


def list_sources() -> list[dict]:
    """One row per corpus for ``seqlab data list``: name, kind (embedded | download), description, cached."""
    rows = [{"name": n, "kind": "embedded", "description": d, "cached": True} for n, d in EMBEDDED.items()]
    rows += [
        {"name": d.name, "kind": "download", "description": d.description, "cached": download.is_cached(d.name)}
        for d in download.DATASETS.values()
    ]
    return rows
