"""The loaded models of ``seqlab serve``: each (run, best or last) loaded once per committed checkpoint, the
least recently used dropped beyond ``size`` entries.

The key of an entry is the checkpoint's identity: the folder read (``best/`` or the run directory), its step
and the SHA-256 that ``state.json`` records for ``model.safetensors``. Every request reads that small
``state.json`` again (:func:`seqlab.training.checkpoint.load_state`, which sees only committed checkpoints), so a run
that commits a newer checkpoint while it trains is loaded afresh on the next request, never half-written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from seqlab import api
from seqlab.training import checkpoint
from seqlab.serve.run_index import is_encoder


def identity(run_dir: Path, last: bool) -> tuple:
    """(checkpoint folder, step, weights SHA-256) of the checkpoint a reader of ``run_dir`` uses now; for a
    pretrained encoder directory, its weight file's modification time and size."""
    if is_encoder(run_dir):
        stat = (run_dir / "model.safetensors").stat()
        return str(run_dir), stat.st_mtime_ns, stat.st_size
    where = api.checkpoint_dir(run_dir, last)
    return _of_state(str(where), checkpoint.load_state(where))


def _of_state(where: str, state: dict) -> tuple:
    files = state.get("files") if isinstance(state.get("files"), dict) else {}
    return where, state.get("step"), files.get("model.safetensors")


def load(run_dir: Path, device: str | None = None, last: bool = False):
    """A run's object (``seqlab.load``) or a pretrained directory's sentence encoder (``api.open_encoder``)."""
    if is_encoder(run_dir):
        return api.open_encoder(run_dir, device)
    return api.load(run_dir, device=device, last=last)


class ModelCache:
    """``get(run_dir, last)`` -> the object ``seqlab.load`` returns, cached by checkpoint identity."""

    def __init__(self, size: int = 4, loader: Callable[..., Any] | None = None, device: str | None = None):
        if size < 1:
            raise ValueError(f"the model cache holds at least 1 run, got {size}")
        self.size, self.device = size, device
        self.loader = loader or load
        self.loads = 0  # how many times a model was loaded (tests and the bench read it)
        self._entries: OrderedDict[tuple, tuple[tuple, Any]] = OrderedDict()  # (run, last) -> (identity, object)
        self._extras: dict[tuple, dict] = {}  # per entry: derived results (e.g. an embedding map), same lifetime
        self._lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}

    def get(self, run_dir: Path, last: bool = False) -> Any:
        key = (str(Path(run_dir).resolve()), bool(last))
        ident = identity(Path(run_dir), last)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] == ident:
                self._entries.move_to_end(key)
                return hit[1]
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one load per run at a time; a second request for it waits and finds it loaded
            with self._lock:
                hit = self._entries.get(key)
                if hit is not None and hit[0] == ident:
                    self._entries.move_to_end(key)
                    return hit[1]
            obj = self.loader(run_dir, device=self.device, last=last)
            state = getattr(obj, "checkpoint", None)
            if isinstance(state, dict):  # what was loaded (a newer checkpoint may have been committed meanwhile)
                ident = _of_state(state["dir"], state)
            with self._lock:
                self.loads += 1
                self._entries[key] = (ident, obj)
                self._extras[key] = {}
                self._entries.move_to_end(key)
                while len(self._entries) > self.size:
                    old, _ = self._entries.popitem(last=False)
                    self._extras.pop(old, None)
            return obj

    def extras(self, run_dir: Path, last: bool = False) -> dict:
        """A dict that lives as long as the cached model of (run, last): for results derived from it."""
        key = (str(Path(run_dir).resolve()), bool(last))
        with self._lock:
            return self._extras.setdefault(key, {})

    def __len__(self) -> int:
        return len(self._entries)
