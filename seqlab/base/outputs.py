"""What seqlab writes, recognised on disk: the one rule of ``--force`` / ``force=True``.

``--force`` (``force=True``) replaces a seqlab output, never anything else. Every verb that takes it (``seqlab
train`` and :func:`seqlab.train`, ``seqlab data prepare`` and :func:`seqlab.prepare`, ``seqlab export`` and
:func:`seqlab.export`, :meth:`Trained.save`) calls :func:`check_replaceable` on its output path before it moves
or deletes anything. What may be replaced:

- nothing, or an empty folder;
- a run directory, complete or half-written: a ``config.toml`` of a seqlab config (with a ``[task]`` table) or a
  ``lock.json``, beside only the files and folders a run holds (:data:`RUN`: the checkpoint, the tokenizer or
  vocabulary, ``metrics.jsonl``, ``plots/``, ``best/``, ``checkpoints/``, ``data/``, ``input/``, ...) and the
  temporaries of atomic writes that a killed process leaves (``.NAME.*.tmp*``); a copy saved by
  :meth:`Trained.save` is one;
- a prepared corpus (``seqlab data prepare``): ``manifest.json`` beside its tokenizer and ``SPLIT.bin`` files;
- an export: a Hugging Face folder (``config.json`` with a ``model_type``, ``model.safetensors`` and the
  tokenizer files), an ONNX file that seqlab wrote (its ``seqlab.model`` metadata), a word2vec text file (an
  ``N D`` line, then N lines of a word and D numbers) or binary file (the same line, then N records of a word,
  a space and D float32);
- a notebook of the course (``seqlab course get``): a ``.ipynb`` file whose metadata names it as seqlab's
  (``metadata.seqlab.notebook``, which docs/notebook_pages.py writes), edited or not; a user's own notebook of
  the same name (no such metadata) is not.

Anything else is refused with one line naming what was found and how to proceed: a folder holding one entry
seqlab would not write (a user's ``thesis.txt``, a folder ``runs/`` of several runs), at any depth, is never
replaced. Symbolic links are not seqlab's either. The folder shapes below are kept in step with the writers
(``tests/test_force.py`` checks the names their modules define, and real runs of every task).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import tomllib
from pathlib import Path
from typing import Union

from seqlab.base.errors import SeqlabError, given, shown, spelled

# A folder's shape: {name pattern (a full match): FILE, or the shape of the folder it names}.
FILE = None
Shape = dict[str, Union["Shape", None]]

# what a write killed part-way leaves, anywhere: .NAME.RANDOM.tmp.SUFFIX (atomic writes), .lock.json.PID.tmp,
# .data.HOST-PID-RANDOM.tmp (a prepared folder being built), .step-S.partial (a checkpoint being archived),
# lock.json.stale-PID (a stale lock being taken over)
TEMPORARY = re.compile(r"\..+\.(tmp|partial)(\..*)?|lock\.json\.stale-\d+")

CHECKPOINT: Shape = {"model.safetensors": FILE, "trainer.safetensors": FILE, "state.json": FILE}
COMMITTING: Shape = {**CHECKPOINT, "COMPLETE": FILE}  # DIR/.next/, a checkpoint's two-phase commit
SPLIT = r"(train|valid|test)"

RUN: Shape = {
    # the run's config, lock and checkpoint (training/rundir.py, checkpoint.py), the Trainer's metrics log
    "config.toml": FILE, "lock.json": FILE, **CHECKPOINT, r"\.next": COMMITTING, "metrics.jsonl": FILE,
    "best": {**CHECKPOINT, r"\.next": COMMITTING},
    "checkpoints": {r"(damaged-)?step-\d+(-\d+)?": {**CHECKPOINT, r"\.next": COMMITTING}},
    # what the tasks keep beside it: tokenizers, vocabularies, labels, characters, series statistics, singletons,
    # a pretrained model's record, word vectors, the mark of a saved copy (tasks/*.py, models/pretrained_heads.py)
    "tokenizer.json": FILE, "src_tokenizer.json": FILE, "tgt_tokenizer.json": FILE, "vocab.json": FILE,
    "labels.json": FILE, "chars.json": FILE, "series.json": FILE, "singletons.json": FILE,
    "pretrained.json": FILE, "wordpiece.json": FILE, "vectors.txt": FILE, "saved.json": FILE,
    # pictures (the loss curve, a forecast, a confusion matrix, attention maps, word maps)
    "plots": {r".+\.png": FILE},
    # the splits' token stores or a prepared corpus (data/), the beacon of a torchrun preparing them, in-memory
    # data given to seqlab.train (input/), an embedding run's corpus ids and GloVe's shards (corpus/)
    "data": {rf"(manifest|tokenizer|meta)\.json|{SPLIT}(\.\w+)?\.(bin|idx|json)": FILE},
    r"data\.preparing\.json": FILE,
    "input": {rf"({SPLIT}|data)(\..+)?": FILE},
    "corpus": {r".+\.(bin|tmp)": FILE, r"cooccurrence-.+": {r".+\.bin": FILE}},
    # train.report_to = "tensorboard"
    "tensorboard": {r"events\.out\.tfevents\..+": FILE},
}
PREPARED: Shape = {r"manifest\.json": FILE, r"tokenizer\.json": FILE, rf"{SPLIT}\.bin": FILE}
HF: Shape = {name: FILE for name in (r"config\.json", r"generation_config\.json", r"model\.safetensors",
                                     r"tokenizer\.json", r"tokenizer_config\.json")}


def check_replaceable(path: str | os.PathLike, arg: str = "out") -> None:
    """Refuse ``path`` (the argument ``arg`` of the caller, e.g. ``out``) unless it is missing or holds a seqlab
    output that ``force`` may replace (the module docstring): a :class:`SeqlabError` naming what it holds."""
    path = Path(path)
    if not os.path.lexists(path) or output_kind(path) is not None:
        return
    named = given(arg, path)
    fix = f"{spelled('force')} replaces only what seqlab wrote; give another {spelled(arg)}, or remove it yourself"
    if path.is_symlink():
        raise SeqlabError(f"{named} is a symbolic link, which seqlab did not write; {fix}")
    if not path.is_dir():
        raise SeqlabError(f"{named} is a file seqlab did not write (not an ONNX or word2vec export, nor a seqlab "
                          f"notebook); {fix}")
    shape = _closest_shape(path)
    foreign = _foreign(path, shape)
    outputs = [p for p in foreign if p.parent == path and output_kind(p) not in (None, "an empty folder")]
    others = [p for p in foreign if p not in outputs]
    own = "run" if shape is RUN else "prepared corpus" if shape is PREPARED else "export"
    held = f"{len(outputs)} {_plural(outputs)} ({_names(path, outputs)})" if outputs else ""
    if others:
        also = f", and {held}" if held else ""
        raise SeqlabError(f"{named} holds {_names(path, others)}, which seqlab did not write{also}; {fix}")
    raise SeqlabError(f"{named} holds {held} and no {own} of its own; {fix}")


def output_kind(path: str | os.PathLike) -> str | None:
    """What seqlab output ``path`` is ("a run", "a prepared corpus", "a Hugging Face export", "an ONNX export",
    "a word2vec export", "a seqlab notebook", "an empty folder"), or None when it is not one (or not all of it is
    seqlab's)."""
    path = Path(path)
    if path.is_symlink() or not path.exists():
        return None
    if path.is_file():
        if _is_onnx(path):
            return "an ONNX export"
        if _is_notebook(path):
            return "a seqlab notebook"
        return "a word2vec export" if _is_word2vec(path) else None
    if not any(path.iterdir()):
        return "an empty folder"
    if _is_run(path) and not _foreign(path, RUN):
        return "a run"
    if _json_has(path / "manifest.json", "tokens") and not _foreign(path, PREPARED):
        return "a prepared corpus"
    if _json_has(path / "config.json", "model_type") and (path / "model.safetensors").is_file() \
            and not _foreign(path, HF):
        return "a Hugging Face export"
    return None


def _closest_shape(path: Path) -> Shape:
    """The shape ``path`` was meant to have, judged by its marker file (a run's when it has none)."""
    if (path / "manifest.json").is_file() and not (path / "config.toml").exists():
        return PREPARED
    if (path / "config.json").is_file() and not (path / "config.toml").exists():
        return HF
    return RUN


def _foreign(folder: Path, shape: Shape) -> list[Path]:
    """The entries under ``folder`` that ``shape`` does not allow, depth first (a folder that is not allowed is
    listed itself, not what it holds); temporaries of killed writes are allowed anywhere."""
    found = []
    for entry in sorted(folder.iterdir()):
        if TEMPORARY.fullmatch(entry.name) and not entry.is_symlink():
            continue
        allowed = [sub for pattern, sub in shape.items() if re.fullmatch(pattern, entry.name)]
        if entry.is_symlink() or not allowed:
            found.append(entry)
        elif allowed[0] is FILE:
            if not entry.is_file():
                found.append(entry)
        elif not entry.is_dir():
            found.append(entry)
        else:
            found += _foreign(entry, allowed[0])
    return found


def _is_run(path: Path) -> bool:
    """A run's marker: a seqlab config.toml (a ``[task]`` table), or a lock.json (a start that wrote no config)."""
    config = path / "config.toml"
    if config.is_file():
        try:
            return isinstance(tomllib.loads(config.read_text(encoding="utf-8")).get("task"), dict)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return False
    return _json_has(path / "lock.json", "pid")


def _json_has(path: Path, key: str) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and key in doc


def _is_notebook(path: Path) -> bool:
    """A notebook of the course: JSON with ``metadata.seqlab.notebook`` (a learner's edits keep the metadata)."""
    if path.suffix != ".ipynb":
        return False
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    mark = meta.get("seqlab") if isinstance(meta, dict) else None
    return isinstance(mark, dict) and isinstance(mark.get("notebook"), str)


def _is_onnx(path: Path) -> bool:
    """An ONNX model seqlab exported: a ModelProto (field 1, ir_version, first) whose metadata names seqlab's
    model (``seqlab.model``, written by seqlab.exporters.onnx after the graph, so searched from the end)."""
    with open(path, "rb") as f:
        if f.read(1) != b"\x08":
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.rfind(b"seqlab.model") >= 0


_HEADER = re.compile(rb"(\d+) (\d+)\n")


def _is_word2vec(path: Path) -> bool:
    """A word2vec file as seqlab writes it (:meth:`KeyedVectors.save_word2vec_format`): the ``N D`` line, then
    N lines ``word v1 .. vD`` (text), or N records ``word``, a space, D float32, a line break (binary)."""
    if path.stat().st_size == 0:
        return False
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        header = _HEADER.match(data, 0, 64)
        if header is None:
            return False
        n, d, start = int(header[1]), int(header[2]), header.end()
        breaks = spaces = 0
        for at in range(start, len(data), 1 << 24):  # in blocks: a large file is never held whole
            block = data[at:at + (1 << 24)]
            breaks, spaces = breaks + block.count(b"\n"), spaces + block.count(b" ")
        if breaks == n and spaces == n * d and (n == 0 or data[-1:] == b"\n"):
            return True  # text: one line a word, d spaces a line (a word holds no whitespace)
        pos = start
        for _ in range(n):
            space = data.find(b" ", pos, pos + 4096)
            if space <= pos:
                return False
            pos = space + 1 + 4 * d
            if data[pos:pos + 1] == b"\n":
                pos += 1
        return pos == len(data)


def _names(folder: Path, entries: list[Path], shown_at_most: int = 3) -> str:
    """``thesis.txt, notes/ and 2 more``: entries relative to ``folder``, a folder with a trailing slash."""
    names = [shown(p.relative_to(folder).as_posix()) + ("/" if p.is_dir() and not p.is_symlink() else "")
             for p in entries]
    if len(names) > shown_at_most:
        names = [*names[:shown_at_most], f"{len(names) - shown_at_most} more"]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _plural(outputs: list[Path]) -> str:
    kinds = {output_kind(p) for p in outputs}
    if kinds == {"a run"}:
        return "run" if len(outputs) == 1 else "runs"
    return "seqlab output" if len(outputs) == 1 else "seqlab outputs"
