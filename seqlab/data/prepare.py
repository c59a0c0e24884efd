"""Streaming preparation of a large corpus: text files read in pieces, never whole; token ids written to disk.

The machinery that does not depend on the task (the LM task, :mod:`seqlab.tasks.lm`, says which text goes
into which split and how the tokenizer is trained):

- :func:`scan` reads a UTF-8 file once in blocks: its size, mtime and SHA-256, its length in characters, and a
  coarse index (characters before each block) that turns a character position into a byte offset
  (:meth:`TextFile.byte_offset`), so that a split cut by character fractions (``split_text``'s semantics) is
  found without holding the text. Bad input (not UTF-8, empty) is refused here, before any other work.
- :func:`cut_points` cuts a byte range into pieces of about ``piece`` bytes at *safe* positions: just before a
  space or a newline that follows a non-whitespace character. A pre-token of the word tokenizer
  (``\\w+|[^\\w\\s]``) never holds whitespace, and one of byte-level BPE (GPT-2's pattern) holds whitespace only
  at its start or is all whitespace, so such a position always starts a pre-token: encoding the pieces one by
  one gives exactly the tokens of the whole text, and a tokenizer trained on the pieces is trained on the same
  pre-tokens (tests/test_prepare.py checks both). Only a stretch of ``piece`` bytes without such a position
  (no space or newline after a non-space) is cut at the next character boundary instead.
- :func:`encode_ranges` encodes pieces in worker processes (one per core), in order, and writes the ids
  (``uint16`` when the vocabulary fits, else ``uint32``: :func:`token_dtype`) straight to the split's binary:
  memory is bounded by the piece size times the workers, not by the corpus.
- :func:`building` makes a prepared directory appear atomically (built in a temporary folder beside it, then
  renamed); an error, Ctrl-C or SIGTERM part-way leaves nothing, and a folder that ``kill -9`` left is removed
  by the next preparation beside it.
- :class:`Beacon` / :func:`wait_for_beacon`: under ``torchrun``, rank 0 prepares while the other ranks watch a
  file beside the data (no collective call, so no process-group timeout), and learn early when they cannot
  see rank 0's files (several nodes without a shared filesystem).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seqlab.data.sources import empty_file_error, not_utf8_error
from seqlab.errors import SeqlabError, shown
from seqlab.io import naming, write_json_atomic

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
SCAN_BLOCK = 1 << 24  # bytes read at a time by scan (16 MiB)
# Bytes of text per encoding job (a worker's memory grows with it: tokenizers' encoding of 1 MiB of text at once
# takes ~200 MB, of 64 KiB ~35 MB, at the same speed) and per item fed to tokenizer training (tokenizers
# buffers 256 items).
ENCODE_PIECE = 1 << 16
TRAIN_PIECE = 1 << 16
MB = 1_000_000  # data.tokenizer_sample_mb and the progress bar count decimal megabytes

# A candidate cut: a byte that is not ASCII whitespace, then a space or a newline (cut before the latter).
_CANDIDATE = re.compile(rb"[^\x09-\x0d\x1c-\x20][ \n]")


def token_dtype(vocab_size: int) -> np.dtype:
    """``uint16`` when every id (0 .. vocab_size - 1) fits in it, else ``uint32``."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


# ------------------------------------------------------------------------------------------------------
# one pass over a file: identity, validity, length in characters


@dataclass(frozen=True)
class TextFile:
    """A UTF-8 text file, scanned: ``chars`` characters in ``size`` bytes; ``index`` holds (byte offset,
    characters before it) at the start of every scanned block."""

    path: Path
    size: int
    mtime: float
    sha256: str
    chars: int
    index: tuple[tuple[int, int], ...] = field(repr=False)

    def byte_offset(self, char: int) -> int:
        """The byte offset where character number ``char`` starts (``size`` for ``chars``)."""
        if char >= self.chars:
            return self.size
        i = bisect.bisect_right([c for _, c in self.index], char) - 1
        start, before = self.index[i]
        with open(self.path, "rb") as f:
            f.seek(start)
            block = np.frombuffer(f.read(SCAN_BLOCK), dtype=np.uint8)
        starts = np.flatnonzero((block & 0xC0) != 0x80)  # the first byte of every character in the block
        return start + int(starts[char - before])

    def identity(self) -> dict:
        """What a manifest records of the file."""
        return {"path": str(self.path.resolve()), "size": self.size, "mtime": self.mtime, "sha256": self.sha256,
                "chars": self.chars}


def scan(path: Path, bar=None) -> TextFile:
    """Read ``path`` once in blocks: SHA-256, characters (UTF-8 checked), and that it holds some text."""
    digest, index, chars, offset, carry, has_text = hashlib.sha256(), [], 0, 0, b"", False
    stat = path.stat()
    with open(path, "rb") as f:
        while block := f.read(SCAN_BLOCK):
            index.append((offset, chars))
            digest.update(block)
            data = carry + block
            cut = _complete_prefix(data)  # a character cut by the block's end waits for the next block
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError as e:
                raise not_utf8_error(path, data[e.start], offset - len(carry) + e.start, e.reason) from None
            has_text = has_text or not text.isspace() and bool(text)
            chars += len(text)
            carry = data[cut:]
            offset += len(block)
            if bar is not None:
                bar.update(len(block))
    if carry:
        try:
            carry.decode("utf-8")
        except UnicodeDecodeError as e:
            raise not_utf8_error(path, carry[e.start], offset - len(carry) + e.start, e.reason) from None
    if not has_text:
        raise empty_file_error(path)
    return TextFile(path, offset, stat.st_mtime, digest.hexdigest(), chars, tuple(index))


def _complete_prefix(data: bytes) -> int:
    """The length of ``data`` without a trailing incomplete UTF-8 sequence (at most 3 bytes are held back)."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last character (or ASCII)
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return end if need <= back else end - back
    return end  # only continuation bytes: invalid, decode reports it


# ------------------------------------------------------------------------------------------------------
# safe pieces of a byte range


def find_cut(f, pos: int, hi: int, search: int = ENCODE_PIECE) -> int:
    """The first safe cut at or after ``pos`` (before a space or newline that follows a non-whitespace
    character), looked for in the next ``search`` bytes (read a few KB at a time); else the next character
    boundary. At most ``hi``."""
    if pos >= hi:
        return hi
    back = min(pos, 4)  # the character before pos may be up to 4 bytes long
    limit = back + min(search, hi - pos)  # the window's largest size
    f.seek(pos - back)
    window, scanned = f.read(min(limit, back + 4096)), max(back - 1, 0)
    while True:
        for m in _CANDIDATE.finditer(window, scanned):
            cut = m.start() + 1  # the index of the space or newline in window
            if cut >= back and _follows_non_space(window, cut):
                return pos - back + cut
        if len(window) >= limit:
            break
        scanned = len(window) - 1  # a candidate may straddle the end of what was read
        window += f.read(min(limit - len(window), len(window)))
    for i in range(back, len(window)):  # no safe cut near: the next character boundary
        if window[i] & 0xC0 != 0x80:
            return pos - back + i
    return min(hi, pos - back + len(window))


def _follows_non_space(window: bytes, i: int) -> bool:
    prev = window[i - 1]
    if prev < 0x80:
        return True  # _CANDIDATE already excluded ASCII whitespace
    j = i - 1
    while j > 0 and window[j] & 0xC0 == 0x80 and i - j < 4:
        j -= 1
    return not window[j:i].decode("utf-8", errors="replace").isspace()  # U+00A0, U+3000, ... are whitespace


def cut_points(path: Path, lo: int, hi: int, piece: int) -> list[int]:
    """Offsets ``lo = c0 < c1 < ... = hi``: pieces of about ``piece`` bytes cut safely (:func:`find_cut`)."""
    cuts = [lo]
    with open(path, "rb") as f:
        while cuts[-1] + piece < hi:
            cuts.append(find_cut(f, cuts[-1] + piece, hi, search=piece))
            if cuts[-1] >= hi:
                break
    if cuts[-1] < hi:
        cuts.append(hi)
    return cuts


def read_pieces(path: Path, lo: int, hi: int, piece: int = TRAIN_PIECE, bar=None) -> Iterator[str]:
    """The text of bytes ``lo:hi`` of ``path`` as str pieces cut safely, one at a time."""
    cuts = cut_points(path, lo, hi, piece)
    with open(path, "rb") as f:
        f.seek(lo)
        for a, b in zip(cuts, cuts[1:]):
            data = f.read(b - a)
            if bar is not None:
                bar.update(b - a)
            yield data.decode("utf-8")


# ------------------------------------------------------------------------------------------------------
# encoding in worker processes, in order


@dataclass(frozen=True)
class Job:
    """Bytes ``start:end`` of ``path``, to be encoded and appended to split ``split``."""

    split: str
    path: str
    start: int
    end: int


_WORKER_TOKENIZER = None


def _init_worker(tokenizer_dict: dict) -> None:
    global _WORKER_TOKENIZER
    from seqlab.text.tokenizers import load_tokenizer

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it terminates the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handlers (forked): terminate() ends a worker
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


# ------------------------------------------------------------------------------------------------------
# a prepared directory, built atomically


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
    rename (an existing ``out`` is replaced only with ``force``, and only then). On any error, Ctrl-C or SIGTERM
    the temporary folder is removed and ``out`` is as before."""
    out = Path(out)
    if out.exists() and not force:
        raise SeqlabError(f"{shown(out)} already exists; give another --out or replace it with --force")
    if out.exists() and not out.is_dir():
        raise SeqlabError(f"{shown(out)} is a file; give a folder path for --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(out)
    tmp = out.parent / f".{out.name}.{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir()
    try:
        with _on_sigterm(tmp):
            yield tmp
            if out.exists():
                old = out.parent / f".{out.name}.{_host()}-{os.getpid()}-old.tmp"
                os.rename(out, old)
                os.rename(tmp, out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class Terminated(KeyboardInterrupt):
    """SIGTERM during a preparation: raised so that the temporary folder is removed (then re-raised)."""


_POOLS: set = set()  # the worker pools alive in this process (a SIGTERM handler ends them)


@contextlib.contextmanager
def _on_sigterm(tmp: Path):
    """SIGTERM while preparing: the workers are ended and ``tmp`` removed, then the handler installed before
    (``seqlab train``'s, which undoes the run's start and exits 143) runs; without one, :class:`Terminated` is
    raised, so that the callers' cleanup runs too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        if not callable(previous):
            raise Terminated()
        for pool in list(_POOLS):
            pool.terminate()
        shutil.rmtree(tmp, ignore_errors=True)
        previous(signum, frame)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_manifest(directory: Path, manifest: dict) -> None:
    write_json_atomic(directory / MANIFEST, {"format_version": FORMAT_VERSION, **manifest}, indent=1)


def read_manifest(directory: Path, fix: str) -> dict:
    """The manifest of a prepared directory, checked: known format, shard files of the recorded sizes."""
    from seqlab.io import read_json

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


def progress_bar(desc: str, total: int, enabled: bool):
    """A tqdm bar in bytes on stderr (its rate reads in MB/s)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1000, disable=not enabled,
                dynamic_ncols=True, leave=False)


# ------------------------------------------------------------------------------------------------------
# torchrun: rank 0 prepares, the others wait for a file


class Beacon:
    """Rank 0's side: a small JSON file beside the data saying who prepares and whether it is done, rewritten
    every ``every`` seconds while preparing (the others take a file that stops changing for
    ``WAIT_STALL_S`` as a rank 0 that is gone)."""

    def __init__(self, path: Path, every: float = 5.0):
        self.path, self.every = Path(path), every
        self.token = uuid.uuid4().hex
        self.doc = {"token": self.token, "host": socket.gethostname(), "pid": os.getpid(), "state": "preparing",
                    "beat": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        write_json_atomic(self.path, self.doc)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.doc["beat"] += 1
            with contextlib.suppress(OSError):
                write_json_atomic(self.path, self.doc)

    def ready(self) -> None:
        self._stop.set()
        self._thread.join()
        write_json_atomic(self.path, {**self.doc, "state": "ready"})

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.path.unlink(missing_ok=True)


WAIT_VISIBLE_S = 30.0  # how long a rank looks for rank 0's file before concluding it cannot see it
WAIT_STALL_S = 1800.0  # how long the file may stay unchanged (rank 0 busy in one call) before giving up


def wait_for_beacon(path: Path, token: str, host: str, rank: int, help_multi_node: str,
                    visible_s: float = WAIT_VISIBLE_S, stall_s: float = WAIT_STALL_S, poll: float = 0.2) -> None:
    """Wait (polling a file, no collective call) until rank 0 says the data is ready. A rank that does not see
    rank 0's file within ``visible_s`` has no shared filesystem with it: the error says what to do instead."""
    start = last_change = time.monotonic()
    seen = None
    while True:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = None
        now = time.monotonic()
        if doc is not None and doc.get("token") == token:
            if doc.get("state") == "ready":
                return
            if doc != seen:
                seen, last_change = doc, now
            elif now - last_change > stall_s:
                raise SeqlabError(f"rank {rank}: rank 0 (host {host}) has not advanced preparing the data for "
                                  f"{stall_s:.0f} s ({shown(path)} unchanged); check rank 0's log")
        elif seen is not None:
            raise SeqlabError(f"rank {rank}: rank 0 (host {host}) stopped preparing the data ({shown(path)} is "
                              "gone); see rank 0's error")
        elif now - start > visible_s:
            raise SeqlabError(f"rank {rank} on host {socket.gethostname()} cannot see {shown(path)}, which rank 0 "
                              f"wrote on host {host}: the nodes share no filesystem there; {help_multi_node}")
        time.sleep(poll)
