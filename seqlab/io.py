"""Atomic file writes: a temporary file in the target's folder, flushed to disk, then ``os.replace``.

A crash, a kill or an error part-way never leaves a half-written file under the final name, and never
removes the previous version before the new one is complete (``os.replace`` is atomic on POSIX and Windows
within one file system). Every writer of user-visible files in seqlab goes through here; torch-free.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqlab.errors import SeqlabError


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
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_fsynced(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` (in place, not atomically) and flush it to disk before returning."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (fsynced before the rename)."""
    with atomic_path(path) as tmp:
        write_fsynced(tmp, data)
    return Path(path)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike, obj: Any, indent: int | None = None) -> Path:
    """Write ``obj`` as JSON (UTF-8, non-ASCII kept, one trailing newline) to ``path`` atomically."""
    return write_text_atomic(path, json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")
