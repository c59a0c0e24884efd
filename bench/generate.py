"""Greedy generation speed: seqlab vs Hugging Face ``generate``, same weights, same run.

Batch 1: a 16-token prompt, 256 new tokens, max_len 272 on both sides; the 6-layer, 6-head, 384-dim GPT
(vocab 65, GELU, pre-LN, tied embeddings). Batched: 8 prompts of 3-16 tokens, left-padded, 256 new tokens
each (HF with its attention mask). HF's weights are random; ours are copied from them (seqlab.models.gpt2),
so both must produce the same tokens: the benchmark checks it, row by row. Candidates are timed interleaved
in shuffled rounds; each figure is a median. (HF's static cache is not a candidate: transformers compiles
the forward for it, and without compile the notes measured it within 3% of the dynamic cache.)

The physical bound of batch-1 decoding: every token reads every weight once (fp32; the position table
only one row), so tokens/s <= read bandwidth / weight bytes. The bandwidth is measured in every round, at
1 and the default thread count (the faster counts): torch sums over a 256 MiB tensor (> 4x this CPU's L3).

The GEMV table times the model's 24 weight products alone (one token, the layer shapes), each way torch
can run them: MKL through F.linear, MKL on pre-transposed (in, out) weights (HF's Conv1D layout), oneDNN's
packed linear, and inductor's streaming reduction (seqlab.nn.gemv). Peak RSS of each side is measured in
its own subprocess.

Beside them, not counted in the ratios: the compiled batch-1 step with the linear layers' weights stored in
bf16 or int8 (seqlab.nn.weight_only, ``seqlab generate --dtype``), and with ``--ppl-run RUN`` (a trained
language-model run) that run's validation perplexity in each dtype.

    .venv/bin/python bench/generate.py [--rounds 5] [--no-compile] [--ppl-run runs/NAME]

Prints one JSON line last: ``ratio`` (seqlab best / HF best tokens/s at batch 1), ``bound_fraction``
(seqlab's tokens/s over the bound), ``same_tokens``, ``ratio_batched``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from common import cpu_line, machine, median, run_json_subprocess, write_section  # noqa: E402

PROMPT, NEW, MAX_LEN = 16, 256, 272
BATCH_LENGTHS = (16, 3, 11, 7, 14, 5, 9, 12)  # the batched case's prompt lengths (longest + NEW - 1 <= MAX_LEN)
PROBE_MIB = 256


def build(side: str = "both"):
    """HF's model, ours with the same weights, and the prompt; ``side`` "hf" or "ours" frees the other."""
    import transformers

    from seqlab.models.gpt2 import from_gpt2

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=65, n_positions=MAX_LEN, n_embd=384, n_layer=6, n_head=6,
                                  n_inner=1536, activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, attn_implementation="sdpa")
    hf = transformers.GPT2LMHeadModel(cfg).eval()
    ours = from_gpt2(hf).eval() if side != "hf" else None
    prompt = torch.randint(0, 65, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    if side == "ours":
        hf = None  # only our copy stays alive
    return hf, ours, prompt


def batch_prompts() -> list[list[int]]:
    g = torch.Generator().manual_seed(2)
    return [torch.randint(0, 65, (n,), generator=g).tolist() for n in BATCH_LENGTHS]


def hf_generate(hf, prompt, cache_implementation=None):
    kw = {"cache_implementation": cache_implementation} if cache_implementation else {}
    with torch.inference_mode():
        out = hf.generate(prompt, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0, **kw)
    return out[0, PROMPT:].tolist()


def hf_generate_batch(hf, prompts):
    """HF's batched greedy: left padding, attention mask (positions from its cumsum)."""
    longest = max(map(len, prompts))
    ids = torch.tensor([[0] * (longest - len(p)) + p for p in prompts])  # batch, longest
    mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts])  # batch, longest
    with torch.inference_mode():
        out = hf.generate(ids, attention_mask=mask, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                          pad_token_id=0)
    return out[:, longest:].tolist()


def ours_generate(ours, prompt, compile=False):
    from seqlab.decode import Sampling, generate

    return generate(ours, [prompt[0].tolist()], NEW, Sampling(0), compile=compile)[0]


def ours_generate_batch(ours, prompts, compile=False):
    from seqlab.decode import Sampling, generate

    return generate(ours, prompts, NEW, Sampling(0), compile=compile)


def with_gemv(choice: str, fn):
    """Run ``fn`` with SEQLAB_DECODE_GEMV = choice (the compiled step is built on its first call)."""
    from seqlab.nn import gemv

    old = os.environ.get("SEQLAB_DECODE_GEMV")
    os.environ["SEQLAB_DECODE_GEMV"] = choice
    gemv.streaming.cache_clear()
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("SEQLAB_DECODE_GEMV")
        else:
            os.environ["SEQLAB_DECODE_GEMV"] = old
        gemv.streaming.cache_clear()


def at_threads(count: int, fn):
    """``fn`` run with torch at ``count`` threads, seqlab's decode_threads() held to the same count."""
    from seqlab import decode

    def run():
        before, policy = torch.get_num_threads(), decode.decode_threads
        torch.set_num_threads(count)
        decode.decode_threads = lambda: count
        try:
            return fn()
        finally:
            torch.set_num_threads(before)
            decode.decode_threads = policy
    return run


def weight_bytes(model) -> int:
    """Bytes of the weights one batch-1 token reads: every parameter once, the position table one row."""
    table = model.embed.positions.table.weight
    tensors = {id(t): t for t in [*model.parameters(), *model.buffers()]}  # buffers: bf16/int8 weights, scales
    return sum(t.numel() * t.element_size() for t in tensors.values()) - (table.numel() - table.shape[1]) * 4


def read_bandwidth(buffer: torch.Tensor, tries: int = 3) -> float:
    """Bytes/s of the fastest of ``tries`` full reads of ``buffer`` (flat sum, and row sums of 4 KiB rows)."""
    best = float("inf")
    for _ in range(tries):
        for read in (lambda: buffer.sum(), lambda: buffer.view(-1, 1024).sum(1)):
            t = time.perf_counter()
            read()
            best = min(best, time.perf_counter() - t)
    return buffer.numel() * buffer.element_size() / best


def gemv_table(ours, rounds: int) -> list[tuple[str, float, float]]:
    """(way, ms, GB/s): the 24 weight products of one token, medians of ``rounds`` interleaved rounds."""
    from seqlab.nn import gemv

    linears = [m for m in ours.decoder.modules() if isinstance(m, torch.nn.Linear)]
    xs = [torch.randn(1, m.in_features) for m in linears]
    ws = [m.weight.detach() for m in linears]
    bs = [m.bias.detach() for m in linears]
    wts = [w.t().contiguous() for w in ws]  # in, out
    packed = [torch.ops.mkldnn._reorder_linear_weight(w, 1) for w in ws]

    def products(xs, ws, bs):
        return [F.linear(x, w, b) for x, w, b in zip(xs, ws, bs)]

    stream = torch.compile(products, dynamic=False, backend=gemv.backend)
    ways = {
        "MKL, F.linear (out, in) weights": lambda: products(xs, ws, bs),
        "MKL, addmm on pre-transposed (in, out) weights": lambda: [torch.addmm(b, x, w) for x, w, b in zip(xs, wts, bs)],
        "oneDNN packed linear": lambda: [torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
                                         for x, w, b in zip(xs, packed, bs)],
        "inductor streaming reduction (seqlab.nn.gemv)": lambda: stream(xs, ws, bs),
    }
    counts = sorted({1, torch.get_num_threads()})
    ways = {f"{name}, {n} thread{'s' * (n > 1)}": at_threads(n, fn) for name, fn in ways.items() for n in counts}
    with torch.inference_mode():
        for fn in ways.values():
            fn()
        times: dict[str, list[float]] = {name: [] for name in ways}
        for r in range(rounds * 5):
            for name in random.Random(r).sample(list(ways), len(ways)):
                t = time.perf_counter()
                ways[name]()
                times[name].append(time.perf_counter() - t)
    nbytes = sum(w.numel() * 4 for w in ws)
    return [(name, median(ts) * 1e3, nbytes / median(ts) / 1e9) for name, ts in times.items()]


SIDE_CODE = """
import json, sys, time
sys.path.insert(0, {bench!r})
import torch
import generate as g
from common import peak_rss_mib
side, weights = sys.argv[1], sys.argv[2]
if side == "hf":
    hf, _, prompt = g.build("hf")
    fn = lambda: g.hf_generate(hf, prompt)
else:  # our model alone, loaded from the safetensors file the parent wrote (no HF model in this process)
    from safetensors.torch import load_model
    from seqlab.models.transformer import TransformerLM, TransformerLMConfig
    cfg = TransformerLMConfig(**json.loads(sys.argv[3]))
    ours = TransformerLM(cfg).eval()
    load_model(ours, weights)
    prompt = torch.randint(0, 65, (1, g.PROMPT), generator=torch.Generator().manual_seed(1))
    fn = lambda: g.ours_generate(ours, prompt, {compile})
fn()
t = time.perf_counter(); fn(); dt = time.perf_counter() - t
print(json.dumps({{"peak_rss_mib": peak_rss_mib(), "tokens_per_s": g.NEW / dt}}))
"""


def low_precision_steps(ours, prompt, threads: int) -> tuple[dict, dict]:
    """The compiled batch-1 step of a copy of ``ours`` with bf16 and with int8 linear weights:
    ({name: step}, {name: (dtype, weight bytes one token reads)})."""
    from seqlab.nn.weight_only import to_weight_only

    steps, info = {}, {}
    for dtype in ("bf16", "int8"):
        model = copy.deepcopy(ours)
        to_weight_only(model, dtype)
        name = f"seqlab: compiled step, {dtype} weights"
        run = lambda m=model: with_gemv("stream", lambda: ours_generate(m, prompt, True))  # noqa: E731
        steps[name], info[name] = at_threads(threads, run), (dtype, weight_bytes(model))
    return steps, info


def leading_agreement(tokens: list[int], reference: list[int]) -> int:
    """How many leading tokens equal the reference's (greedy decoding diverges for good after one change)."""
    n = 0
    while n < min(len(tokens), len(reference)) and tokens[n] == reference[n]:
        n += 1
    return n


def dtype_perplexity(run_dir: str) -> list[tuple[str, float, float]]:
    """(dtype, validation loss, perplexity) of a trained LM run with its linear weights in each dtype."""
    from seqlab import api
    from seqlab.nn.weight_only import DTYPES

    rows = []
    for dtype in DTYPES:
        lm = api.load(run_dir, device="cpu")
        lm.use_weight_dtype(dtype)
        r = lm.evaluate("valid")
        rows.append((dtype, r["loss"], r["perplexity"]))
    return rows


def low_section(low, info, rate, agree, ours_best, hf_best, bw, ppl_run) -> str:
    """The weight-only bf16/int8 table (beside the ratios, not in them) and the perplexity change."""
    if not low:
        return ""
    lines = ["", "Weight-only low precision, batch 1 (`seqlab generate --dtype`; not in the ratios above: the "
             "tokens may differ):", "",
             "| candidate | tokens/s | vs HF best | vs seqlab fp32 | weight MB per token | % of its bound | "
             "leading tokens equal to fp32's |", "|---|---|---|---|---|---|---|"]
    for name in low:
        nbytes = info[name][1]
        lines.append(f"| {name} | {rate[name]:.0f} | {rate[name] / rate[hf_best]:.2f} | "
                     f"{rate[name] / rate[ours_best]:.2f} | {nbytes / 1e6:.1f} | {rate[name] / (bw / nbytes):.0%} | "
                     f"{agree[name]} of {NEW} |")
    if ppl_run:
        rows = dtype_perplexity(ppl_run)
        base = rows[0][2]
        lines += ["", f"Validation perplexity of the trained run `{ppl_run}` with its linear weights in each dtype:", "",
                  "| dtype | valid loss | perplexity | change |", "|---|---|---|---|"]
        lines += [f"| {d} | {loss:.6f} | {ppl:.5f} | {100 * (ppl / base - 1):+.4f} % |" for d, loss, ppl in rows]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled decode steps")
    ap.add_argument("--ppl-run", default=None, help="a trained LM run: its validation perplexity per --dtype")
    args = ap.parse_args()
    load_start = os.getloadavg()[0]
    hf, ours, prompt = build()
    prompts = batch_prompts()
    threads = torch.get_num_threads()
    single = {
        f"hf: generate, SDPA, fp32, dynamic cache, {threads} threads": lambda: hf_generate(hf, prompt),
        "hf: same, 1 thread": at_threads(1, lambda: hf_generate(hf, prompt)),
        "seqlab: eager, preallocated KV cache": lambda: ours_generate(ours, prompt),
    }
    batched = {
        f"hf: generate, 8 left-padded prompts, attention mask, {threads} threads": lambda: hf_generate_batch(hf, prompts),
        "hf: same 8 prompts, 1 thread": at_threads(1, lambda: hf_generate_batch(hf, prompts)),
        "seqlab: eager, one left-padded batch": lambda: ours_generate_batch(ours, prompts),
    }
    compile_s, low, low_info = {}, {}, {}
    if not args.no_compile:
        blas = copy.deepcopy(ours)  # its own compiled step, with the BLAS's products
        stream = lambda: with_gemv("stream", lambda: ours_generate(ours, prompt, True))  # noqa: E731
        compiled = {
            f"seqlab: compiled step, streaming reductions, {threads} threads": at_threads(threads, stream),
            "seqlab: compiled step, streaming reductions, 1 thread": at_threads(1, stream),
            "seqlab: compiled step, BLAS products (the default before)":
                lambda: with_gemv("blas", lambda: ours_generate(blas, prompt, True)),
            "seqlab: compiled step, one left-padded batch":
                lambda: with_gemv("stream", lambda: ours_generate_batch(ours, prompts, True)),
        }
        low_steps, low_info = low_precision_steps(ours, prompt, threads)
        compiled.update(low_steps)
        for name, fn in compiled.items():
            t = time.perf_counter()
            fn()  # the cold compile (one per thread count and batch shape)
            compile_s[name] = time.perf_counter() - t
            (low if name in low_info else batched if "batch" in name else single)[name] = fn
        print(f"compile (cold) {', '.join(f'{v:.0f} s' for v in compile_s.values())}", file=sys.stderr)
    reference, reference_batch = hf_generate(hf, prompt), hf_generate_batch(hf, prompts)
    same = {name: fn() == reference for name, fn in single.items()}
    same.update({name: fn() == reference_batch for name, fn in batched.items()})
    agree = {name: leading_agreement(fn(), reference) for name, fn in low.items()}
    assert not set(single) & set(batched), "a candidate's name must say which table it belongs to"
    candidates = {**single, **batched, **low}
    times: dict[str, list[float]] = {name: [] for name in candidates}
    probe = torch.ones(PROBE_MIB * 2**20 // 4)  # fp32, 256 MiB
    bandwidth = []
    for r in range(args.rounds):
        order = list(candidates) + ["probe"]
        random.Random(r).shuffle(order)
        for name in order:
            if name == "probe":
                bandwidth.append(max(at_threads(n, lambda: read_bandwidth(probe))() for n in {1, threads}))
                continue
            t = time.perf_counter()
            candidates[name]()
            times[name].append(time.perf_counter() - t)
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    del probe
    rate = {name: NEW / median(ts) for name, ts in times.items() if name not in batched}
    rate.update({name: NEW * len(prompts) / median(ts) for name, ts in times.items() if name in batched})
    load_end = os.getloadavg()[0]
    gemvs = gemv_table(ours, args.rounds)

    def best(names, side):
        return max((n for n in names if n.startswith(side)), key=rate.get)

    hf_best, ours_best = best(single, "hf"), best(single, "seqlab")
    hf_batch, ours_batch = best(batched, "hf"), best(batched, "seqlab")
    ratio, ratio_batched = rate[ours_best] / rate[hf_best], rate[ours_batch] / rate[hf_batch]
    bw = median(bandwidth)
    nbytes = weight_bytes(ours)
    bound = bw / nbytes
    bench = str(Path(__file__).resolve().parent)
    import dataclasses
    import tempfile

    from safetensors.torch import save_model

    with tempfile.TemporaryDirectory() as tmp:
        weights = str(Path(tmp) / "ours.safetensors")
        save_model(ours, weights)
        cfg_json = json.dumps(dataclasses.asdict(ours.cfg))
        rss = {side: run_json_subprocess(SIDE_CODE.format(bench=bench, compile=not args.no_compile), side, weights,
                                         cfg_json)["peak_rss_mib"] for side in ("hf", "ours")}

    def rows(names, base):
        return "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[base]:.2f} | {'yes' if same[n] else 'NO'} |"
                         for n in names)

    gemv_rows = "\n".join(f"| {name} | {ms:.2f} | {gbs:.1f} |" for name, ms, gbs in gemvs)
    compiles = "".join(f"; {n.split(': ')[1]} {s:.0f} s" for n, s in compile_s.items())
    slug = re.sub(r"[^a-z0-9]+", "-", cpu_line().split(",")[0].lower()).strip("-")
    write_section(f"generate-{slug}", f"""## Generation on {cpu_line().split(';')[0]}: greedy, 256 new tokens (bench/generate.py)

6 layers, 6 heads, d_model 384, vocab 65, max_len 272; the same weights on both sides. Rows without a thread
count run HF at torch's {threads} threads and seqlab at its `decode_threads()` (1 while the load average
exceeds the core count). Medians of {args.rounds} interleaved, shuffled rounds. Load average (other
jobs on these {os.cpu_count()} cores): {load_start:.1f} at the start, {load_end:.1f} at the end.

Batch 1, a 16-token prompt:

| candidate | tokens/s | vs HF best | same 256 tokens as HF |
|---|---|---|---|
{rows(single, hf_best)}

**ratio (seqlab best / HF best) = {ratio:.2f}**. Bound: {nbytes / 1e6:.1f} MB of fp32 weights per token over
{bw / 1e9:.1f} GB/s read bandwidth (median of the rounds' probes, each the faster of 1 and {threads} threads
over {PROBE_MIB} MiB) =
{bound:.0f} tokens/s; seqlab's best is **{rate[ours_best] / bound:.0%} of the bound** (HF's {rate[hf_best] / bound:.0%}).

Batched, 8 prompts of {', '.join(map(str, BATCH_LENGTHS))} tokens, left-padded (tokens/s = 8 x 256 / time):

| candidate | tokens/s | vs HF | same tokens as HF, every row |
|---|---|---|---|
{rows(batched, hf_batch)}

**ratio_batched = {ratio_batched:.2f}**.
{low_section(low, low_info, rate, agree, ours_best, hf_best, bw, args.ppl_run)}
The 24 weight products of one token alone (one row, the layer shapes
384x1152, 384x384, 384x1536, 1536x384, six layers; fp32 weights read per call / time):

| way | ms per token | GB/s |
|---|---|---|
{gemv_rows}

What the profile shows (torch.profiler, one eager decode step, and the table above): the 24 weight products
are three quarters of a step's CPU time, for HF and for seqlab, and they are memory-bound (each reads its
weight once per token; 42 MB of them do not fit this CPU's 32 MiB L3, while the Xeon's 300 MiB L3 holds them).
MKL's GEMV and oneDNN's packed linear read them far below the memory's bandwidth here (MKL faster on HF's
(in, out) layout than on our (out, in) layout: why eager seqlab trails HF), and the compiled step
with `freezing` hands exactly these products to oneDNN/MKL: that is what made it slow on this CPU. Inductor's
streaming reduction reads the weights at about the probe's bandwidth, so the compiled step now uses it
(seqlab.nn.gemv; on Intel CPUs the BLAS path stays, measured at 2x HF there). Attention over the 272 cached
slots (1-row bmm, also reductions now) is fused into the same few loops. The products' inputs are computed
once into a buffer of their own (`_computed` in seqlab.nn.gemv): left to itself, inductor inlined each
product's producer into its loop, so the FFN's second product recomputed GELU's erf for every one of its 384
outputs (590k erf per layer and token) and the others the layer norm; that halved the compiled step's speed
(358 tokens/s before, the same tokens). Up to 8 rows stream the same way (each row reads the weights, from L3
after the first), which beats the BLAS's 8-row GEMM here. The
other lever is the thread count: with two OpenMP threads on two cores that other jobs share, each of the
~60 parallel ops per token waits whenever its partner thread is descheduled; with one thread that wait
is gone, so seqlab decodes on one thread while the load average exceeds the core count.

Peak RSS, each side alone in a subprocess: HF {rss['hf']:.0f} MiB, seqlab {rss['ours']:.0f} MiB. Cold
compiles{compiles}.""")
    print(json.dumps({"seqlab_tokens_per_s": round(rate[ours_best], 1), "hf_tokens_per_s": round(rate[hf_best], 1),
                      "ratio": round(ratio, 3), "bound_tokens_per_s": round(bound, 1),
                      "bound_fraction": round(rate[ours_best] / bound, 3), "read_gb_per_s": round(bw / 1e9, 2),
                      "same_tokens": all(same.values()), "ratio_batched": round(ratio_batched, 3),
                      "seqlab_batched_tokens_per_s": round(rate[ours_batch], 1),
                      "hf_batched_tokens_per_s": round(rate[hf_batch], 1), "load": [load_start, load_end],
                      **{f"{low_info[n][0]}_tokens_per_s": round(rate[n], 1) for n in low},
                      "seqlab_peak_rss_mib": round(rss["ours"]), "hf_peak_rss_mib": round(rss["hf"]),
                      "machine": machine()}))


if __name__ == "__main__":
    main()
