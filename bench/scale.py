"""Preparing a large LM corpus: peak memory and time, before (the code at /work/main, which holds the whole text
several times over) and after (streaming preparation, seqlab/data/prepare.py).

Corpora: ../shared/data/corpora/enwiki_sample.txt repeated into a temporary file of each size (never
committed). For each size, in one run, interleaved:

- before: ``seqlab train lm-bpe --set data.source=FILE --set train.max_steps=1`` with the old code (--before, a
  checkout of main at 55d7261);
- after:  ``seqlab data prepare lm-bpe --set data.source=FILE --out DIR``, then ``seqlab train lm-bpe --set
  data.prepared=DIR --set train.max_steps=1``, and the same train command as before (the run prepares its
  own data, streaming).

Each command runs as a child process; its peak RSS is measured two ways: ``ru_maxrss`` from ``wait4`` (the
largest single process of its tree) and the sum over the whole process tree (the encoding workers included),
sampled from /proc every 0.1 s. MB/s = source bytes / wall time of the preparation.

    python bench/scale.py --sizes 25 100 --before /work/main

The last line printed is one JSON object; ``ratio`` = the before run's peak RSS (tree) over the after run's (the
same train command) at the largest size measured before, above 1 = the new code uses less memory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_line, write_section  # noqa: E402

SHARED = Path(os.environ.get("SEQLAB_SHARED_DATA", ROOT.parent / "shared" / "data"))
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
SOURCE = SHARED / "corpora" / "enwiki_sample.txt"


def make_corpus(path: Path, mb: float) -> int:
    text = SOURCE.read_bytes()
    target = int(mb * 1e6)
    with open(path, "wb") as f:
        written = 0
        while written < target:
            piece = text[: target - written]
            f.write(piece)
            written += len(piece)
    return written


def _tree_rss_kib(root: int) -> int:
    """Resident memory of ``root`` and its descendants (from /proc): the sum of their proportional set sizes
    (PSS: a page shared by n processes, such as what forked workers share with their parent, counts 1/n in
    each), so that shared pages are counted once."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def measure(cmd: list[str], cwd: Path) -> dict:
    """Run ``cmd``: wall seconds, ru_maxrss (MiB) and the peak summed RSS of its process tree (MiB)."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, done = [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode()[-2000:]}")
    return {"seconds": seconds, "maxrss_mib": usage.ru_maxrss / 1024, "tree_mib": peak[0] / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs="+", default=[25, 100], help="corpus sizes in MB")
    ap.add_argument("--before", type=Path, default=Path("/work/main"), help="a checkout of the old code")
    ap.add_argument("--no-before", action="store_true", help="only the new code")
    ap.add_argument("--reuse", type=Path, help="JSON rows printed by an earlier run: their `before` cells are "
                    "reused, and whole rows measured with the same encoding piece size")
    ap.add_argument("--note", default="", help="a sentence added to the RESULTS.md section")
    args = ap.parse_args()
    from seqlab.data.prepare import ENCODE_PIECE

    earlier = {}
    if args.reuse:
        for line in args.reuse.read_text().splitlines():
            if line.startswith('{"mb"'):
                row = json.loads(line)
                earlier[round(row["mb"])] = row
    py = sys.executable
    rows = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        tmp = Path(tmp)
        for mb in args.sizes:
            old = earlier.get(round(mb))
            if old and old.get("piece") == ENCODE_PIECE:
                rows.append(old)
                continue
            corpus = tmp / f"corpus-{mb:g}MB.txt"
            size = make_corpus(corpus, mb)
            one_step = ["lm-bpe", "--set", f'data.source="{corpus}"', "--set", "train.max_steps=1",
                        "--set", "train.progress=false"]
            row = {"mb": size / 1e6, "piece": ENCODE_PIECE}
            if old and "before_train" in old:
                row["before_train"] = old["before_train"]
            elif not args.no_before:
                row["before_train"] = measure([py, "-m", "seqlab", "train", *one_step, "--out", str(tmp / "old")],
                                              args.before)
                shutil.rmtree(tmp / "old", ignore_errors=True)
            row["prepare"] = measure([py, "-m", "seqlab", "data", "prepare", "lm-bpe", "--set",
                                      f'data.source="{corpus}"', "--out", str(tmp / "prep"), "--no-progress"], ROOT)
            row["train_prepared"] = measure([py, "-m", "seqlab", "train", "lm-bpe", "--set",
                                             f'data.prepared="{tmp / "prep"}"', "--set", "train.max_steps=1",
                                             "--set", "train.progress=false", "--out", str(tmp / "new1")], ROOT)
            row["after_train"] = measure([py, "-m", "seqlab", "train", *one_step, "--out", str(tmp / "new2")], ROOT)
            manifest = json.loads((tmp / "prep" / "manifest.json").read_text())
            row["tokens"] = sum(manifest["tokens"].values())
            row["prepare_mb_s"] = row["mb"] / row["prepare"]["seconds"]
            print(json.dumps(row), flush=True)
            rows.append(row)
            for name in ("prep", "new1", "new2"):
                shutil.rmtree(tmp / name, ignore_errors=True)
            corpus.unlink()
    load_after = os.getloadavg()

    def cell(m: dict | None) -> str:
        return "—" if m is None else f"{m['seconds']:.0f} s, {m['tree_mib']:,.0f} MiB ({m['maxrss_mib']:,.0f})"

    lines = ["## Scale: preparing a large LM corpus (`bench/scale.py`)", "",
             "enwiki_sample repeated to each size; lm-bpe (byte-level BPE, 4,096 ids). Each cell: wall time, peak RSS "
             "summed over the process tree (encoding workers included; PSS, so shared pages count once), and in "
             "brackets `ru_maxrss` (the largest single process). *before*: the code of main at 55d7261; *after*: this branch. One round per cell "
             f"(the machine was shared: load average {load[0]:.1f} at the start, {load_after[0]:.1f} at the end).", "",
             "| corpus | before: `train --set data.source=F --set train.max_steps=1` | after: same command | "
             "after: `data prepare` | after: `train --set data.prepared=DIR` (1 step) | prepare MB/s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mb']:.0f} MB ({r['tokens'] / 1e6:.1f}M tokens) | {cell(r.get('before_train'))} | "
                     f"{cell(r['after_train'])} | {cell(r['prepare'])} | {cell(r['train_prepared'])} | "
                     f"{r['prepare_mb_s']:.2f} |")
    big, small = rows[-1], rows[0]
    growth = big["prepare"]["tree_mib"] / small["prepare"]["tree_mib"]
    lines += ["", f"Peak RSS of `data prepare` grows {growth:.2f}x from {small['mb']:.0f} MB to {big['mb']:.0f} MB "
              f"of text ({big['mb'] / small['mb']:.0f}x)."]
    if args.note:
        lines += ["", args.note]
    write_section("scale", "\n".join(lines))
    measured = [r for r in rows if "before_train" in r]  # the largest corpus the old code was measured on
    before, after = (measured[-1]["before_train"], measured[-1]["after_train"]) if measured else (None, None)
    result = {"bench": "scale", "machine": cpu_line(), "load": [round(load[0], 1), round(load_after[0], 1)],
              "sizes_mb": [round(r["mb"]) for r in rows],
              "prepare_tree_mib": [round(r["prepare"]["tree_mib"]) for r in rows],
              "prepare_mb_s": [round(r["prepare_mb_s"], 2) for r in rows],
              "after_train_tree_mib": [round(r["after_train"]["tree_mib"]) for r in rows],
              "before_train_tree_mib": [round(r["before_train"]["tree_mib"]) for r in rows if "before_train" in r],
              "prepare_rss_growth": round(growth, 3),
              "ratio": round(before["tree_mib"] / after["tree_mib"], 2) if before else None}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
