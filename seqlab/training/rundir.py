"""The one writer of a run directory: its lock, and the undoing of a start that never reached a checkpoint.

``lock.json`` names the process training the run: PID, host, start time, and the process's start tick from
``/proc`` (so a PID the system reused is not taken for it). It is created atomically (written aside, then
hard-linked into place: :func:`seqlab.base.io.create_exclusive`), so of two writers exactly one gets it; the other is
refused with one line naming the holder. Readers (``eval``, ``generate``, ``predict``, ``seqlab.load``) never
take it. A lock whose process is gone from this host (``os.kill(pid, 0)``: left by ``kill -9`` or a crash) is
taken over with a message; one from another host cannot be checked and is refused, saying how to remove it.

A run directory appears only once training really starts: until the run's first checkpoint, the lock also
holds the *start journal*, what existed before this start (the folders it created, the entries it found in an
existing folder, the ``config.toml`` it replaced, the old run ``--force`` moved aside). When the start fails,
:meth:`RunLock.close` undoes exactly that: the corrected command then simply works, and a user's own files are
never touched. When the process was killed instead, the next writer finds the journal in the stale lock and
undoes it (:func:`settle`). At the first checkpoint the journal is dropped (:func:`committed`) and the run
replaced with ``--force`` is deleted.

What a start checks and records (the end of this module): ``resume`` (True on a missing run directory is an
error, ``"auto"`` starts it; a ``train.max_steps`` below the steps done is an error) and the run's config with the
inputs spooled into ``RUN/input/`` relative to the run, so that a moved run still finds them.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import socket
import uuid
from pathlib import Path
from typing import Any, Literal

from seqlab.training import checkpoint
from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError, given
from seqlab.base.io import create_exclusive, remove_temporaries, replace_atomic, write_bytes_atomic, write_text_atomic

LOCK = "lock.json"
INPUT_DIR = Path("input")  # in-memory data given to seqlab.train(), in the task's file format (data/ is derived)


def _proc_start(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _alive(owner: dict[str, Any]) -> bool | None:
    """Whether the lock's process still runs: True, False, or None when it is on another host."""
    if owner.get("host") != socket.gethostname():
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    started = _proc_start(pid)
    return started is None or owner.get("proc_start") in (None, started)  # a reused PID started later


def _who(owner: dict[str, Any]) -> str:
    if not owner:
        return "a process whose lock file is unreadable"
    return f"PID {owner.get('pid')} on {owner.get('host')} (started {owner.get('started')})"


def _read(path: Path) -> dict[str, Any] | None:
    """The lock in ``path``; None when there is none, {} when it is not a lock (treated as stale)."""
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _busy(run_dir: Path, owner: dict[str, Any]) -> SeqlabError:
    if _alive(owner) is None:
        return SeqlabError(f"{run_dir} is locked by {_who(owner)}, another host, so seqlab cannot tell whether it "
                           f"still trains it; if it does not, delete {run_dir / LOCK}")
    return SeqlabError(f"{run_dir} is being trained by {_who(owner)}; one process writes a run: wait for it to end "
                       f"or stop it (kill {owner.get('pid')}); eval, generate and predict can read it meanwhile")


def _claim(path: Path, owner: dict[str, Any]) -> Path | None:
    """Take the stale lock ``owner`` by renaming it aside (atomic: of two claimants one gets it); returns the
    new name, or None when another process was faster."""
    claimed = path.with_name(f"{LOCK}.stale-{os.getpid()}")
    try:
        replace_atomic(path, claimed)
    except FileNotFoundError:
        return None
    if _read(claimed) == owner:
        return claimed
    try:  # we took a newer, live lock: put it back
        os.link(claimed, path)
    except OSError:
        pass
    claimed.unlink(missing_ok=True)
    return None


def settle(run_dir: Path, log=print) -> None:
    """Before a writer uses ``run_dir``: refuse when a live process holds its lock; take over a stale lock,
    first undoing the start it journals when that start never reached a checkpoint."""
    path = run_dir / LOCK
    for tmp in run_dir.glob(f".{LOCK}.*.tmp"):  # a lock being created when its process was killed
        pid = tmp.name[len(LOCK) + 2:-len(".tmp")]
        if pid.isdigit() and _alive({"pid": int(pid), "host": socket.gethostname()}) is False:
            tmp.unlink(missing_ok=True)
    for _ in range(5):
        owner = _read(path)
        if owner is None:
            return
        if owner and _alive(owner) is not False:
            raise _busy(run_dir, owner)
        claimed = _claim(path, owner)
        if claimed is None:
            continue
        journal = owner.get("journal")
        if journal and not _has_checkpoint(run_dir):
            _undo(run_dir, journal)
            log(f"{run_dir}: the start by {_who(owner)} ended before its first checkpoint (the process is gone); "
                "removed what it had written")
        else:  # what the dead writer was writing: commits rolled forward or discarded, temporaries removed
            if journal and journal.get("replaced"):
                shutil.rmtree(journal["replaced"], ignore_errors=True)
            _tidy(run_dir)
            claimed.unlink(missing_ok=True)
            log(f"taking over {path}: {_who(owner)} is no longer running")
        return
    raise SeqlabError(f"{path} keeps changing: another process is starting on {run_dir}; try again")


def writer(run_dir: str | Path) -> dict[str, Any] | None:
    """Who is training ``run_dir`` now: its lock's PID, host and start time while a live process holds it (or one
    on another host, which cannot be checked), None otherwise. Reads only; for readers such as ``seqlab serve``."""
    owner = _read(Path(run_dir) / LOCK)
    if not owner or _alive(owner) is False:
        return None
    return {key: owner.get(key) for key in ("pid", "host", "started")}


def _has_checkpoint(run_dir: Path) -> bool:
    return checkpoint.exists(run_dir) or bool(checkpoint.archived(run_dir))


class RunLock:
    """The lock of the process writing a run directory (see the module docstring)."""

    def __init__(self, run_dir: Path, owner: dict[str, Any]):
        self.run_dir, self.owner = run_dir, owner

    @classmethod
    def acquire(cls, run_dir: Path, journal: dict[str, Any] | None = None) -> RunLock:
        """Create the lock (after :func:`settle`); a process that got there first is refused."""
        pid = os.getpid()
        owner = {"pid": pid, "host": socket.gethostname(), "proc_start": _proc_start(pid),
                 "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "token": uuid.uuid4().hex, "journal": journal}
        if not create_exclusive(run_dir / LOCK, _encode(owner)):
            raise _busy(run_dir, _read(run_dir / LOCK) or {})
        return cls(run_dir, owner)

    def ours(self) -> bool:
        return (_read(self.run_dir / LOCK) or {}).get("token") == self.owner["token"]

    def close(self, failed: bool) -> bool:
        """Release the lock; after a failure before the run's first checkpoint, undo the start instead, and
        after a later one, tidy what was being written (as the next writer would). Returns whether the run
        directory was kept."""
        journal = self.owner.get("journal")
        if not self.ours():
            return True
        if failed and journal and not _has_checkpoint(self.run_dir):
            _undo(self.run_dir, journal)
            return False
        if failed:
            _tidy(self.run_dir)
        committed(self.run_dir)
        (self.run_dir / LOCK).unlink(missing_ok=True)
        return True


def _tidy(run_dir: Path) -> None:
    """Finish what a writer that stopped part-way was writing: commits rolled forward or discarded (best/
    too), temporaries of atomic writes removed."""
    for directory in (run_dir, run_dir / "best"):
        checkpoint.recover(directory)
    remove_temporaries(run_dir)


def _encode(owner: dict[str, Any]) -> bytes:
    return (json.dumps(owner, indent=1) + "\n").encode("utf-8")


def committed(run_dir: Path) -> None:
    """The run has its first checkpoint: drop this process's start journal from the lock and delete the run
    ``--force`` replaced. (A no-op when this process holds no journal, e.g. a Trainer used on its own.)"""
    path = Path(run_dir) / LOCK
    owner = _read(path)
    if not owner or owner.get("pid") != os.getpid() or not owner.get("journal"):
        return
    replaced = owner["journal"].get("replaced")
    write_bytes_atomic(path, _encode({**owner, "journal": None}))
    if replaced:
        shutil.rmtree(replaced, ignore_errors=True)


def journal_for(run_dir: Path, *, resume: bool) -> dict[str, Any] | None:
    """What a start must remember to undo itself, taken before it writes anything; None when the run already
    has a checkpoint (then nothing is undone)."""
    if run_dir.exists():
        if resume and _has_checkpoint(run_dir):
            return None
        config = run_dir / "config.toml"
        return {"kept": sorted(p.name for p in run_dir.iterdir()),
                "config": config.read_text(encoding="utf-8") if config.is_file() else None}
    top = run_dir.absolute()  # the topmost folder this start creates
    while not top.parent.exists():
        top = top.parent
    return {"made": str(top)}


def set_aside(run_dir: Path) -> Path | None:
    """``--force``: move the old run beside it (deleted at the new run's first checkpoint, put back if the new
    one fails before it); None where it cannot be moved (the caller then clears it)."""
    absolute = run_dir.absolute()
    cwd = Path.cwd()
    if absolute == cwd or absolute in cwd.parents:
        return None
    aside = absolute.with_name(f".{absolute.name}.replaced-{os.getpid()}")
    try:
        replace_atomic(absolute, aside)
    except OSError:
        return None
    (aside / LOCK).unlink(missing_ok=True)  # our own lock, taken to move it safely
    return aside


def _undo(run_dir: Path, journal: dict[str, Any]) -> None:
    """Put back what existed before the journalled start."""
    replaced, made = journal.get("replaced"), journal.get("made")
    if replaced:
        shutil.rmtree(run_dir, ignore_errors=True)
        if Path(replaced).exists():
            replace_atomic(replaced, run_dir)
    elif made:
        shutil.rmtree(made, ignore_errors=True)
    elif run_dir.is_dir():
        kept = set(journal.get("kept") or ())
        for entry in run_dir.iterdir():
            if entry.name not in kept:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        if journal.get("config") is not None:
            write_text_atomic(run_dir / "config.toml", journal["config"])


# ------------------------------------------------------------------------------------------------------
# what a start checks and records: resume, and the run's inputs relative to it


DATA_FILES = ("train", "valid", "test")  # the data keys that name files (or, for translate, path prefixes)


def recorded_config(cfg: RunConfig, run_dir: Path) -> dict[str, dict[str, Any]]:
    """``cfg`` as the run's ``config.toml`` records it: a data file inside the run directory (in-memory data
    spooled into ``RUN/input/``) relative to the run, so that a moved run still finds it (:func:`located`)."""
    return inside_relative(cfg.to_dict(), run_dir)


def inside_relative(doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """``doc`` (config sections) with its absolute data files inside ``run_dir`` made relative to it (what
    earlier versions recorded, compared on resume as this version records it)."""
    data, inside = dict(doc.get("data", {})), run_dir.resolve()
    for key in DATA_FILES:
        value = data.get(key)
        if isinstance(value, str) and value and Path(value).is_absolute():
            with contextlib.suppress(ValueError):  # a file outside the run stays as given
                data[key] = Path(value).resolve().relative_to(inside).as_posix()
    return {**doc, "data": data} if "data" in doc else doc


def located(raw: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The config.toml ``raw`` with its data files inside the run (recorded relative to it, under ``input/``)
    located from where the run directory is now."""
    data = dict(raw.get("data", {}))
    for key in DATA_FILES:
        value = data.get(key)
        if isinstance(value, str) and value and Path(value).parts[0] == INPUT_DIR.name:
            data[key] = str(run_dir.absolute() / value)
    return {**raw, "data": data} if "data" in raw else raw


def in_memory_splits(old: dict, changed: list[str], run_dir: Path) -> list[str]:
    """The splits among the ``changed`` keys that the run read from in-memory data (a ``data.train`` / ``valid`` /
    ``test`` of its config.toml naming a file in ``RUN/input/``): a resume without ``train_data`` and the like."""
    inputs = (run_dir / INPUT_DIR).resolve()
    recorded = old.get("data", {})
    return [split for split in DATA_FILES
            if f"data.{split}" in changed and recorded.get(split)
            and (run_dir / recorded[split]).resolve().parent == inputs]


def resume_wanted(resume: bool | Literal["auto"], run_dir: Path) -> bool:
    """Whether to continue ``run_dir``: ``resume`` is True, False or ``"auto"`` (continue a run that exists, start
    one that does not: for requeue scripts). True on a path that does not exist is an error (a typo in ``out``
    would silently start over); an existing run directory without a checkpoint yet starts from step 0."""
    if resume == "auto":
        return run_dir.exists()
    if not isinstance(resume, bool):
        raise SeqlabError(f'resume must be True, False or "auto", got {resume!r}')
    if resume and not run_dir.exists():
        auto = given("resume", '"auto"')
        raise SeqlabError(f"cannot resume {run_dir}: no such run directory; check the path, or start it with "
                          f"{auto}, which starts a run that does not exist")
    return resume


def check_resume_length(cfg: RunConfig, run_dir: Path, length_key: Literal["max_steps", "epochs"]) -> None:
    """A resumed run must not end before the steps it has done: the train key its length is given in (the task's
    ``LENGTH_KEY``: ``train.max_steps``, or ``train.epochs`` where the run counts epochs, its state the
    ``steps_per_epoch`` of a kernel task) below them is an error naming both; equal is "nothing to do"."""
    try:
        state = checkpoint.load_state(run_dir) if checkpoint.exists(run_dir) else None
    except checkpoint.DamagedCheckpoint:
        return  # the Trainer falls back to an intact earlier checkpoint and reports it
    if state is None or (cfg.train_keys is not None and length_key not in cfg.train_keys):
        return
    key, wanted = f"train.{length_key}", getattr(cfg.train, length_key)
    if length_key == "epochs":
        done, unit = state.get("step", 0) / state.get("steps_per_epoch", 1), "epochs"
    else:
        done, unit = state.get("step", 0), "steps"
    if done > wanted:
        raise SeqlabError(f"cannot resume {run_dir}: it has already trained {done:g} {unit}, more than "
                          f"{key} = {wanted:g}; set {key} to {done:g} (nothing to do) or more")
