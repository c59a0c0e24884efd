"""Language-model quality on tinyshakespeare (character level), as nanoGPT reports it.

Two runs through the public API (``seqlab.train`` on the ``lm-char`` preset with overrides), each
writing a row into bench/RESULTS.md:

- ``cpu``: nanoGPT's CPU configuration (4 layers, 4 heads, d_model 128, max_len 64, batch 12,
  dropout 0, 2,000 steps, lr 1e-3 -> 1e-4, warm-up 100) on the 90/10 split nanoGPT uses. nanoGPT's
  README gives about 1.88 nats for it, its 20-batch estimate of one run; nanoGPT's own figure under the
  whole-split measure below is in the ``lm_quality_nanogpt`` section (bench/lm_quality_nanogpt.py), which
  runs nanoGPT itself beside this run.
- ``gpu-config``: the 6-layer, 6-head, 384-dim model with max_len 256 (nanoGPT's train_shakespeare_char),
  trained for a wall-clock budget (default 30 minutes); nanoGPT reaches 1.47 after 5,000 GPU steps of batch
  64 with dropout 0.2. On 2 CPU cores dropout triples the step time (drawing the attention-dropout masks),
  so this run uses batch 32 and no dropout, with the cosine schedule spanning 1,900 steps (about what 30
  minutes allow); the best validation checkpoint is kept and reported beside the final one.

The validation loss reported is seqlab's: every token of the validation split scored once
(non-overlapping windows), not nanoGPT's estimate over 200 random batches.

    .venv/bin/python bench/lm_quality.py cpu|gpu-config [--minutes M] [--out runs/bench-...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_section  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "tinyshakespeare" / "input.txt"

RUNS = {
    "cpu": ["model.n_layers=4", "model.n_heads=4", "model.d_model=128", "model.d_ff=512", "model.max_len=64",
            "model.dropout=0.0", "train.batch_size=12", "train.max_steps=2000", "train.lr=1e-3",
            "train.min_lr=1e-4", "train.warmup_steps=100", "train.eval_every=250", "train.save_every=500",
            "train.precision=\"fp32\""],  # nanoGPT on a CPU trains in fp32
    "gpu-config": ["model.n_layers=6", "model.n_heads=6", "model.d_model=384", "model.d_ff=1536",
                   "model.max_len=256", "model.dropout=0.0", "train.batch_size=32", "train.max_steps=1900",
                   "train.lr=1e-3", "train.min_lr=1e-4", "train.warmup_steps=100", "train.eval_every=100",
                   "train.save_every=250", "train.eval_batches=10", "train.keep_best=true"],
}


def run_overrides(name: str, extra: list[str]) -> list[str]:
    """The lm-char overrides of run ``name``: nanoGPT's data and model settings, then ``extra``."""
    return [f'data.source="{SHARED}"', "data.split=[0.9, 0.1, 0.0]", "data.tokenizer=char",
            "model.positions=\"learned\"", "model.norm=\"pre\"", *RUNS[name], *extra]


def run_once(name: str, minutes: float, out: Path, seed: int, extra: list[str], resume: bool) -> dict:
    import seqlab
    from seqlab.tasks import resolve

    overrides = [*run_overrides(name, extra), f"train.seed={seed}", f"train.max_minutes={minutes}",
                 "train.progress=false"]
    t = time.perf_counter()
    seqlab.train(resolve("lm-char", overrides), out, resume=resume, force=not resume,
                 log=lambda *a, **k: print(*a, file=sys.stderr))
    seconds = time.perf_counter() - t
    final = seqlab.load(out, last=True)
    state = final.checkpoint
    valid = final.evaluate("valid")
    best_lm = seqlab.load(out)  # the best validation checkpoint (best/), what `seqlab eval` reads
    best = best_lm.evaluate("valid")
    curve = [(r["step"], round(r["loss"], 4)) for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
             if r["split"] == "valid"]
    return {"run": name, "seed": seed, "steps": state["step"], "minutes": round(seconds / 60, 2),
            "final_valid_loss": round(valid["loss"], 4), "valid_loss": round(best["loss"], 4),
            "valid_perplexity": round(best["perplexity"], 3), "best_step": best_lm.checkpoint["step"],
            "tokens_seen": state["tokens_seen"], "precision": final.config.train.precision, "curve": curve}


def main():
    import statistics

    from common import cpu_line

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", choices=sorted(RUNS))
    ap.add_argument("--minutes", type=float, default=None, help="wall-clock budget (default: none for cpu, 30)")
    ap.add_argument("--seeds", default="1337", help="comma-separated train.seed values, one run each (median)")
    ap.add_argument("--dropout", type=float, default=None, help="model.dropout (default: the run's)")
    ap.add_argument("--bias", choices=("true", "false"), default=None, help="model.bias (default: true)")
    ap.add_argument("--fit", action="store_true",
                    help="set train.max_steps to what fits the budget (a short probe of the step rate, as `seqlab "
                         "demo` does), so that the learning-rate schedule ends with the budget")
    ap.add_argument("--threads", type=int, default=0, help="train.threads (default 0: every core)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="another override (repeatable), e.g. train.schedule=wsd")
    ap.add_argument("--label", default="", help="a suffix of the RESULTS.md section, so that variants keep their rows")
    ap.add_argument("--out", default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--rows", type=Path, default=None,
                    help="write the report from the JSON rows an earlier run printed (a log file), without training")
    args = ap.parse_args()
    minutes = args.minutes if args.minutes is not None else (0.0 if args.run == "cpu" else 30.0)
    extra = ([f"model.dropout={args.dropout}"] if args.dropout is not None else []) + (
        [f"model.bias={args.bias}"] if args.bias else []) + ([f"train.threads={args.threads}"] if args.threads else []) + [
        *args.set]
    if args.fit and minutes and args.rows is None:
        import seqlab
        from seqlab.training.optim import fit_steps
        from seqlab.tasks import resolve

        def probe(more: list[str], run_dir: Path) -> None:  # a few steps of the same run, timed by fit_steps
            seqlab.train(resolve("lm-char", [*run_overrides(args.run, extra), *more]), run_dir, force=True,
                         log=lambda *a, **k: None)

        steps = fit_steps(probe, minutes, Path(args.out or f"runs/bench-{args.run}").resolve(),
                          lambda *a, **k: print(*a, file=sys.stderr), probe_steps=16)
        extra.append(f"train.max_steps={steps}")
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [] if args.rows is None else [
        json.loads(line) for line in args.rows.read_text().splitlines() if line.startswith('{"run": "%s", "seed"' % args.run)]
    for seed in seeds if args.rows is None else []:
        out = Path(args.out or f"runs/bench-{args.run}") / f"seed-{seed}" if len(seeds) > 1 else Path(
            args.out or f"runs/bench-{args.run}")
        rows.append(run_once(args.run, minutes, out, seed, extra, args.resume))
        print(json.dumps(rows[-1]), file=sys.stderr)
    target = {"cpu": "nanoGPT's README gives about 1.88 for this configuration (its 20-batch estimate of one run); "
                     "nanoGPT's own figure under this same whole-split measure is in the lm_quality_nanogpt section "
                     "(bench/lm_quality_nanogpt.py); no target",
              "gpu-config": "nanoGPT: 1.47 after 5,000 GPU steps"}[args.run]
    table = "\n".join(f"| {r['seed']} | {r['steps']} | {r['minutes']} | {r['final_valid_loss']} | {r['valid_loss']} "
                      f"(step {r['best_step']}) | {r['valid_perplexity']} |" for r in rows)
    curves = "\n".join(f"- seed {r['seed']}: " + ", ".join(f"{s}: {v}" for s, v in r["curve"]) for r in rows)
    median = statistics.median(r["valid_loss"] for r in rows)
    label = f"-{args.label}" if args.label else ""
    from_rows = ("" if args.rows is None else " The runs are the seqlab runs of bench/lm_quality_nanogpt.py (the same "
                 "run and overrides, trained alternating with nanoGPT's), their rows read from its log (`--rows`).")
    write_section(f"lm_quality_{args.run}{label}", f"""## LM quality on tinyshakespeare, `{args.run}`{label} (bench/lm_quality.py)

CPU: {cpu_line()}. `{' '.join(RUNS[args.run] + extra)}`, 90/10 split, character level, budget {minutes or 'none'} min;
the validation loss of every character of the split, scored once. Reference: {target}.{from_rows}

| seed | steps | wall minutes | final checkpoint's valid loss | best checkpoint's valid loss | its perplexity |
|---|---|---|---|---|---|
{table}

Median over seeds of the best checkpoint's validation loss: **{median:.4f}**.

Validation curves (the periodic estimate on `eval_batches` batches, step: loss):
{curves}""")
    print(json.dumps({"run": args.run, "valid_loss": median, "seeds": [r["seed"] for r in rows], "cpu": cpu_line(),
                      "runs": [{k: v for k, v in r.items() if k != "curve"} for r in rows]}))


if __name__ == "__main__":
    main()
