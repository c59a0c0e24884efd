"""Training throughput of the Transformer LM: seqlab vs Hugging Face GPT-2, same config, same run.

The nanoGPT Shakespeare-char model: 6 layers, 6 heads, d_model 384, d_ff 1536, max_len 256, vocab 65,
exact GELU, pre-LN, tied embeddings, dropout 0; batch 12 x 256. One step = forward, cross-entropy (fp32
logits), backward, gradient clipping, AdamW (fused); figures are tokens/s of whole steps.

Both sides get the same axes (candidates, each named by its configuration):
- attention: HF's ``attn_implementation`` "sdpa" and "eager"; seqlab's ``impl`` "fused" (SDPA) and
  "equations" (explicit matmuls, seqlab/nn/attention.py);
- compile: eager, or ``torch.compile`` of the model (the same scope on both sides: the loss, backward call and
  optimizer stay eager); ``--no-compile`` drops the compiled candidates of both sides;
- precision: fp32, or bf16 autocast (HF's documented CPU training precision, "bf16=True, use_cpu=True");
- HF always runs with ``use_cache=False`` (in its config and in each forward call): training needs no KV cache.
Every candidate is built from the same seed; its first step (for a compiled candidate: the cold compile, in
an inductor cache made fresh for this run) is timed apart and its loss kept, and the first-step losses of
one precision are checked to agree across both sides within a rounding bound (:func:`loss_tolerance`; seqlab's
model holds HF's initial weights, converted with ``seqlab.models.gpt2_convert.from_gpt2``; the same batch): a
disagreement fails the bench before any section is written. Then all candidates run interleaved in
shuffled rounds, warm-up round discarded (bench/common.py ``interleaved``), ``--steps`` steps per call; the
median of each is kept. Compile seconds = the first step's time minus the candidate's median step. Threads
are pinned (``--threads``, the same for every candidate). ``ratio`` = seqlab's best / HF's best over all
candidates; the fp32-only and bf16-only best ratios are reported too. Targets (issue #41): ratio >= 0.97 (the noise
of one run: at least level with HF at its best) on every CPU class, and seqlab's best step at >= 80 % of the GEMM
rate its own shapes reach alone (its FLOP rate over the layer-shape peak below; the profile always runs on the CPU
for it). The earlier ratio >= 1.1 target is retired: both sides run near 80 % of that rate, so a 1.1x lead cannot
exist there, as the section's bound line shows in each run.

Extras: MFU against a bf16 2048^3 matmul timed as one more interleaved candidate, and (unless
``--no-profile``, which leaves the second target unmeasured) against the peak of the step's own GEMM shapes and layouts, each
replayed alone (bench/gemm_share.py), with the GEMM share and the largest other operators of each side's
best eager step (the timing mode and the profiler see aten ops, not compiled kernels); peak RSS of each
side's best candidate in its own subprocess (``--no-rss`` skips it).

    .venv/bin/python bench/lm_throughput.py [--rounds 5] [--steps 1] [--threads N] [--no-compile]
                                            [--no-profile] [--no-rss] [--tiny] [--device cuda]

``--tiny`` (a 1-layer model on 2 x 32 tokens) is for smoke runs only. Prints one JSON line last: ``peer_best``,
``ratio``, the fp32-only and bf16-only ratios, every candidate's median tokens/s, compile seconds, MFU.

``--device cuda`` (bench/gpu.sh) moves both sides to the GPU, each in its best documented GPU configuration:
SDPA attention (HF ``attn_implementation="sdpa"``, seqlab ``impl`` "fused") under bf16 autocast, eager and
``torch.compile``d (fp32 and the explicit attention paths are left out there), every timed call ending in
``torch.cuda.synchronize()``; MFU against a bf16 8192^3 matmul on the GPU; no CPU profile and no RSS (host memory
says nothing of the GPU's). Its section, ``lm_throughput-cuda``, names the GPU (the CPU's stays as it is).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import run_under_isa_cap  # noqa: E402

run_under_isa_cap()  # --isa avx2: this script again under the AVX2 caps, before torch loads

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from common import (  # noqa: E402
    bf16_rows, gpu_line, interleaved, isa_heading, isa_suffix, machine, median, require, run_json_subprocess,
    verdict, write_section)
from gemm_share import capture_gemms, layer_peak, other_ops  # noqa: E402

TARGET = 0.97  # seqlab's best training throughput over HF's best: level, within the noise of one run
TARGET_SHAPE_PEAK = 0.80  # seqlab's best step's FLOP rate over the peak of its own GEMM shapes replayed alone
PEER_DOCS = ("Transformers docs: \"CPU\" (bf16 mixed precision with PyTorch AMP for CPU training, "
             "https://huggingface.co/docs/transformers/cpu), \"Attention backends\" (`attn_implementation`, "
             "https://huggingface.co/docs/transformers/attention_interface) and \"torch.compile\" "
             "(https://huggingface.co/docs/transformers/perf_torch_compile)")
PEAK_N = {"cpu": 2048, "cuda": 8192}  # the MFU yardstick's matmul size on each device (a GPU needs a larger one)


def peak_name(n: int, precision: str = "bf16") -> str:
    return f"{precision} matmul {n}^3 (MFU yardstick)"  # the extra interleaved candidate

LAMBDA = 6.0  # the probabilistic rounding bound's λ (seqlab.base.bounds.hoeffding_bound): exceeded w.p. <= 3e-8


def loss_tolerance(shape: Shape, precision: str, loss: float) -> float:
    """How far two candidates' first-step losses of one precision may lie apart: a rounding bound.

    The loss is computed through P = 11 layers + 3 chained reductions (per layer the q, k, v and output
    projections, QK^T, the attention's weighted sum, softmax's sum, two feed-forward products and two LayerNorms;
    then the last LayerNorm, the tied head and the cross-entropy's log-sum-exp), each of length <= n = max(d_ff,
    seq). LayerNorm and softmax pass relative errors on unchanged, so each reduction's rounding moves the loss
    relatively. fp32: Higham & Mary's probabilistic bound, λ·√n·u per reduction (u = 2^-24; the worst case n·u is
    ~40x looser and would let a mapping slip through), added over the P reductions (first order, Higham §3.3):
    P·λ·√n·u·|loss|, twice that for two implementations. bf16 autocast: every product's inputs are rounded to
    bf16 (u = 2^-8) once an element, and the roundings' effects on the loss are independent: λ·u·√(2P)·|loss|,
    twice it for two sides (the products accumulate in fp32: its term is the fp32 one above)."""
    from seqlab.base.bounds import u

    products, n = 11 * shape.layers + 3, max(4 * shape.d_model, shape.seq)
    fp32 = products * LAMBDA * n ** 0.5 * u("float32")
    rel = fp32 if precision == "fp32" else fp32 + LAMBDA * u("bfloat16") * (2 * products) ** 0.5
    return 2 * rel * abs(loss)


@dataclass(frozen=True)
class Shape:
    batch: int = 12
    seq: int = 256
    vocab: int = 65
    layers: int = 6
    heads: int = 6
    d_model: int = 384


TINY = Shape(batch=2, seq=32, layers=1, heads=2, d_model=32)
ATTENTION = {"hf": ("sdpa", "eager"), "seqlab": ("fused", "equations")}
ATTENTION_NAMES = {"sdpa": "SDPA attention", "eager": "eager attention", "fused": "SDPA attention (impl fused)",
                   "equations": "explicit attention (impl equations)"}


@dataclass(frozen=True)
class Candidate:
    side: str  # "hf" or "seqlab"
    attention: str  # HF's attn_implementation or seqlab's attention impl
    compiled: bool  # torch.compile of the model
    precision: str  # "fp32" or "bf16" (autocast)

    @property
    def name(self) -> str:
        model = "HF GPT2LMHeadModel" if self.side == "hf" else "seqlab TransformerLM"
        parts = [model, ATTENTION_NAMES[self.attention], "torch.compile" if self.compiled else "no compile",
                 "bf16 autocast" if self.precision == "bf16" else "fp32"]
        return ", ".join(parts + (["use_cache=False"] if self.side == "hf" else []))


def candidates(compile: bool, device: str = "cpu", bf16: bool = True) -> list[Candidate]:
    """Every combination of the axes, the same for both sides; on CUDA the GPU configuration only (SDPA, bf16
    autocast, eager and compiled); on a CPU that emulates bf16 (``bf16`` False: common.bf16_rows) fp32 only."""
    attention = ATTENTION if device == "cpu" else {side: impls[:1] for side, impls in ATTENTION.items()}
    precisions = (("fp32", "bf16") if bf16 else ("fp32",)) if device == "cpu" else ("bf16",)
    return [Candidate(side, impl, compiled, precision)
            for side in attention for impl, compiled, precision in
            itertools.product(attention[side], (False, True) if compile else (False,), precisions)]


def hf_model(shape: Shape, attention: str):
    import transformers

    cfg = transformers.GPT2Config(vocab_size=shape.vocab, n_positions=shape.seq, n_embd=shape.d_model,
                                  n_layer=shape.layers, n_head=shape.heads, n_inner=4 * shape.d_model,
                                  activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                  attn_implementation=attention, use_cache=False, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(cfg)


def ours_model(shape: Shape, attention: str):
    """seqlab's TransformerLM holding the very weights of :func:`hf_model` (seqlab.models.gpt2_convert.from_gpt2: the same
    architecture, pre-norm, learned positions, GELU, tied head), so both sides start from one point and their
    first-step losses can be compared across sides."""
    from seqlab.models.gpt2_convert import from_gpt2
    from seqlab.nn.attention import set_attention_impl

    model = from_gpt2(hf_model(shape, "eager"))
    set_attention_impl(model, attention)
    return model


def make_step(cand: Candidate, shape: Shape, device: str = "cpu"):
    """A closure running one training step (forward, loss, backward, clip, AdamW) of one candidate on
    ``device`` (built on the CPU from the seed, then moved); it returns the loss."""
    model = hf_model(shape, cand.attention) if cand.side == "hf" else ours_model(shape, cand.attention)
    model.to(device).train()
    forward = torch.compile(model) if cand.compiled else model
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, shape.vocab, (shape.batch, shape.seq), generator=g).to(device)
    y = torch.randint(0, shape.vocab, (shape.batch, shape.seq), generator=g).to(device)
    device_type = torch.device(device).type

    def logits():
        return forward(input_ids=x, use_cache=False).logits if cand.side == "hf" else forward(x)

    def step() -> float:
        amp = (torch.autocast(device_type, dtype=torch.bfloat16) if cand.precision == "bf16"
               else contextlib.nullcontext())
        with amp:
            loss = F.cross_entropy(logits().reshape(-1, shape.vocab).float(), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item()

    step.n_params = sum(p.numel() for p in model.parameters())
    return step


def sync(device: str = "cpu") -> None:
    """Wait for the GPU's queued work (on CUDA), so the wall clock times what ran; nothing on the CPU."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def repeat(step, n: int, device: str = "cpu"):
    """A candidate for ``interleaved``: ``n`` steps, timed by the wall clock (returns None)."""
    def run():
        for _ in range(n):
            step()
        sync(device)
    return run


def matmul_peak_s(dtype=torch.bfloat16, n=2048, reps=5, device: str = "cpu") -> float:
    """The best seconds of one n^3 matmul (an interleaved candidate returning its own figure)."""
    a, b = torch.randn(n, n, dtype=dtype, device=device), torch.randn(n, n, dtype=dtype, device=device)
    a @ b
    sync(device)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t)
    return best


def warm_compiler(device: str = "cpu") -> None:
    """Pay torch.compile's one-time start-up (imports, C++ toolchain probe) on a small module, so that no
    candidate's compile seconds include it."""
    layer = torch.nn.Linear(8, 8).to(device)
    torch.compile(layer)(torch.randn(2, 8, device=device)).sum().backward()
    sync(device)


def use_device(name: str) -> str:
    """Check ``--device``; on CUDA every machine line (common.machine: the JSON's, and the section's ``_Recorded``
    line) names the GPU first, since the process has used it."""
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    return name


def first_steps(cands: list[Candidate], shape: Shape, device: str = "cpu") -> tuple[dict, dict, dict]:
    """Build every candidate and run its first step (the compile, for a compiled one): steps, first-step
    seconds and first-step losses by name."""
    steps, first_s, first_loss = {}, {}, {}
    for cand in cands:
        steps[cand.name] = make_step(cand, shape, device)
        t = time.perf_counter()
        first_loss[cand.name] = steps[cand.name]()
        first_s[cand.name] = time.perf_counter() - t
        print(f"first step {first_s[cand.name]:.1f} s, loss {first_loss[cand.name]:.5f}: {cand.name}", file=sys.stderr)
    return steps, first_s, first_loss


def loss_check(cands: list[Candidate], first_loss: dict, shape: Shape) -> tuple[bool, str]:
    """Do the first-step losses of every candidate of one precision agree, across both sides (the same weights,
    :func:`ours_model`, and the same batch), within :func:`loss_tolerance`? (ok, one line)."""
    ok, parts = True, []
    for precision in ("fp32", "bf16"):
        both = [c for c in cands if c.precision == precision]
        if not both:  # on CUDA: bf16 only
            continue
        losses = [first_loss[c.name] for c in both]
        spread = max(losses) - min(losses)
        tol = loss_tolerance(shape, precision, max(map(abs, losses)))
        ok &= spread <= tol
        sides = ", ".join(f"{'HF' if side == 'hf' else 'seqlab'} {min(v):.4f}-{max(v):.4f}" for side in ATTENTION
                          if (v := [first_loss[c.name] for c in both if c.side == side]))
        parts.append(f"{precision}: {sides} (spread over both sides {spread:.1e}, tolerance {tol:.1e})")
    return ok, "; ".join(parts)


def require_losses_agree(cands: list[Candidate], first_loss: dict, shape: Shape) -> str:
    """:func:`loss_check`, failing the bench (no section written) where the losses disagree; its line."""
    ok, line = loss_check(cands, first_loss, shape)
    require(ok, f"first-step losses disagree past their rounding bound (loss_tolerance): {line}")
    return line


def best_ratio(rate: dict, cands: list[Candidate], keep=lambda c: True) -> dict:
    """verdict() over the candidates ``keep`` accepts (seqlab vs HF, tokens/s)."""
    ours = {c.name: rate[c.name] for c in cands if c.side == "seqlab" and keep(c)}
    peers = {c.name: rate[c.name] for c in cands if c.side == "hf" and keep(c)}
    return verdict(ours, peers)


SIDE_CODE = """
import json, sys
sys.path.insert(0, {bench!r})
import torch
import lm_throughput as b
from common import peak_rss_mib
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"])
step = b.make_step(b.Candidate(**args["candidate"]), b.Shape(**args["shape"]))
for _ in range(3):
    step()
print(json.dumps({{"peak_rss_mib": peak_rss_mib()}}))
"""


def peak_rss(cand: Candidate, shape: Shape, threads: int) -> float:
    """Peak RSS (MiB) of a fresh process building ``cand`` and running 3 steps (compile included)."""
    bench = str(Path(__file__).resolve().parent)
    arg = json.dumps({"candidate": asdict(cand), "shape": asdict(shape), "threads": threads})
    return run_json_subprocess(SIDE_CODE.format(bench=bench), arg)["peak_rss_mib"]


def profile(steps: dict, cands: list[Candidate], rate: dict) -> dict:
    """GEMM share and largest other operators of each side's best eager candidate, and the layer-shape peak."""
    eager = {side: max((c.name for c in cands if c.side == side and not c.compiled), key=rate.get)
             for side in ATTENTION}
    shares = {side: capture_gemms(steps[name]) for side, name in eager.items()}
    others = {side: other_ops(steps[name]) for side, name in eager.items()}
    return {"eager": eager, "shares": shares, "others": others, "shape_peak": layer_peak(shares["seqlab"])}


def share_line(prof: dict, side: str) -> str:
    c, shape_peak = prof["shares"][side], prof["shape_peak"]
    rest = ", ".join(f"{op} {1e3 * s:.0f}" for op, s in prof["others"][side])
    gemm_rate = c["gemm_flops"] / c["gemm_s"]
    return (f"- {prof['eager'][side]}: step {1e3 * c['step_s']:.0f} ms (timed GEMM by GEMM), of which GEMMs "
            f"{1e3 * c['gemm_s']:.0f} ms (**{100 * c['gemm_s'] / c['step_s']:.0f} %**, at "
            f"{gemm_rate / 1e9:.0f} GFLOP/s = {100 * gemm_rate / shape_peak:.0f} % "
            f"of the layer-shape peak); the largest other operators, ms per step (profiler self time): {rest}.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (one more warm-up round is discarded)")
    ap.add_argument("--steps", type=int, default=1, help="training steps per candidate per round")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads, the same for every candidate")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                    help="torch.compile candidates on both sides (--no-compile: eager only, both sides)")
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True,
                    help="GEMM share, other operators and layer-shape MFU (always run when the target is missed)")
    ap.add_argument("--rss", action=argparse.BooleanOptionalAction, default=True,
                    help="peak RSS of each side's best candidate, each in its own subprocess")
    ap.add_argument("--tiny", action="store_true", help="a 1-layer model on 2 x 32 tokens: smoke runs only")
    ap.add_argument("--isa", choices=("native", "avx2", "generic"), default="native",
                    help="run both sides capped to this instruction-set level (seqlab.base.machine.ISA_CAPS), in "
                         "the section lm_throughput-<level>-caps beside the native one")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where both sides train (default cpu); cuda: SDPA + bf16, eager and compiled, on the GPU, "
                         "in the section lm_throughput-cuda")
    args = ap.parse_args()
    use_device(args.device)
    start = time.perf_counter()
    shape = TINY if args.tiny else Shape()
    torch.set_num_threads(args.threads)
    # compile seconds are cold compiles: a fresh inductor cache for this run (the RSS subprocesses reuse it)
    cache_dir = tempfile.mkdtemp(prefix="lm_throughput-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    try:
        report(args, shape, start)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def report(args, shape: Shape, start: float) -> None:
    device, on_cpu = args.device, args.device == "cpu"
    emulated = args.emulated = bf16_rows() if on_cpu else None  # no bf16 rows where the CPU emulates bf16 (said)
    cands = candidates(args.compile, device, bf16=not emulated)
    if args.compile:
        warm_compiler(device)
    steps, first_s, first_loss = first_steps(cands, shape, device)
    losses_line = require_losses_agree(cands, first_loss, shape)  # a disagreement stops the bench here
    losses_ok = True
    timed = {name: repeat(step, args.steps, device) for name, step in steps.items()}
    n_peak = PEAK_N[device]
    peak_dtype = torch.float32 if emulated else torch.bfloat16
    yardstick = peak_name(n_peak, "fp32" if emulated else "bf16")
    timed[yardstick] = lambda: matmul_peak_s(peak_dtype, n=n_peak, device=device)
    kept = interleaved(timed, rounds=args.rounds, warmup=1)
    tokens = shape.batch * shape.seq
    step_s = {c.name: median(kept[c.name]) / args.steps for c in cands}
    rate = {name: tokens / s for name, s in step_s.items()}
    compile_s = {c.name: first_s[c.name] - step_s[c.name] for c in cands if c.compiled}
    overall = best_ratio(rate, cands)
    by_precision = {p: best_ratio(rate, cands, lambda c, p=p: c.precision == p) for p in ("fp32", "bf16")
                    if any(c.precision == p for c in cands)}
    peak = 2 * n_peak ** 3 / median(kept[yardstick])
    n_params = steps[overall["seqlab_best"]].n_params
    # nanoGPT / PaLM appendix B: 6N + 12LHdT (H heads x depth d = d_model)
    flops_per_token = 6 * n_params + 12 * shape.layers * shape.d_model * shape.seq
    mfu = {name: r * flops_per_token / peak for name, r in rate.items()}
    # the profile and RSS are the CPU's: the profiler's GEMM replay runs on the CPU, and host RSS is not GPU memory
    prof = profile(steps, cands, rate) if on_cpu and args.profile else None
    mfu_layers = {name: r * flops_per_token / prof["shape_peak"] for name, r in rate.items()} if prof else {}
    met = {"ratio": overall["ratio"] >= TARGET,  # the bound: None where unmeasured (the GPU, --no-profile)
           "shape_peak": mfu_layers[overall["seqlab_best"]] >= TARGET_SHAPE_PEAK if prof else None}
    rss = ({side: peak_rss(next(c for c in cands if c.name == overall[f"{side}_best"]), shape, args.threads)
            for side in ("seqlab", "peer")} if args.rss and on_cpu else {})
    wall_s = time.perf_counter() - start
    suffix = isa_suffix() if on_cpu else f"-{device}"  # the GPU's and a capped run's never overwrite the native CPU's
    write_section(f"lm_throughput{suffix}", section(args, shape, cands, rate, compile_s, overall, by_precision, met,
                                                    peak, flops_per_token, mfu, mfu_layers, prof, rss, losses_ok,
                                                    losses_line))
    print(json.dumps({
        "peer_best": overall["peer_best"], "seqlab_best": overall["seqlab_best"], "ratio": overall["ratio"],
        "target": TARGET, "target_met": met["ratio"], "target_shape_peak": TARGET_SHAPE_PEAK,
        "target_shape_peak_met": met["shape_peak"],
        **({"seqlab_shape_peak_fraction": round(mfu_layers[overall["seqlab_best"]], 3)} if prof else {}),
        **{f"{key}_{p}": v[key] for key in ("ratio", "peer_best", "seqlab_best") for p, v in by_precision.items()},
        "tokens_per_s": {name: round(r) for name, r in rate.items()},
        "compile_s": {name: round(s, 1) for name, s in compile_s.items()},
        "first_step_losses_agree": losses_ok,
        "seqlab_mfu": round(mfu[overall["seqlab_best"]], 4), "hf_mfu": round(mfu[overall["peer_best"]], 4),
        "matmul_peak_gflops": round(peak / 1e9),
        **({"layer_shape_peak_gflops": round(prof["shape_peak"] / 1e9),
            "seqlab_gemm_share": round(prof["shares"]["seqlab"]["gemm_s"] / prof["shares"]["seqlab"]["step_s"], 3),
            "hf_gemm_share": round(prof["shares"]["hf"]["gemm_s"] / prof["shares"]["hf"]["step_s"], 3)}
           if prof else {}),
        **({"seqlab_peak_rss_mib": round(rss["seqlab"]), "hf_peak_rss_mib": round(rss["peer"])} if rss else {}),
        "rounds": args.rounds, "steps": args.steps, "threads": args.threads, "tiny": args.tiny,
        **({} if on_cpu else {"device": device}), "wall_s": round(wall_s), "machine": machine()}))


def target_text(overall, mfu_layers, met) -> str:
    """The two targets' verdicts: the ratio, and the share of the layer-shape GEMM peak (or why unmeasured)."""
    word = {True: "met", False: "missed"}
    bound = (f"seqlab's best step at {mfu_layers[overall['seqlab_best']]:.0%} of the layer-shape GEMM peak "
             f"(target >= {TARGET_SHAPE_PEAK:.0%}): {word[met['shape_peak']]}" if met["shape_peak"] is not None else
             f"the share of the layer-shape GEMM peak (target >= {TARGET_SHAPE_PEAK:.0%}) is not measured here "
             "(no profile: the GPU, or --no-profile)")
    return (f"**Targets: training throughput >= {TARGET}x HF's best: {word[met['ratio']]}** ({overall['ratio']:.2f}x); "
            f"**{bound}**. (The earlier >= 1.1x target is retired: the bound line below shows the most any step "
            "with these GEMMs could gain on HF.)")


def section(args, shape, cands, rate, compile_s, overall, by_precision, met, peak, flops_per_token, mfu,
            mfu_layers, prof, rss, losses_ok, losses_line) -> str:
    """The whole RESULTS.md section: heading, method, table, ratios, target, compile, memory, profile."""
    hf_best = overall["peer_value"]
    on_cpu, n_peak = args.device == "cpu", PEAK_N[args.device]
    order = sorted(cands, key=lambda c: (c.side != "seqlab", -rate[c.name]))

    def row(c: Candidate) -> str:
        cells = [c.name, f"{rate[c.name]:,.0f}", f"{rate[c.name] / hf_best:.2f}", f"{100 * mfu[c.name]:.1f}%"]
        cells += [f"{100 * mfu_layers[c.name]:.1f}%"] if prof else []
        cells += [f"{compile_s[c.name]:.0f}" if c.compiled else "-"]
        return "| " + " | ".join(cells) + " |"

    head = f"| candidate | tokens/s | vs HF best | MFU ({n_peak}^3) |" + (" MFU (layer shapes) |" if prof else "") + \
        " compile s |\n|---|---|---|---|" + ("---|" if prof else "") + "---|"
    precision_lines = "\n".join(
        f"- {p} only: **{v['ratio']:.2f}** ({v['seqlab_best']}: {v['seqlab_value']:,.0f} vs {v['peer_best']}: "
        f"{v['peer_value']:,.0f} tokens/s)" for p, v in by_precision.items())
    precision_text = (f" With one precision\nallowed to both:\n{precision_lines}" if len(by_precision) > 1 else
                      f" (fp32 only: {args.emulated}; the MFU "
                      "yardstick is an fp32 matmul.)" if args.emulated else " (bf16 only on the GPU.)")
    dims = (f"{shape.layers} layer{'s' * (shape.layers > 1)}, {shape.heads} heads, d_model {shape.d_model}, "
            f"d_ff {4 * shape.d_model}, max_len {shape.seq}, vocab {shape.vocab}, batch {shape.batch} x {shape.seq}")
    size = f"**tiny smoke size ({dims}): not a result**" if args.tiny else dims
    axes = ("each run eagerly and with `torch.compile(model)` (the same compile scope on both sides: the loss, "
            "backward call and optimizer stay eager)" if args.compile else
            "each run eagerly only (`--no-compile`, on both sides)")
    if on_cpu:
        intro = f"""## Training throughput{isa_heading()}: Transformer LM vs HF GPT-2 (bench/lm_throughput.py)

{size}; exact GELU, pre-LN, tied embeddings, dropout 0; one step = forward, cross-entropy on fp32 logits,
backward, gradient clipping, AdamW (fused); random init from the same seed, identical config on both sides.
Candidates on both sides: two attention implementations (HF `attn_implementation` "sdpa" and "eager"; seqlab
`impl` "fused" = SDPA and "equations" = explicit matmuls), {axes}, each in fp32 and
under bf16 autocast; HF with `use_cache=False` in its config and forward. The HF configuration follows
{PEER_DOCS}.
{args.threads} torch threads for every candidate."""
    else:
        gpu = torch.cuda.get_device_name()
        intro = f"""## Training throughput on {gpu}: Transformer LM vs HF GPT-2 (bench/lm_throughput.py --device cuda)

GPU: {gpu_line()}; torch {torch.__version__}.
{size}; exact GELU, pre-LN, tied embeddings, dropout 0; one step = forward, cross-entropy on fp32 logits,
backward, gradient clipping, AdamW (fused, on the GPU); random init from the same seed on the CPU, then moved to
the GPU, identical config on both sides. Candidates on both sides, in each side's best documented GPU training
configuration: SDPA attention (HF `attn_implementation="sdpa"`; seqlab `impl` "fused") under bf16 autocast,
{axes}; HF with `use_cache=False` in its config and forward. The HF configuration follows Transformers docs
"Attention backends" (https://huggingface.co/docs/transformers/attention_interface), "torch.compile"
(https://huggingface.co/docs/transformers/perf_torch_compile) and bf16 mixed precision on GPUs
(https://huggingface.co/docs/transformers/perf_train_gpu_one). Every timed call ends with
`torch.cuda.synchronize()`."""
    text = intro + f""" Timing: {args.rounds} interleaved rounds in shuffled order,
one more warm-up round discarded, {args.steps} step(s) per candidate per round; tokens/s of the median step.
Compile s = a compiled candidate's first step (cold compile in a fresh inductor cache, after the compiler's
one-time start-up was paid on a small module) minus its median step; not in tokens/s.
MFU = tokens/s x {flops_per_token / 1e6:.1f} MFLOP per token (6N + 12LHdT) over a {"fp32" if args.emulated else "bf16"} {n_peak}^3 matmul timed as
one more interleaved candidate ({peak / 1e9:.0f} GFLOP/s)""" + (
        f""" and over the GEMMs of seqlab's best eager step (every shape and
layout it runs, each replayed alone at its best: **{prof['shape_peak'] / 1e9:.0f} GFLOP/s**)""" if prof else "") + f""".

{head}
""" + "\n".join(row(c) for c in order) + f"""

**ratio (seqlab best / HF best, every candidate of both sides) = {overall['ratio']:.2f}**: {overall['seqlab_best']}
({overall['seqlab_value']:,.0f} tokens/s) vs {overall['peer_best']} ({hf_best:,.0f} tokens/s).{precision_text}

{target_text(overall, mfu_layers, met)}

First-step losses (both sides from the same weights, seqlab's converted from HF's with `from_gpt2`; the same
batch) {'agree' if losses_ok else '**DISAGREE**'} across both sides within each precision, within the rounding bound of
`loss_tolerance` (bench/lm_throughput.py: fp32 probabilistic, bf16 from its 8-bit inputs; a disagreement fails the
run before this section): {losses_line}."""
    if rss:
        text += (f"\n\nPeak RSS, each side's best candidate alone in a subprocess (3 steps, compile included): "
                 f"HF {rss['peer']:.0f} MiB, seqlab {rss['seqlab']:.0f} MiB.")
    if prof:
        why = "" if all(met.values()) else " This is the evidence for the missed target."
        text += (f"\n\nWhere the time goes (each side's best eager candidate, a few more steps, every GEMM timed as "
                 f"it returns; the compiled steps cannot be seen this way).{why}\n"
                 f"{share_line(prof, 'seqlab')}\n{share_line(prof, 'hf')}")
        c = prof["shares"]["seqlab"]
        gemm_only = shape.batch * shape.seq / c["gemm_s"]  # tokens/s if every operator but the GEMMs were free
        text += (f"\n\nBound: with everything but its GEMMs free, seqlab's step would run at {gemm_only:,.0f} tokens/s, "
                 f"**{gemm_only / hf_best:.2f}x HF's best** at most, and its GEMMs already run at "
                 f"{100 * c['gemm_flops'] / c['gemm_s'] / prof['shape_peak']:.0f} % of what the same shapes reach alone. "
                 "Levers measured in this run (the table): the explicit attention path against SDPA, and torch.compile "
                 "(which fuses some of the casts, GELU and softmax around the GEMMs), each on both sides.")
    return text


if __name__ == "__main__":
    main()
