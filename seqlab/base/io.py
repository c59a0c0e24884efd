"""Files: atomic writes, JSON reads, the metrics log, library versions, arrays mapped from files, the cache folder.
Torch-free; imports nothing of seqlab but :mod:`seqlab.base.errors` and :mod:`seqlab.base.version`.

Writes go to a temporary file in the target's folder, flushed to disk, then renamed onto the target
(:func:`replace_atomic`, the one rename in seqlab): a crash, a kill or an error part-way never leaves a
half-written file under the final name, and never removes the previous version before the new one is complete
(``os.replace`` is atomic on POSIX and Windows within one file system). Every writer of user-visible files in
seqlab goes through here, and every reader of seqlab's JSON files through :func:`read_json`, so a missing or
damaged file is always one ``error:`` line that names it.

A full disk (``ENOSPC``, or ``EFBIG``/``EDQUOT``: a file-size limit or a quota) fails the write it hits: the
temporary file is removed, the previous version stays, and the ``OSError`` carries the path it was writing
(:func:`is_disk_full`, :func:`disk_full_message` turn it into the one-line error).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from seqlab.base.errors import SeqlabError


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path`` (same suffix, so writers that infer the format from it
    still work); when the block ends without an error, it is renamed onto ``path``, else removed.
    Missing parent folders are created; a ``path`` that is a directory is refused."""
    path = Path(path)
    if path.is_dir():
        raise SeqlabError(f"{path} is a directory; give a file path inside it")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        with naming(path, tmp):
            yield tmp
        replace_atomic(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def replace_atomic(src: str | os.PathLike, dst: str | os.PathLike, *, aside: str | os.PathLike | None = None) -> None:
    """Rename ``src`` (a file or a folder written under a temporary name) onto ``dst`` in one step
    (``os.replace``: atomic within one file system; a file ``dst`` is replaced, a folder ``dst`` must be empty).

    With ``aside``, an existing ``dst`` (a folder or a file) is first renamed to ``aside`` and removed once
    ``src`` is in its place; if that second rename fails, it is put back. ``dst`` is then missing for the
    moment between the two renames, never half-written."""
    if aside is None or not os.path.lexists(dst):
        os.replace(src, dst)
        return
    os.replace(dst, aside)
    try:
        os.replace(src, dst)
    except BaseException:
        os.replace(aside, dst)
        raise
    remove(aside)


def remove(path: str | os.PathLike) -> None:
    """Delete ``path``, a file, a link or a folder with all it holds, if it exists (errors in a folder ignored)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_temporaries(folder: str | os.PathLike) -> None:
    """Delete the temporary files that writes killed part-way (``kill -9``) left under ``folder``: only the one
    writer of a folder may call it (seqlab.training.rundir, after the previous writer died)."""
    for path in Path(folder).rglob(".*.tmp*"):
        if path.is_file() and ".tmp" in path.name:
            path.unlink(missing_ok=True)


DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)  # no space, a file-size limit (ulimit -f), a quota


def is_disk_full(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in DISK_FULL


def disk_full_message(e: OSError) -> str:
    """``no space left to write PATH (No space left on device)``: the start of the one-line error."""
    where = f" to write {e.filename}" if e.filename else ""
    return f"no space left{where} ({e.strerror or os.strerror(e.errno)})"


@contextlib.contextmanager
def naming(path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> Iterator[None]:
    """Give an ``OSError`` raised by a write inside the block (``f.write`` raises it without a file name, a write
    to the temporary file ``tmp`` with that name) the ``path`` being written, so the error can name it."""
    try:
        yield
    except OSError as e:
        if e.errno is not None and e.filename in (None, str(tmp) if tmp else None):
            raise OSError(e.errno, e.strerror or os.strerror(e.errno), str(path)) from None
        raise


def write_fsynced(path: str | os.PathLike, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or an iterable of byte blocks written one after another, so that a large file is
    never held whole) to ``path`` (in place, not atomically) and flush it to disk before returning."""
    with naming(path), open(path, "wb") as f:
        for block in ((data,) if isinstance(data, (bytes, bytearray, memoryview)) else data):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())


def create_exclusive(path: str | os.PathLike, data: bytes) -> bool:
    """Create ``path`` holding ``data`` only if no file has that name: written to a temporary file, then
    hard-linked to ``path`` (atomic, and fails when ``path`` exists), so no reader ever sees it half-written.
    Returns False when ``path`` already exists. The temporary is ``.NAME.PID.tmp``, so that one a kill left
    behind names its process. (A lock file: :mod:`seqlab.training.rundir`.)"""
    path = Path(path)
    name = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_fsynced(name, data)
        os.link(name, path)
        return True
    except FileExistsError:
        return False
    except OSError as e:  # a file system without hard links: an exclusive create (the content follows at once)
        if is_disk_full(e):
            raise
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with naming(path), os.fdopen(fd, "wb") as f:
            f.write(data)
        return True
    finally:
        name.unlink(missing_ok=True)


def write_bytes_atomic(path: str | os.PathLike, data: bytes | Iterable[bytes]) -> Path:
    """Write ``data`` (bytes or an iterable of byte blocks) to ``path`` atomically (fsynced before the rename)."""
    with atomic_path(path) as tmp:
        write_fsynced(tmp, data)
    return Path(path)


def copy_atomic(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Copy the file ``src`` to ``dst`` atomically (read in blocks, fsynced before the rename)."""
    with open(src, "rb") as f:
        return write_bytes_atomic(dst, iter(lambda: f.read(1 << 20), b""))


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int | None = None) -> Path:
    """Write ``obj`` as JSON (UTF-8, non-ASCII kept, one trailing newline) to ``path`` atomically."""
    return write_text_atomic(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


def read_json(path: str | os.PathLike, what: str, fix: str = "re-create it", *, expect: type | None = None) -> Any:
    """The JSON document in ``path``, a ``what`` file (e.g. "vocabulary", named in messages).

    A missing file, a directory, bytes that are not UTF-8, text that is not JSON or (with ``expect``, e.g.
    ``dict``) a document of another type raise a one-line :class:`SeqlabError` naming the file and ending in
    ``fix``, the advice for the reader (e.g. "train the run again").
    """
    path = Path(path)
    if not os.path.exists(path):  # os.path: False, not an OSError, for a name the system refuses (too long)
        raise SeqlabError(f"{what} file not found: {path}; {fix}")
    if path.is_dir():
        raise SeqlabError(f"{path} is a directory; give the {what} JSON file inside it")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise SeqlabError(f"{path} is not a valid {what} JSON file (not UTF-8: {e.reason} at byte {e.start}); "
                          f"{fix}") from None
    except (json.JSONDecodeError, RecursionError) as e:  # RecursionError: nested too deep for the parser
        raise SeqlabError(f"{path} is not a valid {what} JSON file ({e}); {fix}") from None
    except OSError as e:
        raise SeqlabError(f"cannot read {path} ({e.strerror}); {fix}") from None
    if expect is not None and not isinstance(doc, expect):
        raise SeqlabError(f"{path} is not a {what} JSON file (it holds a JSON {_json_type(doc)}, not a JSON "
                          f"{_json_type(expect())}); {fix}")
    return doc


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return names.get(type(value), "null")


def cache_dir() -> Path:
    """``$SEQLAB_CACHE``, or ``~/.cache/seqlab`` when it is unset or empty: downloaded datasets
    (:mod:`seqlab.data.download`) and choices measured once per machine (:mod:`seqlab.training.devices`)."""
    return Path(os.environ.get("SEQLAB_CACHE") or "~/.cache/seqlab").expanduser()


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The rows of a run's ``metrics.jsonl`` (one JSON object per line; :class:`MetricsLog` writes it),
    or ``[]`` when there is none yet. A line that is not a JSON object (a write cut short) is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    return _rows(path.read_text(encoding="utf-8", errors="replace"))


def _rows(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict):
                rows.append(row)
    return rows


def versions(*libraries: str) -> dict[str, str]:
    """Library versions for ``state.json``: seqlab's and each named library's, e.g. ``versions("torch")``: the
    imported module's ``__version__``, or, for one this process has not imported (torch in a word2vec run), its
    installed distribution's version, read without importing it (a library not installed is left out)."""
    import sys
    from importlib import metadata

    from seqlab.base.version import __version__

    found = {"seqlab": __version__}
    for name in libraries:
        module = sys.modules.get(name)
        if module is not None:
            found[name] = str(module.__version__)
            continue
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


class MetricsLog:
    """Writes ``metrics.jsonl``: one JSON object per line (training rows and validation rows), appended."""

    def __init__(self, path: Path, enabled: bool = True, sinks: Sequence[Any] = ()):
        self.path, self.enabled = path, enabled
        self.sinks = list(sinks)  # each also gets every row (``sink.write(row)``): train.report_to's reporters
        self._last: dict[str, int] = {}

    def truncate_after(self, step: int) -> None:
        """On resume, drop rows written after the checkpoint we resume from (they will be redone)."""
        if not self.enabled or not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        kept = [line for line in lines if (row := _rows(line)) and row[0].get("step", 0) <= step]
        write_text_atomic(self.path, "".join(line + "\n" for line in kept))

    def __enter__(self) -> "MetricsLog":
        return self

    def __exit__(self, *exc) -> None:
        for sink in self.sinks:  # their files flushed and closed, whatever ended the block
            sink.close()

    def last_step(self, split: str) -> int | None:
        """The step of the last row written for ``split`` by this log (None before any)."""
        return self._last.get(split)

    def write(self, row: dict) -> None:
        """Append one row; a write that fails part-way (a full disk) is cut back off, so no half line stays."""
        self._last[row.get("split")] = row.get("step")
        if self.enabled:
            with naming(self.path), open(self.path, "ab", buffering=0) as f:
                start = f.seek(0, os.SEEK_END)
                data = memoryview((json.dumps(row) + "\n").encode("utf-8"))
                try:
                    while data:  # an unbuffered write may take part of it
                        data = data[f.write(data):]
                except OSError:
                    f.truncate(start)
                    raise
            for sink in self.sinks:
                sink.write(row)


def map_array(path: str | os.PathLike, dtype) -> tuple[np.ndarray, mmap.mmap | None]:
    """A file of ``dtype`` values as an array over a copy-on-write mapping (writable, as numba kernels' signatures
    take them; writes never reach the file), and the mapping (None for an empty file, whose array is empty).
    ``mapping.madvise(mmap.MADV_DONTNEED)`` drops its pages from the process's memory; they come back on the next
    read."""
    import numpy as np

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return np.zeros(0, dtype), None
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return np.frombuffer(mapping, dtype=dtype), mapping


def drop_pages(mappings) -> None:
    """Drop the pages of these file mappings from this process's resident memory (see :func:`map_array`)."""
    for mapping in mappings:
        if mapping is not None:
            mapping.madvise(mmap.MADV_DONTNEED)
