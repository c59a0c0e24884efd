"""Fine-tuning quality: the pretrained all-MiniLM-L6-v2 encoder fine-tuned for NER and for sentiment.

    .venv/bin/python bench/finetune.py                               # both tasks, the presets' full schedules
    .venv/bin/python bench/finetune.py --task ner --minutes 30       # NER only, at most 30 training minutes
    .venv/bin/python bench/finetune.py --task sentiment --steps 200  # a shorter schedule
    .venv/bin/python bench/finetune.py --steps 2 --limit 16 --no-results     # a smoke run (seconds)

- ``ner``: the ``ner-minilm`` preset on ../shared/data/conll2003/iob2 (eng.train, validation eng.testa, as
  IOB2), scored on test (eng.testb): entity-level micro F1 (seqeval default mode, IOB2). Target (issue 8): F1 >= 0.84.
- ``sentiment``: the ``sentiment-minilm`` preset on ../shared/data/sst2/sentence_level (train, dev), scored on
  test (1,821 sentences): accuracy. Target (issue 8): accuracy >= 0.86.

``--steps`` replaces the preset's ``train.max_steps`` (the learning-rate schedule follows it); ``--minutes``
is a hard wall-clock stop (``train.max_minutes``); ``--limit N`` keeps the first N examples of the valid and test
splits and the first 10 N training examples (so that training has every label; for smoke runs, in scratch
files). Training minutes include data preparation and periodic validation. The from-scratch BiLSTM's figures
beside the fine-tuned ones are read from the sections bench/ner.py and bench/sentiment.py wrote (``ner-lstm``,
``sentiment``), never typed in. Results go to bench/RESULTS.md (section ``finetune``); the last
line printed is JSON with ``ratio`` = the worst of (figure / target) over the tasks run (above 1: targets met).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import read_section, write_section  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
# task -> (preset, data folder under --data, train, valid, test files, metric, target)
TASKS = {
    "ner": ("ner-minilm", "conll2003/iob2", "train.txt", "valid.txt", "test.txt", "f1", 0.84),
    "sentiment": ("sentiment-minilm", "sst2/sentence_level", "train.txt", "dev.txt", "test.txt", "accuracy", 0.86),
}


def limited_copy(path: Path, limit: int, scratch: Path, conll: bool) -> Path:
    """The first ``limit`` examples of a training file (CoNLL sentences, or lines after a TSV header)."""
    text = path.read_text(encoding="utf-8")
    if conll:
        blocks = [b for b in text.split("\n\n") if b.strip() and not b.startswith("-DOCSTART-")]
        out = "\n\n".join(blocks[:limit]) + "\n"
    else:
        lines = text.splitlines()
        header = lines[:1] if lines and "\t" in lines[0] and not lines[0].split("\t")[-1].strip().isdigit() else []
        out = "\n".join(header + [line for line in lines[len(header):] if line.strip()][:limit]) + "\n"
    target = scratch / f"{path.parent.name}-{path.name}"
    target.write_text(out, encoding="utf-8")
    return target


def run_task(task: str, args, scratch: Path) -> dict:
    from seqlab import api
    from seqlab.tasks import resolve

    preset, folder, train, valid, test, metric, target = TASKS[task]
    paths = [args.data / folder / name for name in (train, valid, test)]
    if args.limit:
        paths = [limited_copy(path, args.limit * (10 if i == 0 else 1), scratch, conll=task == "ner")
                 for i, path in enumerate(paths)]
    overrides = [f"data.{split}={path}" for split, path in zip(("train", "valid", "test"), paths)]
    overrides += [f"train.threads={args.threads}", f"train.device={args.device}", "train.progress=false",
                  f"train.max_minutes={args.minutes}"]
    if args.steps:
        warmup = max(1, args.steps // 10)
        overrides += [f"train.max_steps={args.steps}", f"train.warmup_steps={warmup}",
                      f"train.eval_every={max(1, args.steps // 4)}", f"train.save_every={args.steps}"]
    cfg = resolve(preset, overrides + list(args.set))
    run_dir = args.out / f"bench-finetune-{task}" if args.out else ROOT / "runs" / f"bench-finetune-{task}"
    started = time.perf_counter()
    api.train_run(cfg, run_dir, force=True)
    train_minutes = (time.perf_counter() - started) / 60
    steps = json.loads((run_dir / "state.json").read_text())["step"]
    started = time.perf_counter()
    scores = api.load(run_dir, device=None if args.device == "auto" else args.device).evaluate("test")
    eval_seconds = time.perf_counter() - started
    baseline = bilstm_baseline(task)
    return {"task": task, "preset": preset, "steps": steps, "train_minutes": round(train_minutes, 2),
            "eval_seconds": round(eval_seconds, 1), "metric": metric, "value": scores[metric], "target": target,
            "bilstm": baseline, "scores": {k: v for k, v in scores.items() if k != "per_type"}}


BASELINES = {"ner": ("ner-lample", "char-dropout"), "sentiment": ("sentiment-ablation", "random")}  # section, row


def bilstm_baseline(task: str) -> float | None:
    """The from-scratch BiLSTM's test figure as recorded in RESULTS.md by the ablations (random word embeddings,
    each preset as it ships): the bold F1 of row ``char-dropout`` of section ``ner-lample`` (it trains exactly
    ``ner-bilstm-crf``; the mean of its seeds), or the bold accuracy of row ``random`` of section
    ``sentiment-ablation`` (``sentiment-lstm``); None when missing."""
    import re

    section, row = BASELINES[task]
    text = read_section(section)
    if text is None:
        return None
    rows = [line for line in text.splitlines() if line.startswith(f"| {row} |") and "**" in line]
    return float(re.search(r"\*\*([0-9.]+)", rows[0]).group(1)) if rows else None


def markdown(rows: list[dict], args) -> str:
    lines = ["## Fine-tuning all-MiniLM-L6-v2 (uncased): CoNLL-2003 NER and SST-2 sentiment (bench/finetune.py)",
             "",
             "| task | preset | steps | training (min) | test metric | fine-tuned | from-scratch BiLSTM | target |",
             "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    for r in rows:
        bilstm = f"{r['bilstm']:.4f}" if r["bilstm"] is not None else "see its section"
        lines.append(f"| {r['task']} | {r['preset']} | {r['steps']} | {r['train_minutes']:.1f} | {r['metric']} | "
                     f"**{r['value']:.4f}** | {bilstm} | {r['target']} |")
    short = args.steps or args.limit or args.minutes
    lines += ["", "NER: entity-level micro F1 on eng.testb (seqeval default mode, IOB2). Sentiment: accuracy on the "
              "SST-2 sentence-level test split. Training minutes include data preparation and validation. "
              "The from-scratch BiLSTM figures are the rows with random word embeddings, each preset as it ships "
              "(bench/ner.py: ner-lample row char-dropout, ner-bilstm-crf, mean of its seeds; bench/sentiment.py: "
              "sentiment-ablation row random, sentiment-lstm)."
              + (" This run changed the presets' schedule or data (--steps / --limit / --minutes): "
                 "it checks the pipeline, not the targets." if short else "")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["ner", "sentiment", "both"], default="both")
    parser.add_argument("--steps", type=int, default=0, help="optimiser steps (0 = the preset's schedule)")
    parser.add_argument("--minutes", type=float, default=0.0, help="hard stop per task, minutes (0 = none)")
    parser.add_argument("--limit", type=int, default=0, help="keep N valid/test and 10 N training examples (0 = all)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = PyTorch's default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--set", action="append", default=[], help="extra config override, e.g. train.lr=1e-4")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with conll2003/ and sst2/")
    parser.add_argument("--out", type=Path, default=None, help="folder for the run directories (default runs/)")
    parser.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    args = parser.parse_args(argv)

    tasks = ["ner", "sentiment"] if args.task == "both" else [args.task]
    with tempfile.TemporaryDirectory() as scratch:
        rows = [run_task(task, args, Path(scratch)) for task in tasks]
    if not args.no_results:
        write_section("finetune", markdown(rows, args))
    summary = {"tasks": {r["task"]: {k: r[k] for k in ("value", "metric", "steps", "train_minutes", "bilstm")}
                         for r in rows},
               "ratio": min(r["value"] / r["target"] for r in rows)}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
