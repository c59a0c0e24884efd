"""`make demo` on a faster machine, emulated: the demo's plan at N steps, run to completion, on held-out text.

A machine that trains N steps in the demo's 4-minute budget gets ``seqlab.commands.demo.plan_steps(N, ...)``; this
bench trains that plan for exactly N steps (fixed seed, no time budget, no early stop) for N in 1,000, 1,500,
3,000 and 6,000, and scores its best checkpoint (chosen on the validation split) on the test split, beside the
add-one bigram model counted on the same run's train split: R = bigram perplexity / seqlab perplexity. It also
scores every run on the pydocs corpus's own test characters (for a pyprose run they are the start of its test
split and never in its train split: seqlab/data/prose.py), so a plan that changes the corpus is compared on
the same characters as the demo before it (R_pydocs). The first rows are that earlier demo (pydocs, no dropout)
at each N; where the plan is the same run, the row is shared.

Rows run in order of importance until the time cap (``--cap-minutes``, default 50) would be passed; a row that
would not fit is listed as not run. Each row's result is stored beside its run (``bench-row.json``); a later
invocation with the same ``--out`` reuses the rows already trained with the same overrides. Targets (issue #26): R >= 3.2 at N = 1,500; R at 3,000 and 6,000 each at least
the previous N's R minus 1 %; R >= 3.5 at 6,000; R_pydocs never below the earlier demo's at the same N.

    .venv/bin/python bench/demo_scaling.py [--steps 1000,1500,3000,6000] [--cap-minutes 50]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_line, store_row, stored_row, write_section  # noqa: E402

TARGET_R_1500, TARGET_R_6000, SLACK = 3.2, 3.5, 0.01


def pydocs_test_score(lm) -> tuple[float, float]:
    """(seqlab perplexity, bigram perplexity) on the pydocs corpus's test characters, the bigram counted on
    pydocs's train split with the run's tokenizer."""
    import numpy as np
    import torch

    from seqlab.data.sources import read_text, split_points
    from seqlab.metrics.lm import ngram_nll, perplexity, score_stream

    text = read_text("pydocs")
    a, b = split_points(len(text))
    train, test = (np.array(lm.tokenizer.encode(t), dtype=np.int64) for t in (text[:a], text[b:]))
    with torch.no_grad():
        lm.model.eval()
        total, count = score_stream(lm.model, test, lm.model.cfg.max_len, 16, lm.device)
    bigram_total, bigram_count = ngram_nll(train, test, 2, lm.tokenizer.vocab_size)
    return perplexity(total, count), perplexity(bigram_total, bigram_count)


def run_row(name: str, overrides: list[str], out: Path) -> dict:
    from seqlab.api import load, train_run
    from seqlab.commands.demo import DEMO_OVERRIDES, baselines
    from seqlab.tasks import resolve

    cfg = resolve("lm-char", [*DEMO_OVERRIDES, *overrides, "train.progress=false"])
    t0 = time.perf_counter()
    train_run(cfg, out / name, force=True, log=lambda *a, **k: None)
    seconds = time.perf_counter() - t0
    lm = load(out / name)
    (_, _, ppl), _, (_, _, bigram) = baselines(lm, "test")
    old_ppl, old_bigram = pydocs_test_score(lm)
    final = load(out / name, last=True).checkpoint
    result = {"test_ppl": ppl, "bigram_ppl": bigram, "R": bigram / ppl, "pydocs_test_ppl": old_ppl,
              "R_pydocs": old_bigram / old_ppl, "best_step": lm.checkpoint["step"], "steps_run": final["step"],
              "minutes": seconds / 60}
    store_row(out / name, overrides, result)
    return result


def plans(steps: list[int]) -> list[dict]:
    """The rows in the order they run: the plan at each N (marked when it is the earlier demo too), then the
    earlier demo where it differs from the plan, longest first."""
    from seqlab.commands.demo import CORPORA, TOKENS_PER_STEP, plan_steps, train_chars

    chars = {c: train_chars(c) for c in CORPORA}
    rows, earlier = [], []
    for n in steps:
        chosen = plan_steps(n, chars)
        old = ["data.source=pydocs", f"train.max_steps={n}", "model.dropout=0.0"]
        same = chosen.overrides() == old
        rows.append({"name": f"plan-{n}", "n": n, "who": "plan = earlier demo" if same else "plan",
                     "what": f"{chosen.corpus}, dropout {chosen.dropout:g}", "passes": chosen.passes,
                     "overrides": chosen.overrides()})
        if not same:
            earlier.append({"name": f"earlier-{n}", "n": n, "who": "earlier demo", "what": "pydocs, dropout 0",
                            "passes": n * TOKENS_PER_STEP / chars["pydocs"], "overrides": old})
    return rows + sorted(earlier, key=lambda r: -r["n"])


def table(results: dict, order: list[dict]) -> str:
    lines = ["| N | demo | corpus, dropout | steps run (best) | passes | test ppl | bigram ppl | R | R_pydocs | "
             "wall (min) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in order:
        head = f"| {row['n']:,} | {row['who']} | {row['what']} |"
        r = results.get(row["name"])
        if r is None:
            lines.append(f"{head} not run (time cap) | {row['passes']:.1f} | | | | | |")
            continue
        lines.append(f"{head} {r['steps_run']:,} ({r['best_step']:,}) | {row['passes']:.1f} | {r['test_ppl']:.3f} | "
                     f"{r['bigram_ppl']:.3f} | **{r['R']:.2f}** | {r['R_pydocs']:.2f} | {r['minutes']:.1f} |")
    return "\n".join(lines)


def verdicts(results: dict, steps: list[int]) -> list[str]:
    """Each target with its figures and whether this run met it."""
    R = {n: results[f"plan-{n}"]["R"] for n in steps if f"plan-{n}" in results}
    out = []
    if 1500 in R:
        out.append(f"R >= {TARGET_R_1500} at N = 1,500: {R[1500]:.2f}, {'met' if R[1500] >= TARGET_R_1500 else 'MISSED'}")
    ns = sorted(R)
    for a, b in zip(ns, ns[1:]):
        ok = R[b] >= R[a] * (1 - SLACK)
        out.append(f"R at {b:,} >= R at {a:,} minus 1 %: {R[b]:.2f} vs {R[a]:.2f}, {'met' if ok else 'MISSED'}")
    if 6000 in R:
        out.append(f"R >= {TARGET_R_6000} at N = 6,000: {R[6000]:.2f}, {'met' if R[6000] >= TARGET_R_6000 else 'MISSED'}")
    for n in ns:
        old = results.get(f"earlier-{n}")
        if old is not None:
            new = results[f"plan-{n}"]["R_pydocs"]
            out.append(f"R_pydocs at {n:,} not below the earlier demo's: {new:.2f} vs {old['R_pydocs']:.2f}, "
                       f"{'met' if new >= old['R_pydocs'] * (1 - SLACK) else 'MISSED'}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default="1000,1500,3000,6000")
    p.add_argument("--cap-minutes", type=float, default=50.0)
    p.add_argument("--out", default="runs/bench-demo-scaling")
    args = p.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    order = plans(steps)
    results, spent, rate = {}, 0.0, None  # rate: minutes per step, measured on the rows run so far
    for row in order:
        name, n = row["name"], row["n"]
        if rate is not None and spent + rate * n > args.cap_minutes:
            print(f"{name}: skipped, {spent + rate * n:.0f} min would pass the {args.cap_minutes:g}-minute cap",
                  file=sys.stderr)
            continue
        results[name] = stored_row(Path(args.out) / name, row["overrides"]) or run_row(name, row["overrides"],
                                                                                   Path(args.out))
        spent += results[name]["minutes"]
        rate = spent / sum(r["n"] for r in order if r["name"] in results)
        print(json.dumps({name: results[name]}), file=sys.stderr)
    checks = verdicts(results, steps)
    from seqlab.commands.demo import DROPOUT_FROM_PASSES, LATE_DROPOUT, MAX_STEPS, PYDOCS_MAX_PASSES

    md = "\n".join([
        "## `make demo` scaling: the plan at N steps, on held-out test characters",
        "",
        f"_{cpu_line()}; 2 threads; one row at a time, each to completion (fixed seed 1337, no time budget, no "
        f"early stop); {spent:.0f} min in all (cap {args.cap_minutes:g} min). The wall column is each row's own "
        "time and includes whatever else ran on the machine meanwhile: compare the quality columns across rows, "
        "not the wall times._",
        "",
        "A machine that trains N steps in the demo's 4-minute budget gets the plan "
        "`seqlab.commands.demo.plan_steps(N, ...)`: pydocs while the run makes at most "
        f"{PYDOCS_MAX_PASSES:g} passes over it, else pyprose (pydocs plus standard-library docstrings, four times "
        f"the text); dropout {LATE_DROPOUT:g} beyond {DROPOUT_FROM_PASSES:g} passes; at most {MAX_STEPS:,} steps. "
        "The best checkpoint (validation split) is scored on the test split beside the add-one bigram model "
        "counted on the same run's train split: R = bigram / seqlab perplexity. R_pydocs scores every run on the "
        "pydocs corpus's own test characters (for pyprose runs the start of their test split, never trained on), "
        "with pydocs's bigram model: the earlier demo's measure, on the same characters for every row. Rows "
        "marked \"earlier demo\" are `make demo` before this plan (pydocs, no dropout), run to the same N.",
        "",
        table(results, order),
        "",
        "Targets: " + "; ".join(checks) + ".",
    ])
    write_section("demo_scaling", md)
    print(json.dumps({"results": results, "checks": checks}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
