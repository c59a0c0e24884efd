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

from bench.common import bf16_rows, interleaved, median, write_section  # noqa: E402

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
            + (f" No bf16 row: {emulated} (emulated bf16 runs 40-400x slower than fp32)." if emulated else ""),
            "",
            "| dropout | s / step (median) | rounds (s / step) |",
            "| --- | ---: | --- |",
            rows,
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
