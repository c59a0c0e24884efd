"""An indexed token store: many variable-length int sequences (one per example) in one flat binary file, read back
through a memory map, so that a task's training data costs its index (8 bytes an example), not its text.

The idea of fairseq's and Megatron's "indexed dataset". A field of a split is two files:

``NAME.bin``  the sequences' values one after another, ``uint16`` when every value fits (a vocabulary of at most
              65,536 ids, :func:`seqlab.data.workers.token_dtype`), else ``uint32``;
``NAME.idx``  a 16-byte header (:data:`MAGIC`, then the dtype as numpy spells it, e.g. ``<u2``) and ``n + 1``
              ``int64`` offsets into the values: sequence i is ``values[offsets[i]:offsets[i + 1]]``.

:class:`IndexedWriter` appends one sequence at a time (a buffer of offsets, never the whole split) and makes both
files appear only when it finishes (temporary names, then renamed: ``.bin`` first, ``.idx`` last, so an
``.idx`` always has its ``.bin``); an error part-way leaves neither. :class:`IndexedArrays` maps them and gives
sequence i as a numpy array, and ``lengths`` (an in-memory int64 array) for length bucketing.

:class:`SplitWriter` keeps several fields of one split together, with a JSON record (``SPLIT.json``, written
last) of what they were made from: :func:`reused_split` with the same ``key`` (the source files' size and mtime,
the settings) maps them again (``--resume``); :func:`prepared_split` is the two together.

Shapes: n examples (sequences); values (all sequences' tokens together).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from array import array
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from seqlab.data.workers import token_dtype
from seqlab.base.errors import SeqlabError
from seqlab.base.io import atomic_path, map_array, read_json, write_json_atomic

MAGIC = b"SQLIDX\x00\x01"
HEADER = 16  # bytes before the offsets: MAGIC and the dtype string, padded with NUL
FORMAT_VERSION = 1
FLUSH = 1 << 11  # offsets buffered before a write (16 KiB)


class IndexedWriter:
    """``with IndexedWriter(prefix, bound) as w: w.append(ids)`` writes ``PREFIX.bin`` / ``PREFIX.idx``; every
    value must lie in ``0 .. bound - 1`` (the dtype is chosen from ``bound``)."""

    def __init__(self, prefix: str | os.PathLike, bound: int):
        self.prefix = Path(prefix)
        self.dtype = token_dtype(bound)
        self.bound = bound
        self.offsets = array("q", [0])  # int64 offsets not yet written
        self.end = 0  # values written
        self.count = 0  # sequences appended

    def __enter__(self) -> IndexedWriter:
        self._stack = contextlib.ExitStack()
        try:
            idx = self._stack.enter_context(atomic_path(self.prefix.with_name(self.prefix.name + ".idx")))
            data = self._stack.enter_context(atomic_path(self.prefix.with_name(self.prefix.name + ".bin")))
            self._idx = self._stack.enter_context(open(idx, "wb"))  # closed (and flushed) before the renames
            self._data = self._stack.enter_context(open(data, "wb"))
        except BaseException:
            self._stack.close()
            raise
        self._idx.write(MAGIC + self.dtype.str.encode().ljust(HEADER - len(MAGIC), b"\0"))
        return self

    def append(self, ids: Sequence[int] | np.ndarray) -> None:
        values = np.asarray(ids)
        if values.size and (values.min() < 0 or values.max() >= self.bound):
            raise ValueError(f"{self.prefix}: value out of range 0..{self.bound - 1} in sequence {self.count}")
        self._data.write(values.astype(self.dtype, copy=False).tobytes())
        self.end += values.size
        self.count += 1
        self.offsets.append(self.end)
        if len(self.offsets) >= FLUSH:
            self._flush()

    def _flush(self) -> None:
        self._idx.write(self.offsets.tobytes())
        self.offsets = array("q")

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self._flush()
        self._stack.__exit__(*exc)  # closes the files, then renames .bin and .idx (or removes both on an error)


class IndexedArrays(Sequence):
    """The sequences an :class:`IndexedWriter` wrote, memory-mapped: ``self[i]`` is an array (a view of the map),
    ``lengths`` the (n,) int64 lengths, ``values`` the flat (values,) array."""

    def __init__(self, prefix: str | os.PathLike):
        prefix = Path(prefix)
        idx, data = (prefix.with_name(prefix.name + suffix) for suffix in (".idx", ".bin"))
        try:
            with open(idx, "rb") as f:
                header = f.read(HEADER)
            dtype = np.dtype(header[len(MAGIC):].rstrip(b"\0").decode()) if header[:len(MAGIC)] == MAGIC else None
        except (OSError, TypeError, UnicodeDecodeError):
            dtype = None
        if dtype is None or dtype.kind != "u":
            raise SeqlabError(f"{idx} is missing or not a seqlab index; delete {prefix.parent} and train again")
        offsets, offsets_map = map_array(idx, np.int64)
        self.offsets = offsets[HEADER // 8:]  # (n + 1,)
        self.values, values_map = map_array(data, dtype)  # (values,)
        self.maps = (offsets_map, values_map)  # the file mappings (seqlab.base.io.drop_pages)
        if not len(self.offsets) or int(self.offsets[-1]) != len(self.values):
            raise SeqlabError(f"{data} does not match {idx.name}; delete {prefix.parent} and train again")

    @functools.cached_property
    def lengths(self) -> np.ndarray:
        """(n,) int64, in memory (made when first asked for)."""
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self.values[self.offsets[i]:self.offsets[i + 1]]


def lengths_of(seqs: Sequence) -> np.ndarray:
    """(n,) int64 lengths of ``seqs``: an :class:`IndexedArrays`' own, or counted (a list of lists)."""
    found = getattr(seqs, "lengths", None)
    return found if found is not None else np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))


def _record(key: dict) -> dict:
    return json.loads(json.dumps(key))  # as it reads back from JSON (tuples become lists)


def reused_split(directory: str | os.PathLike, split: str, key: dict,
                 fields: Iterable[str]) -> tuple[dict[str, IndexedArrays], dict] | None:
    """The fields of a split in ``directory`` and their record, when ``directory/SPLIT.json`` holds ``key``."""
    directory, fields = Path(directory), sorted(fields)
    record_path = directory / f"{split}.json"
    if not record_path.exists():
        return None
    record = read_json(record_path, "prepared split record", f"delete {directory} and train again")
    if not isinstance(record, dict) or record.get("key") != _record({"format": FORMAT_VERSION, "fields": fields, **key}):
        return None
    return {name: IndexedArrays(directory / f"{split}.{name}") for name in fields}, record


class SplitWriter:
    """``with SplitWriter(directory, split, key, bounds) as w: w.append(example)`` writes the fields ``bounds``
    names (field -> value bound) of one split, an example ``{field: ids}`` at a time (None: left out, counted
    as dropped), then the record ``directory/SPLIT.json`` (``{"key", "examples", "dropped"}``) last."""

    def __init__(self, directory: str | os.PathLike, split: str, key: dict, bounds: dict[str, int]):
        self.directory, self.split, self.bounds = Path(directory), split, bounds
        self.key = _record({"format": FORMAT_VERSION, "fields": sorted(bounds), **key})
        self.kept = self.dropped = 0

    def __enter__(self) -> SplitWriter:
        (self.directory / f"{self.split}.json").unlink(missing_ok=True)  # the old fields are stale from here on
        self._stack = contextlib.ExitStack()
        with self._stack:
            self.writers = {name: self._stack.enter_context(IndexedWriter(self.directory / f"{self.split}.{name}",
                                                                          bound))
                            for name, bound in self.bounds.items()}
            self._stack = self._stack.pop_all()
        return self

    def append(self, example: dict | None) -> None:
        if example is None:
            self.dropped += 1
            return
        for name, writer in self.writers.items():
            writer.append(example[name])
        self.kept += 1

    def __exit__(self, *exc) -> None:
        self._stack.__exit__(*exc)
        if exc[0] is None:
            record = {"key": self.key, "examples": self.kept, "dropped": self.dropped}
            write_json_atomic(self.directory / f"{self.split}.json", record)


def prepared_split(directory: str | os.PathLike, split: str, key: dict, bounds: dict[str, int],
                   examples: Callable[[], Iterable[dict | None]]) -> tuple[dict[str, IndexedArrays], dict]:
    """The fields ``bounds`` names (field -> value bound) of one split in ``directory``, and their record
    ``{"key", "examples", "dropped"}``: reused when ``directory/SPLIT.json`` holds this ``key``, else written
    from ``examples()``, which yields one ``{field: ids}`` per example (None: left out, counted as dropped)."""
    found = reused_split(directory, split, key, bounds)
    if found is None:
        with SplitWriter(directory, split, key, bounds) as writer:
            for example in examples():
                writer.append(example)
        found = reused_split(directory, split, key, bounds)
    return found


def file_identity(paths: Iterable[str | os.PathLike]) -> list[list]:
    """[[path, size, mtime_ns], ...] of files, for a :func:`prepared_split` key (a file that changed is re-read)."""
    out = []
    for path in paths:
        st = os.stat(path)
        out.append([os.path.abspath(path), st.st_size, st.st_mtime_ns])
    return out

