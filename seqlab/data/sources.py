"""Where text comes from: embedded corpora, downloadable datasets, user files; deterministic splits.

``data.source`` (DESIGN.md) is one of
- an embedded corpus that every Python has, no network needed:
  ``pydocs``   the running interpreter's documentation topics (``pydoc_data.topics.topics``, the text
               of ``help('topic')``: English prose), values joined in sorted key order;
  ``pystdlib`` the standard library's ``.py`` source files (see :func:`pystdlib_files`);
- a downloadable dataset name (:mod:`seqlab.data.download`), read from the cache, downloaded when missing;
- a path to a UTF-8 text file.
The text depends on the Python version (both embedded corpora come from the running interpreter)
but is identical from run to run.
"""

from __future__ import annotations

import functools
import os
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from seqlab.data import download
from seqlab.errors import SeqlabError, shown

# Folders of the standard library left out of `pystdlib`: installed third-party packages, the
# regression tests (`test/`, and `tests/`, `idle_test/` inside packages such as idlelib, tkinter,
# ctypes, unittest, lib2to3, distutils; they contain deliberately odd or undecodable files), the
# build configuration (`config-3.X-...`) and bytecode caches.
PYSTDLIB_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})
PYSTDLIB_MAX_CHARS = 8_000_000  # cap: whole files in sorted path order until the next would pass it

EMBEDDED: dict[str, str] = {  # name -> description
    "pydocs": "the running Python's documentation topics (pydoc_data), English prose, ~0.5M chars",
    "pystdlib": f"the running Python's standard-library .py source, up to {PYSTDLIB_MAX_CHARS / 1e6:.0f}M chars",
}

DEFAULT_SPLIT = (0.9, 0.05, 0.05)  # train, valid, test


@functools.cache
def pydocs_text() -> str:
    """``pydoc_data.topics.topics`` values joined with newlines in sorted key order."""
    from pydoc_data.topics import topics

    return "\n".join(topics[key] for key in sorted(topics))


def pystdlib_files() -> list[Path]:
    """The standard library's ``.py`` files in sorted relative-path order, without
    :data:`PYSTDLIB_SKIP_DIRS`, ``config-*`` folders and the machine-generated ``_sysconfigdata*`` files."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in PYSTDLIB_SKIP_DIRS and not d.startswith("config-")]
        files += [Path(dirpath, f) for f in filenames if f.endswith(".py") and not f.startswith("_sysconfigdata")]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


@functools.cache
def pystdlib_text() -> str:
    """The files of :func:`pystdlib_files` joined with newlines, each read as UTF-8 (files that are
    not UTF-8 are skipped), up to :data:`PYSTDLIB_MAX_CHARS`."""
    parts, size = [], 0
    for path in pystdlib_files():
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if size + len(text) > PYSTDLIB_MAX_CHARS:
            break
        parts.append(text)
        size += len(text) + 1
    return "\n".join(parts)


_EMBEDDED_TEXT = {"pydocs": pydocs_text, "pystdlib": pystdlib_text}


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
        download.get(name)
        return check_text_path(download.cache_dir() / download.DATASETS[name].main)
    if not os.path.exists(_expand(name)) and not _looks_like_path(name):  # os.path: False for a name too long
        raise SeqlabError(
            f"unknown corpus {name!r}: not a corpus name and no such file; use one of "
            f"{', '.join(source_names())}, or the path of a UTF-8 text file"
        )
    return check_text_path(name)


def _looks_like_path(name: str) -> bool:
    return os.sep in name or "/" in name or "." in name or name.startswith("~")


def split_text(text: str, fractions: Sequence[float] = DEFAULT_SPLIT) -> tuple[str, str, str]:
    """Cut ``text`` into (train, valid, test): contiguous pieces in order, sizes by character
    fractions (boundaries ``round(n * f_train)`` and ``round(n * (f_train + f_valid))``), deterministic."""
    a, b = split_points(len(text), fractions)
    return text[:a], text[a:b], text[b:]


def split_points(n: int, fractions: Sequence[float] = DEFAULT_SPLIT) -> tuple[int, int]:
    """The two cut points (character indices) of :func:`split_text` for a text of ``n`` characters; a split
    with a positive fraction that would be empty is an error."""
    fractions = _check_fractions(fractions)
    a = min(n, round(n * fractions[0]))
    b = max(a, min(n, round(n * (fractions[0] + fractions[1]))))
    for size, fraction, split in zip((a, b - a, n - b), fractions, ("train", "valid", "test")):
        if fraction > 0 and not size:
            raise SeqlabError(
                f"the corpus ({n} characters) is too short for a {split} split of {fraction:g}; "
                "give more text or change data.split"
            )
    return a, b


def _check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    try:
        values = tuple(float(f) for f in fractions)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int too large for a float
        values = ()
    fix = "give three fractions for train, valid, test, e.g. data.split = [0.9, 0.05, 0.05]"
    if len(values) != 3:
        raise SeqlabError(f"split fractions must be three numbers, got {fractions!r}; {fix}")
    if any(not (v >= 0) for v in values):  # also catches NaN
        raise SeqlabError(f"split fractions must be non-negative, got {list(values)}; {fix}")
    if abs(sum(values) - 1.0) > 1e-6:
        raise SeqlabError(f"split fractions must sum to 1, got {list(values)} (sum {sum(values):g}); {fix}")
    if values[0] <= 0:
        raise SeqlabError(f"the train fraction must be > 0, got {values[0]:g}; {fix}")
    return values


def list_sources() -> list[dict]:
    """One row per corpus for ``seqlab data list``: name, kind (embedded | download), description, cached."""
    rows = [{"name": n, "kind": "embedded", "description": d, "cached": True} for n, d in EMBEDDED.items()]
    rows += [
        {"name": d.name, "kind": "download", "description": d.description, "cached": download.is_cached(d.name)}
        for d in download.DATASETS.values()
    ]
    return rows
