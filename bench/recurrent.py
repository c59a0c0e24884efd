"""BiLSTM forward + backward: seqlab's equations path (the readable per-step implementation) vs torch.nn.LSTM.

A 2-layer bidirectional LSTM, 256 hidden units per direction, input 256, batch 32 x 64 steps, fp32 on the
CPU. One measurement = forward, a sum over the outputs, backward.

What is compared: seqlab's ``RecurrentStack`` has two paths. Its "fused" path (the default) is torch's own
LSTM kernel: a storage-less torch.nn.LSTM on the meta device run on seqlab's parameters with
``torch.func.functional_call``. Timing it against torch.nn.LSTM is torch against itself, so it is timed only
to show the wrapper's overhead and gets no speed ratio. The claim is the "equations" path, the readable
implementation (the gate equations as a Python loop over time, autograd for the backward), against
torch.nn.LSTM's fused kernel (oneDNN on the CPU, cuDNN on CUDA); ``ratio`` = torch.nn.LSTM's median time /
the equations path's, i.e. the equations path's speed as a fraction of torch's (below 1 = slower).

All three hold the same weights (the torch state_dict loaded into both seqlab paths); the benchmark checks the
outputs (max abs diff 1e-5) and the parameter gradients (per parameter, max abs diff / max |gradient| 1e-5)
against torch.nn.LSTM and fails otherwise. The candidates run in one process with the same thread count,
through ``common.interleaved``: a freshly shuffled order every round, the warm-up round discarded,
``gc.collect()`` before every call; figures are medians.

    .venv/bin/python bench/recurrent.py [--rounds 9] [--threads N]

Prints one JSON line last: ``peer_best`` (torch.nn.LSTM with its kernel and configuration), ``ratio`` (the
equations path, as above) and every candidate's median milliseconds per step.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from common import interleaved, median, verdict, write_section  # noqa: E402

N_LAYERS, HIDDEN, INPUT, BATCH, SEQ = 2, 256, 256, 32, 64
CONFIG = (f"{N_LAYERS} layers, bidirectional, hidden {HIDDEN}, input {INPUT}, batch {BATCH} x {SEQ} steps, "
          f"fp32, forward + backward")
# vs torch.nn.LSTM: max abs diff of the outputs (values within +-1); per parameter, max abs diff of its gradient
# over that gradient's max magnitude (gradients of a sum over 2,048 outputs reach ~1e3, so fp32 differs ~1e-3)
OUT_TOL, GRAD_TOL = 1e-5, 1e-5
TORCH, FUSED, EQUATIONS = "torch.nn.LSTM", "seqlab fused (= torch's LSTM kernel via functional_call)", \
    "seqlab equations (per-step Python loop)"
PEER_DOC = "PyTorch documentation, torch.nn.LSTM (https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)"


def build():
    """torch.nn.LSTM and seqlab's two paths on the same weights, and one input batch."""
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
    return {TORCH: ref, FUSED: fused, EQUATIONS: equations}, x


def step(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Forward, a sum over the outputs, backward; returns the outputs (batch, seq, 2*hidden)."""
    module.zero_grad(set_to_none=True)
    out, _ = module(x)
    out.sum().backward()
    return out.detach()


def untimed_step(module: nn.Module, x: torch.Tensor) -> None:
    """``step`` returning None, so that ``interleaved`` times it by the wall clock."""
    step(module, x)


def check(modules: dict[str, nn.Module], x: torch.Tensor) -> dict[str, tuple[float, float]]:
    """name -> (max abs diff of the outputs, max relative diff of the parameter gradients) vs torch.nn.LSTM.

    Also serves as the first warm-up.
    """
    reference = step(modules[TORCH], x)
    ref_grads = {name: p.grad.clone() for name, p in modules[TORCH].named_parameters()}
    diffs = {}
    for name, module in modules.items():
        out = step(module, x)
        grad = max(((p.grad - ref_grads[pname]).abs().max() / ref_grads[pname].abs().max()).item()
                   for pname, p in module.named_parameters())
        diffs[name] = ((out - reference).abs().max().item(), grad)
    return diffs


def kernel() -> str:
    """The fused kernel torch.nn.LSTM uses for fp32 on this CPU."""
    if torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled:
        return "oneDNN fused kernel"
    return "ATen fused kernel"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds kept (after 1 warm-up round)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = PyTorch's default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    modules, x = build()
    diffs = check(modules, x)
    ok = all(out <= OUT_TOL and grad <= GRAD_TOL for out, grad in diffs.values())
    times = interleaved({name: partial(untimed_step, m, x) for name, m in modules.items()}, args.rounds)
    ms = {name: 1e3 * median(ts) for name, ts in times.items()}
    peer = f"{TORCH} ({kernel()}, {CONFIG}, CPU, {threads} threads)"
    result = verdict({EQUATIONS: ms[EQUATIONS]}, {peer: ms[TORCH]}, higher_is_better=False)
    ratio = result["ratio"]

    def speed(name: str) -> str:
        return "— (torch's own kernel)" if name == FUSED else f"{ms[TORCH] / ms[name]:.2f}"

    rows = "\n".join(f"| {name} | {ms[name]:.1f} | {speed(name)} | {diffs[name][0]:.1e} | {diffs[name][1]:.1e} |"
                     for name in modules)
    write_section("recurrent", f"""## Recurrent: BiLSTM forward + backward (bench/recurrent.py)

{CONFIG}, CPU, {threads} threads on every candidate; the same weights everywhere. One measurement = forward,
a sum over the outputs, backward. {args.rounds} rounds in a freshly shuffled order, one warm-up round discarded,
`gc.collect()` before every call; medians.

seqlab's "fused" path is **torch's own LSTM kernel**: a storage-less torch.nn.LSTM on the meta device, run on
seqlab's parameters with `torch.func.functional_call`. Timing it against torch.nn.LSTM is torch against itself,
so its row shows only the wrapper's overhead and gets no speed ratio. The comparison is seqlab's **equations
path** (the readable per-step implementation: the gate equations in a Python loop over time, autograd for the
backward) against torch.nn.LSTM's {kernel()}, which is the default and fastest documented way to run an
LSTM in torch on this device.

| candidate | ms / step | speed vs torch.nn.LSTM | max abs diff of outputs | max rel. diff of parameter grads |
|---|---|---|---|---|
{rows}

Tolerances vs torch.nn.LSTM (fp32): outputs, max abs diff {OUT_TOL:g}; parameter gradients, per parameter max abs
diff / max |gradient| {GRAD_TOL:g}:
**{'all within' if ok else 'EXCEEDED'}**.

**ratio (torch.nn.LSTM time / seqlab equations time) = {ratio:.2f}**: the equations path runs at {ratio:.2f}x
torch's speed ({1 / ratio:.1f}x its time). It is the readable reference implementation, not a fast path; for
speed seqlab uses torch's kernel (the fused row).

Peer: {peer}; configuration per {PEER_DOC}.""")
    print(json.dumps({"bench": "recurrent", "seqlab_best": EQUATIONS, "peer_best": peer, "ratio": ratio,
                      "torch_ms": round(ms[TORCH], 2), "seqlab_equations_ms": round(ms[EQUATIONS], 2),
                      "seqlab_fused_ms_torch_kernel": round(ms[FUSED], 2), "threads": threads,
                      "max_abs_diff_outputs": max(d[0] for d in diffs.values()),
                      "max_rel_diff_grads": max(d[1] for d in diffs.values()), "within_tolerance": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
