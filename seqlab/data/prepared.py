"""A prepared data folder (``seqlab data prepare``, a run's ``data/``): token binaries, tokenizer and manifest.

- :func:`building` makes a prepared folder appear atomically (built in a temporary folder beside it, then
  renamed); an error, Ctrl-C or SIGTERM part-way leaves nothing, and a folder that ``kill -9`` left is removed
  by the next preparation beside it.
- :func:`write_manifest` / :func:`read_manifest` write and check its ``manifest.json`` (format version, the
  size of each ``SPLIT.bin``); :func:`memmap_splits` maps the binaries read-only.

What goes into the folder: :mod:`seqlab.data.lm_tokens`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from seqlab.base import signals
from seqlab.data.workers import end_workers
from seqlab.base.errors import SeqlabError, shown, spelled
from seqlab.base.io import read_json, replace_atomic, write_json_atomic
from seqlab.base.outputs import check_replaceable

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


def _temporaries(out: Path) -> list[Path]:
    return list(out.parent.glob(f".{out.name}.*.tmp"))


def _remove_orphans(out: Path) -> None:
    """Remove temporary folders beside ``out`` whose preparing process (on this host) is gone (``kill -9``)."""
    host = _host()
    for tmp in _temporaries(out):
        parts = tmp.name[len(out.name) + 2:-len(".tmp")].split("-")  # HOST-PID-RANDOM (HOST has no "-")
        if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not _alive(int(parts[1])):
            shutil.rmtree(tmp, ignore_errors=True)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def building(out: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``out``; when the block ends without an error it becomes ``out`` in one
    rename (an existing ``out`` is replaced only with ``force``, only when it is a seqlab output
    (:func:`seqlab.base.outputs.check_replaceable`), and only then). On any error, Ctrl-C or SIGTERM the temporary
    folder is removed and ``out`` is as before."""
    out = Path(out)
    if out.exists() and not force:
        raise SeqlabError(f"{shown(out)} already exists; give another {spelled('out')} or replace it with "
                          f"{spelled('force')}")
    if out.exists() and not out.is_dir():
        raise SeqlabError(f"{shown(out)} is a file; give a folder path for {spelled('out')}")
    if force:
        check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(out)
    tmp = out.parent / f".{out.name}.{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir()
    try:
        with _on_sigterm(tmp):
            yield tmp
            replace_atomic(tmp, out, aside=out.parent / f".{out.name}.{_host()}-{os.getpid()}-old.tmp")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _on_sigterm(tmp: Path):
    """SIGTERM while preparing (:func:`seqlab.signals.undoing`): the workers are ended and ``tmp`` removed, then
    the handler of the block around it runs (``seqlab train``'s undoes the run's start and exits 143); without
    one, :class:`~seqlab.signals.Terminated` is raised, so that the callers' clean-up runs too."""

    def undo() -> None:
        end_workers()
        shutil.rmtree(tmp, ignore_errors=True)

    return signals.undoing(undo)


def write_manifest(directory: Path, manifest: dict) -> None:
    write_json_atomic(directory / MANIFEST, {"format_version": FORMAT_VERSION, **manifest}, indent=1)


def read_manifest(directory: Path, fix: str) -> dict:
    """The manifest of a prepared directory, checked: known format, shard files of the recorded sizes."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SeqlabError(f"prepared data folder {shown(directory)} not found; {fix}")
    manifest = read_json(directory / MANIFEST, "prepared data manifest", fix, expect=dict)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise SeqlabError(f"{shown(directory / MANIFEST)} has format_version {manifest.get('format_version')!r}; "
                          f"this seqlab reads {FORMAT_VERSION}; {fix}")
    if not isinstance(manifest.get("tokens"), dict) or manifest.get("dtype") not in ("uint16", "uint32"):
        raise SeqlabError(f"{shown(directory / MANIFEST)} lacks its token counts or dtype; {fix}")
    dtype = np.dtype(manifest["dtype"])
    for split, n in manifest["tokens"].items():
        path = directory / f"{split}.bin"
        size = path.stat().st_size if path.is_file() else None
        if size != n * dtype.itemsize:
            raise SeqlabError(f"{shown(path)} holds {size} bytes, the manifest says {n} {dtype.name} tokens "
                              f"({n * dtype.itemsize} bytes): the prepared data is damaged; {fix}")
    return manifest


def memmap_splits(directory: Path, manifest: dict) -> dict[str, np.ndarray]:
    """Each split's tokens, memory-mapped read-only from ``directory`` (nothing is copied)."""
    out = {}
    for split, n in manifest["tokens"].items():
        out[split] = (np.memmap(directory / f"{split}.bin", dtype=manifest["dtype"], mode="r", shape=(n,))
                      if n else np.zeros(0, dtype=manifest["dtype"]))
    return out


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
