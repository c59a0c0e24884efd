"""What the two labelling tasks share (:mod:`seqlab.tasks.tag`, a label per token; :mod:`seqlab.tasks.classify`, a
label per sentence): the label vocabulary (:class:`Labels`, ``labels.json``, built on the run's first pass over the
training split), the word vectors that may start E and extend the word vocabulary (:mod:`seqlab.vectors.start`
does both), the training task's batches, and the trained model as ``seqlab.load`` returns it (:class:`Labeller`).
Where their examples come from: :mod:`seqlab.tasks.splits`.

``model.vectors_vocab = N`` (> 0, with ``model.vectors`` and ``data.tokenizer = "word"``): once the word vocabulary
is learned from the training split, the first N words of the vectors (file order: most frequent first for GloVe and
word2vec) that it lacks are appended (Lample et al. 2016 add the pretrained embeddings' words; beyond
``data.max_size``), lowercased with ``data.lowercase``, so a word never seen in training but known to the vectors gets
its pretrained vector instead of <unk>; the vocabulary then looks an unknown word up lowercased before <unk> (GloVe
is uncased, CoNLL is not), a flag saved with it (``"case_fallback": true``).

Training batches are :func:`seqlab.data.batching.sample_batch`'s length-pooled random runs, drawn with the data
generator only (``--resume`` is exact); evaluation batches are length-sorted runs over the whole split.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import torch
from torch import nn

from seqlab.training import checkpoint
from seqlab.base.config import RunConfig
from seqlab.data.batching import sample_batch
from seqlab.data.indexed import IndexedArrays
from seqlab.training.devices import Dist, inference_device
from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json, write_json_atomic
from seqlab.models import pretrained_heads
from seqlab.models.sentence import SentenceEncoder
from seqlab.text.tokenizers import Tokenizer
from seqlab.text.vocab import Vocab
from seqlab.training.trainer import shard_rows
from seqlab.tasks.trained import Trained
from seqlab.vectors.start import RunVectors, Side, start_vectors, vocabulary_tokens

T = TypeVar("T")
L = TypeVar("L", bound="Labeller")
OwnModel = Callable[[RunConfig, Path, int], tuple[nn.Module, Any]]  # (cfg, run_dir, labels) -> (model, tokenizer)
Rows = list[list[int]] | IndexedArrays  # sentences' ids: lists (prediction), or a split's memory-mapped store
PREDICT_BATCH = 64  # sentences run together at prediction and evaluation
LABELS = "labels.json"  # in the run directory: the label vocabulary


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


def first_labels(run_dir: Path, dist: Dist, examples: Iterable[T], text: Callable[[T], Any],
                 labels: Callable[[T], Iterable[str]], learn: Callable[[Iterator[Any]], object] | None,
                 first: Sequence[str] = ()) -> Labels:
    """The run's label vocabulary. On its first start rank 0 makes one pass over the training ``examples``: it
    gathers their ``labels`` while ``learn`` (the tokenizer's training; None for a pretrained encoder's) reads
    their ``text``, and saves them as ``labels.json`` (:meth:`Labels.build` with ``first``); then every rank
    loads the file."""
    if dist.main and not (run_dir / LABELS).exists():
        names: set[str] = set()  # the training labels, gathered on the tokenizer's pass over the split

        def texts() -> Iterator[Any]:
            for ex in examples:
                names.update(labels(ex))
                yield text(ex)

        if learn is None:
            collections.deque(texts(), maxlen=0)
        else:
            learn(texts())
        Labels.build(names, first).save(run_dir / LABELS)
    dist.barrier()  # rank 0 wrote the tokenizer and labels; every rank reads the same files
    return Labels.load(run_dir / LABELS)


def check_lengths(ids: Sequence[Sequence[int]], max_len: int | None, where: Callable[[int], str]) -> None:
    """Refuse an empty sequence, or one longer than ``max_len`` (None: no limit), naming ``where(i)``."""
    for i, seq in enumerate(ids):
        if not seq:
            raise SeqlabError(f"{where(i)} is empty (no tokens); give one non-empty sentence per line")
        if max_len is not None and len(seq) > max_len:
            raise SeqlabError(f"{where(i)} has {len(seq)} tokens, more than model.max_len={max_len}; split it into "
                              "shorter sentences or train with a larger model.max_len")


# ------------------------------------------------------------------------------------------------------
# word vectors -> E


def start_embedding(cfg: RunConfig, run_dir: Path, resume: bool, model: nn.Module, tokenizer, unit: str, log,
                    vectors: RunVectors | None = None) -> None:
    """Start E from ``model.vectors`` when it names them (not on a resumed run: its checkpoint has E; ``vectors``:
    the run's one read of them, released here), logging how many of the vocabulary's ``unit`` (words, tokens) had
    a vector (:func:`seqlab.vectors.start.start_vectors`)."""
    vectors = vectors or RunVectors(cfg)
    if vectors.source and not (resume and checkpoint.exists(run_dir)):
        embedding = cast(nn.Embedding, model.token_embedding)  # E of the task's own model (model.vectors is its key)
        start_vectors([Side("model.vectors", vectors.source, embedding, vocabulary_tokens(tokenizer), unit,
                            cfg.train.seed, vectors.get())], cfg.model.freeze_vectors, log)
    vectors.release()


# ------------------------------------------------------------------------------------------------------
# the model


def labelling_model(cfg: RunConfig, run_dir: Path, n_out: str, labels: Labels, own: OwnModel,
                    write: bool | None = None) -> tuple[nn.Module, Any]:
    """A labelling run's model and tokenizer, the model's ``n_out`` (n_labels, n_classes) the number of labels.
    With ``model.arch = "pretrained"``: the encoder with a head and its sub-word tokenizer
    (:mod:`seqlab.models.pretrained_heads`), started from the pretrained directory (``write``: this process saves
    the run's copies of its files) or, with ``write=None``, rebuilt from the run's own files; else ``own(cfg, run_dir,
    len(labels))``: the run's own tokenizer and a model for it."""
    if isinstance(cfg.model, pretrained_heads.PretrainedConfig):
        sizes: dict[str, Any] = {n_out: len(labels)}
        model_cfg = cast("pretrained_heads.PretrainedTaggerConfig | pretrained_heads.PretrainedClassifierConfig",
                         replace(cfg.model, **sizes))  # the task's subclass of PretrainedConfig
        if write is None:
            return pretrained_heads.reload(model_cfg, run_dir)
        return pretrained_heads.start(model_cfg, run_dir, write)
    return own(cfg, run_dir, len(labels))


# ------------------------------------------------------------------------------------------------------
# the training task


class LabellingTask:
    """What a labelling task plugs into :class:`seqlab.training.trainer.Trainer` alike: training batches of length-pooled
    random sentences (:func:`seqlab.data.batching.sample_batch`, then the task's ``collate``), sharded by rows.
    The task module's subclass sets ``collate`` and adds ``count``, ``loss_sum`` and ``validate``."""

    collate: Callable[[Any, list[int]], Any]  # (encoded split, example indices) -> a batch

    def __init__(self, model: nn.Module, train: Any, valid: Any, lengths: np.ndarray, train_tokens: int,
                 eval_batch_size: int, label_smoothing: float = 0.0):
        self.model, self.train, self.valid = model, train, valid
        self.label_smoothing = label_smoothing
        self.train_tokens = train_tokens  # items per epoch, in the unit ``count`` returns
        self.lengths = torch.from_numpy(lengths)  # sentences: tokens in each
        self.eval_batch_size = eval_batch_size

    def train_batch(self, generator: torch.Generator, n: int) -> Any:
        return self.collate(self.train, sample_batch(self.lengths, n, generator))

    def shard(self, batch, rank: int, world: int):
        return shard_rows(batch, rank, world)


# ------------------------------------------------------------------------------------------------------
# a trained tagger or classifier


class Labeller(Trained):
    """What ``seqlab.load`` returns for a tagging or classification run, loaded from its directory; the task
    modules subclass it with ``predict`` and ``evaluate``.

    ``tokenizer`` is the run's own (a word :class:`~seqlab.text.vocab.Vocab` for tagging, a tokenizer for
    classification) or, when the run was fine-tuned from a pretrained encoder, its
    :class:`~seqlab.models.pretrained_heads.SubwordTokenizer`; ``model`` is on ``device``, in eval mode.
    """

    def __init__(self, run_dir: Path, cfg: RunConfig, tokenizer: Vocab | Tokenizer | pretrained_heads.SubwordTokenizer,
                 labels: Labels, model: nn.Module, device: torch.device):
        self.run_dir, self.config, self.tokenizer, self.labels, self.model, self.device = (
            run_dir, cfg, tokenizer, labels, model, device)

    def sentence_encoder(self) -> SentenceEncoder | None:
        """The fine-tuned encoder as a :class:`~seqlab.models.sentence.SentenceEncoder` (mean-pooled,
        L2-normalised; for ``seqlab embed RUN``), or None when the run was not fine-tuned from a pretrained
        encoder."""
        if not isinstance(self.config.model, pretrained_heads.PretrainedConfig):
            return None
        model = cast("pretrained_heads.TokenClassifier | pretrained_heads.SequenceClassifier",
                     self.model)  # a fine-tuned run's
        tokenizer = cast(pretrained_heads.SubwordTokenizer, self.tokenizer)
        return pretrained_heads.sentence_encoder(model, tokenizer, self.device)


def load_labeller(cls: type[L], run_dir: Path, cfg: RunConfig, device: str | torch.device | None, weights: Path | None,
                  n_out: str, own: OwnModel) -> L:
    """The trained ``cls`` of a run: its labels, its model (:func:`labelling_model`) with the checkpoint in
    ``weights`` (None: the run directory) on ``device``, and its tokenizer."""
    labels = Labels.load(run_dir / LABELS)
    model, tokenizer = labelling_model(cfg, run_dir, n_out, labels, own)
    return cls(run_dir, cfg, tokenizer, labels, model, load_weights(model, weights or run_dir, device))


def load_weights(model: nn.Module, weights: Path, device: str | torch.device | None) -> torch.device:
    """Load the checkpoint in ``weights`` (the run directory or its best/) into ``model`` and move it, in eval
    mode, to ``device`` (None: CUDA when available, else the CPU); returns that device."""
    device = inference_device(device)
    checkpoint.load_model(model, weights / "model.safetensors")
    model.to(device).eval()
    return device
