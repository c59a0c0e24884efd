"""Checkpoints: safetensors tensors plus JSON, committed atomically, verified when read. Never pickle.

A checkpoint is three files in a run directory (docs/manual.md, "A run directory"):

- ``model.safetensors``   -- the model's weights;
- ``trainer.safetensors`` -- optimiser moments, every RNG state, the data position;
- ``state.json``          -- step, best metric, ``format_version``, library versions, non-tensor state, and
  ``files``: the SHA-256 of each of the two weight files.

The three must change together, so a save is a two-phase commit: the files are written and fsynced into
``DIR/.next/``, a ``COMPLETE`` marker is written there, then each file is renamed into ``DIR``
(:func:`seqlab.base.io.replace_atomic`, atomic per file; ``state.json`` last) and ``.next`` is removed. A kill before
the marker leaves the previous checkpoint untouched; a kill after it leaves a commit that the next writer rolls
forward (:func:`recover`).

Readers change nothing (a run may be training while they read it): they see the committed view, each file
from ``.next/`` while a ``COMPLETE`` commit is being rolled forward, else from ``DIR``; and they check every
weight file against the SHA-256 in ``state.json``, so they never take a half-committed mix (they read again)
nor a truncated or bit-flipped file (:class:`DamagedCheckpoint`, naming it).

Earlier checkpoints (``train.keep_last = N``): before a save replaces the checkpoint in ``DIR``, that one is
kept as ``DIR/checkpoints/step-S/`` (hard links, no copy; built under a temporary name, then renamed), and
only the N - 1 newest of those are kept. :func:`restore_latest` resumes from the newest intact checkpoint,
setting damaged ones aside in ``checkpoints/damaged-step-S/``.

Weights are torch tensors (an ``nn.Module``) or numpy arrays (a model whose ``state_dict()`` gives arrays, such as
the numba engines' :class:`seqlab.models.arrays.ArrayModel`): the files are the same safetensors either way, and
this module imports torch only where it handles torch tensors, so word2vec and GloVe checkpoint without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from seqlab.base.errors import SeqlabError, spelled
from seqlab.base.io import naming, replace_atomic, write_fsynced

FORMAT_VERSION = 1
FILES = ("model.safetensors", "trainer.safetensors", "state.json")  # the commit order: state.json last
ARCHIVE = "checkpoints"  # earlier checkpoints: ARCHIVE/step-S/; damaged ones set aside: ARCHIVE/damaged-step-S/
_STEP_DIR = re.compile(r"step-(\d+)")
_READ_ATTEMPTS, _READ_PAUSE = 100, 0.02  # a reader meeting a commit in progress reads again (2 s at most)

if TYPE_CHECKING:  # annotations only: the numpy paths run without torch
    import torch
    from torch import nn


class DamagedCheckpoint(SeqlabError):
    """A checkpoint file that is missing, unreadable, truncated or altered (SHA-256 mismatch)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _contiguous(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().contiguous().cpu() for k, v in tensors.items()}


def _numpy(tensors: dict[str, Any]) -> bool:
    """Whether ``tensors`` are numpy arrays (an empty dict counts as numpy: its file is the same)."""
    return all(isinstance(v, np.ndarray) for v in tensors.values())


def tensors_bytes(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of ``tensors``: torch tensors, or numpy arrays (written without importing torch)."""
    if _numpy(tensors):
        from safetensors.numpy import save

        return save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=metadata)
    from safetensors.torch import save

    return save(_contiguous(tensors), metadata=metadata)


def model_bytes(model: nn.Module | Any, metadata: dict[str, str] | None = None) -> bytes:
    """The safetensors file of a model's weights, a tied matrix (embedding = output projection) stored once
    (as safetensors' ``save_model`` does; the dropped names are recorded in the metadata). A model whose
    ``state_dict()`` gives numpy arrays (no tied matrices) is written without torch."""
    state_dict, metadata = model.state_dict(), dict(metadata or {})
    if _numpy(state_dict):
        return tensors_bytes(state_dict, metadata)
    from safetensors.torch import _remove_duplicate_names

    for kept, removed in _remove_duplicate_names(state_dict).items():
        for name in removed:
            metadata.setdefault(name, kept)
            del state_dict[name]
    return tensors_bytes(state_dict, metadata)


# ------------------------------------------------------------------------------------------------------
# writing (the one writer of a run directory: seqlab.training.rundir)


def save(directory: str | Path, model: nn.Module | Any, trainer_tensors: dict[str, Any], state: dict[str, Any],
         keep_last: int = 1) -> None:
    """Commit one checkpoint into ``directory`` (see the module docstring), keeping the one it replaces as an
    earlier checkpoint when ``keep_last`` > 1. A failed write (a full disk) leaves the previous checkpoint
    and no temporary files."""
    directory = Path(directory)
    recover(directory)
    step = int(state.get("step", 0))
    if keep_last > 1:
        _archive(directory, step)
    blobs = {"model.safetensors": model_bytes(model, {"step": str(step)}),
             "trainer.safetensors": tensors_bytes(trainer_tensors, metadata={"step": str(step)})}
    state = {"format_version": FORMAT_VERSION, **state, "files": {n: sha256(b) for n, b in blobs.items()}}
    blobs["state.json"] = (json.dumps(state, indent=1, sort_keys=True) + "\n").encode()
    _commit(directory, blobs)
    _prune(directory, keep_last)


def save_weights_only(directory: str | Path, weights: bytes, state: dict[str, Any]) -> None:
    """Commit a checkpoint of ``weights`` (a model.safetensors file's bytes) with no trainer state (an empty
    ``trainer.safetensors``): a model saved to be loaded, not resumed (:meth:`seqlab.tasks.trained.Trained.save`)."""
    blobs = {"model.safetensors": weights, "trainer.safetensors": tensors_bytes({}, metadata={"weights_only": "1"})}
    state = {"format_version": FORMAT_VERSION, **state, "files": {n: sha256(b) for n, b in blobs.items()}}
    blobs["state.json"] = (json.dumps(state, indent=1, sort_keys=True) + "\n").encode()
    _commit(Path(directory), blobs)


def _commit(directory: Path, files: dict[str, bytes | Path]) -> None:
    """Phase one: every file into .next/ (bytes written and fsynced, or a Path hard-linked), then COMPLETE;
    phase two: roll forward."""
    nxt = directory / ".next"
    try:
        nxt.mkdir(parents=True)
        for name, data in files.items():
            if isinstance(data, Path):
                _link_or_copy(data, nxt / name)
            else:
                write_fsynced(nxt / name, data)
        write_fsynced(nxt / "COMPLETE", b"")
        _fsync_dir(nxt)
    except BaseException as e:
        shutil.rmtree(nxt, ignore_errors=True)
        if isinstance(e, OSError) and e.filename and Path(e.filename).parent == nxt:  # name the file it would be
            raise OSError(e.errno, e.strerror, str(directory / Path(e.filename).name)) from None
        raise
    _roll_forward(directory)


def _roll_forward(directory: Path) -> None:
    nxt = directory / ".next"
    for name in FILES:
        if (nxt / name).exists():
            replace_atomic(nxt / name, directory / name)
    shutil.rmtree(nxt)
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    """Make renames in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links
        with naming(dst):
            shutil.copyfile(src, dst)
        with open(dst, "rb") as f:
            os.fsync(f.fileno())


def recover(directory: str | Path) -> None:
    """Finish or discard a save that a kill interrupted (the writer calls it before writing)."""
    directory = Path(directory)
    nxt = directory / ".next"
    if nxt.is_dir():
        if (nxt / "COMPLETE").exists():
            _roll_forward(directory)
        else:
            shutil.rmtree(nxt)
    for partial in (directory / ARCHIVE).glob(".*.partial"):
        shutil.rmtree(partial, ignore_errors=True)


def _archive(directory: Path, step: int) -> None:
    """Keep the checkpoint now in ``directory`` as ARCHIVE/step-S/ (unless it is the step being saved)."""
    if not exists(directory):
        return
    try:
        old = int(json.loads((directory / "state.json").read_text(encoding="utf-8"))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return  # a damaged state: nothing worth keeping
    target = directory / ARCHIVE / f"step-{old}"
    if old == step or target.exists():
        return
    partial = directory / ARCHIVE / f".step-{old}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        partial.mkdir(parents=True)
        for name in FILES:
            _link_or_copy(directory / name, partial / name)
        replace_atomic(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def archived(directory: str | Path) -> list[Path]:
    """The earlier checkpoints of a run directory, newest first."""
    found = []
    for path in (Path(directory) / ARCHIVE).glob("step-*"):
        match = _STEP_DIR.fullmatch(path.name)
        if match and path.is_dir():
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found, reverse=True)]


def _prune(directory: Path, keep_last: int) -> None:
    for path in archived(directory)[max(keep_last - 1, 0):]:
        shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------
# reading (never changes anything)


def _committed(directory: Path) -> dict[str, Path]:
    """Where each file of the committed checkpoint is now (see the module docstring)."""
    nxt = directory / ".next"
    if (nxt / "COMPLETE").exists():
        return {name: nxt / name if (nxt / name).exists() else directory / name for name in FILES}
    return {name: directory / name for name in FILES}


def exists(directory: str | Path) -> bool:
    """``directory`` holds a committed checkpoint."""
    directory = Path(directory)
    for _ in range(3):  # a commit renaming files between two looks: look again
        if all((directory / name).exists() for name in FILES):
            return True
        if all(path.exists() for path in _committed(directory).values()):
            return True
        if not (directory / ".next").exists():
            return all((directory / name).exists() for name in FILES)
    return False


def _state_of(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The state in ``path`` (or its bytes ``data``, already read), its format version checked."""
    if data is None:
        if not path.exists():
            raise SeqlabError(f"{path} not found; the run directory has no checkpoint")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise DamagedCheckpoint(f"cannot read {path} ({e.strerror})") from None
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DamagedCheckpoint(f"{path} is not a valid checkpoint state JSON file ({e}); the checkpoint is "
                                "damaged") from None
    if not isinstance(state, dict):
        raise DamagedCheckpoint(f"{path} is not a checkpoint state (not a JSON object); the checkpoint is damaged")
    version = state.get("format_version")
    if version != FORMAT_VERSION:
        raise SeqlabError(f"{path} has checkpoint format_version {version!r}, this seqlab reads {FORMAT_VERSION}; "
                          "use the seqlab version that wrote it")
    return state


def _read_committed(directory: Path, names: tuple[str, ...]) -> tuple[dict[str, Path], list[bytes]]:
    """The committed view's paths and the bytes of ``names`` in it, read again when a commit renames a file
    under us."""
    for attempt in range(_READ_ATTEMPTS):
        files = _committed(directory)
        try:
            return files, [files[name].read_bytes() for name in names]
        except FileNotFoundError:
            if attempt >= 2 and not (directory / ".next").exists():
                break
            time.sleep(_READ_PAUSE)
        except OSError as e:
            raise DamagedCheckpoint(f"cannot read {e.filename} ({e.strerror})") from None
    missing = next((directory / name for name in names if not (directory / name).exists()), directory / names[-1])
    raise SeqlabError(f"{missing} not found; the run directory has no checkpoint")


def load_state(directory: str | Path) -> dict[str, Any]:
    """The ``state.json`` of the committed checkpoint in ``directory``."""
    files, (data,) = _read_committed(Path(directory), ("state.json",))
    return _state_of(files["state.json"], data)


def read_verified(path: str | Path) -> tuple[bytes, dict[str, Any]]:
    """The bytes of a checkpoint's weight file and the state they belong to, checked against its SHA-256.

    A mismatch while a commit is in progress (or once, which a commit finishing between the two reads
    explains) is read again; a lasting one is a :class:`DamagedCheckpoint` naming the file."""
    path = Path(path)
    directory, name = path.parent, path.name
    previous = None
    if not (directory / "state.json").exists() and not (directory / ".next").exists():  # a bare weights file
        return _read_committed(directory, (name,))[1][0], {}
    for _ in range(_READ_ATTEMPTS):
        files, (raw_state, data) = _read_committed(directory, ("state.json", name))
        state = _state_of(files["state.json"], raw_state)
        hashes = state.get("files")  # absent in checkpoints written before hashes were kept
        expected = hashes.get(name) if isinstance(hashes, dict) else None
        digest = sha256(data) if expected else None
        if digest == expected:
            return data, state
        if (expected, digest) == previous and not (directory / ".next").exists():
            break
        previous = (expected, digest)
        time.sleep(_READ_PAUSE)
    raise DamagedCheckpoint(f"{path} is damaged: its SHA-256 does not match the one {directory / 'state.json'} "
                            "records (the file was truncated or altered)")


def _tensors_of(data: bytes, path: Path, arrays: bool = False) -> dict[str, Any]:
    """The tensors of a safetensors file's bytes: torch tensors, or numpy arrays with ``arrays`` (no torch)."""
    if arrays:
        from safetensors.numpy import load as load_bytes
    else:
        from safetensors.torch import load as load_bytes
    try:
        return load_bytes(data)
    except Exception as e:  # safetensors raises its own error types for damaged files
        raise DamagedCheckpoint(f"{path} is not a valid safetensors file ({e})") from None


def load_model(model: nn.Module | Any, path: str | Path) -> None:
    """Load weights written by :func:`save` into ``model`` (strict: every key must fit), verified. A model whose
    ``state_dict()`` gives numpy arrays reads them as arrays, without torch."""
    path = Path(path)
    data, _ = read_verified(path)
    arrays = _numpy(model.state_dict())
    state_dict = _tensors_of(data, path, arrays)
    if arrays:
        aliases: dict[str, list[str]] = {}
    else:  # a tied matrix is stored once: its other names are not missing (safetensors' load_model does the same)
        from safetensors.torch import _remove_duplicate_names

        aliases = _remove_duplicate_names(model.state_dict(), preferred_names=list(state_dict))
    try:
        missing, unexpected = model.load_state_dict(state_dict, strict=False)
    except RuntimeError as e:  # shapes that do not fit the configured model
        raise SeqlabError(f"cannot load {path} into the configured model ({e})") from None
    missing = set(missing) - {name for names in aliases.values() for name in names}
    if missing or unexpected:
        raise SeqlabError(f"{path} does not fit the configured model: missing {sorted(missing)[:5]}, "
                          f"unexpected {sorted(unexpected)[:5]}")


def load_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    path = Path(path)
    data, _ = read_verified(path)
    return _tensors_of(data, path)


def load_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """:func:`load_tensors` as numpy arrays, without torch (the kernel tasks' trainer state)."""
    path = Path(path)
    data, _ = read_verified(path)
    return _tensors_of(data, path, arrays=True)


# ------------------------------------------------------------------------------------------------------
# resuming: the newest intact checkpoint


def restore_latest(run_dir: str | Path, restore: Callable[[Path], None]) -> tuple[Path | None, list[str]]:
    """Call ``restore(directory)`` on the run's checkpoints, newest first (``run_dir``, then
    ``checkpoints/step-S/``), until one is intact. Returns (the directory restored, or None when the run has
    no checkpoint; the messages of the damaged ones skipped). Damaged checkpoints are set aside in
    ``checkpoints/damaged-step-S/`` and an earlier one restored becomes the run's checkpoint again. Raises
    the first damage when none is intact."""
    run_dir = Path(run_dir)
    recover(run_dir)
    candidates = ([run_dir] if exists(run_dir) else []) + archived(run_dir)
    damaged: list[tuple[Path, str]] = []
    for directory in candidates:
        try:
            restore(directory)
        except DamagedCheckpoint as e:
            damaged.append((directory, str(e)))
            continue
        for bad, _ in damaged:
            _set_aside(run_dir, bad)
        if directory != run_dir:
            _commit(run_dir, {name: directory / name for name in FILES})
        return directory, [message for _, message in damaged]
    if damaged:
        raise SeqlabError(f"{damaged[0][1]}; no intact earlier checkpoint is kept (train.keep_last) to resume from; "
                          f"start the run again with {spelled('force')}")
    return None, []


def _set_aside(run_dir: Path, directory: Path) -> None:
    """Move a damaged checkpoint to ARCHIVE/damaged-step-S/ (kept for inspection, never read again)."""
    try:
        step = json.loads((directory / "state.json").read_text(encoding="utf-8"))["step"]
    except (OSError, ValueError, KeyError, TypeError):
        step = "unknown"
    target = run_dir / ARCHIVE / f"damaged-step-{step}"
    n = 1
    while target.exists():
        n += 1
        target = run_dir / ARCHIVE / f"damaged-step-{step}-{n}"
    if directory != run_dir:
        replace_atomic(directory, target)
        return
    target.mkdir(parents=True)
    for name in FILES:
        if (run_dir / name).exists():
            replace_atomic(run_dir / name, target / name)


# --- optimiser state as flat tensors (safetensors holds tensors only; the rest goes to state.json) ---


def optimizer_tensors(optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    import torch

    out = {}
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            if torch.is_tensor(value):
                out[f"optim.{index}.{name}"] = value
    return out


def restore_optimizer(optimizer: torch.optim.Optimizer, tensors: dict[str, torch.Tensor]) -> None:
    sd = optimizer.state_dict()
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("optim."):
            _, index, name = key.split(".", 2)
            state.setdefault(int(index), {})[name] = value
    sd["state"] = state
    optimizer.load_state_dict(sd)


def rng_tensors(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Every random stream training draws from: torch's global CPU/CUDA RNGs and the data generator."""
    import torch

    out = {"rng.torch_cpu": torch.get_rng_state(), "rng.data": generator.get_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"rng.cuda.{i}"] = s
    return out


def restore_rng(generator: torch.Generator, tensors: dict[str, torch.Tensor]) -> None:
    import torch

    torch.set_rng_state(tensors["rng.torch_cpu"])
    generator.set_state(tensors["rng.data"])
    cuda = sorted((k for k in tensors if k.startswith("rng.cuda.")), key=lambda k: int(k.rsplit(".", 1)[1]))
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensors[k] for k in cuda])
