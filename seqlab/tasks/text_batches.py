"""What the tagging and classification tasks share (and translation, the token stores): where each split's examples come from, the label
vocabulary, length-sorted batches of token-id sequences, and the trained model as ``seqlab.load`` returns it
(:class:`Labeller`).

Splits (DESIGN.md "Config conventions"): ``data.train`` (with ``data.valid`` / ``data.test``) name files and
override ``data.source``; a split that is not named is cut from the training file by ``data.split``
(contiguous, in file order, by example counts). ``data.source`` is a dataset name of the task's table (its
cached split files; downloaded when missing) or the path of one file to cut by ``data.split``.
The readers are streamed views (:class:`seqlab.data.streamed.Streamed`): ``read_splits`` cuts them by example
counts without holding them, and :func:`split_stores` (used by translation too) encodes the splits once into the
run's indexed token stores (``RUN/data``, :mod:`seqlab.data.indexed`) that batches gather from.

Training batches are drawn with the data generator only, as the translation task does: a pool of
``POOL_BATCHES * n`` random example indices, sorted by length, of which a random run of ``n`` consecutive
examples is the batch (little padding, no state besides the generator, so ``--resume`` is exact).
Evaluation batches are length-sorted runs over the whole split (or ``max_batches`` of them spread evenly).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from torch import Tensor, nn

from seqlab import checkpoint
from seqlab.config import DataConfig, RunConfig
from seqlab.data import download
from seqlab.data.batching import spread_batches
from seqlab.data.indexed import IndexedArrays, SplitWriter, reused_split
from seqlab.data.sources import EMBEDDED
from seqlab.data.streamed import Streamed
from seqlab.errors import SeqlabError
from seqlab.io import read_json, write_json_atomic
from seqlab.models import finetune
from seqlab.models.sentence import SentenceEncoder
from seqlab.text.tokenizers import Tokenizer
from seqlab.text.vocab import Vocab
from seqlab.devices import Dist, resolve_device

T = TypeVar("T")
SPLITS = ("train", "valid", "test")
POOL_BATCHES = 16  # training batches are cut from length-sorted pools of this many batches
PREDICT_BATCH = 64  # sentences run together at prediction and evaluation
DATA_DIR = "data"  # RUN/data: the splits' indexed token stores


# ------------------------------------------------------------------------------------------------------
# splits


def cut(items: list[T], fractions: Sequence[float], what: str = "examples",
        used: Iterable[str] = SPLITS) -> tuple[list[T], list[T], list[T]]:
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


def read_splits(data: DataConfig, reader: Callable[[str], list[T]], datasets: dict[str, tuple[str, str, str]],
                task: str, splits: Iterable[str] = SPLITS) -> dict[str, list[T]]:
    """The examples of each split in ``splits``, read with ``reader(path)``.

    ``datasets`` maps the dataset names the task knows to their (train, valid, test) files in the cache.
    """
    splits = tuple(splits)
    named = {s: getattr(data, s) for s in SPLITS}
    out: dict[str, list[T]] = {}
    if data.train and all(named.values()):
        paths = named
    elif not data.train and data.source in datasets:
        download.get(data.source)
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


def evaluation_split(cfg: RunConfig, split: str, read_data: Callable[..., dict[str, list[T]]]) -> list[T]:
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
                 dist: Dist = Dist()) -> dict[str, tuple[dict[str, IndexedArrays], dict]]:
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
    dist.barrier()
    return {name: reused_split(directory, name, keys[name], bounds) for name in views}


@contextlib.contextmanager
def scratch_run_dir() -> Iterator[Path]:
    """A temporary folder standing in for the run directory while a split is evaluated: its token stores
    (:func:`split_stores`) are written there and removed afterwards, never into the run (which readers do not
    lock, and which may be read-only)."""
    with tempfile.TemporaryDirectory(prefix="seqlab-eval-") as scratch:
        yield Path(scratch)


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


# ------------------------------------------------------------------------------------------------------
# labels


class Labels:
    """The label vocabulary of a task: names in a fixed order (id = position), saved as a JSON list."""

    def __init__(self, names: Sequence[str]):
        self.names = list(names)
        self.index = {name: i for i, name in enumerate(self.names)}

    @classmethod
    def build(cls, labels: Iterable[str], first: Sequence[str] = ()) -> Labels:
        """``first`` (those that occur) then the others sorted; numbers in numeric order ("2" before "10")."""
        seen = set(labels)
        head = [name for name in first if name in seen]
        rest = seen - set(head)
        numeric = all(name.lstrip("-").isdigit() for name in rest)
        return cls(head + sorted(rest, key=lambda s: (int(s), s) if numeric else (0, s)))

    def __len__(self) -> int:
        return len(self.names)

    def id(self, label: str, where: str) -> int:
        """The id of ``label``; a label the training data never had is an error naming ``where`` (file:line)."""
        i = self.index.get(label)
        if i is None:
            shown = ", ".join(self.names[:12]) + (", ..." if len(self.names) > 12 else "")
            raise SeqlabError(f"{where}: label {label!r} does not occur in the training data (labels: {shown}); "
                              "fix the label or retrain with data that has it")
        return i

    def save(self, path: str | os.PathLike) -> None:
        write_json_atomic(path, {"kind": "labels", "labels": self.names})

    @classmethod
    def load(cls, path: str | os.PathLike) -> Labels:
        d = read_json(path, "label vocabulary", "retrain the run")
        if not isinstance(d, dict) or d.get("kind") != "labels" or not isinstance(d.get("labels"), list):
            raise SeqlabError(f"{path} is not a label vocabulary; retrain the run")
        return cls(d["labels"])


# ------------------------------------------------------------------------------------------------------
# batches of token-id sequences


def sample_batch(lengths: Tensor, n: int, generator: torch.Generator) -> list[int]:
    """``n`` example indices: a random run of ``n`` in a length-sorted random pool of POOL_BATCHES * n."""
    pool = torch.randint(len(lengths), (POOL_BATCHES * n,), generator=generator)  # pool
    pool = pool[torch.sort(lengths[pool], stable=True).indices]  # pool, by length
    start = int(torch.randint(POOL_BATCHES, (1,), generator=generator)) * n
    return pool[start:start + n].tolist()


def sorted_batches(lengths: Sequence[int], batch_size: int, max_batches: int | None = None) -> list[list[int]]:
    """Example indices in length-sorted batches (ties in index order); with ``max_batches``, that many spread
    evenly over them."""
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable").tolist()
    return spread_batches(order, batch_size, max_batches)


def check_lengths(ids: Sequence[Sequence[int]], max_len: int | None, where: Callable[[int], str]) -> None:
    """Refuse an empty sequence, or one longer than ``max_len`` (None: no limit), naming ``where(i)``."""
    for i, seq in enumerate(ids):
        if not seq:
            raise SeqlabError(f"{where(i)} is empty (no tokens); give one non-empty sentence per line")
        if max_len is not None and len(seq) > max_len:
            raise SeqlabError(f"{where(i)} has {len(seq)} tokens, more than model.max_len={max_len}; split it into "
                              "shorter sentences or train with a larger model.max_len")


# ------------------------------------------------------------------------------------------------------
# a trained tagger or classifier


class Labeller:
    """What ``seqlab.load`` returns for a tagging or classification run, loaded from its directory; the task
    modules subclass it with ``predict`` and ``evaluate``.

    ``tokenizer`` is the run's own (a word :class:`~seqlab.text.vocab.Vocab` for tagging, a tokenizer for
    classification) or, when the run was fine-tuned from a pretrained encoder, its
    :class:`~seqlab.models.finetune.SubwordTokenizer`; ``model`` is on ``device``, in eval mode.
    """

    def __init__(self, run_dir: Path, cfg: RunConfig, tokenizer: Vocab | Tokenizer | finetune.SubwordTokenizer,
                 labels: Labels, model: nn.Module, device: torch.device):
        self.run_dir, self.config, self.tokenizer, self.labels, self.model, self.device = (
            run_dir, cfg, tokenizer, labels, model, device)

    def sentence_encoder(self) -> SentenceEncoder | None:
        """The fine-tuned encoder as a :class:`~seqlab.models.sentence.SentenceEncoder` (mean-pooled,
        L2-normalised; for ``seqlab embed RUN``), or None when the run was not fine-tuned from a pretrained
        encoder."""
        if not isinstance(self.config.model, finetune.PretrainedConfig):
            return None
        return finetune.sentence_encoder(self.model, self.tokenizer, self.device)


def load_weights(model: nn.Module, weights: Path, device: str | torch.device | None) -> torch.device:
    """Load the checkpoint in ``weights`` (the run directory or its best/) into ``model`` and move it, in eval
    mode, to ``device`` (None: CUDA when available, else the CPU); returns that device."""
    device = resolve_device("auto") if device is None else torch.device(device)
    checkpoint.load_model(model, weights / "model.safetensors")
    model.to(device).eval()
    return device
