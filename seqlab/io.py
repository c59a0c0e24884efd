"""Files: atomic writes, JSON reads, the metrics log, library versions. Torch-free; imports nothing of seqlab
above :mod:`seqlab.errors`.

Writes go to a temporary file in the target's folder, flushed to disk, then ``os.replace``: a crash, a kill or
an error part-way never leaves a half-written file under the final name, and never removes the previous
version before the new one is complete (``os.replace`` is atomic on POSIX and Windows within one file system).
Every writer of user-visible files in seqlab goes through here, and every reader of seqlab's JSON files through
:func:`read_json`, so a missing or damaged file is always one ``error:`` line that names it.
"""

from __future__ import annotations

import contextlib
import importlib
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


def read_json(path: str | os.PathLike, what: str, fix: str = "re-create it", *, expect: type | None = None) -> Any:
    """The JSON document in ``path``, a ``what`` file (e.g. "vocabulary", named in messages).

    A missing file, a directory, bytes that are not UTF-8, text that is not JSON or (with ``expect``, e.g.
    ``dict``) a document of another type raise a one-line :class:`SeqlabError` naming the file and ending in
    ``fix``, the advice for the reader (e.g. "train the run again").
    """
    path = Path(path)
    if not path.exists():
        raise SeqlabError(f"{what} file not found: {path}; {fix}")
    if path.is_dir():
        raise SeqlabError(f"{path} is a directory; give the {what} JSON file inside it")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise SeqlabError(f"{path} is not a valid {what} JSON file (not UTF-8: {e.reason} at byte {e.start}); "
                          f"{fix}") from None
    except json.JSONDecodeError as e:
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


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The rows of a run's ``metrics.jsonl`` (one JSON object per line; :class:`MetricsLog` writes it),
    or ``[]`` when there is none yet."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def versions(*libraries: str) -> dict[str, str]:
    """Library versions for ``state.json``: seqlab's and each named library's, e.g. ``versions("torch")``."""
    from seqlab import __version__  # the package root defines it; importing it runs nothing else

    return {"seqlab": __version__, **{name: str(importlib.import_module(name).__version__) for name in libraries}}


class MetricsLog:
    """Writes ``metrics.jsonl``: one JSON object per line (training rows and validation rows), appended."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path, self.enabled = path, enabled
        self._last: dict[str, int] = {}

    def truncate_after(self, step: int) -> None:
        """On resume, drop rows written after the checkpoint we resume from (they will be redone)."""
        if not self.enabled or not self.path.exists():
            return
        rows = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= step]
        write_text_atomic(self.path, "".join(r + "\n" for r in rows))

    def last_step(self, split: str) -> int | None:
        """The step of the last row written for ``split`` by this log (None before any)."""
        return self._last.get(split)

    def write(self, row: dict) -> None:
        self._last[row.get("split")] = row.get("step")
        if self.enabled:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
