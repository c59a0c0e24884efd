"""Encoding text pieces into token ids in worker processes (one per core), in order, written straight to disk.

:func:`encode_ranges` writes the ids (``uint16`` when the vocabulary fits, else ``uint32``: :func:`token_dtype`)
of each :class:`Job` (a byte range of a file, cut safely by :mod:`seqlab.data.text_pieces`) to its split's
binary: memory is bounded by the piece size times the workers, not by the corpus. :func:`end_workers` ends the
pools alive in this process (a SIGTERM while preparing: :func:`seqlab.data.prepared.building`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.base import signals
from seqlab.base.io import naming


def token_dtype(vocab_size: int) -> np.dtype:
    """``uint16`` when every id (0 .. vocab_size - 1) fits in it, else ``uint32``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


@dataclass(frozen=True)
class Job:
    """Bytes ``start:end`` of ``path``, to be encoded and appended to split ``split``."""

    split: str
    path: str
    start: int
    end: int


_WORKER_TOKENIZER = None  # a worker process's tokenizer (set by _init_worker)
_POOLS: set = set()  # the worker pools alive in this process (end_workers ends them)


def _init_worker(tokenizer_dict: dict) -> None:
    global _WORKER_TOKENIZER
    from seqlab.text.tokenizers import load_tokenizer

    signals.install({signal.SIGINT: signal.SIG_IGN,  # Ctrl-C is the parent's to handle: it terminates the pool
                     signal.SIGTERM: signal.SIG_DFL})  # not the parent's handlers (forked): terminate() ends a worker
    _WORKER_TOKENIZER = load_tokenizer(tokenizer_dict)


def _encode_job(job: Job, dtype: str, tokenizer=None) -> bytes:
    with open(job.path, "rb") as f:
        f.seek(job.start)
        text = f.read(job.end - job.start).decode("utf-8")
    ids = (tokenizer or _WORKER_TOKENIZER).encode(text)
    return np.asarray(ids, dtype=dtype).tobytes()


def worker_count() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def encode_ranges(tokenizer, jobs: list[Job], out_dir: Path, dtype: np.dtype, workers: int = 0,
                  bar=None) -> dict[str, int]:
    """Encode the jobs (in worker processes when there are several) and append each one's ids, in job order,
    to ``out_dir/SPLIT.bin``; returns the token count of each split. At most two jobs per worker are in flight,
    so memory does not grow with the corpus."""
    workers = min(workers or worker_count(), len(jobs))
    counts: dict[str, int] = {}
    files: dict[str, object] = {}
    try:
        def write(job: Job, data: bytes) -> None:
            if job.split not in files:
                files[job.split] = open(out_dir / f"{job.split}.bin", "wb")
                counts[job.split] = 0
            with naming(out_dir / f"{job.split}.bin"):
                files[job.split].write(data)
            counts[job.split] += len(data) // dtype.itemsize
            if bar is not None:
                bar.update(job.end - job.start)

        if workers <= 1:
            for job in jobs:
                write(job, _encode_job(job, dtype.str, tokenizer))
        else:
            with _worker_pool(workers, tokenizer.to_dict()) as pool:
                pending = collections.deque()
                for job in jobs:
                    pending.append((job, pool.apply_async(_encode_job, (job, dtype.str))))
                    if len(pending) >= 2 * workers:
                        write(*_done(*pending.popleft()))
                while pending:
                    write(*_done(*pending.popleft()))
    finally:
        for f in files.values():
            f.close()
    return counts


def _done(job: Job, result) -> tuple[Job, bytes]:
    return job, result.get()


@contextlib.contextmanager
def _worker_pool(workers: int, tokenizer_dict: dict):
    """A process pool whose workers hold the tokenizer. Forked where the system can (no re-import of the
    caller's script); ``tokenizers`` is told that its threads are not used in the children, as it asks
    after a fork (else it prints a warning in each)."""
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        pool = multiprocessing.get_context(method).Pool(workers, _init_worker, (tokenizer_dict,))
    finally:
        if before is None:
            del os.environ["TOKENIZERS_PARALLELISM"]
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before
    _POOLS.add(pool)
    try:
        yield pool
        pool.close()
        pool.join()
    finally:
        pool.terminate()
        _POOLS.discard(pool)


def end_workers() -> None:
    """Terminate the workers of every pool alive in this process."""
    for pool in list(_POOLS):
        pool.terminate()
