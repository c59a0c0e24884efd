"""`make demo` on slower and faster machines, emulated: the demo's plan at N steps, run to completion, scored on
the validation split (which chooses the plan's thresholds) and on held-out test text (which reports them).

A machine that trains N steps of the demo's probe model (3 layers of 192) in the demo's 4-minute budget gets
``seqlab.tasks.demo_plan.plan_steps(N, ...)``: a model size, a corpus, dropout and the steps that budget buys of that
size (N for the probe's size, more for a smaller one: demo_plan.STEP_TIME). This bench trains that plan to its steps
(fixed seed, the clock of steps, no time budget, no early stop) for N in 250, 500, 750, 1,000, 1,500, 3,000 and
6,000, and scores its best checkpoint (chosen on the validation split) on the validation and test splits, beside
the add-one bigram model counted on the same run's train split: R = bigram perplexity / seqlab perplexity. Every
run is also scored on the pydocs corpus's own validation and test characters (for a pyprose run they are the
start of its splits of those names and never in its train split: seqlab/data/prose.py), so that runs on either
corpus are compared on the same characters: valid R_pydocs, which chooses the thresholds, and R_pydocs, which
reports them. Rows "candidate" train every size of demo_plan.CANDIDATE_SIZES at the small N (250, 500, 750, 1,000),
rows "corpus candidate" both corpora with the plan's size (1,000, 1,500), rows "dropout candidate" the plan
without and with dropout (6,000); rows "earlier demo" are the demo before these plans (3 x 192, pydocs, no
dropout) at each N. A run that several rows name is one row.

Rows run in order of importance until the time cap (``--cap-minutes``, default 50) would be passed; a row that
would not fit is listed as not run. Each row's result is stored beside its run (``bench-row.json``); a later
invocation with the same ``--out`` reuses the rows already trained with the same overrides, so rows can be run
one invocation at a time (``--only NAME,...``); ``--chunk-minutes M`` trains at most M minutes of a row per
invocation and resumes it (bit for bit; each chunk's end adds a validation, which may add a best checkpoint
there) in the next. Targets (issue #26): R >= 3.2 at N = 1,500; R at each N at least the previous N's R minus 1 %;
R >= 3.5 at 6,000; R_pydocs never below the earlier demo's at the same N. Issue #36: at each N of the size rows,
the plan's size is the largest within 1 % of the best on valid R_pydocs (the plan's rule).

    .venv/bin/python bench/demo_scaling.py [--steps 250,500,1000,1500,3000,6000] [--size-steps 250,500,750,1000]
        [--corpus-steps 1000,1500] [--dropout-steps 6000] [--only 500-2x128-pydocs-dropout0,...]
        [--chunk-minutes M] [--cap-minutes 50]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_line, store_row, stored_row, write_section  # noqa: E402

TARGET_R_1500, TARGET_R_6000, SLACK = 3.2, 3.5, 0.01
PARTIAL = "bench-partial.json"  # an unfinished row's overrides and minutes so far (--chunk-minutes)


def pydocs_score(lm, split: str) -> tuple[float, float]:
    """(seqlab perplexity, bigram perplexity) on the pydocs corpus's ``split`` ("valid" or "test") characters,
    the bigram counted on pydocs's train split with the run's tokenizer. For a pyprose run they are the start of
    its own split of that name, never trained on (seqlab/data/prose.py)."""
    import numpy as np
    import torch

    from seqlab.data.sources import read_text, split_points
    from seqlab.metrics.lm import ngram_nll, perplexity, score_stream

    text = read_text("pydocs")
    a, b = split_points(len(text))
    train, test = (np.array(lm.tokenizer.encode(t), dtype=np.int64)
                   for t in (text[:a], text[a:b] if split == "valid" else text[b:]))
    with torch.no_grad():
        lm.model.eval()
        total, count = score_stream(lm.model, test, lm.model.cfg.max_len, 16, lm.device)
    bigram_total, bigram_count = ngram_nll(train, test, 2, lm.tokenizer.vocab_size)
    return perplexity(total, count), perplexity(bigram_total, bigram_count)


def threads_line(results: dict, out: Path) -> str:
    """The ``train.threads`` the rows of ``results`` trained on, read from each run's config.toml (rows may come
    from several invocations): "1", or e.g. "0 = every core (2) (3 rows), 1 (12 rows)"."""
    import tomllib

    counts: dict[int, int] = {}
    for name in results:
        threads = tomllib.loads((out / name / "config.toml").read_text(encoding="utf-8"))["train"]["threads"]
        counts[threads] = counts.get(threads, 0) + 1
    said = {t: f"0 = every core ({os.cpu_count()})" if t == 0 else str(t) for t in counts}
    if len(counts) == 1:
        return next(iter(said.values()))
    return ", ".join(f"{said[t]} ({n} rows)" for t, n in sorted(counts.items()))


def run_row(name: str, overrides: list[str], out: Path, chunk_minutes: float = 0.0, threads: int = 0) -> dict | None:
    """Train a row and score it (its result, stored beside the run); None while a row trained in chunks of
    ``chunk_minutes`` is unfinished (the next invocation resumes it)."""
    from seqlab.api import Interrupted, load, train_run
    from seqlab.tasks.demo_plan import DEMO_OVERRIDES
    from seqlab.tasks import resolve

    run_dir, partial = out / name, out / name / PARTIAL
    before = json.loads(partial.read_text()) if partial.exists() else None
    resume = before is not None and before["overrides"] == overrides
    chunk = [f"train.max_minutes={chunk_minutes}"] if chunk_minutes else []
    cfg = resolve("lm-char", [*DEMO_OVERRIDES, *overrides, "train.progress=false", f"train.threads={threads}",
                              *chunk])
    t0 = time.perf_counter()

    def unfinished() -> None:  # the minutes so far, for the invocation that resumes the row
        minutes = (before["minutes"] if resume else 0.0) + (time.perf_counter() - t0) / 60
        partial.write_text(json.dumps({"overrides": overrides, "minutes": minutes}) + "\n", encoding="utf-8")

    try:
        train_run(cfg, run_dir, force=not resume, resume=resume, log=lambda *a, **k: None)
    except Interrupted:  # SIGINT or SIGTERM: checkpointed, resumed by the next invocation
        unfinished()
        raise
    minutes = (before["minutes"] if resume else 0.0) + (time.perf_counter() - t0) / 60
    if load(run_dir, last=True).checkpoint["step"] < cfg.train.max_steps:
        unfinished()
        return None
    partial.unlink(missing_ok=True)
    result = score(run_dir, minutes)
    store_row(run_dir, overrides, result)
    return result


def score(run_dir: Path, minutes: float) -> dict:
    """A trained row's figures: its best checkpoint on its own validation and test splits and on pydocs's (R =
    bigram / seqlab perplexity), the best and last steps, and ``minutes``."""
    from seqlab.api import load
    from seqlab.tasks.demo_plan import baselines

    lm = load(run_dir)
    (_, _, ppl), _, (_, _, bigram) = baselines(lm, "test")
    (_, _, valid_ppl), _, (_, _, valid_bigram) = baselines(lm, "valid")
    (pydocs_valid_ppl, pydocs_valid_bigram), (old_ppl, old_bigram) = (pydocs_score(lm, s) for s in ("valid", "test"))
    return {"valid_ppl": valid_ppl, "valid_bigram_ppl": valid_bigram, "R_valid": valid_bigram / valid_ppl,
            "pydocs_valid_ppl": pydocs_valid_ppl, "R_valid_pydocs": pydocs_valid_bigram / pydocs_valid_ppl,
            "test_ppl": ppl, "bigram_ppl": bigram, "R": bigram / ppl, "pydocs_test_ppl": old_ppl,
            "R_pydocs": old_bigram / old_ppl, "best_step": lm.checkpoint["step"],
            "steps_run": load(run_dir, last=True).checkpoint["step"], "minutes": minutes}


def plans(steps: list[int], size_steps: list[int], corpus_steps: list[int], dropout_steps: list[int]) -> list[dict]:
    """The rows in the order they run: the plan at each N (of ``steps`` and ``size_steps``), each size candidate
    at each of ``size_steps``, each corpus with the plan's size at each of ``corpus_steps``, the plan without and
    with dropout at each of ``dropout_steps``, then the earlier demo, longest first; a run that several of them
    name is one row, with every name in "who"."""
    from dataclasses import replace

    from seqlab.tasks.demo_plan import (CANDIDATE_SIZES, CORPORA, LATE_DROPOUT, SIZES, TOKENS_PER_STEP, Plan,
                                        plan_steps, train_chars)

    chars = {c: train_chars(c) for c in CORPORA}
    rows: dict[tuple, dict] = {}

    def add(n: int, who: str, p: Plan) -> None:  # a row's run is named by what it trains, whoever names it
        key, name = tuple(p.overrides()), f"{n}-{p.n_layers}x{p.d_model}-{p.corpus}-dropout{p.dropout:g}"
        if key in rows:
            rows[key]["who"].append(who)
            return
        rows[key] = {"name": name, "n": n, "who": [who], "size": (p.n_layers, p.d_model), "steps": p.steps,
                     "what": f"{p.n_layers} x {p.d_model}, {p.corpus}, dropout {p.dropout:g}", "passes": p.passes,
                     "overrides": list(key)}

    for n in sorted({*steps, *size_steps}):
        add(n, "plan", plan_steps(n, chars))
    for n in size_steps:
        for size in CANDIDATE_SIZES:
            add(n, "candidate", plan_steps(n, chars, size=size))
    for n in corpus_steps:
        for corpus in CORPORA:
            add(n, "corpus candidate", plan_steps(n, chars, corpus))
    for n in dropout_steps:
        for dropout in (0.0, LATE_DROPOUT):
            add(n, "dropout candidate", replace(plan_steps(n, chars), dropout=dropout))
    for n in sorted(steps, reverse=True):
        earlier = Plan("pydocs", n, 0.0, n * TOKENS_PER_STEP / chars["pydocs"], n, *SIZES[0])
        add(n, "earlier demo", earlier)
    return list(rows.values())


def table(results: dict, order: list[dict]) -> str:
    lines = ["| N | demo | size, corpus, dropout | steps run (best) | passes | valid R | valid R_pydocs | test ppl | "
             "bigram ppl | test R | R_pydocs | wall (min) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in sorted(order, key=lambda r: (r["n"], r["name"])):
        head = f"| {row['n']:,} | {' = '.join(row['who'])} | {row['what']} |"
        r = results.get(row["name"])
        if r is None:
            lines.append(f"{head} not run ({row['steps']:,} steps) | {row['passes']:.1f} | | | | | | | |")
            continue
        lines.append(f"{head} {r['steps_run']:,} ({r['best_step']:,}) | {row['passes']:.1f} | {r['R_valid']:.2f} | "
                     f"**{r['R_valid_pydocs']:.2f}** | {r['test_ppl']:.3f} | {r['bigram_ppl']:.3f} | "
                     f"**{r['R']:.2f}** | {r['R_pydocs']:.2f} | {r['minutes']:.1f} |")
    return "\n".join(lines)


def verdicts(results: dict, order: list[dict], steps: list[int], size_steps: list[int]) -> list[str]:
    """Each target with its figures and whether this run met it."""
    name = {(r["n"], who): r["name"] for r in order for who in r["who"]}
    R = {n: results[name[n, "plan"]]["R"] for n in sorted({*steps, *size_steps}) if name[n, "plan"] in results}
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
        old = results.get(name.get((n, "earlier demo")))
        if old is not None and name[n, "earlier demo"] != name[n, "plan"]:
            new = results[name[n, "plan"]]["R_pydocs"]
            out.append(f"R_pydocs at {n:,} not below the earlier demo's: {new:.2f} vs {old['R_pydocs']:.2f}, "
                       f"{'met' if new >= old['R_pydocs'] * (1 - SLACK) else 'MISSED'}")
    for n in size_steps:  # the plan's rule for the size: the largest within SLACK of the best on validation
        candidates = [r for r in order if r["n"] == n and "candidate" in r["who"] and r["name"] in results]
        if len(candidates) < 2:
            continue
        valid = {r["size"]: results[r["name"]]["R_valid_pydocs"] for r in candidates}
        best = max(valid.values())
        planned = next(r["size"] for r in order if r["n"] == n and "plan" in r["who"])
        rule = max((size for size in valid if valid[size] >= best * (1 - SLACK)), key=lambda s: s[0] * s[1] ** 2)
        figures = ", ".join(f"{a} x {b} {v:.2f}" for (a, b), v in valid.items())
        out.append(f"the plan's size at N = {n:,} is the largest within 1 % of the best on valid R_pydocs "
                   f"({figures}): {planned[0]} x {planned[1]}, {'met' if planned == rule else 'MISSED'}")
    for role, what in (("corpus candidate", "corpus"), ("dropout candidate", "dropout")):
        for n in sorted({r["n"] for r in order if role in r["who"]}):
            rows = [r for r in order if r["n"] == n and role in r["who"] and r["name"] in results]
            planned = [r for r in rows if "plan" in r["who"]]
            if len(rows) < 2 or not planned:
                continue
            valid = {r["what"]: results[r["name"]]["R_valid_pydocs"] for r in rows}
            ok = valid[planned[0]["what"]] >= max(valid.values()) * (1 - SLACK)
            figures = ", ".join(f"{k} {v:.2f}" for k, v in valid.items())
            out.append(f"the plan's {what} at N = {n:,} is within 1 % of the best on valid R_pydocs ({figures}): "
                       f"{planned[0]['what']}, {'met' if ok else 'MISSED'}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default="250,500,1000,1500,3000,6000", help="the N of the plans (and --size-steps)")
    p.add_argument("--size-steps", default="250,500,750,1000", help="the N at which every size candidate is trained")
    p.add_argument("--corpus-steps", default="1000,1500", help="the N at which both corpora are trained (plan's size)")
    p.add_argument("--dropout-steps", default="6000", help="the N at which the plan runs without and with dropout")
    p.add_argument("--only", default="", help="train only these rows (names, comma-separated); the others are "
                                              "reused where stored, else listed as not run")
    p.add_argument("--chunk-minutes", type=float, default=0.0,
                   help="train at most this long of a row per invocation, resumed by the next (0: no limit)")
    p.add_argument("--cap-minutes", type=float, default=50.0)
    p.add_argument("--threads", type=int, default=0, help="train.threads of every row (0 = every core)")
    p.add_argument("--out", default="runs/bench-demo-scaling")
    args = p.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    size_steps = [int(s) for s in args.size_steps.split(",") if s]
    corpus_steps = [int(s) for s in args.corpus_steps.split(",") if s]
    dropout_steps = [int(s) for s in args.dropout_steps.split(",") if s]
    only = {s for s in args.only.split(",") if s}
    order = plans(steps, size_steps, corpus_steps, dropout_steps)
    results, spent, rate = {}, 0.0, None  # rate: minutes per step, measured on the rows run so far
    for row in order:
        name, n = row["name"], row["steps"]
        stored = stored_row(Path(args.out) / name, row["overrides"])
        if stored is not None and "R_valid_pydocs" not in stored:  # stored before this figure: score its run again
            stored = score(Path(args.out) / name, stored["minutes"])
            store_row(Path(args.out) / name, row["overrides"], stored)
        if stored is None and only and name not in only:
            continue
        if stored is None and rate is not None and spent + rate * n > args.cap_minutes:
            print(f"{name}: skipped, {spent + rate * n:.0f} min would pass the {args.cap_minutes:g}-minute cap",
                  file=sys.stderr)
            continue
        result = stored or run_row(name, row["overrides"], Path(args.out), args.chunk_minutes, args.threads)
        if result is None:
            print(f"{name}: unfinished, resumed by the next invocation (--chunk-minutes)", file=sys.stderr)
            continue
        results[name] = result
        spent += result["minutes"]
        rate = spent / sum(r["steps"] for r in order if r["name"] in results)
        print(json.dumps({name: result}), file=sys.stderr)
    checks = verdicts(results, order, steps, size_steps)
    from seqlab.tasks.demo_plan import (CANDIDATE_SIZES, DROPOUT_FROM_PASSES, LATE_DROPOUT, MAX_STEPS,
                                        PYDOCS_MAX_PASSES, SIZE_FROM, SIZE_LR, SIZES, STEP_TIME)

    sizes = "; ".join(f"{a} x {b} from {SIZE_FROM[a, b]:,} steps" for a, b in SIZES[:-1])
    times = "; ".join(f"{a} x {b}: {STEP_TIME[a, b]:g}, lr {SIZE_LR[a, b]:g}" for a, b in CANDIDATE_SIZES)
    md = "\n".join([
        "## `make demo` scaling: the plan at N steps, chosen on validation, reported on held-out test characters",
        "",
        f"_{cpu_line()}; `train.threads = {threads_line(results, Path(args.out))}`"
        + "; each row to completion (fixed seed 1337, the clock of steps, no time budget, no early stop), the rows "
        f"of one invocation one after another; {spent:.0f} min of rows in all. The wall column is each row's own "
        "time and includes whatever else ran on the machine meanwhile (other invocations' rows included, where "
        "they ran side by side): compare the quality columns across rows, not the wall times. Rows marked not run "
        "were not trained by the invocations that wrote this section._",
        "",
        "A machine that trains N steps of the demo's probe model (3 layers of width 192) in its 4-minute budget "
        "gets the plan `seqlab.tasks.demo_plan.plan_steps(N, ...)`: the model's size (layers x width, 4 heads, "
        f"d_ff = 4 x width): {sizes}, else {SIZES[-1][0]} x {SIZES[-1][1]}, trained for the steps N buys of it "
        f"(the time of a step relative to 3 x 192, and the peak learning rate: {times}); pydocs while the run "
        f"makes at most {PYDOCS_MAX_PASSES:g} passes over it, else pyprose (pydocs plus standard-library "
        f"docstrings, four times the text); dropout {LATE_DROPOUT:g} beyond {DROPOUT_FROM_PASSES:g} passes; at "
        f"most {MAX_STEPS:,} steps. The best checkpoint (validation split) is scored on the validation and test "
        "splits beside the add-one bigram model counted on the same run's train split: R = bigram / seqlab "
        "perplexity (valid R, test R). valid R_pydocs and R_pydocs score every run on the pydocs corpus's own "
        "validation and test characters (for pyprose runs the start of their splits, never trained on), with "
        "pydocs's bigram model, so that every row is scored on the same characters. **Every threshold is chosen "
        "on valid R_pydocs (a lead under 1 % counts as level) and reported on the test columns.** Rows "
        "\"candidate\" train each size at the same compute, rows \"corpus candidate\" each corpus with the plan's "
        "size, rows \"dropout candidate\" the plan without and with dropout; rows \"earlier demo\" are "
        "`make demo` before these plans (3 x 192, pydocs, no dropout), run to the same N.",
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
