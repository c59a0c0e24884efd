"""Word embeddings (notes: Word embeddings): word2vec skip-gram (``model.arch`` sgns | hs) or GloVe trained on a text.

Text: the training text (``data.source``, or ``data.train``; cut by ``data.split``, of which only the train
part is used) is read line by line; each line is a sentence (no window crosses a line end, as in gensim's
LineSentence and GloVe's cooccur), split into words by seqlab's word tokenizer (``data.tokenizer = "word"``,
``data.lowercase``). The vocabulary keeps the words seen ``data.min_freq`` times (gensim's min_count), at most
``data.max_size`` of them when > 0.

Training runs through the one Trainer (:mod:`seqlab.training.trainer`, a kernel task): ``train.epochs`` whole passes,
each a number of steps of the model's kernel (:class:`~seqlab.models.word2vec.SkipGramSGD`,
:class:`~seqlab.models.glove.GloVeAdaGrad`); the learning rate falls linearly from ``train.lr`` to
``train.min_lr`` over the run (word2vec) or stays at ``train.lr`` (GloVe's AdaGrad). ``train.threads`` sets the
Hogwild threads (0 = every core), ``train.batch_size`` the pairs per batch on the PyTorch engine, ``train.seed``
the initial weights and random streams, ``train.max_minutes`` a time budget, ``train.save_every`` the steps
between checkpoints (there is one after every epoch too). Ctrl-C saves at the next step and ``--resume``
continues from there (with one thread, bit for bit). The run directory holds ``vocab.json``, ``metrics.jsonl``
(a loss row per epoch), the checkpoint and, when training ends, ``vectors.txt`` in the word2vec text format.

On a CPU (``train.device = "cpu"``, or ``"auto"`` on a machine without a CUDA device) with the numba engine,
training and loading import no torch: the weights are numpy arrays (:class:`seqlab.models.arrays.ArrayModel`)
and the checkpoints are written and read as such (``tests/test_no_torch.py`` runs the commands where torch
cannot be imported).

Evaluation (``seqlab eval``): analogy accuracy on ``data.analogies`` and Spearman's ρ on each set of
``data.similarity`` (comma-separated), a path or a downloadable dataset name each; by default the datasets
``analogy-google``, ``wordsim353`` and ``simlex999`` when the download registry has them.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from seqlab.training import checkpoint
from seqlab.base.config import RunConfig
from seqlab.data import download
from seqlab.data.corpus import MAX_WORDS_IN_CHUNK, Corpus
from seqlab.data.sources import line_parts, stream_text
from seqlab.data.workers import worker_count
from seqlab.base.errors import SeqlabError, spelled
from seqlab.base.io import read_json, write_text_atomic
from seqlab.models.arrays import ArrayModel
from seqlab.models.glove import GloVeAdaGrad, GloVeConfig, glove_arrays_model
from seqlab.models.word2vec import SkipGramSGD, Word2VecConfig, skip_gram_arrays_model
from seqlab.tasks.results import EmbeddingMap
from seqlab.text.tokenizers import split_words
from seqlab.training.devices import Dist, cuda_present, resolve_device
from seqlab.training.trainer import Trainer
from seqlab.vectors.keyed import KeyedVectors, tsne_map
from seqlab.tasks.trained import Trained

if TYPE_CHECKING:  # annotations only: the numba engine on a CPU trains and loads without torch
    import torch

    from seqlab.models.glove import GloVe
    from seqlab.models.word2vec import SkipGram

MODEL_CONFIGS = {"sgns": Word2VecConfig, "hs": Word2VecConfig, "glove": GloVeConfig}
# The train.* keys used (batch_size by the PyTorch engine); embeddings train whole epochs, not max_steps.
_WORD2VEC_KEYS = ("epochs", "lr", "min_lr", "seed", "threads", "device", "max_minutes", "save_every", "keep_last",
                  "batch_size", "report_to", "progress")
TRAIN_KEYS = {"sgns": _WORD2VEC_KEYS, "hs": _WORD2VEC_KEYS,  # GloVe's AdaGrad keeps lr constant: no min_lr
              "glove": tuple(k for k in _WORD2VEC_KEYS if k != "min_lr")}
LENGTH_KEY = "epochs"  # a run's length (the task protocol's hook): whole passes over the corpus
PART_CHARS = 1 << 22  # the least text (characters) a process of the vocabulary pass takes: a fork costs ~10 ms
DATA_DIR = "corpus"  # in the run directory while training: the corpus ids on disk, GloVe's count shards
ANALOGY_SET = "analogy-google"  # default evaluation sets (download registry names)
SIMILARITY_SETS = ("wordsim353", "simlex999")


# ------------------------------------------------------------------------------------------------------
# data


def sentences_of(text: str, lowercase: bool = False) -> list[list[str]]:
    """One sentence per non-empty line, split by seqlab's word tokenizer (in memory: the reference of
    :func:`stream_sentences`)."""
    return [words for words in (split_words(line, lowercase) for line in text.splitlines()) if words]


def stream_sentences(pieces: Iterable[tuple[str, bool]], lowercase: bool = False) -> Iterator[list[str]]:
    """The sentences of :func:`sentences_of` from a text's line pieces (:func:`~seqlab.data.sources.line_pieces`),
    each cut into pieces of at most MAX_WORDS_IN_CHUNK words as :class:`Corpus` cuts them, so a long line never
    stands whole in memory."""
    words: list[str] = []
    for piece, ends in pieces:
        words += split_words(piece, lowercase)
        while len(words) > MAX_WORDS_IN_CHUNK or (len(words) == MAX_WORDS_IN_CHUNK and not ends):
            yield words[:MAX_WORDS_IN_CHUNK]
            words = words[MAX_WORDS_IN_CHUNK:]
        if ends and words:
            yield words
            words = []


def build_corpus(cfg: RunConfig, directory: Path | None = None) -> Corpus:
    """The training text's corpus (the train part of data.train or data.source), read in streaming passes; with
    ``directory``, its ids are written there and memory-mapped (:meth:`Corpus.stream`). A text of PART_CHARS
    characters or more is read in parts, one process per part and per training thread (``train.threads``, 0:
    every core): :meth:`Corpus.stream_parts`, the same corpus to the bit."""
    d = cfg.data
    if d.tokenizer != "word":
        raise SeqlabError(f'embedding tasks split text into words: set data.tokenizer = "word" (got {d.tokenizer!r})')
    text = stream_text(d.train or d.source, d.split)
    parts = max(1, min(cfg.train.threads or worker_count(), text.chars // PART_CHARS))

    def sentences(run: Callable[[], Iterator[tuple[str, bool]]]) -> Callable[[], Iterator[list[str]]]:
        return lambda: stream_sentences(run(), d.lowercase)

    return Corpus.stream_parts([sentences(run) for run in line_parts(text, parts)], min_freq=d.min_freq,
                               max_size=d.max_size, directory=directory)


def _epochs(cfg: RunConfig) -> int:
    epochs = cfg.train.epochs
    if epochs < 1 or epochs != int(epochs):
        raise SeqlabError(f"train.epochs must be a whole number >= 1 for embeddings, got {epochs:g}; "
                          "e.g. --set train.epochs=5")
    return int(epochs)


def _engine(cfg: RunConfig) -> tuple[str, torch.device | None]:
    """(the engine, the torch device or None for the CPU): ``model.engine``, "auto" being torch on CUDA and numba
    on a CPU. A run that stays on the CPU (``train.device = "cpu"``, or ``"auto"`` where
    :func:`~seqlab.training.devices.cuda_present` finds no CUDA device) is decided without importing torch."""
    name = cfg.train.device
    device = None if name == "cpu" or (name == "auto" and not cuda_present()) else resolve_device(name)
    on_cuda = device is not None and device.type == "cuda"
    engine = cfg.model.engine
    if engine == "auto":
        return ("torch" if on_cuda else "numba"), device
    if engine == "numba" and on_cuda:
        raise SeqlabError("model.engine=numba runs on the CPU; set train.device=cpu or model.engine=torch")
    return engine, device


def torch_free(cfg: RunConfig, *, loading: bool = False) -> bool:
    """Whether training this run (or, with ``loading``, reading its vectors: always) imports no torch: the numba
    engine on the CPU (:func:`_engine`; an error it raises is raised again where training starts)."""
    if loading:
        return True
    try:
        return _engine(cfg)[0] == "numba"
    except SeqlabError:
        return False


def make_task(cfg: RunConfig, corpus: Corpus, engine: str, device: torch.device | None,
              scratch: Path | None = None) -> SkipGramSGD | GloVeAdaGrad:
    """The model with its tables, as the Trainer steps it (GloVe's count shards go to ``scratch``)."""
    t = cfg.train
    options: dict[str, Any] = dict(seed=t.seed, engine=engine, threads=t.threads, device=device,
                                   batch_size=t.batch_size)
    if cfg.arch == "glove":
        return GloVeAdaGrad(cfg.model, corpus, max_memory_mb=cfg.data.max_memory_mb, scratch=scratch, **options)
    return SkipGramSGD(cfg.model, corpus, hs=cfg.arch == "hs", **options)


def build_model(cfg: RunConfig, vocab_size: int) -> SkipGram | GloVe:
    """The PyTorch model of a run (weights not loaded)."""
    from seqlab.models.glove import GloVe
    from seqlab.models.word2vec import SkipGram

    model_cfg = replace(cfg.model, vocab_size=vocab_size)
    return GloVe(model_cfg) if cfg.arch == "glove" else SkipGram(model_cfg, hs=cfg.arch == "hs")


def build_arrays(cfg: RunConfig, vocab_size: int) -> ArrayModel:
    """The model of a run in numpy arrays (zero weights, the names of :func:`build_model`'s), for :func:`load`:
    reading a run's vectors needs no torch."""
    model_cfg = replace(cfg.model, vocab_size=vocab_size)
    return glove_arrays_model(model_cfg) if cfg.arch == "glove" else skip_gram_arrays_model(model_cfg, cfg.arch == "hs")


def _read_vocab(run_dir: Path) -> tuple[list[str], np.ndarray]:
    doc = read_json(run_dir / "vocab.json", "vocabulary", "train the run again with `seqlab train`", expect=dict)
    return doc["words"], np.asarray(doc["counts"], dtype=np.int64)


# ------------------------------------------------------------------------------------------------------
# training


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    if dist.world > 1:
        raise SeqlabError("embedding tasks train in one process with Hogwild threads; run without torchrun "
                          "and set train.threads instead")
    run_dir = Path(run_dir)
    _epochs(cfg)
    engine, device = _engine(cfg)
    scratch = run_dir / DATA_DIR  # the corpus ids (memory-mapped) and GloVe's count shards, removed at the end
    try:
        corpus = build_corpus(cfg, scratch)
        vocab = {"words": corpus.words, "counts": corpus.counts.tolist()}
        if resume and (run_dir / "vocab.json").exists():
            words, counts = _read_vocab(run_dir)
            if words != corpus.words or counts.tolist() != vocab["counts"]:
                raise SeqlabError(f"cannot resume {run_dir}: the training text changed since the run started (its "
                                  f"vocabulary differs); start a new run with {spelled('force')}")
        else:
            write_text_atomic(run_dir / "vocab.json", json.dumps(vocab) + "\n")
        log(f"{cfg.arch}: {len(corpus.words):,} words in the vocabulary, {corpus.raw_words:,} words in "
            f"{len(corpus.sentence_starts) - 1:,} sentences; engine {engine}")
        task = make_task(cfg, corpus, engine, device, scratch)
        # KernelTask declares `model: nn.Module` settable (invariant); task.model is a SkipGram or a GloVe:
        # the Protocol should declare it a read-only property (seqlab/training/trainer.py)
        trainer = Trainer(task, cfg.train, run_dir, dist=dist,  # type: ignore[arg-type]
                          extra_state={"engine": engine}, log=log)
        state = trainer.run(resume)
        if state["interrupted"]:
            return state
        if trainer.step < trainer.total_steps:
            log(f"train.max_minutes reached at step {trainer.step} of {trainer.total_steps}; the vectors are those "
                f"of this step; continue with {spelled('resume')}")
        _write_vectors_and_plot(run_dir, corpus, task)
        return {**state, "plotted": True}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_vectors_and_plot(run_dir: Path, corpus: Corpus, task: SkipGramSGD | GloVeAdaGrad) -> None:
    """``vectors.txt`` (word2vec text) written here while a forked worker draws ``plots/loss.png`` (what
    :func:`seqlab.api.train_run` would draw after; the two are single-threaded, so the second core would idle:
    at 100 MB of text 0.8 s and 0.5-0.9 s)."""
    from seqlab.base.forked import Forked
    from seqlab.views.viz import plot_loss

    plot = Forked(plot_loss, run_dir / "metrics.jsonl", run_dir / "plots" / "loss.png", what="drawing the loss curve")
    try:
        KeyedVectors(corpus.words, task.vectors(), corpus.counts).save_word2vec_format(run_dir / "vectors.txt")
        plot.result()
    finally:
        plot.close()


# ------------------------------------------------------------------------------------------------------
# evaluation sets


def _resolve_set(value: str) -> Path:
    """A downloadable dataset name (its main file, downloaded when missing) or a file path."""
    if value in download.DATASETS:
        download.get(value)
        return download.cache_dir() / download.DATASETS[value].main
    path = Path(value).expanduser()
    if not path.is_file():
        raise SeqlabError(f"evaluation set {value!r} not found: not a dataset name and no such file; give a path, "
                          "e.g. --set data.analogies=questions-words.txt or --set data.similarity=wordsim353.tsv")
    return path


def _set_name(value: str) -> str:
    """The metric prefix of a similarity set: its dataset name, or its file name without suffix."""
    name = value if value in download.DATASETS else Path(value).stem
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_") or "similarity"


def evaluation_sets(cfg: RunConfig, analogies: str | None = None,
                    similarity: str | list[str] | None = None) -> tuple[Path | None, list[tuple[str, Path]]]:
    """(analogy file or None, [(name, similarity file)]) from the arguments, else data.analogies /
    data.similarity, else the defaults the download registry offers."""
    analogies = analogies or getattr(cfg.data, "analogies", "") or ""
    similarity = similarity or getattr(cfg.data, "similarity", "") or ""
    if isinstance(similarity, str):
        similarity = [s.strip() for s in similarity.split(",") if s.strip()]
    analogy_path = _resolve_set(analogies) if analogies else (
        _resolve_set(ANALOGY_SET) if ANALOGY_SET in download.DATASETS else None)
    if similarity:
        sets = [(_set_name(s), _resolve_set(s)) for s in similarity]
    else:
        sets = [(name, _resolve_set(name)) for name in SIMILARITY_SETS if name in download.DATASETS]
    return analogy_path, sets


# ------------------------------------------------------------------------------------------------------
# a trained run


class Embeddings(Trained):
    """The word vectors of a trained run, with gensim KeyedVectors' verbs: ``most_similar``, ``similarity``,
    ``analogy``; ``neighbors`` (``seqlab neighbors``), ``map`` (2-D coordinates that plot), ``evaluate``;
    ``vectors`` is the :class:`~seqlab.vectors.keyed.KeyedVectors`."""

    def __init__(self, run_dir: Path, cfg: RunConfig, vectors: KeyedVectors):
        self.run_dir, self.config, self.vectors = run_dir, cfg, vectors

    def most_similar(self, positive: str | Iterable[str] | None = None, negative: str | Iterable[str] | None = None,
                     topn: int = 10) -> list[tuple[str, float]]:
        """gensim's ``most_similar``: the ``topn`` words (not among the query words) closest by cosine to the mean
        of the ``positive`` words' unit vectors minus the ``negative`` ones', best first, as (word, cosine):
        ``most_similar("king")``, ``most_similar(positive=["king", "woman"], negative=["man"])``."""
        _check_topn(topn)
        return self.vectors.most_similar(positive or (), negative or (), topn=topn)

    def similarity(self, w1: str, w2: str) -> float:
        """Cosine similarity of two words' vectors (gensim's ``similarity``)."""
        return self.vectors.similarity(w1, w2)

    def neighbors(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k words closest to ``word`` by cosine, best first."""
        return self.vectors.most_similar(word, topn=k)

    def analogy(self, a: str, b: str, c: str, topn: int | None = None, method: str = "3cosadd", *,
                k: int | None = None) -> list[tuple[str, float]]:
        """``a`` is to ``b`` as ``c`` is to ?: the ``topn`` (default 10) best answers, as (word, score) (3CosAdd:
        ``most_similar(positive=[b, c], negative=[a])``; or ``method="3cosmul"``). ``k`` is the earlier name of
        ``topn``, still taken."""
        if k is not None and topn is not None:
            raise SeqlabError(f"analogy got topn={topn} and k={k}, two names for one number; give topn only")
        topn = k if k is not None else 10 if topn is None else topn
        _check_topn(topn)
        return self.vectors.analogy(a, b, c, topn=topn, method=method)

    def map(self, n_words: int = 200, method: str = "tsne", seed: int = 0) -> EmbeddingMap:
        """The ``n_words`` most frequent words in 2-D: an :class:`~seqlab.tasks.results.EmbeddingMap` (``words,
        coords``, (words, 2)) that plots. ``method``: "tsne" (:func:`seqlab.vectors.keyed.tsne_map`, cosine geometry,
        random state ``seed``) or "pca" (the first two principal axes of the unit vectors)."""
        if method == "tsne":
            return EmbeddingMap(*tsne_map(self.vectors, n_words, seed=seed))
        if method != "pca":
            raise SeqlabError(f"unknown map method {method!r}; use tsne or pca")
        kv = self.vectors
        n = min(n_words, len(kv))
        if n < 3:
            raise SeqlabError(f"a map needs at least 3 words, the run has {len(kv)}")
        x = kv.vectors[:n] / np.maximum(kv.norms[:n, None], 1e-12)  # (N, D) unit rows
        x = x - x.mean(axis=0)
        _, _, vt = np.linalg.svd(x.astype(np.float64), full_matrices=False)  # principal axes (D', D)
        return EmbeddingMap(list(kv.words[:n]), x @ vt[:2].T)  # (N, 2)

    def evaluate(self, split: str = "test", analogies: str | None = None,
                 similarity: str | list[str] | None = None, *, data: object = None) -> dict:
        """``analogy_accuracy``, ``wordsim353_spearman``, ``simlex999_spearman`` (None when the set is not
        available, or when none of its items has every word in the vocabulary), ``oov_ratio`` (items skipped for
        an unknown word over all items of every set) and per set ``*_oov_ratio``; ``analogy_sections`` maps each
        section to its accuracy (None likewise for a section with nothing answerable). ``analogies`` / ``similarity``
        (paths or dataset names) replace the run's data.analogies / data.similarity. The sets are fixed, so
        ``split`` (valid | test) does not change the result. Word vectors have no in-memory form of these sets:
        ``data`` is refused, naming what to use instead."""
        if data is not None:
            raise SeqlabError("word vectors are evaluated on analogy questions and similarity pairs from files: "
                              "evaluate(analogies=PATH, similarity=PATH); ask analogy(a, b, c) or similarity(w1, w2) "
                              "for single items")
        if split not in ("valid", "test"):
            raise SeqlabError(f"unknown split {split!r}; valid splits: valid, test")
        analogy_path, sets = evaluation_sets(self.config, analogies, similarity)
        if analogy_path is None and not sets:
            raise SeqlabError("no evaluation sets: this seqlab's download registry has none of analogy-google, "
                              "wordsim353, simlex999; point at files, e.g. --set data.analogies=questions-words.txt "
                              "--set data.similarity=wordsim353.tsv,simlex999.txt (in config.toml for a trained run)")
        out: dict = {"analogy_accuracy": None, "wordsim353_spearman": None, "simlex999_spearman": None,
                     "oov_ratio": None}
        skipped = items = 0
        if analogy_path is not None:
            r = self.vectors.evaluate_analogies(analogy_path)
            out["analogy_accuracy"], out["analogy_oov_ratio"] = r["accuracy"], r["oov_ratio"]
            out["analogy_sections"] = {s["section"]: s["accuracy"] for s in r["sections"]}
            skipped, items = skipped + r["oov"], items + r["questions"]
        for name, path in sets:
            r = self.vectors.evaluate_similarity(path)
            out[f"{name}_spearman"], out[f"{name}_oov_ratio"] = r["spearman"], r["oov_ratio"]
            skipped, items = skipped + r["oov"], items + r["pairs"] + r["oov"]
        out["oov_ratio"] = skipped / items if items else None
        return out


def _check_topn(topn: int) -> None:
    if isinstance(topn, bool) or not isinstance(topn, (int, np.integer)) or topn < 1:
        raise SeqlabError(f"topn must be a whole number >= 1, got {topn!r}")


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> Embeddings:
    """A trained run's vectors (read from its checkpoint; ``device`` is accepted for the common API)."""
    run_dir = Path(run_dir)
    words, counts = _read_vocab(run_dir)
    model = build_arrays(cfg, len(words))
    checkpoint.load_model(model, (weights or run_dir) / "model.safetensors")
    m: Any = model
    vectors = m.word.weight + m.context.weight if cfg.arch == "glove" else m.input.weight  # (words, dim)
    return Embeddings(run_dir, cfg, KeyedVectors(words, vectors, counts))
