"""Where a sentence task's examples come from, and the run's token stores they are encoded into (translation,
tagging and classification).

Splits (docs/manual.md, "Config conventions"): ``data.train`` (with ``data.valid`` / ``data.test``) name files and
override ``data.source``; a split that is not named is cut from the training file by ``data.split``
(contiguous, in file order, by example counts). ``data.source`` is a dataset name of the task's table (its
cached split files; downloaded when missing) or the path of one file to cut by ``data.split``.
The readers are streamed views (:class:`seqlab.data.streamed.Streamed`): :func:`read_splits` cuts them by example
counts without holding them, and :func:`split_stores` encodes the splits once into the run's indexed token stores
(``RUN/data``, :mod:`seqlab.data.indexed`) that batches gather from (:mod:`seqlab.data.batching`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from seqlab.base.config import DataConfig, RunConfig
from seqlab.data import download
from seqlab.data.indexed import IndexedArrays, SplitWriter, reused_split
from seqlab.data.sources import EMBEDDED
from seqlab.data.streamed import Streamed
from seqlab.training.devices import Dist
from seqlab.base.errors import SeqlabError

class Sliceable(Protocol):
    """What :func:`cut` cuts and a task's reader returns: a list, or a :class:`~seqlab.data.streamed.Streamed` view."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: slice, /) -> Any: ...


T = TypeVar("T")
S = TypeVar("S", bound=Sliceable)
Store = tuple[dict[str, IndexedArrays], dict]  # a split's token stores (field -> ids) and their record
SPLITS = ("train", "valid", "test")
DATA_DIR = "data"  # RUN/data: the splits' indexed token stores


def cut(items: S, fractions: Sequence[float], what: str = "examples",
        used: Iterable[str] = SPLITS) -> tuple[S, S, S]:
    """(train, valid, test): contiguous pieces of ``items`` in order, boundaries round(n f_train) and
    round(n (f_train + f_valid)); a ``used`` split with a positive fraction that comes out empty is an error."""
    n = len(items)
    a = min(n, round(n * fractions[0]))
    b = max(a, min(n, round(n * (fractions[0] + fractions[1]))))
    parts = (items[:a], items[a:b], items[b:])
    for part, fraction, split in zip(parts, fractions, SPLITS):
        if split in used and fraction > 0 and not part:
            raise SeqlabError(f"{n} {what} are too few for a {split} split of {fraction:g}; give more data, a "
                              f"data.{split} file, or change data.split")
    return parts


def read_splits(data: DataConfig, reader: Callable[[str], S], datasets: dict[str, tuple[str, str, str]],
                task: str, splits: Iterable[str] = SPLITS) -> dict[str, S]:
    """The examples of each split in ``splits``, read with ``reader(path)``.

    ``datasets`` maps the dataset names the task knows to their (train, valid, test) files in the cache; the
    first folder of those paths is the downloadable dataset that holds them (``sst2-phrases`` reads ``sst2``).
    """
    splits = tuple(splits)
    named = {s: getattr(data, s) for s in SPLITS}
    out: dict[str, S] = {}
    if data.train and all(named.values()):
        paths = named
    elif not data.train and data.source in datasets:
        download.get(Path(datasets[data.source][0]).parts[0])
        paths = {s: named[s] or str(download.cache_dir() / f) for s, f in zip(SPLITS, datasets[data.source])}
    else:
        source = data.train or data.source
        if source in download.DATASETS or source in EMBEDDED:
            known = ", ".join(datasets) or "none"
            raise SeqlabError(f"data.source={source!r} is not a {task} dataset (known: {known}); point data.train "
                              f"(and data.valid, data.test) at {task} files")
        cut_here = [s for s in splits if s == "train" or not named[s]]  # the splits cut from the source file
        if cut_here:
            pieces = dict(zip(SPLITS, cut(reader(source), data.split, f"examples in {source}", cut_here)))
            out = {s: pieces[s] for s in cut_here}
        paths = named
    for s in splits:
        if s not in out:
            out[s] = reader(paths[s])
    return out


def evaluation_split(cfg: RunConfig, split: str, read_data: Callable[..., dict[str, S]]) -> S:
    """The examples of the split to evaluate (valid | test), read by the task's ``read_data(cfg, splits)``;
    another split name, or an empty split, is an error."""
    if split not in ("valid", "test"):
        raise SeqlabError(f"unknown split {split!r}; evaluate valid or test")
    examples = read_data(cfg, (split,))[split]
    if not examples:
        raise SeqlabError(f"the {split} split is empty; give a data.{split} file or a non-zero fraction for it "
                          "in data.split")
    return examples


def split_stores(cfg: RunConfig, run_dir: Path, views: dict[str, Streamed[T]], bounds: dict[str, int],
                 encode: Callable[[Iterable[T]], Iterable[dict | None]],
                 dist: Dist = Dist()) -> dict[str, Store]:
    """The fields ``bounds`` names of each split of ``views`` (store name -> examples), encoded once into
    ``RUN/data/NAME.FIELD.bin/.idx`` by ``encode(examples)`` (one ``{field: ids}`` per example, None to leave it
    out) and memory-mapped, with their records (``examples`` kept, ``dropped``); reused while the source files,
    the range and the settings are the same (``--resume``). Splits cut from one file are encoded in one pass
    over it, in file order. Rank 0 writes them; the other ranks map them once it has."""
    directory = run_dir / DATA_DIR
    keys = {name: {"examples": view.key, "data": dataclasses.asdict(cfg.data), "max_len": max_len(cfg)}
            for name, view in views.items()}
    if dist.main:
        todo = [name for name in views if reused_split(directory, name, keys[name], bounds) is None]
        groups: dict[int, list[str]] = {}  # views of one stream (slices of one file's examples) go together
        for name in todo:
            groups.setdefault(id(views[name].read), []).append(name)
        for names in groups.values():
            start, stop = min(views[n].start for n in names), max(views[n].stop for n in names)
            with contextlib.ExitStack() as stack:
                writers = [(views[n], stack.enter_context(SplitWriter(directory, n, keys[n], bounds)))
                           for n in names]
                for i, example in enumerate(encode(views[names[0]].span(start, stop)), start=start):
                    for view, writer in writers:
                        if view.start <= i < view.stop:
                            writer.append(example)
    dist.barrier()  # rank 0 has written every split with these keys: reused_split finds each (not None)
    return {name: cast(Store, reused_split(directory, name, keys[name], bounds)) for name in views}


@contextlib.contextmanager
def scratch_run_dir() -> Iterator[Path]:
    """A temporary folder standing in for the run directory while a split is evaluated: its token stores
    (:func:`split_stores`) are written there and removed afterwards, never into the run (which readers do not
    lock, and which may be read-only)."""
    with tempfile.TemporaryDirectory(prefix="seqlab-eval-") as scratch:
        yield Path(scratch)


@contextlib.contextmanager
def spooled(kind: str, data: Any, name: str, what: str = "data") -> Iterator[Path]:
    """In-memory examples (``evaluate(data=...)``) written to a temporary file ``name``
    in task ``kind``'s file format (:func:`seqlab.data.in_memory.spool`; errors name the argument ``what``), for
    the task's own reader: one code path for files and memory. Yields the path (translate: its files' prefix)."""
    from seqlab.data.in_memory import spool

    with scratch_run_dir() as scratch:
        yield spool(kind, data, scratch / name, what=what)


def stored_splits(stores: dict[str, tuple[T, dict]], examples: dict, what: str, cfg: RunConfig, log) -> dict[str, T]:
    """The encoded splits of :func:`split_stores`' results (name -> (encoded, record)), each split's sentences left
    out logged (``what``: why they were left out); no training sentence left is an error."""
    data = {}
    for split, (data[split], record) in stores.items():
        if record["dropped"]:
            log(f"{split}: left out {record['dropped']} of {len(examples[split])} sentences {what}")
    if not stores["train"][1]["examples"]:
        raise SeqlabError(f"no training sentence fits in model.max_len={max_len(cfg)}; raise model.max_len")
    return data


def max_len(cfg: RunConfig) -> int | None:
    """The most tokens the model reads at once: the Transformer's max_len; None (no limit) for an RNN."""
    return getattr(cfg.model, "max_len", None)
