"""Language-model quality on tinyshakespeare (character level), as nanoGPT reports it.

Two runs through the public API (``seqlab.train`` on the ``lm-char`` preset with overrides), each
writing a row into bench/RESULTS.md:

- ``cpu``: nanoGPT's CPU configuration (4 layers, 4 heads, d_model 128, max_len 64, batch 12,
  dropout 0, 2,000 steps, lr 1e-3 -> 1e-4, warm-up 100) on the 90/10 split nanoGPT uses. nanoGPT's
  published figure for it is a validation loss of about 1.88 nats; the target is <= 1.88 in at most 10
  minutes here.
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


def main():
    import seqlab
    from seqlab.tasks import resolve

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", choices=sorted(RUNS))
    ap.add_argument("--minutes", type=float, default=None, help="wall-clock budget (default: none for cpu, 30)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    minutes = args.minutes if args.minutes is not None else (0.0 if args.run == "cpu" else 30.0)
    overrides = [f'data.source="{SHARED}"', "data.split=[0.9, 0.1, 0.0]", "data.tokenizer=char",
                 "model.positions=\"learned\"", "model.norm=\"pre\"", *RUNS[args.run],
                 f"train.max_minutes={minutes}", "train.progress=false"]
    out = Path(args.out or f"runs/bench-{args.run}")
    t = time.perf_counter()
    seqlab.train(resolve("lm-char", overrides), out, resume=args.resume, force=not args.resume,
                 log=lambda *a, **k: print(*a, file=sys.stderr))
    seconds = time.perf_counter() - t
    state = json.loads((out / "state.json").read_text())
    lm = seqlab.load(out)
    valid = lm.evaluate("valid")
    best = valid
    if (out / "best" / "model.safetensors").exists():  # the best-validation weights, in the same model
        from seqlab import checkpoint

        checkpoint.load_model(lm.model, out / "best" / "model.safetensors")
        best = lm.evaluate("valid")
    row = {"run": args.run, "steps": state["step"], "minutes": round(seconds / 60, 2),
           "valid_loss": round(valid["loss"], 4), "valid_perplexity": round(valid["perplexity"], 3),
           "best_valid_loss": round(best["loss"], 4), "tokens_seen": state["tokens_seen"],
           "precision": lm.config.train.precision}
    target = {"cpu": "nanoGPT CPU config: about 1.88 (target <= 1.88 within 10 min)",
              "gpu-config": "nanoGPT: 1.47 after 5,000 GPU steps"}[args.run]
    write_section(f"lm_quality_{args.run}", f"""## LM quality on tinyshakespeare, `{args.run}` (bench/lm_quality.py)

`{' '.join(RUNS[args.run])}`, 90/10 split, character level, budget {minutes or 'none'} min.

| steps | wall minutes | valid loss (nats/char) | valid perplexity | best checkpoint's valid loss | reference |
|---|---|---|---|---|---|
| {row['steps']} | {row['minutes']} | {row['valid_loss']} | {row['valid_perplexity']} | {row['best_valid_loss']} | {target} |""")
    print(json.dumps(row))


if __name__ == "__main__":
    main()
