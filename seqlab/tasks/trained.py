"""What every trained object shares (the objects :func:`seqlab.load` and :func:`seqlab.train` return): its run
directory and config, the metrics its training logged, and :meth:`Trained.save`, a self-contained copy of
the model that :func:`seqlab.load` opens as it opens a run (HF's ``save_pretrained`` / ``from_pretrained``).

A saved directory holds ``config.toml``, the weights as a checkpoint (``model.safetensors`` and ``state.json``,
verified by SHA-256 when read; an empty ``trainer.safetensors``: no optimiser state), and the run's own small files that loading reads: the
tokenizer or vocabulary, the labels, the series statistics, a pretrained model's record, ``metrics.jsonl``.
It has no data splits: ``evaluate(data=...)`` works on it, ``evaluate(split)`` needs the run.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from seqlab.training import checkpoint, rundir
from seqlab.base.config import RunConfig
from seqlab.base.errors import SeqlabError, shown
from seqlab.base.io import replace_atomic
from seqlab.base.outputs import check_replaceable

SAVED_MARK = "saved.json"  # what a saved directory records of where it came from
_NOT_COPIED = {*checkpoint.FILES, rundir.LOCK, SAVED_MARK}


def texts_given(texts: Any, what: str = "text") -> tuple[bool, list[str]]:
    """(whether one text was given, the texts): a verb's input, a str or an iterable of str; anything else (a
    number, a list holding a number) is an error naming what was given, not a TypeError from deep inside."""
    if isinstance(texts, str):
        return True, [texts]
    try:
        items = list(texts)
    except TypeError:
        raise SeqlabError(f"got a {type(texts).__name__}; give a {what} as a str, or several as a list of "
                          "str") from None
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise SeqlabError(f"{what} {i + 1} is a {type(item).__name__}, not a str; give {what}s as strings")
    return False, items


class Trained:
    """Mixin of the task objects: ``run_dir``, ``config``, ``checkpoint`` (the state.json of the weights in
    use), ``metrics``, ``metrics_frame()``, ``save(directory)``."""

    run_dir: Path
    config: RunConfig
    checkpoint: dict[str, Any]

    @property
    def metrics(self) -> list[dict[str, Any]]:
        """The rows of the run's ``metrics.jsonl`` (train and valid rows, in the order they were logged)."""
        path = Path(self.run_dir) / "metrics.jsonl"
        if not path.exists():
            return []
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill while it was written: the rows before it stand
                break
        return rows

    def metrics_frame(self):
        """:attr:`metrics` as a pandas DataFrame (pandas must be installed)."""
        try:
            import pandas as pd
        except ImportError:
            raise SeqlabError("metrics_frame() needs pandas; `pip install pandas`, or use .metrics (a list of "
                              "dicts)") from None
        return pd.DataFrame(self.metrics)

    def save(self, directory: str | Path, *, force: bool = False) -> Path:
        """Write a self-contained copy of this model to ``directory`` (see the module docstring); returns it.

        The directory appears complete or not at all; an existing one is replaced only with ``force``, and only
        when it is a seqlab output (a saved copy, a run, an export: :func:`seqlab.base.outputs.check_replaceable`);
        a folder holding anything else is refused, untouched."""
        directory = Path(directory)
        if directory.exists() and not (directory.is_dir() and not any(directory.iterdir())) and not force:
            raise SeqlabError(f"{shown(directory)} already exists; save elsewhere or pass force=True to replace it")
        check_replaceable(directory, "directory")
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.saving-", dir=directory.parent))
        try:
            for path in sorted(Path(self.run_dir).iterdir()):
                if path.is_file() and path.name not in _NOT_COPIED and not path.name.startswith("."):
                    shutil.copy2(path, tmp / path.name)
            source = Path(self.checkpoint.get("dir", self.run_dir)) if hasattr(self, "checkpoint") else Path(self.run_dir)
            state = {k: v for k, v in checkpoint.load_state(source).items() if k not in ("files", "format_version")}
            model = getattr(self, "model", None)
            torch = sys.modules.get("torch")  # an nn.Module exists only where torch is loaded: never imported here
            is_module = torch is not None and isinstance(model, torch.nn.Module)
            weights = (checkpoint.model_bytes(model, {"step": str(state.get("step", 0))}) if is_module
                       else checkpoint.read_verified(source / "model.safetensors")[0])  # AR, word vectors: as trained
            checkpoint.save_weights_only(tmp, weights, {**state, "saved": True})
            (tmp / SAVED_MARK).write_text(json.dumps({"from": str(Path(self.run_dir).resolve()),
                                                      "step": state.get("step")}) + "\n", encoding="utf-8")
            aside = directory.with_name(f".{directory.name}.replaced") if directory.exists() else None
            replace_atomic(tmp, directory, aside=aside)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return directory

    def __repr__(self) -> str:
        step = getattr(self, "checkpoint", {}).get("step")
        at = f", step {step}" if step is not None else ""
        return f"<{type(self).__name__} {self.config.task.kind}/{self.config.arch} from {shown(self.run_dir)}{at}>"
