"""Dropout cost on CPU: seqlab.nn.Dropout vs torch's F.dropout inside a Transformer LM training step.

    .venv/bin/python bench/dropout.py            # 6 layers, d_model 384, 6 heads, batch 16 x 256, bf16 autocast
    .venv/bin/python bench/dropout.py --rounds 1 --batch 4 [--no-compile] [--no-results]

Six candidates, each the same model (same seed, explicit attention path, fused AdamW) built once, in one process:
dropout 0; dropout 0.1 with torch's ``F.dropout`` (one Bernoulli draw per element) patched in everywhere seqlab
draws a mask; dropout 0.1 with seqlab's own (16-bit slices of 64-bit random integers): each eager, and each with
the model under ``torch.compile`` with default options (what seqlab's trainer does with ``train.compile = true``).
The loss, backward call and optimizer step stay eager on every side. A compiled candidate's first step (its
compile) is made before the timing and reported apart, with the graph breaks dynamo counted while compiling it
(inductor draws torch's masks with its own generator; seqlab's ``Tensor.random_`` was a graph break with torch
2.13); a compile that fails leaves the candidate out and the section gives the error it raised.
A candidate's call is ``--steps`` training steps; the calls are timed with bench/common.py's ``interleaved``
(a freshly shuffled order every round, one more warm-up round discarded, ``gc.collect()`` before every call).
Reports seconds per step of the median round and, eager against eager and compiled against compiled, ratio =
torch's time / seqlab's time (above 1: seqlab faster); the JSON line's ``ratio`` is the peer's best (either mode)
over seqlab's best. Each side's draw is checked eagerly and compiled before the timing (:func:`check_draws`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import bf16_rows, interleaved, median, require, verdict, write_section  # noqa: E402

COMPILE = "`torch.compile(model)`, default options"  # as seqlab's trainer compiles with train.compile = true
SIDES = {  # name: (dropout p, who draws the masks, the configuration its rows name)
    "no dropout": (0.0, "seqlab", "p = 0"),
    "torch F.dropout": (0.1, "torch", "p = 0.1, `torch.nn.functional.dropout` (one Bernoulli draw per element) "
                                      "patched in wherever seqlab draws a mask"),
    "seqlab Dropout": (0.1, "seqlab", "p = 0.1, `seqlab.nn.dropout` (16-bit slices of 64-bit random integers)"),
}
MODES = {"eager": "eager", "compiled": COMPILE}  # each side in each mode: like is timed against like


def candidate_names(compile: bool) -> list[str]:
    """Every candidate, ``SIDE, MODE`` (the compiled ones only with ``compile``)."""
    return [f"{side}, {mode}" for mode in (MODES if compile else ["eager"]) for side in SIDES]


def torch_dropout(x, p: float, training: bool = True):
    """torch's ``F.dropout`` with seqlab's ``dropout`` signature: one function object, so that a compiled graph's
    guard on the patched-in function holds from one call to the next."""
    import torch.nn.functional as F

    return F.dropout(x, p, training)


@contextlib.contextmanager
def masks_by(which: str):
    """Within it, seqlab draws its dropout masks with ``which``: "seqlab" (its own) or "torch" (``F.dropout``
    patched in where seqlab draws masks: the Dropout modules and the attention weights)."""
    import seqlab.nn.attention as attention
    import seqlab.nn.dropout as dropout_module

    ours = dropout_module.dropout
    if which == "torch":
        dropout_module.dropout = attention.dropout = torch_dropout
    try:
        yield
    finally:
        dropout_module.dropout = attention.dropout = ours


CHECK_ELEMENTS = 1 << 20  # elements of the tensor each side's dropout is checked on
SDS = 5.0  # the keep count's allowed distance from its expectation, in binomial standard deviations


def check_dropout(x, out, p: float, dtype) -> dict:
    """Is ``out`` an inverted dropout of ``x`` with drop probability ``p``? Every element is either 0 or x / (1 - p)
    within rounding (the mask cast to ``dtype`` and one multiply: 2 roundings, |rel| <= γ_2(dtype), plus seqlab's
    probability grid: it applies q = round(p * 2^16) / 2^16, so 1 / (1 - q) lies within 2^-16 / (1 - p)^2 of
    1 / (1 - p) relatively), and the kept count lies within ``SDS`` binomial standard deviations of n (1 - p)
    (seqlab.base.bounds.binomial_sd: a sampling bound, a fair draw fails it in 6e-7 of runs; the grid moves the
    expectation by at most n 2^-17, counted in). Returns what was measured; the bench fails (no section) otherwise."""
    import torch

    from seqlab.base.bounds import binomial_sd, gamma

    n = x.numel()
    kept = out != 0
    want = x.double() / (1 - p)
    rel = gamma(2, dtype) + 2.0 ** -16 / (1 - p) ** 2
    err = ((out.double() - want).abs() - rel * want.abs())[kept]
    worst = float(err.max()) if err.numel() else 0.0
    count = int(kept.sum())
    spread = SDS * binomial_sd(n, 1 - p) + n * 2.0 ** -17
    require(worst <= 0,
            f"dropout output is not x / (1 - p) on its kept elements: worst excess {worst:.3e} over the bound "
            f"{rel:.2e} x |x / (1 - p)| ({dtype})")
    require(abs(count - n * (1 - p)) <= spread,
            f"dropout kept {count:,} of {n:,} elements; expected {n * (1 - p):,.0f} +- {spread:,.0f} "
            f"({SDS:g} binomial standard deviations)")
    return {"kept": count, "n": n, "expected": n * (1 - p), "spread": spread, "rel_bound": rel}


def check_draws(p: float, dtype, compiled: bool = False) -> dict:
    """:func:`check_dropout` on each side's draw (seqlab's ``dropout``, and ``F.dropout`` as patched in by
    :func:`masks_by`) of one tensor of ``CHECK_ELEMENTS`` nonzero values in ``dtype``, called eagerly or, with
    ``compiled``, through ``torch.compile`` with default options, as in the compiled candidates: name -> what it
    measured."""
    import torch

    from seqlab.nn import dropout as dropout_module

    torch.manual_seed(1)
    x = (torch.rand(CHECK_ELEMENTS, dtype=torch.float64) + 0.5).to(dtype)  # nonzero: a zero out means dropped
    found = {}
    for which in ("seqlab", "torch"):
        with masks_by(which):
            draw = dropout_module.dropout
            out = torch.compile(lambda t: draw(t, p, True))(x) if compiled else draw(x, p, True)
        found[which] = check_dropout(x, out, p, dtype)
    return found


def make_steps(p: float, which: str, compiled: bool, args):
    """A candidate for ``interleaved``: ``args.steps`` training steps (or ``n``) of one model (built once, same seed
    on every candidate) with dropout ``p`` drawn by ``which``, its forward under ``torch.compile`` where
    ``compiled``; returns None, so the wall clock times the call."""
    import torch

    from seqlab.metrics.lm import nll_sum
    from seqlab.models.transformer import TransformerLM, TransformerLMConfig
    from seqlab.nn.attention import set_attention_impl

    torch.manual_seed(0)
    cfg = TransformerLMConfig(vocab_size=65, n_layers=args.layers, n_heads=args.heads, d_model=args.d_model,
                              d_ff=4 * args.d_model, max_len=args.seq, dropout=p)
    model = TransformerLM(cfg).train()
    set_attention_impl(model, "equations")
    forward = torch.compile(model) if compiled else model  # the scope seqlab's trainer compiles
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = torch.randint(65, (args.batch, args.seq))
    y = torch.randint(65, (args.batch, args.seq))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = nll_sum(forward(x), y)[0] / y.numel()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def steps(n: int | None = None) -> None:
        with masks_by(which):
            for _ in range(args.steps if n is None else n):
                step()

    return steps


def cold_calls(candidates: dict) -> tuple[dict[str, float], dict[str, dict[str, int]], dict[str, str]]:
    """One step of each compiled candidate (its compile), made before the timing: ({name: seconds}, {name: the
    graph breaks dynamo counted while compiling it, reason -> count}, {name: the error its compile raised}); a
    candidate that raised is taken out of ``candidates``."""
    import time

    from torch._dynamo.utils import counters

    seconds, breaks, failed = {}, {}, {}
    for name in [n for n in candidates if n.endswith(", compiled")]:
        before = counters["graph_break"].copy()
        t = time.perf_counter()
        try:
            candidates[name](1)
        except Exception as e:  # noqa: BLE001 - any failure leaves the candidate out; the section says which
            failed[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            del candidates[name]
            continue
        seconds[name] = time.perf_counter() - t
        breaks[name] = {break_reason(k): v for k, v in (counters["graph_break"] - before).items()}
        print(f"cold call (compile + 1 step) {seconds[name]:.1f} s, {sum(breaks[name].values())} graph breaks: "
              f"{name}", file=sys.stderr)
    return seconds, breaks, failed


def break_reason(reason: str) -> str:
    """Dynamo's graph-break reason in one line: its first line and its explanation."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    explained = [line for line in lines[1:] if line.startswith("Explanation:")]
    return " ".join(lines[:1] + explained[:1])


def mode_ratios(med: dict[str, float]) -> dict[str, float]:
    """Per mode where both sides ran: torch's s / step over seqlab's (above 1: seqlab faster), like against like."""
    return {mode: med[f"torch F.dropout, {mode}"] / med[f"seqlab Dropout, {mode}"] for mode in MODES
            if f"torch F.dropout, {mode}" in med and f"seqlab Dropout, {mode}" in med}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=384)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true", help="leave out both sides' compiled candidates")
    parser.add_argument("--no-results", action="store_true", help="write no section (print the JSON line only)")
    args = parser.parse_args(argv)

    import torch

    emulated = bf16_rows()  # bf16 autocast where the CPU computes bf16 natively, else fp32 (and the section says why)
    args.precision = "fp32" if emulated else "bf16"

    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    modes = ["eager"] if args.no_compile else list(MODES)
    checked = {(str(d).replace("torch.", ""), mode): check_draws(0.1, d, mode == "compiled")
               for d in sorted({torch.float32, dtype}, key=str) for mode in modes}
    names = candidate_names(not args.no_compile)
    candidates = {name: make_steps(*SIDES[name.rsplit(", ", 1)[0]][:2], name.endswith(", compiled"), args)
                  for name in names}
    compile_s, breaks, failed = cold_calls(candidates)
    # shuffled rounds, the warm-up round discarded, gc.collect() before every call (bench/common.py)
    runs = {name: [s / args.steps for s in kept] for name, kept in interleaved(candidates, args.rounds).items()}
    med = {k: median(v) for k, v in runs.items()}
    ratios = mode_ratios(med)
    best = verdict({k: v for k, v in med.items() if k.startswith("seqlab")},
                   {k: v for k, v in med.items() if k.startswith("torch")}, higher_is_better=False)
    threads = torch.get_num_threads()
    precision = "bf16 autocast" if args.precision == "bf16" else "fp32"
    if not args.no_results:
        write_section("dropout", section(args, runs, med, ratios, best, compile_s, breaks, failed, checked,
                                         emulated, precision, threads))
    summary = {"benchmark": "dropout", "seqlab_best": f"{best['seqlab_best']}: {config(best['seqlab_best'])}",
               "peer_best": f"{best['peer_best']}: {config(best['peer_best'])}, {precision}, {threads} threads",
               "ratio": best["ratio"], **{f"ratio_{mode}": round(r, 3) for mode, r in ratios.items()},
               "compile_s": {k: round(v, 1) for k, v in compile_s.items()},
               "graph_breaks": {k: sum(v.values()) for k, v in breaks.items()}, "could_not_run": failed,
               **{k: round(v, 4) for k, v in med.items()}}
    print(json.dumps(summary))
    return summary


def config(name: str) -> str:
    """A candidate's configuration, as its row names it."""
    side, mode = name.rsplit(", ", 1)
    return f"{SIDES[side][2]}; {MODES[mode]}"


def section(args, runs, med, ratios, best, compile_s, breaks, failed, checked, emulated, precision,
            threads) -> str:
    rows = "\n".join(f"| {k}: {config(k)} | {med[k]:.3f} | {', '.join(f'{x:.3f}' for x in v)} | "
                     f"{f'{compile_s[k]:.1f}' if k in compile_s else '-'} | "
                     f"{sum(breaks[k].values()) if k in breaks else '-'} |" for k, v in runs.items())
    cost = "; ".join(f"{mode}: seqlab {med[f'seqlab Dropout, {mode}'] / med[f'no dropout, {mode}']:.2f}x, torch "
                     f"{med[f'torch F.dropout, {mode}'] / med[f'no dropout, {mode}']:.2f}x" for mode in ratios
                     if f"no dropout, {mode}" in med)
    lines = [
        "## Dropout on CPU: seqlab.nn.Dropout vs torch F.dropout in a training step (bench/dropout.py)",
        "",
        f"Transformer LM {args.layers} layers, d_model {args.d_model}, {args.heads} heads, batch {args.batch} x "
        f"{args.seq}, {precision}, explicit attention, fused AdamW, {threads} threads; dropout 0.1 on embeddings, "
        "attention weights, FFN hidden units and residual branches. Each side runs eager and with the model under "
        f"{COMPILE}, as seqlab's trainer compiles with `train.compile = true` (the loss, backward call and optimizer "
        "step eager on every side). Each candidate is one model "
        f"built once (same seed); {args.rounds} rounds of {args.steps} steps per candidate, in a freshly shuffled "
        "order every round, one more warm-up round discarded, `gc.collect()` before every call, all in one process "
        "(bench/common.py `interleaved`); s / step of the median round. A compiled candidate's first step (its "
        "compile) is made before the timing and shown apart." + (f" No bf16 row: {emulated}." if emulated else ""),
        "",
        "| dropout | s / step (median) | rounds (s / step) | compile + first step (s) | graph breaks |",
        "| --- | ---: | --- | ---: | ---: |",
        rows,
    ]
    if args.no_compile:
        lines += ["", "No compiled candidates in this run (`--no-compile`): the ratio compares eager with eager only."]
    how = {"eager": "eager", "compiled": "through `torch.compile` (default options)"}  # how the draws were checked
    split = {k: v for k, v in breaks.items() if v}
    if split:
        lines += ["", "Graph breaks dynamo counted while compiling (the compiled model runs as separate graphs with "
                  "eager code between them): " + "; ".join(f"{k}: " + ", ".join(f"{n} x `{r}`" for r, n in v.items())
                                                           for k, v in split.items()) + "."]
    for name, error in failed.items():
        lines += ["", f"Could not run: {name} ({config(name)}): its compile raised `` {error} ``."]
    lines += [
        "",
        "Checked before the timing (a failure writes no section), each side's draw at p = 0.1 on "
        f"{CHECK_ELEMENTS:,} nonzero elements, {' and '.join(how[m] for m in how if m in {m for _, m in checked})}: "
        "every kept element is x / (1 - p) within γ_2 of its dtype plus seqlab's 2^-16 probability grid, and the kept "
        f"count lies within {SDS:g} binomial standard deviations of n (1 - p): "
        + "; ".join(f"{d} {mode} {w} kept {c['kept']:,} (expected {c['expected']:,.0f} ± {c['spread']:,.0f})"
                    for (d, mode), found in checked.items() for w, c in found.items()) + ".",
        "",
        "Ratio torch / seqlab, like against like (above 1: seqlab faster): "
        + "; ".join(f"{MODES[mode]} on both sides: **{r:.2f}**" for mode, r in ratios.items()) + ".",
        f"Best against best, torch's best ({best['peer_best']}) / seqlab's best ({best['seqlab_best']}): "
        f"**{best['ratio']:.2f}**. Dropout's remaining cost over no dropout in the same mode: {cost}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
