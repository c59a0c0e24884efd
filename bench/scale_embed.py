"""Peak memory of embedding training against the corpus size: two source trees of seqlab, the same runs.

Issue #13 (Scale): word2vec and GloVe should hold the vocabulary, the weights and index arrays, not the corpus
(gensim over a ``LineSentence`` holds only the vocabulary and the weights). For each corpus size (enwiki_sample
repeated into a temporary file, never committed) and each preset (``w2v-sgns``, ``glove``), this runs

    python -m seqlab train PRESET --set data.source=BIG --set train.epochs=1 --out TMP

once with each tree (``cwd`` = the tree, so its own ``seqlab`` is imported), in a shuffled order, and records the
child's wall time and peak RSS (``ru_maxrss`` from ``os.wait4``: the process and the children it waited for).
The ratio is the old tree's peak RSS over the new one's at the largest size (above 1 = the new tree is better).

    python bench/scale_embed.py --old /work/main --new . --sizes 50,100
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import cpu_line, median, write_section  # noqa: E402

PRESETS = ("w2v-sgns", "glove")

SPEED = r'''
import json, random, sys, tempfile, time
from pathlib import Path
from seqlab.base.config import TrainConfig
from seqlab.data.corpus import Corpus
from seqlab.models.word2vec import SkipGramSGD, Word2VecConfig
from seqlab.training.trainer import Trainer
path, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = Path(path).read_text(encoding="utf-8").splitlines()
sentences = [line.split() for line in lines if line.split()]
scratch = tempfile.mkdtemp()
corpora = {"memory": Corpus.build(sentences, 5), "mapped": Corpus.stream(lambda: sentences, 5, 0, Path(scratch) / "c")}
cfg = Word2VecConfig(dim=100, window=5, negative=5, sample=1e-3)
rates = {k: [] for k in corpora}
SkipGramSGD(cfg, corpora["memory"], hs=False, seed=0, threads=threads)  # compile
for r in range(rounds):
    for name in random.Random(r).sample(sorted(corpora), 2):
        task = SkipGramSGD(cfg, corpora[name], hs=False, seed=r + 1, threads=threads)
        with tempfile.TemporaryDirectory() as run_dir:
            trainer = Trainer(task, TrainConfig(epochs=1, lr=0.025, min_lr=0.0001, progress=False), run_dir,
                              log=lambda *a, **k: None)
            cpu = time.process_time()
            trainer.fit()
            cpu = time.process_time() - cpu
            rows = [json.loads(l) for l in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
        rates[name].append(sum(row["effective_words"] for row in rows) / cpu)
print(json.dumps(rates))
'''


def make_corpus(source: Path, mb: int, out: Path) -> int:
    """``source`` repeated (whole copies, then a prefix cut at a line end) to ``mb`` MB; returns its size."""
    data = source.read_bytes()
    target = mb * 1_000_000
    with open(out, "wb") as f:
        size = 0
        while size + len(data) <= target:
            f.write(data)
            size += len(data)
        rest = data[:target - size]
        rest = rest[:rest.rfind(b"\n") + 1]
        f.write(rest)
        size += len(rest)
    return size


def run_one(tree: Path, preset: str, corpus: Path, threads: int) -> dict:
    """Train ``preset`` for one epoch on ``corpus`` with ``tree``'s seqlab; wall seconds and peak RSS (MiB)."""
    with tempfile.TemporaryDirectory(prefix="scale-embed-") as out:
        cmd = [sys.executable, "-m", "seqlab", "train", preset, "--set", f"data.source={corpus}",
               "--set", "train.epochs=1", "--set", f"train.threads={threads}", "--out", str(Path(out) / "run")]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        log = Path(out) / "log.txt"
        t0 = time.perf_counter()
        with open(log, "wb") as sink:
            p = subprocess.Popen(cmd, cwd=tree, env=env, stdout=sink, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage (Popen.wait would discard it)
            p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(f"{preset} on {tree} failed: {log.read_text(errors='replace')[-2000:]}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mib": usage.ru_maxrss / 1024}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", type=Path, required=True, help="the earlier source tree (e.g. /work/main)")
    p.add_argument("--new", type=Path, default=ROOT, help="the tree under test (default: this one)")
    p.add_argument("--sizes", default="50,100", help="corpus sizes in MB, comma-separated")
    p.add_argument("--presets", default=",".join(PRESETS))
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", type=Path, default=Path(os.environ.get("SEQLAB_SHARED_DATA", ROOT.parent / "shared" / "data")))
    p.add_argument("--sides", default="old,new", help="which trees to run now (the others come from --load)")
    p.add_argument("--save", type=Path, help="write the raw runs to this JSON file")
    p.add_argument("--load", type=Path, help="raw runs of an earlier invocation (--save) to add to this one's")
    p.add_argument("--speed-rounds", type=int, default=5, help="rounds of the memory-mapped vs in-memory speed check")
    p.add_argument("--no-write", action="store_true", help="do not write bench/RESULTS.md")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    presets = args.presets.split(",")
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    source = args.data / "corpora" / "enwiki_sample.txt"
    results: dict[tuple, list[dict]] = {}
    if args.load:
        results = {tuple(json.loads(k)): v for k, v in json.loads(args.load.read_text()).items()}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="scale-embed-corpus-") as tmp:
        files = {mb: Path(tmp) / f"enwiki_{mb}mb.txt" for mb in sizes}
        real = {mb: make_corpus(source, mb, path) for mb, path in files.items()}
        for r in range(args.rounds):
            order = [(side, preset, mb) for side in args.sides.split(",") if side in trees for preset in presets
                     for mb in sizes]
            random.Random(r).shuffle(order)
            for side, preset, mb in order:
                x = run_one(trees[side], preset, files[mb], args.threads)
                results.setdefault((side, preset, mb), []).append(x)
                print(f"round {r + 1} {side} {preset} {mb} MB: {x['wall']:.1f} s, peak RSS {x['rss_mib']:,.0f} MiB",
                      file=sys.stderr, flush=True)
    load = (load, os.getloadavg())
    if args.save:
        args.save.write_text(json.dumps({json.dumps(list(k)): v for k, v in results.items()}))
    if any(k[0] not in {kk[0] for kk in results} for k in [("old",), ("new",)]):
        return
    summary: dict = {"cpu": cpu_line(), "loadavg_1min": [round(load[0][0], 1), round(load[1][0], 1)]}
    rows = ["| preset | corpus | old peak RSS (MiB) | new peak RSS (MiB) | old / new | old wall (s) | new wall (s) | "
            "old CPU (s) | new CPU (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for preset in presets:
        for mb in sizes:
            old = median([x["rss_mib"] for x in results["old", preset, mb]])
            new = median([x["rss_mib"] for x in results["new", preset, mb]])
            old_wall = median([x["wall"] for x in results["old", preset, mb]])
            new_wall = median([x["wall"] for x in results["new", preset, mb]])
            summary[f"{preset}_{mb}mb"] = {"old_rss_mib": round(old), "new_rss_mib": round(new),
                                           "old_wall_s": round(old_wall, 1), "new_wall_s": round(new_wall, 1)}
            cpu = [median([x.get("cpu", float("nan")) for x in results[side, preset, mb]]) for side in ("old", "new")]
            rows.append(f"| {preset} | {real[mb] / 1e6:.0f} MB | {old:,.0f} | {new:,.0f} | {old / new:.2f} | "
                        f"{old_wall:.0f} | {new_wall:.0f} | {cpu[0]:.0f} | {cpu[1]:.0f} |")
        lo, hi = min(sizes), max(sizes)
        growth = results["new", preset, hi][0]["rss_mib"] - results["new", preset, lo][0]["rss_mib"]
        summary[f"{preset}_new_growth_mib"] = round(growth)
    out = subprocess.run([sys.executable, "-c", SPEED, str(args.data / "corpora" / "shakespeare_complete.txt"),
                          str(args.speed_rounds), str(args.threads)], cwd=trees["new"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(trees["new"])}, check=True)
    rates = json.loads(out.stdout.strip().splitlines()[-1])
    speed = [m / i for m, i in zip(rates["mapped"], rates["memory"])]
    summary["speed_mapped_over_memory"] = round(median(speed), 3)
    big = max(sizes)
    summary["ratio"] = min(summary[f"{p}_{big}mb"]["old_rss_mib"] / summary[f"{p}_{big}mb"]["new_rss_mib"]
                           for p in presets)
    md = ("## Embedding training memory against corpus size (bench/scale_embed.py)\n\n"
          f"CPU: {summary['cpu']}. `seqlab train PRESET --set data.source=BIG --set train.epochs=1 "
          f"--set train.threads={args.threads}`, BIG = enwiki_sample.txt repeated to each size; peak RSS = the child's "
          f"ru_maxrss; old = {trees['old']}, new = {trees['new']}; {args.rounds} round(s), interleaved; load "
          f"average (1 min) {load[0][0]:.1f} at the start, {load[1][0]:.1f} at the end (other jobs share the 2 "
          "cores, so wall times are noisy). Target (issue #13): peak RSS independent of the corpus size.\n\n"
          + "\n".join(rows) + "\n\n"
          f"Training speed from the memory-mapped corpus (the new tree's `seqlab train` path) over the same corpus in "
          f"memory: skip-gram (SGNS) on shakespeare_complete.txt, 1 epoch, {args.threads} threads, effective words per "
          f"CPU-second, {args.speed_rounds} interleaved rounds: median ratio {median(speed):.3f} "
          f"({', '.join(f'{x:.2f}' for x in speed)}); mapped {median(rates['mapped']):,.0f}, in memory "
          f"{median(rates['memory']):,.0f} words/CPU-s.\n")
    print(md)
    if not args.no_write:
        write_section("scale_embed", md)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
