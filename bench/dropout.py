"""Dropout cost on CPU: seqlab.nn.Dropout vs torch's F.dropout inside a Transformer LM training step.

    .venv/bin/python bench/dropout.py            # 6 layers, d_model 384, 6 heads, batch 16 x 256, bf16 autocast
    .venv/bin/python bench/dropout.py --rounds 1 --batch 4

Three candidates, each the same model (same seed, explicit attention path, fused AdamW) built once, in one
process: dropout 0; dropout 0.1 with torch's ``F.dropout`` (one Bernoulli draw per element) patched in
everywhere seqlab draws a mask; dropout 0.1 with seqlab's own (16-bit slices of 64-bit random integers).
A candidate's call is ``--steps`` training steps; the calls are timed with bench/common.py's ``interleaved``
(a freshly shuffled order every round, one more warm-up round discarded, ``gc.collect()`` before every call).
Reports seconds per step of the median round and ratio = torch's time / seqlab's time (above 1: seqlab faster).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import bf16_rows, interleaved, median, require, write_section  # noqa: E402

CANDIDATES = {  # name: (dropout p, who draws the masks, the configuration its row names)
    "no dropout": (0.0, "seqlab", "p = 0"),
    "torch F.dropout": (0.1, "torch", "p = 0.1, `torch.nn.functional.dropout` (one Bernoulli draw per element) "
                                      "patched in wherever seqlab draws a mask"),
    "seqlab Dropout": (0.1, "seqlab", "p = 0.1, `seqlab.nn.dropout` (16-bit slices of 64-bit random integers)"),
}


@contextlib.contextmanager
def masks_by(which: str):
    """Within it, seqlab draws its dropout masks with ``which``: "seqlab" (its own) or "torch" (``F.dropout``
    patched in where seqlab draws masks: the Dropout modules and the attention weights)."""
    import torch.nn.functional as F

    import seqlab.nn.attention as attention
    import seqlab.nn.dropout as dropout_module

    ours = dropout_module.dropout
    if which == "torch":
        dropout_module.dropout = attention.dropout = lambda x, q, training=True: F.dropout(x, q, training)
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


def check_draws(p: float, dtype) -> dict:
    """:func:`check_dropout` on each side's draw (seqlab's ``dropout``, and ``F.dropout`` as patched in by
    :func:`masks_by`) of one tensor of ``CHECK_ELEMENTS`` nonzero values in ``dtype``: name -> what it measured."""
    import torch

    from seqlab.nn import dropout as dropout_module

    torch.manual_seed(1)
    x = (torch.rand(CHECK_ELEMENTS, dtype=torch.float64) + 0.5).to(dtype)  # nonzero: a zero out means dropped
    found = {}
    for which in ("seqlab", "torch"):
        with masks_by(which):
            out = dropout_module.dropout(x, p, True)
        found[which] = check_dropout(x, out, p, dtype)
    return found


def make_steps(p: float, which: str, args):
    """A candidate for ``interleaved``: ``args.steps`` training steps of one model (built once, same seed on every
    candidate) with dropout ``p`` drawn by ``which``; returns None, so the wall clock times the call."""
    import torch

    from seqlab.metrics.lm import nll_sum
    from seqlab.models.transformer import TransformerLM, TransformerLMConfig
    from seqlab.nn.attention import set_attention_impl

    torch.manual_seed(0)
    cfg = TransformerLMConfig(vocab_size=65, n_layers=args.layers, n_heads=args.heads, d_model=args.d_model,
                              d_ff=4 * args.d_model, max_len=args.seq, dropout=p)
    model = TransformerLM(cfg).train()
    set_attention_impl(model, "equations")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = torch.randint(65, (args.batch, args.seq))
    y = torch.randint(65, (args.batch, args.seq))

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = nll_sum(model(x), y)[0] / y.numel()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def steps() -> None:
        with masks_by(which):
            for _ in range(args.steps):
                step()

    return steps


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--d-model", type=int, default=384)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args(argv)

    import torch

    emulated = bf16_rows()  # bf16 autocast where the CPU computes bf16 natively, else fp32 (and the section says why)
    args.precision = "fp32" if emulated else "bf16"

    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    checked = {str(d).replace("torch.", ""): check_draws(0.1, d) for d in sorted({torch.float32, dtype}, key=str)}
    candidates = {name: make_steps(p, which, args) for name, (p, which, _) in CANDIDATES.items()}
    # shuffled rounds, the warm-up round discarded, gc.collect() before every call (bench/common.py)
    runs = {name: [s / args.steps for s in kept] for name, kept in interleaved(candidates, args.rounds).items()}
    med = {k: median(v) for k, v in runs.items()}
    ratio = med["torch F.dropout"] / med["seqlab Dropout"]
    if not args.no_results:
        rows = "\n".join(f"| {k}: {CANDIDATES[k][2]} | {med[k]:.3f} | {', '.join(f'{x:.3f}' for x in v)} |"
                         for k, v in runs.items())
        write_section("dropout", "\n".join([
            "## Dropout on CPU: seqlab.nn.Dropout vs torch F.dropout in a training step (bench/dropout.py)",
            "",
            f"Transformer LM {args.layers} layers, d_model {args.d_model}, {args.heads} heads, batch {args.batch} x "
            f"{args.seq}, {'bf16 autocast' if args.precision == 'bf16' else 'fp32'}, explicit attention, fused AdamW, {torch.get_num_threads()} threads; "
            f"dropout 0.1 on embeddings, attention weights, FFN hidden units and residual branches. Each candidate "
            f"is one model built once (same seed); {args.rounds} rounds of {args.steps} steps per candidate, in a "
            "freshly shuffled order every round, one more warm-up round discarded, `gc.collect()` before every "
            "call, all in one process (bench/common.py `interleaved`); s / step of the median round."
            + (f" No bf16 row: {emulated}." if emulated else ""),
            "",
            "| dropout | s / step (median) | rounds (s / step) |",
            "| --- | ---: | --- |",
            rows,
            "",
            "Checked before the timing (a failure writes no section), each side's draw at p = 0.1 on "
            f"{CHECK_ELEMENTS:,} nonzero elements: every kept element is x / (1 - p) within γ_2 of its dtype plus "
            "seqlab's 2^-16 probability grid, and the kept count lies within "
            f"{SDS:g} binomial standard deviations of n (1 - p): "
            + "; ".join(f"{d} {w} kept {c['kept']:,} (expected {c['expected']:,.0f} ± {c['spread']:,.0f})"
                        for d, found in checked.items() for w, c in found.items()) + ".",
            "",
            f"Ratio torch / seqlab: **{ratio:.2f}** (above 1: seqlab faster). Dropout's remaining cost over no dropout: "
            f"{med['seqlab Dropout'] / med['no dropout']:.2f}x (torch's: {med['torch F.dropout'] / med['no dropout']:.2f}x).",
        ]))
    summary = {"benchmark": "dropout",
               "peer_best": f"torch F.dropout (one Bernoulli draw per element) patched into the same step, "
                            f"{args.precision}, {torch.get_num_threads()} threads",
               "ratio": ratio, **{k: round(v, 4) for k, v in med.items()}}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
