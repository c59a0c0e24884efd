"""The runs ``seqlab serve`` shows: discovery under the given roots, their summaries, and path safety.

A run is named by an id, ``LABEL/REL``: LABEL is the root's folder name (``-2``, ``-3``... added when two roots
share one) and REL the run's path under it (absent when the root is itself a run). Only a folder under a root
can be opened: an id with ``..``, ``.``, an empty part or a backslash, an absolute path, or one whose real path
(symlinks followed) leaves its root is refused, as is a folder that is neither a run (``config.toml``) nor a
pretrained encoder directory (``config.json``, ``tokenizer.json``, ``model.safetensors``).

Summaries read ``state.json``, ``metrics.jsonl`` and ``lock.json`` on every call (cheap: a few small files), so
the runs page is live while runs train. A run whose files are missing or damaged gets an ``error`` naming the
problem instead of failing the whole list.
"""

from __future__ import annotations

import datetime
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from seqlab.training import checkpoint, rundir
from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_metrics

ENCODER_FILES = ("config.json", "tokenizer.json", "model.safetensors")  # a BERT-style directory (api.open_encoder)
MAX_DEPTH = 4  # how deep under a root runs are looked for
SKIP = {"best", "checkpoints", "data", "plots", ".next", "__pycache__", ".git"}  # inside a run: not runs


class NotFound(SeqlabError):
    """No run of that id under the roots (or an id that tries to leave them)."""


@dataclass(frozen=True)
class Root:
    label: str
    path: Path  # resolved


def is_run(path: Path) -> bool:
    return (path / "config.toml").is_file()


def is_encoder(path: Path) -> bool:
    return not is_run(path) and all((path / name).is_file() for name in ENCODER_FILES)


class RunIndex:
    """The roots given to ``seqlab serve`` and the runs under them."""

    def __init__(self, roots: list[str | Path]):
        self.roots: list[Root] = []
        seen: dict[str, int] = {}
        for raw in roots:
            path = Path(raw).resolve()
            if not path.is_dir():
                raise SeqlabError(f"{raw} is not a folder; give a runs folder or a run directory "
                                  "(e.g. `seqlab serve runs`)")
            base = path.name or "root"
            seen[base] = seen.get(base, 0) + 1
            self.roots.append(Root(base if seen[base] == 1 else f"{base}-{seen[base]}", path))

    # ---- discovery -------------------------------------------------------------------------------------

    def ids(self) -> list[str]:
        """Every run and encoder directory under the roots, as ids, in path order."""
        found = []
        for root in self.roots:
            for path in self._walk(root.path, root.path, 0):
                rel = path.relative_to(root.path).as_posix()
                found.append(root.label if rel == "." else f"{root.label}/{rel}")
        return found

    def _walk(self, root: Path, folder: Path, depth: int):
        if is_run(folder) or is_encoder(folder):
            yield folder
            return
        if depth >= MAX_DEPTH:
            return
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in children:
            if entry.name in SKIP or entry.name.startswith(".") or not entry.is_dir():
                continue
            child = Path(entry.path)
            if entry.is_symlink() and not _inside(child.resolve(), root):
                continue  # a link out of the root is not followed
            yield from self._walk(root, child, depth + 1)

    # ---- path safety -----------------------------------------------------------------------------------

    def resolve(self, run_id: str) -> Path:
        """The directory of ``run_id``; :class:`NotFound` for anything but a run or encoder under a root."""
        parts = run_id.split("/")
        if "\\" in run_id or "\0" in run_id or any(p in ("", ".", "..") for p in parts):
            raise NotFound(f"no run {run_id!r}: a run id is LABEL/PATH under a served folder, without '..' or '.'")
        root = next((r for r in self.roots if r.label == parts[0]), None)
        if root is None:
            raise NotFound(f"no run {run_id!r}: {parts[0]!r} is not a served folder "
                           f"({', '.join(r.label for r in self.roots)})")
        path = root.path.joinpath(*parts[1:])
        real = path.resolve()
        if not _inside(real, root.path) or not (is_run(real) or is_encoder(real)):
            raise NotFound(f"no run {run_id!r} under {root.path}")
        return path

    # ---- summaries -------------------------------------------------------------------------------------

    def summary(self, run_id: str) -> dict:
        """What the runs page shows of one run: task, arch, steps done, best validation loss, last update,
        whether it trains now; ``error`` when its files cannot be read."""
        path = self.resolve(run_id)
        out: dict = {"id": run_id, "kind": "encoder" if is_encoder(path) else None, "arch": None, "step": None,
                     "max_steps": None, "best_valid_loss": None, "best_step": None, "updated": _updated(path),
                     "training": None, "error": None}
        if out["kind"] == "encoder":
            out["arch"] = "pretrained"
            return out
        try:
            doc = tomllib.loads((path / "config.toml").read_text(encoding="utf-8"))
            out["kind"] = doc.get("task", {}).get("kind")
            out["arch"] = doc.get("model", {}).get("arch")
            out["max_steps"] = doc.get("train", {}).get("max_steps")
        except (OSError, ValueError) as e:
            out["error"] = f"{path / 'config.toml'} cannot be read ({e})"
            return out
        out["training"] = rundir.writer(path)
        try:
            if checkpoint.exists(path):
                state = checkpoint.load_state(path)
                out["step"] = state.get("step")
                out["best_valid_loss"] = state.get("best_valid_loss")
                out["best_step"] = state.get("best_step")
            else:
                out["error"] = "no checkpoint yet" if out["training"] else "no checkpoint (train it, or it failed)"
        except SeqlabError as e:
            out["error"] = str(e)
        if out["step"] is None:  # still training its first steps: the log says how far it is
            rows = [r for r in read_metrics(path / "metrics.jsonl") if isinstance(r.get("step"), int)]
            out["step"] = rows[-1]["step"] if rows else None
        return out

    def checkpoints(self, run_id: str) -> list[dict]:
        """The run's checkpoints: the final one, ``best/`` and the kept earlier ones (newest first)."""
        path = self.resolve(run_id)
        found = [("last", path), ("best", path / "best")] + [(p.name, p) for p in checkpoint.archived(path)]
        out = []
        for name, where in found:
            if not checkpoint.exists(where):
                continue
            try:
                state = checkpoint.load_state(where)
                out.append({"name": name, "step": state.get("step"), "best_valid_loss": state.get("best_valid_loss"),
                            "updated": _updated(where)})
            except SeqlabError as e:
                out.append({"name": name, "error": str(e)})
        return out


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _updated(path: Path) -> str | None:
    """The newest modification time of the run's state and log, ISO 8601 in UTC."""
    times = [p.stat().st_mtime for p in (path / "state.json", path / "metrics.jsonl", path / "config.toml",
                                         path / "model.safetensors") if p.exists()]
    if not times:
        return None
    return datetime.datetime.fromtimestamp(max(times), datetime.timezone.utc).isoformat(timespec="seconds")
