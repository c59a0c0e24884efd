"""The examples of a file as a sequence that is counted once and read again on each pass, never held.

A reader of examples (sentence pairs, tagged sentences, labelled sentences) is a function that streams a file
line by line and yields its examples, checking them as it goes. :class:`Streamed` runs it once to count the
examples (so every bad line is refused before any work: the readers' one-line ``FILE:LINE`` errors), then
behaves like a list of them for what the tasks do with their splits: ``len``, contiguous slices (a view of the
same file: ``data.split`` cuts by example counts), iteration (a fresh pass over the file each time) and, for
tests and messages, ``view[i]``. Memory: one example at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")
CHUNK = 64  # examples encoded together while preparing: BPE encodes them in parallel threads; their id lists
# (~100 bytes a token as Python objects) are the preparation's largest Python allocation


class Streamed(Generic[T]):
    """Examples ``start .. stop - 1`` of what ``read()`` yields (all of them by default); ``paths``: the files
    read (their identity keys prepared data). ``n``: how many ``read()`` yields, when already known."""

    def __init__(self, read: Callable[[], Iterator[T]], paths: tuple[Path, ...], n: int | None = None,
                 start: int = 0, stop: int | None = None):
        self.read, self.paths = read, tuple(paths)
        self.total = sum(1 for _ in read()) if n is None else n
        self.start, self.stop = start, self.total if stop is None else stop

    def __len__(self) -> int:
        return self.stop - self.start

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(self.read(), self.start, self.stop)

    def __getitem__(self, i: int | slice):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("a streamed view is sliced contiguously (step 1)")
            return Streamed(self.read, self.paths, self.total, self.start + start, self.start + max(start, stop))
        index = i + len(self) if i < 0 else i
        if not 0 <= index < len(self):
            raise IndexError(f"example {i} of {len(self)}")
        return next(itertools.islice(self.read(), self.start + index, None))

    def span(self, start: int, stop: int) -> Streamed[T]:
        """Examples ``start .. stop - 1`` of the same stream (positions in the whole file, not in this view)."""
        return Streamed(self.read, self.paths, self.total, start, stop)

    @property
    def key(self) -> dict:
        """What the examples are, for :func:`seqlab.data.indexed.prepared_split`: the files and the range."""
        from seqlab.data.indexed import file_identity

        return {"files": file_identity(self.paths), "range": [self.start, self.stop]}


def chunks(items: Iterable[T], size: int = CHUNK) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter): work done a chunk at a time (BPE's batch encoding)."""
    items = iter(items)
    while chunk := list(itertools.islice(items, size)):
        yield chunk


def counted(items: Iterable[T], counter: list[int]) -> Iterator[T]:
    """``items`` unchanged, adding 1 to ``counter[0]`` for each (the count of a stream consumed elsewhere)."""
    for item in items:
        counter[0] += 1
        yield item
