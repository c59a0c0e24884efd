"""Word embeddings (seed 004): word2vec skip-gram (``model.arch`` sgns | hs) or GloVe trained on a text.

Text: the training text (``data.source``, or ``data.train``; cut by ``data.split``, of which only the train
part is used) is read line by line; each line is a sentence (no window crosses a line end, as in gensim's
LineSentence and GloVe's cooccur), split into words by seqlab's word tokenizer (``data.tokenizer = "word"``,
``data.lowercase``). The vocabulary keeps the words seen ``data.min_freq`` times (gensim's min_count), at most
``data.max_size`` of them when > 0.

Training runs ``train.epochs`` whole passes (``train.max_steps`` is not used); the learning rate falls from
``train.lr`` to ``train.min_lr`` (word2vec) or stays at ``train.lr`` (GloVe's AdaGrad). ``train.threads`` sets
the Hogwild threads (0 = every core), ``train.batch_size`` the pairs per batch on the PyTorch engine,
``train.seed`` the initial weights and random streams. A checkpoint is written after every epoch, and
``--resume`` continues from the last one (with one thread, bit for bit). The run directory holds
``vocab.json``, ``metrics.jsonl`` (a loss row per epoch), the checkpoint and, when training ends,
``vectors.txt`` in the word2vec text format.

Evaluation (``seqlab eval``): analogy accuracy on ``data.analogies`` and Spearman's ρ on each set of
``data.similarity`` (comma-separated), a path or a downloadable dataset name each; by default the datasets
``analogy-google``, ``wordsim353`` and ``simlex999`` when the download registry has them.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from seqlab import checkpoint
from seqlab.config import RunConfig
from seqlab.data import download
from seqlab.data.sources import read_text, split_text
from seqlab.errors import SeqlabError
from seqlab.io import read_json, versions, write_text_atomic
from seqlab.models.glove import GloVe, GloVeConfig, GloVeTrainer
from seqlab.models.word2vec import Corpus, SkipGram, Word2VecConfig, Word2VecTrainer
from seqlab.text.tokenizers import split_words
from seqlab.trainer import Dist, MetricsLog, SigintFlag, resolve_device
from seqlab.vectors import KeyedVectors

MODEL_CONFIGS = {"sgns": Word2VecConfig, "hs": Word2VecConfig, "glove": GloVeConfig}
ANALOGY_SET = "analogy-google"  # default evaluation sets (download registry names)
SIMILARITY_SETS = ("wordsim353", "simlex999")


# ------------------------------------------------------------------------------------------------------
# data


def sentences_of(text: str, lowercase: bool = False) -> list[list[str]]:
    """One sentence per non-empty line, split by seqlab's word tokenizer."""
    return [words for words in (split_words(line, lowercase) for line in text.splitlines()) if words]


def build_corpus(cfg: RunConfig) -> Corpus:
    d = cfg.data
    if d.tokenizer != "word":
        raise SeqlabError(f'embedding tasks split text into words: set data.tokenizer = "word" (got {d.tokenizer!r})')
    text = split_text(read_text(d.train or d.source), d.split)[0]
    return Corpus.build(sentences_of(text, d.lowercase), min_freq=d.min_freq, max_size=d.max_size)


def _epochs(cfg: RunConfig) -> int:
    epochs = cfg.train.epochs
    if epochs < 1 or epochs != int(epochs):
        raise SeqlabError(f"train.epochs must be a whole number >= 1 for embeddings, got {epochs:g}; "
                          "e.g. --set train.epochs=5")
    return int(epochs)


def _engine(cfg: RunConfig, device: torch.device) -> str:
    engine = cfg.model.engine
    if engine == "auto":
        return "torch" if device.type == "cuda" else "numba"
    if engine == "numba" and device.type == "cuda":
        raise SeqlabError("model.engine=numba runs on the CPU; set train.device=cpu or model.engine=torch")
    return engine


def make_trainer(cfg: RunConfig, corpus: Corpus) -> Word2VecTrainer | GloVeTrainer:
    if cfg.arch == "glove":
        return GloVeTrainer(cfg.model, corpus, seed=cfg.train.seed)
    return Word2VecTrainer(cfg.model, corpus.counts, hs=cfg.arch == "hs", seed=cfg.train.seed)


def build_model(cfg: RunConfig, vocab_size: int) -> SkipGram | GloVe:
    """The model of a run (weights not loaded), for :func:`load`."""
    model_cfg = replace(cfg.model, vocab_size=vocab_size)
    return GloVe(model_cfg) if cfg.arch == "glove" else SkipGram(model_cfg, hs=cfg.arch == "hs")


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
    epochs = _epochs(cfg)
    device = resolve_device(cfg.train.device)
    engine = _engine(cfg, device)
    corpus = build_corpus(cfg)
    vocab = {"words": corpus.words, "counts": corpus.counts.tolist()}
    if resume and (run_dir / "vocab.json").exists():
        words, counts = _read_vocab(run_dir)
        if words != corpus.words or counts.tolist() != vocab["counts"]:
            raise SeqlabError(f"cannot resume {run_dir}: the training text changed since the run started (its "
                              "vocabulary differs); start a new run with --force")
    else:
        write_text_atomic(run_dir / "vocab.json", json.dumps(vocab) + "\n")
    log(f"{cfg.arch}: {len(corpus.words):,} words in the vocabulary, {corpus.raw_words:,} words in "
        f"{len(corpus.sentence_starts) - 1:,} sentences; engine {engine}")
    trainer = make_trainer(cfg, corpus)
    start = 0
    if resume and checkpoint.exists(run_dir):
        state = checkpoint.load_state(run_dir)
        checkpoint.load_model(trainer.model, run_dir / "model.safetensors")
        trainer.restore_trainer_tensors(checkpoint.load_tensors(run_dir / "trainer.safetensors"))
        start = int(state["step"])
        log(f"resumed after epoch {start}")
    metrics = MetricsLog(run_dir / "metrics.jsonl")
    metrics.truncate_after(start)
    if start >= epochs:
        log(f"already trained for {start} epochs; nothing to do")
        _write_vectors(run_dir, corpus, trainer)
        return {"step": start, "interrupted": False}
    state = _fit(cfg, run_dir, corpus, trainer, engine, device, start, epochs, metrics, log)
    if not state["interrupted"]:
        _write_vectors(run_dir, corpus, trainer)
    return state


def _fit(cfg, run_dir, corpus, trainer, engine, device, start, epochs, metrics, log) -> dict:
    from tqdm import tqdm

    t = cfg.train
    progress = tqdm(total=corpus.raw_words * (epochs - start), unit="word", unit_scale=True, file=sys.stderr,
                    disable=not t.progress, dynamic_ncols=True, desc=cfg.arch)
    started, epoch, interrupted = time.perf_counter(), start, False
    with SigintFlag() as interrupt:
        for epoch in range(start, epochs):
            stats = trainer.train_epoch(corpus, epoch, epochs, t.lr, t.min_lr, engine=engine, threads=t.threads,
                                        device=device, batch_size=t.batch_size, on_progress=progress.update,
                                        should_stop=lambda: interrupt.flag)
            if stats is None:
                interrupted = True
                break
            if not math.isfinite(stats.loss):
                progress.close()
                raise SeqlabError(f"non-finite loss ({stats.loss}) in epoch {epoch + 1}; stopped, the last good "
                                  f"checkpoint (epoch {epoch}) is kept; lower train.lr and train again")
            rate, raw_rate = stats.effective_words / stats.seconds, stats.raw_words / stats.seconds
            metrics.write({"step": epoch + 1, "split": "train", "loss": stats.loss, "lr": stats.lr,
                           "words_per_s": rate, "raw_words_per_s": raw_rate, "effective_words": stats.effective_words,
                           "terms": stats.terms, "seconds": stats.seconds})
            progress.set_postfix_str(f"loss {stats.loss:.4f}  {rate:,.0f} words/s")
            line = (f"epoch {epoch + 1}/{epochs}: loss {stats.loss:.4f}, {rate:,.0f} effective words/s "
                    f"({raw_rate:,.0f} raw)")
            if t.progress:
                progress.write(line, file=sys.stderr)
            else:
                log(line)
            state = {"step": epoch + 1, "loss": stats.loss, "engine": engine, "versions": versions("torch")}
            checkpoint.save(run_dir, trainer.model, trainer.trainer_tensors(), state)
            if t.max_minutes and time.perf_counter() - started > 60 * t.max_minutes:
                log(f"train.max_minutes reached after epoch {epoch + 1}; continue with --resume")
                break
    progress.close()
    done = checkpoint.load_state(run_dir)["step"] if checkpoint.exists(run_dir) else start
    if interrupted:  # the weights in memory are mid-epoch: go back to the last checkpoint
        log(f"interrupted in epoch {epoch + 1}; the checkpoint after epoch {done} is kept")
    return {"step": done, "interrupted": interrupted}


def _write_vectors(run_dir: Path, corpus: Corpus, trainer) -> None:
    KeyedVectors(corpus.words, trainer.vectors(), corpus.counts).save_word2vec_format(run_dir / "vectors.txt")


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


class Embeddings:
    """The word vectors of a trained run: ``neighbors``, ``analogy``, ``evaluate``; ``vectors`` is the
    :class:`~seqlab.vectors.KeyedVectors`."""

    def __init__(self, run_dir: Path, cfg: RunConfig, vectors: KeyedVectors):
        self.run_dir, self.config, self.vectors = run_dir, cfg, vectors

    def neighbors(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The k words closest to ``word`` by cosine, best first."""
        return self.vectors.most_similar(word, topn=k)

    def analogy(self, a: str, b: str, c: str, k: int = 10, method: str = "3cosadd") -> list[tuple[str, float]]:
        """``a`` is to ``b`` as ``c`` is to ?, best first."""
        return self.vectors.analogy(a, b, c, topn=k, method=method)

    def evaluate(self, split: str = "test", analogies: str | None = None,
                 similarity: str | list[str] | None = None) -> dict:
        """``analogy_accuracy``, ``wordsim353_spearman``, ``simlex999_spearman`` (None when the set is not
        available), ``oov_ratio`` (items skipped for an unknown word over all items of every set) and per set
        ``*_oov_ratio``; ``analogy_sections`` maps each section to its accuracy. ``analogies`` / ``similarity``
        (paths or dataset names) replace the run's data.analogies / data.similarity. The sets are fixed, so
        ``split`` (valid | test) does not change the result."""
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


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None) -> Embeddings:
    """A trained run's vectors (read from its checkpoint; ``device`` is accepted for the common API)."""
    run_dir = Path(run_dir)
    words, counts = _read_vocab(run_dir)
    model = build_model(cfg, len(words))
    checkpoint.load_model(model, run_dir / "model.safetensors")
    with torch.no_grad():
        vectors = model.vectors() if isinstance(model, GloVe) else model.input.weight
        vectors = vectors.detach().cpu().numpy()
    return Embeddings(run_dir, cfg, KeyedVectors(words, vectors, counts))
