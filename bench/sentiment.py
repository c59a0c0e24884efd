"""Sentiment quality: sentence classifiers on SST-2 (sentence level) and SST-5, test accuracy and macro-F1.

    .venv/bin/python bench/sentiment.py                                   # all runs, 10 minutes each
    .venv/bin/python bench/sentiment.py --runs sst2-lstm --minutes 2      # a short run

Runs (each trains a preset from scratch, no pretrained vectors, for ``--minutes`` of training with the
learning-rate schedule fitted to the budget by a short calibration, as bench/ner.py does, or for ``--steps``):

- ``sst2-lstm``: ``sentiment-lstm`` on ../shared/data/sst2/sentence_level (6,920 / 872 / 1,821 sentences);
  issue 4's target is test accuracy >= 0.78;
- ``sst2-transformer``: ``sentiment-transformer`` on the same splits (reported);
- ``sst5-lstm``: ``sentiment-lstm`` on ../shared/data/sst5/trees (8,544 / 1,101 / 2,210 sentences, 5 classes,
  root labels 0..4; reported).

The last line is JSON with ``ratio`` = the SST-2 LSTM's test accuracy / 0.78 (above 1: the target is met; null
when that run is not among ``--runs``). Short runs check the pipeline and the trend, not the target.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import write_section  # noqa: E402
from bench.ner import budget_overrides, train_and_time  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TARGET = 0.78  # issue 4: SST-2 sentence-level LSTM test accuracy
RUNS = {  # name -> (preset, folder under --data, train, valid, test files)
    "sst2-lstm": ("sentiment-lstm", "sst2/sentence_level", "train.txt", "dev.txt", "test.txt"),
    "sst2-transformer": ("sentiment-transformer", "sst2/sentence_level", "train.txt", "dev.txt", "test.txt"),
    "sst5-lstm": ("sentiment-lstm", "sst5/trees", "train.txt", "dev.txt", "test.txt"),
}


def run_one(name: str, args) -> dict:
    from seqlab import api
    from seqlab.tasks import resolve

    preset, folder, train, valid, test = RUNS[name]
    root = args.data / folder
    base = [f"data.train={root / train}", f"data.valid={root / valid}", f"data.test={root / test}",
            f"train.threads={args.threads}", f"train.device={args.device}", "train.progress=false"]
    budget, per_step = budget_overrides(resolve(preset, base), args.minutes, args.steps)
    run_dir = (args.out or ROOT / "runs") / f"bench-{name}"
    train_minutes, steps = train_and_time(resolve(preset, base + budget), run_dir)
    scores = api.load(run_dir, device=None if args.device == "auto" else args.device).evaluate("test")
    return {"run": name, "preset": preset, "steps": steps, "budget_minutes": args.minutes,
            "train_minutes": round(train_minutes, 2), "seconds_per_step": per_step and round(per_step, 4), **scores}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated, from {', '.join(RUNS)}")
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per run (default 10)")
    parser.add_argument("--steps", type=int, default=0, help="optimiser steps per run (0 = fitted to --minutes)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = PyTorch's default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with sst2/ and sst5/")
    parser.add_argument("--out", type=Path, default=None, help="folder of the run directories (default runs/)")
    parser.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.runs.split(",") if n.strip()]
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        parser.error(f"unknown run(s) {unknown}; choose from {', '.join(RUNS)}")

    rows = [run_one(name, args) for name in names]
    lstm = next((r for r in rows if r["run"] == "sst2-lstm"), None)
    summary = {"runs": rows, "target": TARGET, "ratio": lstm["accuracy"] / TARGET if lstm else None}
    if not args.no_results:
        short = args.minutes < 10
        write_section("sentiment", "\n".join([
            "## Sentiment: sentence classifiers on SST-2 (sentence level) and SST-5"
            + (f" (short runs: {args.minutes:g} min each)" if short else ""),
            "",
            "| run | preset | steps | training (min) | test accuracy | test macro-F1 |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
            *[f"| {r['run']} | {r['preset']} | {r['steps']} | {r['train_minutes']:.1f} | **{r['accuracy']:.4f}** | "
              f"{r['macro_f1']:.4f} |" for r in rows],
            "",
            f"Trained from scratch (no pretrained vectors) on the train split, validated on dev, scored on test "
            f"(SST-2: 1,821 sentences; SST-5: 2,210). Target: SST-2 LSTM test accuracy >= {TARGET}. "
            + ("These are short runs: they check the pipeline and the trend, not the target." if short else ""),
        ]))
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
