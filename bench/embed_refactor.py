"""Does a change to the embedding training path cost speed? Two source trees of seqlab, the same run, interleaved.

Issue #12 moved word2vec's training loop into the one Trainer; this benchmark checks it costs nothing: for SGNS
and HS, each round trains skip-gram on shakespeare_complete.txt (5 epochs, dim 100, 2 threads, as
bench/embeddings.py) once with each tree, in a fresh process (``cwd`` = the tree, so its own ``seqlab`` is
imported), in a shuffled order. Each process builds the corpus untimed, then times the training path that
`seqlab train` runs, checkpoints after every epoch included:

- a tree with the Trainer's kernel tasks (``SkipGramSGD``): ``Trainer(task, ...).fit()``;
- an earlier tree (``Word2VecTrainer``): its epoch loop with a checkpoint after each epoch, as its
  ``tasks/embed.py`` ran it.

The figure is effective words (kept after subsampling) per CPU-second of the process during that path, and
per wall-second. The ratio is new / old within a round; the median over rounds is reported.

    python bench/embed_refactor.py --old /work/wt/base --new . --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import cpu_line, write_section  # noqa: E402

DRIVER = r'''
import json, sys, tempfile, time
from pathlib import Path
import numpy as np

corpus_path, objective, epochs, threads, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
from seqlab.training import checkpoint
from seqlab.tasks.embed import sentences_of
hs = objective == "hs"
text = Path(corpus_path).read_text(encoding="utf-8")
try:
    from seqlab.data.corpus import Corpus
except ImportError:
    from seqlab.models.word2vec import Corpus
corpus = Corpus.build(sentences_of(text), min_freq=5)
with tempfile.TemporaryDirectory() as run_dir:
    try:
        from seqlab.models.word2vec import SkipGramSGD, Word2VecConfig
    except ImportError:
        SkipGramSGD = None
        from seqlab.models.word2vec import Word2VecConfig, Word2VecTrainer
    cfg = Word2VecConfig(dim=100, window=5, negative=0 if hs else 5, sample=1e-3)
    if SkipGramSGD is not None:
        from seqlab.base.config import TrainConfig
        from seqlab.training.trainer import Trainer
        task = SkipGramSGD(cfg, corpus, hs=hs, seed=seed, threads=threads)
        trainer = Trainer(task, TrainConfig(epochs=epochs, lr=0.025, min_lr=0.0001, seed=seed, progress=False),
                          run_dir, log=lambda *a, **k: None)
        cpu, wall = time.process_time(), time.perf_counter()
        trainer.fit()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rows = [json.loads(l) for l in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
        effective = sum(r["effective_words"] for r in rows)
    else:
        trainer = Word2VecTrainer(cfg, corpus.counts, hs=hs, seed=seed)
        trainer.train_epoch(corpus, 0, 1, 0.025, 0.0001, threads=threads, should_stop=lambda: True)  # compile
        cpu, wall = time.process_time(), time.perf_counter()
        effective = 0
        for epoch in range(epochs):
            stats = trainer.train_epoch(corpus, epoch, epochs, 0.025, 0.0001, threads=threads)
            effective += stats.effective_words
            checkpoint.save(run_dir, trainer.model, trainer.trainer_tensors(), {"step": epoch + 1})
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"effective": effective, "cpu": cpu, "wall": wall}))
'''


def run_one(tree: Path, corpus: Path, objective: str, epochs: int, threads: int, seed: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", DRIVER, str(corpus), objective, str(epochs), str(threads), str(seed)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", type=Path, required=True, help="the earlier source tree (e.g. a git worktree)")
    p.add_argument("--new", type=Path, default=ROOT, help="the tree under test (default: this one)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", type=Path, default=Path(os.environ.get("SEQLAB_SHARED_DATA", ROOT.parent / "shared" / "data")))
    p.add_argument("--no-write", action="store_true", help="do not write bench/RESULTS.md")
    args = p.parse_args()
    corpus = args.data / "corpora" / "shakespeare_complete.txt"
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for side, tree in trees.items():  # compile (or load numba's cache) outside the rounds
        for objective in ("sgns", "hs"):
            run_one(tree, corpus, objective, 1, args.threads, 0)
    results = {(side, obj): [] for side in trees for obj in ("sgns", "hs")}
    for r in range(args.rounds):
        order = list(results)
        random.Random(r).shuffle(order)
        for side, obj in order:
            x = run_one(trees[side], corpus, obj, args.epochs, args.threads, r + 1)
            results[side, obj].append(x)
            print(f"round {r + 1} {side} {obj}: {x['effective'] / x['cpu']:,.0f} effective words per CPU-s, "
                  f"{x['effective'] / x['wall']:,.0f} per wall-s", file=sys.stderr)
    summary = {"cpu": cpu_line()}
    rows = ["| objective | new / old, words per CPU-s (rounds) | new / old, words per wall-s | old words/CPU-s | "
            "new words/CPU-s |", "|---|---|---|---|---|"]
    for obj in ("sgns", "hs"):
        old, new = results["old", obj], results["new", obj]
        per_cpu = [n["effective"] / n["cpu"] / (o["effective"] / o["cpu"]) for o, n in zip(old, new)]
        per_wall = [n["effective"] / n["wall"] / (o["effective"] / o["wall"]) for o, n in zip(old, new)]
        summary[f"ratio_{obj}"] = statistics.median(per_cpu)
        summary[f"ratio_{obj}_wall"] = statistics.median(per_wall)
        rows.append(f"| {obj} | {statistics.median(per_cpu):.3f} ({', '.join(f'{x:.2f}' for x in per_cpu)}) | "
                    f"{statistics.median(per_wall):.3f} | "
                    f"{statistics.median(o['effective'] / o['cpu'] for o in old):,.0f} | "
                    f"{statistics.median(n['effective'] / n['cpu'] for n in new):,.0f} |")
    summary["ratio"] = min(summary["ratio_sgns"], summary["ratio_hs"])
    md = ("## Embedding training path: the Trainer's kernel tasks vs the pre-refactor loop (bench/embed_refactor.py)\n\n"
          f"CPU: {summary['cpu']}. Skip-gram on shakespeare_complete.txt, dim 100, window 5, min_count 5, sample 1e-3, "
          f"{args.epochs} epochs, {args.threads} threads, checkpoint after each epoch; {args.rounds} interleaved "
          f"rounds, each tree in its own process; old = {trees['old'].name}, new = {trees['new'].name}. "
          "Target (issue #12): new / old >= 0.95.\n\n" + "\n".join(rows) + "\n")
    print(md)
    if not args.no_write:
        write_section("embed_refactor", md)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
