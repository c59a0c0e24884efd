"""One word2vec training command, run as a child process by bench/embeddings.py and bench/scale.py.

Both sides train from the same text file and write the vectors in the word2vec text format; the parent times the
whole process (the "whole command") and reads the training pass alone from the JSON line this script prints last:
``train_seconds`` is the wall clock around the training call only (vocabulary building, tables and compilation
excluded on both sides).

    python bench/w2v_peer.py seqlab w2v-sgns --set data.source=FILE ... --out DIR
        seqlab's own command line (``seqlab.cli.main``, what the ``seqlab`` console script runs) unchanged, with a
        wall clock around ``Trainer.run`` (seqlab's training call: every epoch, and its checkpoint after each) and
        one around ``make_task`` (the model, its tables and loading numba's cached kernels: reported apart).
    python bench/w2v_peer.py gensim --mode corpus_file|LineSentence --input FILE --out VECTORS.txt \\
            --hs 0|1 --workers 2 --epochs 5 --window 5 --negative 5 --sample 1e-3 --min-count 5 --vector-size 100
        gensim's ``Word2Vec``: ``build_vocab`` then ``train`` (timed), from ``corpus_file=FILE`` (gensim's fastest
        documented mode: each worker reads its own part of the file in Cython, without the GIL) or from
        ``LineSentence(FILE)`` (the iterable mode: a Python thread feeds jobs to the workers).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
OBJECTIVES = ("sgns", "hs")
GENSIM_DOCS = ("gensim's Word2Vec documentation (https://radimrehurek.com/gensim/models/word2vec.html: "
               "\"corpus_file ... can be used instead of sentences to get performance boost\"; workers, epochs)")


# ------------------------------------------------------------------------------------------------------
# the parent's side: the candidates' commands, running them, the quality of their vectors


@dataclass(frozen=True)
class Settings:
    """The hyperparameters both sides train with (gensim's names in ``describe``)."""
    epochs: int = 5
    threads: int = 2
    dim: int = 100
    window: int = 5
    negative: int = 5  # SGNS; HS trains without noise words (negative=0), as the w2v-hs preset
    sample: float = 1e-3
    min_count: int = 5
    lr: float = 0.025
    min_lr: float = 0.0001

    def negatives(self, objective: str) -> int:
        return 0 if objective == "hs" else self.negative

    def describe(self, objective: str) -> str:
        return (f"sg=1, hs={int(objective == 'hs')}, workers={self.threads}, epochs={self.epochs}, "
                f"window={self.window}, negative={self.negatives(objective)}, sample={self.sample:g}, "
                f"min_count={self.min_count}, vector_size={self.dim}, alpha={self.lr:g} -> {self.min_lr:g}")


Command = Callable[[int, Path], tuple[list[str], Path]]  # (seed, scratch folder) -> (argv, vectors file)


def commands(objective: str, corpus: Path, s: Settings) -> dict[str, Command]:
    """The candidates of one objective, by name (naming the configuration): seqlab's CLI, gensim from
    ``corpus_file`` and from ``LineSentence``, all reading ``corpus``."""
    py, conf = sys.executable, s.describe(objective)

    def seqlab(seed: int, scratch: Path) -> tuple[list[str], Path]:
        sets = {"data.source": f'"{corpus}"', "data.min_freq": s.min_count, "model.dim": s.dim,
                "model.window": s.window, "model.negative": s.negatives(objective), "model.sample": s.sample,
                "train.epochs": s.epochs, "train.threads": s.threads, "train.lr": s.lr, "train.min_lr": s.min_lr,
                "train.seed": seed, "train.progress": "false"}
        argv = [py, str(HERE), "seqlab", f"w2v-{objective}"]
        for key, value in sets.items():
            argv += ["--set", f"{key}={value}"]
        return argv + ["--out", str(scratch / "run")], scratch / "run" / "vectors.txt"

    def gensim(mode: str) -> Command:
        def command(seed: int, scratch: Path) -> tuple[list[str], Path]:
            argv = [py, str(HERE), "gensim", "--mode", mode, "--input", str(corpus), "--out", str(scratch / "g.txt"),
                    "--hs", str(int(objective == "hs")), "--negative", str(s.negatives(objective)),
                    "--workers", str(s.threads), "--epochs", str(s.epochs), "--window", str(s.window),
                    "--sample", repr(s.sample), "--min-count", str(s.min_count), "--vector-size", str(s.dim),
                    "--alpha", repr(s.lr), "--min-alpha", repr(s.min_lr), "--seed", str(seed)]
            return argv, scratch / "g.txt"
        return command

    g = f"gensim {version('gensim')}"
    return {f"seqlab {objective}: `seqlab train w2v-{objective}` (numba; {conf})": seqlab,
            f"{g} {objective}: Word2Vec(corpus_file=FILE) ({conf})": gensim("corpus_file"),
            f"{g} {objective}: Word2Vec(LineSentence(FILE)) ({conf})": gensim("LineSentence")}


def is_seqlab(name: str) -> bool:
    return name.startswith("seqlab")


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run(argv: list[str]) -> tuple[float, dict]:
    """Run one command from the repository root: (wall seconds of the whole process, its last stdout line)."""
    errors = tempfile.TemporaryFile()  # a file, not a pipe: a chatty stderr cannot block the child
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=errors)
    seconds = time.perf_counter() - t0
    if out.returncode:
        errors.seek(0)
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{errors.read().decode()[-2000:]}")
    return seconds, json.loads(out.stdout.decode().strip().splitlines()[-1])


def corpus_counts(child: dict, scratch: Path, epochs: int) -> tuple[int, int]:
    """(corpus words, vocabulary size) as the run counted them: gensim's from its JSON line, seqlab's from its
    run directory (metrics.jsonl's raw words per epoch, vocab.json)."""
    if "words" in child:
        return child["words"], child["vocab"]
    rows = [json.loads(line) for line in (scratch / "run" / "metrics.jsonl").read_text().splitlines()]
    raw = sum(r["raw_words"] for r in rows if r.get("split") == "train") // epochs
    return raw, len(json.loads((scratch / "run" / "vocab.json").read_text())["words"])


def scores(vectors: Path, sets: dict[str, Path], analogies: Path | None = None) -> dict[str, float | None]:
    """Spearman's ρ on each similarity set (and analogy accuracy) of a word2vec text file, by seqlab's
    KeyedVectors (equal to gensim's evaluate_word_pairs / evaluate_word_analogies: tests/test_parity_vectors.py)."""
    from seqlab.vectors.keyed import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(vectors)
    out = {name: kv.evaluate_similarity(path)["spearman"] for name, path in sets.items()}
    if analogies is not None:
        out["analogy"] = kv.evaluate_analogies(analogies)["accuracy"]
    return out


def trial(command: Command, seed: int, epochs: int, sets: dict[str, Path], analogies: Path | None = None,
          runner: Callable[[list[str]], tuple[float, dict]] = run) -> dict:
    """One timed run of a candidate in a fresh scratch folder: ``wall`` (the whole command), ``train`` (the
    training pass alone), ``setup`` (seqlab: tables and kernel loading), ``words``, ``vocab`` and the
    quality of its vectors (outside the timing); the folder is removed after."""
    scratch = Path(tempfile.mkdtemp(prefix="w2v-", dir=os.environ.get("TMPDIR")))
    try:
        argv, vectors = command(seed, scratch)
        wall, child = runner(argv)
        words, vocab = corpus_counts(child, scratch, epochs)
        return {"wall": wall, "train": child["train_seconds"], "setup": child.get("setup_seconds"),
                "words": words, "vocab": vocab, "seed": seed, "quality": scores(vectors, sets, analogies),
                **{k: child[k] for k in ("maxrss_mib", "tree_mib") if k in child}}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


SPREAD_P = 1e-3  # a fair run (equal means) fails the quality check with this probability per metric and peer


def spread_limit(ours: list[float], peers: list[float]) -> float | None:
    """How far seqlab's mean over its seeds may lie from the peer's, either way: a sampling bound. Each side's
    score varies from seed to seed; with the seeds' variance pooled over both sides (s², n_o + n_p - 2 degrees of
    freedom) the difference of the two means has standard error s·√(1/n_o + 1/n_p), and under equal means it
    exceeds t·SE, t Student's two-sided quantile at ``SPREAD_P``, in a fraction ``SPREAD_P`` of runs (normal seed
    noise). None where the seeds give no variance to pool (one seed in all)."""
    from scipy.stats import t as student_t

    df = len(ours) + len(peers) - 2
    if not ours or not peers or df < 1:
        return None
    ss = sum((x - statistics.mean(ours)) ** 2 for x in ours) + sum((x - statistics.mean(peers)) ** 2 for x in peers)
    se = (ss / df * (1 / len(ours) + 1 / len(peers))) ** 0.5
    return float(student_t.ppf(1 - SPREAD_P / 2, df)) * se


def within_spread(ours: list[float], peers: list[float]) -> bool | None:
    """Is seqlab's mean over its seeds within :func:`spread_limit` of the peer's mean, above or below (two-sided:
    far better is as suspect as far worse)? None where it cannot be judged (one seed in all)."""
    limit = spread_limit(ours, peers)
    return None if limit is None else abs(statistics.mean(ours) - statistics.mean(peers)) <= limit


def quality_verdict(values: dict[str, list[float]], ours: str, peers: list[str]) -> bool | None:
    """One metric: seqlab's seeds (``values[ours]``) against every peer candidate's (:func:`within_spread`):
    False where any lies outside, None where none could be judged, else True."""
    found = [within_spread(values[ours], values[p]) for p in peers]
    return False if False in found else (None if all(f is None for f in found) else True)


def require_quality(verdicts: dict[str, bool | None], what: str) -> None:
    """Fail the bench (no section written) where seqlab's quality lies outside the peer's sampling spread."""
    from bench.common import require

    bad = [m for m, ok in verdicts.items() if ok is False]
    require(not bad, f"{what}: seqlab's mean score is not within gensim's sampling spread (spread_limit, two-sided, "
                     f"p = {SPREAD_P:g}) on {', '.join(bad)}")


def mean_spread(xs: list[float]) -> str:
    """``mean ± population standard deviation`` over the seeds (the mean alone for one seed)."""
    if not xs:
        return "–"
    return f"{statistics.mean(xs):.3f}" + (f" ± {statistics.pstdev(xs):.3f}" if len(xs) > 1 else "")


def run_seqlab(argv: list[str]) -> dict:
    """``seqlab train ARGV`` through the CLI's ``main``, timing ``Trainer.run`` and ``make_task`` from outside."""
    sys.path.insert(0, str(ROOT))
    from seqlab import cli
    from seqlab.training import trainer
    from seqlab.tasks import word_vectors

    timed = {"train_seconds": 0.0, "setup_seconds": 0.0}

    def clocked(fn, key):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timed[key] += time.perf_counter() - t0
        return wrapper

    trainer.Trainer.run = clocked(trainer.Trainer.run, "train_seconds")
    word_vectors.make_task = clocked(word_vectors.make_task, "setup_seconds")
    code = cli.main(["train", *argv])
    if code:
        raise SystemExit(code)
    return timed


def run_gensim(args: argparse.Namespace) -> dict:
    """build_vocab, then train (timed), from corpus_file or LineSentence; the vectors saved as text."""
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    model = Word2Vec(vector_size=args.vector_size, window=args.window, min_count=args.min_count, sample=args.sample,
                     sg=1, hs=args.hs, negative=args.negative, alpha=args.alpha, min_alpha=args.min_alpha,
                     workers=args.workers, epochs=args.epochs, seed=args.seed)
    if args.mode == "corpus_file":
        model.build_vocab(corpus_file=args.input)
        source = {"corpus_file": args.input}
    else:
        model.build_vocab(LineSentence(args.input))
        source = {"corpus_iterable": LineSentence(args.input)}
    t0 = time.perf_counter()
    effective, raw = model.train(**source, total_examples=model.corpus_count, total_words=model.corpus_total_words,
                                 epochs=args.epochs)
    seconds = time.perf_counter() - t0
    model.wv.save_word2vec_format(args.out, binary=False)
    return {"train_seconds": seconds, "effective_words": effective, "raw_words": raw,
            "words": model.corpus_total_words, "vocab": len(model.wv)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "seqlab":
        print(json.dumps(run_seqlab(sys.argv[2:])))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("side", choices=["gensim"])
    p.add_argument("--mode", choices=["corpus_file", "LineSentence"], required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True, help="the vectors, word2vec text format")
    p.add_argument("--hs", type=int, default=0)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--vector-size", type=int, default=100)
    p.add_argument("--alpha", type=float, default=0.025)
    p.add_argument("--min-alpha", type=float, default=0.0001)
    p.add_argument("--seed", type=int, default=1)
    print(json.dumps(run_gensim(p.parse_args())))


if __name__ == "__main__":
    main()
