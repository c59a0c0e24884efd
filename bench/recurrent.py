"""BiLSTM forward + backward: seqlab's fused path and equations path vs torch.nn.LSTM, same run.

A 2-layer bidirectional LSTM, 256 hidden units per direction, input 256, batch 32 x 64 steps, fp32 on the
CPU. Both seqlab paths hold the same weights as the torch.nn.LSTM (state_dict copied), and the benchmark
checks that they produce the same outputs. One measurement = forward, a sum over the outputs, backward. The
candidates run interleaved in shuffled rounds; each figure is a median. The equations path (a Python loop
over time) runs every ``--equations-every``-th round only, since it is several times slower.

    .venv/bin/python bench/recurrent.py [--rounds 15] [--equations-every 3] [--threads N]

Prints one JSON line last: milliseconds per step of each candidate and ``ratio`` = torch.nn.LSTM time /
seqlab fused time (above 1 = seqlab faster).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from common import machine, median, write_section  # noqa: E402

N_LAYERS, HIDDEN, INPUT, BATCH, SEQ = 2, 256, 256, 32, 64


def build():
    from seqlab.nn.recurrent import RecurrentConfig, RecurrentStack

    torch.manual_seed(0)
    ref = nn.LSTM(INPUT, HIDDEN, N_LAYERS, batch_first=True, bidirectional=True)
    cfg = RecurrentConfig(cell="lstm", input_size=INPUT, hidden_size=HIDDEN, n_layers=N_LAYERS, bidirectional=True)
    fused = RecurrentStack(cfg)
    fused.load_state_dict(ref.state_dict())
    equations = RecurrentStack(cfg)
    equations.load_state_dict(ref.state_dict())
    equations.impl = "equations"
    x = torch.randn(BATCH, SEQ, INPUT)
    return ref, fused, equations, x


def step(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Forward, a sum over the outputs, backward; returns the outputs (batch, seq, 2*hidden)."""
    module.zero_grad(set_to_none=True)
    out, _ = module(x)
    out.sum().backward()
    return out.detach()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--equations-every", type=int, default=3, help="time the equations path every N-th round")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = PyTorch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    ref, fused, equations, x = build()
    candidates = {"torch.nn.LSTM": ref, "seqlab fused": fused, "seqlab equations": equations}
    reference = step(ref, x)
    diffs = {name: (step(m, x) - reference).abs().max().item() for name, m in candidates.items()}  # also warm-up
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for r in range(args.rounds):
        order = [n for n in candidates if n != "seqlab equations" or r % args.equations_every == 0]
        random.Random(r).shuffle(order)
        for name in order:
            t = time.perf_counter()
            step(candidates[name], x)
            times[name].append(time.perf_counter() - t)
    ms = {name: 1e3 * median(ts) for name, ts in times.items()}
    ratio = ms["torch.nn.LSTM"] / ms["seqlab fused"]
    rows = "\n".join(f"| {n} | {ms[n]:.1f} | {ms['torch.nn.LSTM'] / ms[n]:.2f} | {len(times[n])} | {diffs[n]:.1e} |"
                     for n in candidates)
    write_section("recurrent", f"""## Recurrent: BiLSTM forward + backward (bench/recurrent.py)

2 layers, bidirectional, 256 hidden per direction, input 256, batch 32 x 64 steps, fp32, {torch.get_num_threads()}
threads; the same weights everywhere. Medians of interleaved, shuffled rounds.

| candidate | ms / step | speed vs torch.nn.LSTM | rounds | max abs diff of outputs vs torch |
|---|---|---|---|---|
{rows}

**ratio (torch.nn.LSTM time / seqlab fused time) = {ratio:.2f}**; the equations path runs at
{ms['torch.nn.LSTM'] / ms['seqlab equations']:.2f}x torch's speed.""")
    print(json.dumps({"seqlab_fused_ms": round(ms["seqlab fused"], 2), "torch_ms": round(ms["torch.nn.LSTM"], 2),
                      "seqlab_equations_ms": round(ms["seqlab equations"], 2), "ratio": round(ratio, 3),
                      "equations_ratio": round(ms["torch.nn.LSTM"] / ms["seqlab equations"], 3),
                      "max_abs_diff": max(diffs.values()), "machine": machine()}))


if __name__ == "__main__":
    main()
