"""Greedy generation speed: seqlab vs Hugging Face ``generate``, same weights, same run.

Batch 1: a 16-token prompt, 256 new tokens, max_len 272 on both sides; the 6-layer, 6-head, 384-dim GPT
(vocab 65, GELU, pre-LN, tied embeddings). Batched: 8 prompts of 3-16 tokens, left-padded, 256 new tokens
each (HF with its attention mask). HF's weights are random; ours are copied from them (seqlab.models.gpt2_convert),
so both must produce the same tokens: the benchmark checks it, row by row. HF's EOS id (50256) lies outside
the 65-token vocabulary (asserted), so neither side can stop early and no ``min_new_tokens`` is needed.

HF runs in each of its configurations: eager with its dynamic cache, and its documented fastest recipe,
"Static kv-cache and torch.compile" (https://huggingface.co/docs/transformers/main/llm_optims):
``generation_config.cache_implementation = "static"`` and ``model.forward = torch.compile(model.forward,
fullgraph=True)``, at batch 1 and for the left-padded batch of 8 (each its own model copy, so its static
cache is never re-made). The docs' ``mode="reduce-overhead"`` means CUDA graphs, which inductor skips for CPU
tensors, so on the CPU the default mode is the one that applies; ``dynamic=False`` keeps every graph
specialised (the shapes never change within a decode). Every compiled candidate (both sides) makes one cold
call before the timing: its compile, reported apart, never in a timed figure. Candidates are timed with
bench/common.py's ``interleaved`` (shuffled rounds, a discarded warm-up round), all at the same torch thread
count (seqlab's ``decode_threads()`` held to it); each figure is a median.

The physical bound of batch-1 decoding: every token reads every weight once (fp32; the position table
only one row), so tokens/s <= read bandwidth / weight bytes. Where the weights fit in this CPU's L3 (its size
read from sysfs or lscpu), they are read from L3, so the probe reads a buffer of about their size (one that
fits in L3): the L3 bound. Else it reads a DRAM-sized buffer (256 MiB, at least 4x the L3): the DRAM bound.
The probe runs once in every round, at 1 and the candidates' thread count (the faster counts).

The GEMV table times the model's 24 weight products alone (one token, the layer shapes), each way torch
can run them: MKL through F.linear, MKL on pre-transposed (in, out) weights (HF's Conv1D layout), oneDNN's
packed linear, and inductor's streaming reduction (seqlab.nn.gemv). Peak RSS of each side is measured in
its own subprocess.

Beside them, batch 1 with low-precision weights, each against HF in the same dtype: seqlab's compiled step
with the linear layers' weights stored in bf16 or int8 (seqlab.nn.weight_only, ``seqlab generate --dtype``)
vs HF's model in torch.bfloat16 (eager, and static cache + compile), and vs torchao's weight-only int8 where it
converts GPT-2's layers here (``hf_int8``; with torchao 0.18 it does not: ``NO_INT8_PEER``).
With ``--ppl-run RUN`` (a trained language-model run), that run's validation perplexity in each dtype.

Issue #55's additions (bench/generate_peers.py): every table also holds HF's recipe with seqlab's inductor options
(peers.HF_SEQLAB: ``cpp_wrapper``, ``freezing``, ``max_autotune``, guards skipped after warm-up) and CTranslate2 on
the same weights converted offline (fp32 rows in the tables above; int8 in the low-precision table), all at the same
thread count. The bound for
batch 1, 4, 8 and 16 (batch 4: the first 4 of the 8 prompts; 16: the 8 and 8 more of the same lengths): per step
the largest of the weight bytes over the read bandwidth (L3 or DRAM by the weights' and KV cache's size), the
step's FLOPs over the GEMM rate of the model's products on 256 rows, and the KV-cache bytes read, each probe timed
in every round; the table shows each side's best tokens/s and % of it (seqlab's compiled step at 4 and 16, its
tokens checked against HF eager's on the same prompts). Beam search, K = 5, batch 1 and the 8 prompts: seqlab's
``generate(beam=5)`` search through its compiled step against HF ``generate(num_beams=5)`` eager, with its static
cache + compile, and with seqlab's options, and CTranslate2 ``beam_size=5`` (fp32, int8). Checks that fail the
bench (an exception, no section written): every row holds all its tokens; every fp32 row (greedy: the tokens;
beam: the best hypothesis) equals HF eager's; the low-precision rows report their leading agreement instead.
``--no-beam`` skips the beam table. Last, where the batched step's time goes: seqlab's faster compiled row at
batch 8 of "tiled" and "blas" (the products a profile tells apart by name) profiled on a copy of the model
(bench/generate_peers.py ``step_profile``), and what bounds the step: the weights and the mean KV-cache bytes a
step reads, together, at the probed bandwidth.

    .venv/bin/python bench/generate.py [--rounds 5] [--threads N] [--no-compile] [--ppl-run runs/NAME]
    SEQLAB_BENCH_RESULTS=/tmp/x.md .venv/bin/python bench/generate.py --quick   # smoke run, a few minutes
    .venv/bin/python bench/generate.py --device cuda [--rounds 3]               # on a GPU (bench/gpu.sh)

``--device cuda`` runs both sides on the GPU, fp32, batch 1 and the left-padded batch of 8: HF eager, and HF's
documented GPU recipe, static cache + ``model.forward = torch.compile(model.forward, mode="reduce-overhead",
fullgraph=True)`` (``reduce-overhead`` is CUDA graphs, which apply there); seqlab eager and with its compiled
decode step. Every timed call ends in ``torch.cuda.synchronize()``. The bound is the GPU memory's read bandwidth
(a 1 GiB probe) over the weight bytes; no low-precision rows, GEMV table or RSS (they are the CPU's). A compiled
candidate whose first call fails is left out and the section says why. Its section, ``generate-<GPU>-cuda``,
is headed with the GPU's name (torch.cuda.get_device_name).

Prints one JSON line last: ``peer_best`` / ``ratio`` (seqlab best / HF best tokens/s at batch 1),
``peer_best_batched`` / ``ratio_batched``, ``medians_tokens_per_s`` (every candidate), ``bound_fraction``
(seqlab's batch-1 tokens/s over the bound), ``bound_kind`` ("L3" or "DRAM"), ``same_tokens``,
``low_precision`` (each dtype's ratio against its same-dtype HF peer, or why there is none), ``targets_met``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import run_under_isa_cap  # noqa: E402

run_under_isa_cap()  # --isa avx2: this script again under the AVX2 caps, before torch loads

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import generate_peers as peers  # noqa: E402
from common import (  # noqa: E402
    bf16_rows, cpu_line, gpu_line, interleaved, isa_cap, isa_heading, isa_suffix, machine, median, run_json_subprocess,
    verdict, write_section)

PROMPT, NEW, MAX_LEN = 16, 256, 272
QUICK_NEW = 32  # --quick: new tokens per call
BATCH_LENGTHS = (16, 3, 11, 7, 14, 5, 9, 12)  # the batched case's prompt lengths (longest + NEW - 1 <= MAX_LEN)
PROBE_MIB = 256  # the DRAM probe's least size
TARGET_RATIO, TARGET_BOUND = 1.3, 0.85  # over HF's best (batch 1 and 8); of the DRAM bound (batch 1, weights > L3)
HF_DOCS = "https://huggingface.co/docs/transformers/main/llm_optims"  # "Static kv-cache and torch.compile"
NO_INT8_PEER = ("no peer: torchao's weight-only int8 (`quantize_(model, Int8WeightOnlyConfig())`, also what HF's "
                "`TorchAoConfig` applies) converts `nn.Linear` layers only, i.e. just GPT-2's 65x384 output head; "
                "its 24 weight products are transformers' `Conv1D` (addmm on (in, out) weights), and with them "
                "selected too, torchao's `Int8Tensor` fails on them")


def build(side: str = "both"):
    """HF's model, ours with the same weights, and the prompt; ``side`` "hf" or "ours" frees the other."""
    import transformers

    from seqlab.models.gpt2_convert import from_gpt2

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


def assert_eos_unreachable(hf) -> int:
    """HF's EOS id(s) lie outside the vocabulary, so greedy decoding never stops early: returns the id."""
    eos = hf.generation_config.eos_token_id
    ids = [i for i in (eos if isinstance(eos, list) else [eos]) if i is not None]
    assert all(i >= hf.config.vocab_size for i in ids), f"EOS {ids} inside the {hf.config.vocab_size}-token vocab"
    return ids[0] if ids else None


def batch_prompts() -> list[list[int]]:
    g = torch.Generator().manual_seed(2)
    return [torch.randint(0, 65, (n,), generator=g).tolist() for n in BATCH_LENGTHS]


def hf_static_compiled(hf, dtype: torch.dtype | None = None, copied: bool = False):
    """A copy of ``hf`` (in ``dtype``; ``copied``: ``hf`` itself) set up by HF's documented recipe: static cache
    + compiled forward."""
    model = hf if copied else copy.deepcopy(hf)
    if dtype is not None:
        model = model.to(dtype)
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, fullgraph=True, dynamic=False)
    return model


def hf_generate(hf, prompt, beam: int = 1):
    """HF's greedy tokens (``beam`` > 1: the best of ``num_beams=beam``, its default length penalty)."""
    with torch.inference_mode():
        out = hf.generate(prompt.to(hf.device), max_new_tokens=NEW, do_sample=False, pad_token_id=0, num_beams=beam)
    return out[0, PROMPT:].tolist()


def hf_generate_batch(hf, prompts, beam: int = 1):
    """HF's batched greedy (or beam search): left padding, attention mask (positions from its cumsum)."""
    longest = max(map(len, prompts))
    ids = torch.tensor([[0] * (longest - len(p)) + p for p in prompts])  # batch, longest
    mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts])  # batch, longest
    with torch.inference_mode():
        out = hf.generate(ids.to(hf.device), attention_mask=mask.to(hf.device), max_new_tokens=NEW, do_sample=False,
                          pad_token_id=0, num_beams=beam)
    return out[:, longest:].tolist()


def ours_beam(ours, prompts, beam: int, products: str):
    """seqlab's beam search through its compiled step (generate(beam=K)'s call): each prompt's best hypothesis."""
    from seqlab.decoding.lm_beam import lm_beam_search

    return [h[0].tokens for h in lm_beam_search(ours, prompts, beam, NEW, None, compile=True, products=products)]


def ours_generate(ours, prompt, compile=False, products="blas"):
    """seqlab's greedy tokens; ``products`` = how the compiled step multiplies (seqlab.decoding.decode.decode_step)."""
    from seqlab.decoding.decode import Sampling, generate

    return generate(ours, [prompt[0].tolist()], NEW, Sampling(0), compile=compile, products=products)[0]


def ours_generate_batch(ours, prompts, compile=False, products="blas"):
    from seqlab.decoding.decode import Sampling, generate

    return generate(ours, prompts, NEW, Sampling(0), compile=compile, products=products)


def at_threads(count: int, fn):
    """``fn`` run with torch at ``count`` threads, seqlab's decode_threads() held to the same count."""
    from seqlab.decoding import decode

    def run():
        before, policy = torch.get_num_threads(), getattr(decode, "decode_threads", None)
        torch.set_num_threads(count)
        if policy is not None:  # an older tree's load-average rule, held to the same count
            decode.decode_threads = lambda: count
        try:
            return fn()
        finally:
            torch.set_num_threads(before)
            if policy is not None:
                decode.decode_threads = policy
    return run


def wall_timed(fn):
    """``fn`` for ``interleaved``: its result dropped, so the call is timed by the wall clock."""
    def run():
        fn()
    return run


def weight_bytes(model) -> int:
    """Bytes of the weights one batch-1 token reads: every parameter once, the position table one row."""
    table = model.embed.positions.table.weight
    tensors = {id(t): t for t in [*model.parameters(), *model.buffers()]}  # buffers: bf16/int8 weights, scales
    return sum(t.numel() * t.element_size() for t in tensors.values()) - (table.numel() - table.shape[1]) * 4


def l3_bytes() -> tuple[int | None, str]:
    """(size of the L3 cache cpu0 sits on, where it was read): sysfs, else lscpu's L3 line; None where neither
    tells."""
    units = {"": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
             "G": 2**30, "GB": 2**30, "GIB": 2**30}

    def parse(text: str) -> int | None:
        m = re.match(r"\s*([\d.]+)\s*([KMG]?i?B?)", text, re.I)
        return int(float(m.group(1)) * units[m.group(2).upper()]) if m and m.group(2).upper() in units else None

    sysfs = Path("/sys/devices/system/cpu/cpu0/cache/index3/size")
    if sysfs.is_file():
        return parse(sysfs.read_text()), str(sysfs)
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None, "neither sysfs nor lscpu"
    line = next((s for s in out.splitlines() if s.startswith("L3 cache:")), None)
    return (parse(line.split(":", 1)[1]), "lscpu") if line else (None, "neither sysfs nor lscpu")


def probe_buffer(nbytes: int, l3: int | None) -> tuple[str, torch.Tensor]:
    """("L3" or "DRAM", the fp32 buffer the bandwidth probe reads): about the weights' size, capped at 3/4 of
    the L3, where the weights (``nbytes``) fit in the L3; else 256 MiB or 4x the L3, whichever is more."""
    if l3 is not None and nbytes <= l3:
        kind, size = "L3", min(nbytes, l3 * 3 // 4)
    else:
        kind, size = "DRAM", max(PROBE_MIB * 2**20, 4 * (l3 or 0))
    return kind, torch.ones(size // 4096 * 1024)  # whole 4 KiB rows (read_seconds views it so)


def read_seconds(buffer: torch.Tensor, tries: int = 3) -> float:
    """Seconds of the fastest of ``tries`` full reads of ``buffer`` (flat sum, and row sums of 4 KiB rows)."""
    best = float("inf")
    for _ in range(tries):
        for read in (lambda: buffer.sum(), lambda: buffer.view(-1, 1024).sum(1)):
            t = time.perf_counter()
            read()
            best = min(best, time.perf_counter() - t)
    return best


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


def peak_rss(ours, compile: bool) -> dict[str, float]:
    """Peak RSS (MiB) of each side generating alone in its own subprocess."""
    import dataclasses
    import tempfile

    from safetensors.torch import save_model

    bench = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as tmp:
        weights = str(Path(tmp) / "ours.safetensors")
        save_model(ours, weights)
        cfg_json = json.dumps(dataclasses.asdict(ours.cfg))
        return {side: run_json_subprocess(SIDE_CODE.format(bench=bench, compile=compile), side, weights,
                                          cfg_json)["peak_rss_mib"] for side in ("hf", "ours")}


HF_EAGER = "eager, dynamic cache"
HF_STATIC = "static cache + torch.compile(forward, fullgraph=True)"
TILED = "C++ GEMM template (products \"tiled\")"  # seqlab.decoding.decode.inductor_options


def ct2_rows(ct2: dict, prompts: list[list[int]], label: str, beam: int = 1) -> dict:
    """CTranslate2's candidates ({name: call}) on ``prompts``, one per converted model in ``ct2``."""
    search = f"beam {beam}" if beam > 1 else "greedy"
    return {f"ctranslate2: generate_batch, {label}{q} ({CT2_TYPES[q]}), {search}, end_token=[]":
            (lambda g=g: peers.ct2_generate(g, prompts, NEW, beam)) for q, g in ct2.items()}


CT2_TYPES = {"float32": "fp32", "int8": "int8 weights"}


def batch1_candidates(hf, ours, prompt, compile: bool, blas_row: bool, ct2: dict) -> tuple[dict, set]:
    """fp32, batch 1: ({name: call returning the 256 tokens}, the names that compile on their first call)."""
    fns = {
        f"hf: generate, SDPA, fp32, {HF_EAGER}": lambda: hf_generate(hf, prompt),
        "seqlab: eager, preallocated KV cache": lambda: ours_generate(ours, prompt),
    }
    one = [prompt[0].tolist()]
    fns.update({n: (lambda f=f: f()[0]) for n, f in ct2_rows({"float32": ct2["float32"]}, one, "").items()}
               if "float32" in ct2 else {})
    if not compile:
        return fns, set()
    static, tuned = hf_static_compiled(hf), peers.hf_seqlab_options(hf)
    tuned_call = peers.SkipGuardsAfterWarmup(lambda: hf_generate(tuned, prompt))
    compiled = {
        f"hf: generate, SDPA, fp32, {HF_STATIC}": lambda: hf_generate(static, prompt),
        f"hf: generate, SDPA, fp32, {peers.HF_SEQLAB}": tuned_call,
        "seqlab: compiled step, streaming reductions":
            lambda: ours_generate(ours, prompt, True, "stream"),
        f"seqlab: compiled step, {TILED}": lambda: ours_generate(ours, prompt, True, "tiled"),
    }
    if blas_row:
        blas = copy.deepcopy(ours)  # its own compiled step, with the BLAS's products
        compiled["seqlab: compiled step, BLAS products"] = \
            lambda: ours_generate(blas, prompt, True, "blas")
    return {**fns, **compiled}, set(compiled)


def batched_candidates(hf, ours, prompts, compile: bool, blas_row: bool = True, ct2: dict | None = None
                       ) -> tuple[dict, set]:
    """fp32, the 8 left-padded prompts: ({name: call returning the 8 token lists}, the compiling names). Both
    product choices of the compiled step run (seqlab.decoding.products.decode_products picks per batch size)."""
    fns = {
        f"hf: generate, 8 left-padded prompts, attention mask, {HF_EAGER}": lambda: hf_generate_batch(hf, prompts),
        "seqlab: eager, one left-padded batch": lambda: ours_generate_batch(ours, prompts),
    }
    if ct2 and "float32" in ct2:
        fns.update(ct2_rows({"float32": ct2["float32"]}, prompts, "8 prompts, "))
    if not compile:
        return fns, set()
    static = hf_static_compiled(hf)  # its own copy: a static cache made for batch 8, never re-made for batch 1
    tuned = peers.hf_seqlab_options(hf)
    compiled = {
        f"hf: generate, 8 left-padded prompts, attention mask, {HF_STATIC}": lambda: hf_generate_batch(static, prompts),
        f"hf: generate, 8 left-padded prompts, attention mask, {peers.HF_SEQLAB}":
            peers.SkipGuardsAfterWarmup(lambda: hf_generate_batch(tuned, prompts)),
        "seqlab: compiled step, one left-padded batch":
            lambda: ours_generate_batch(ours, prompts, True, "stream"),
        f"seqlab: compiled step, one left-padded batch, {TILED}": lambda: ours_generate_batch(ours, prompts, True,
                                                                                                 "tiled"),
    }
    if blas_row:
        blas = copy.deepcopy(ours)  # its own compiled step, with the BLAS's products
        compiled["seqlab: compiled step, one left-padded batch, BLAS products"] = \
            lambda: ours_generate_batch(blas, prompts, True, "blas")
    return {**fns, **compiled}, set(compiled)


SIZES = (1, 4, 8, 16)  # the bound table's batch sizes
BEAM = 5  # the beam table's K (issue #55's target: beam 5)


def size_prompts(size: int) -> list[list[int]]:
    """The prompts of batch ``size``: batch 1's prompt length alone, then the batch of 8's first ``size`` prompts,
    and for 16 the 8 again with other tokens (seed 3): left-padded as the batch of 8 is."""
    if size == 1:
        return [torch.randint(0, 65, (1, PROMPT), generator=torch.Generator().manual_seed(1))[0].tolist()]
    g = torch.Generator().manual_seed(3)
    extra = [torch.randint(0, 65, (n,), generator=g).tolist() for n in BATCH_LENGTHS]
    return (batch_prompts() + extra)[:size]


def sizes_candidates(hf, ours, blas_ours, quick: bool) -> tuple[dict, dict, set]:
    """fp32, batch 4 and 16 (batch 1 and 8 are the tables above): ({name: call}, {name: batch size}, compiling
    names). seqlab's compiled step with each product choice that runs at that size (the streaming products take at
    most seqlab.nn.gemv.ROWS rows); HF eager gives each size's reference tokens (one untimed call)."""
    from seqlab.nn.gemv import ROWS

    fns, size_of = {}, {}
    for size in (4, 16):
        prompts = size_prompts(size)
        ways = [("streaming reductions", ours, "stream")] if size <= ROWS else []
        ways.append((TILED, ours, "tiled"))
        if not quick or size > ROWS:
            ways.append(("BLAS products", blas_ours, "blas"))
        for label, model, products in ways:
            name = f"seqlab: compiled step, {size} left-padded prompts, {label}"
            fns[name] = lambda m=model, p=prompts, k=products: ours_generate_batch(m, p, True, k)
            size_of[name] = size
    return fns, size_of, set(fns)


def beam_candidates(hf, ours, ct2: dict, compile: bool) -> tuple[dict, dict, set]:
    """Beam search (K = BEAM), batch 1 and the 8 left-padded prompts: ({name: call returning each prompt's best
    hypothesis}, {name: prompts}, compiling names). HF: generate(num_beams=K) eager with its dynamic cache, with its
    static cache + compiled forward (its documented recipe), and with seqlab's options; seqlab: generate(beam=K)'s
    search through its compiled step, products as seqlab.decoding.products.decode_products chooses for K x prompts
    rows; CTranslate2: generate_batch(beam_size=K) fp32 and int8 (the int8 rows in no ratio)."""
    from seqlab.decoding.products import decode_products

    fns, prompts_of, compiling = {}, {}, set()
    for size in (1, 8):
        prompts = size_prompts(size)
        label = "batch 1" if size == 1 else "8 left-padded prompts, attention mask"
        call = (lambda m, p=prompts: [hf_generate(m, torch.tensor(p), BEAM)]) if size == 1 else \
            (lambda m, p=prompts: hf_generate_batch(m, p, BEAM))
        rows = {f"hf: generate(num_beams={BEAM}), {label}, {HF_EAGER}": lambda c=call: c(hf)}
        for n, f in ct2_rows(ct2, prompts, f"{size} prompt{'s' * (size > 1)}, ", BEAM).items():
            rows[n] = f
        if compile:
            static, tuned = hf_static_compiled(hf), peers.hf_seqlab_options(hf)
            products = decode_products(torch.device("cpu"), BEAM * size)
            model = copy.deepcopy(ours)  # its own compiled step (a beam's row count)
            compiled = {
                f"hf: generate(num_beams={BEAM}), {label}, {HF_STATIC}": lambda c=call, m=static: c(m),
                f"hf: generate(num_beams={BEAM}), {label}, {peers.HF_SEQLAB}":
                    peers.SkipGuardsAfterWarmup(lambda c=call, m=tuned: c(m)),
                f"seqlab: generate(beam={BEAM}), {size} prompt{'s' * (size > 1)}, compiled step, {products} products":
                    lambda m=model, p=prompts, k=products: ours_beam(m, p, BEAM, k),
            }
            rows.update(compiled)
            compiling |= set(compiled)
        fns.update(rows)
        prompts_of.update(dict.fromkeys(rows, prompts))
    return fns, prompts_of, compiling


def hf_weight_bytes(model) -> int:
    """Bytes of HF's weights one batch-1 token reads (each tensor once, the position table one row)."""
    table = model.transformer.wpe.weight
    tensors = {id(t): t for t in model.parameters()}
    unread = (table.numel() - table.shape[1]) * table.element_size()
    return sum(t.numel() * t.element_size() for t in tensors.values()) - unread


WEIGHT_ONLY = "{} weights, fp32 activations"  # seqlab.nn.weight_only: y = x · float(W)^T + b, the products in fp32
HF_BF16 = "bf16 weights and bf16 activations (the whole model in torch.bfloat16)"
CT2_INT8 = "int8 weights and int8 products, compute_type int8"
TORCHAO_INT8 = WEIGHT_ONLY.format("int8")  # torchao's weight-only int8 on the fp32 model: as seqlab's int8 rows


def low_candidates(hf, ours, prompt, ct2: dict) -> tuple[dict, set, dict, str | None]:
    """Batch 1 in low precision: seqlab's compiled step with bf16 and int8 linear weights, and HF's model in
    torch.bfloat16 and, where torchao can, with int8 weights (eager, and static cache + compile). ({name: call},
    compiling names, {name: (weight dtype, weight bytes one token reads, the precision it computes in)}, why HF has
    no int8 row or None)."""
    from seqlab.nn.weight_only import to_weight_only

    fns, info = {}, {}
    emulated = bf16_rows()  # HF's bf16 model computes in bf16: emulated, 40-400x slower than fp32 (no bf16 rows)
    for dtype in ("int8",) if emulated else ("bf16", "int8"):
        model = copy.deepcopy(ours)
        to_weight_only(model, dtype)
        name = f"seqlab: compiled step, {dtype} weights (fp32 activations)"
        fns[name] = lambda m=model: ours_generate(m, prompt, True, "stream")
        info[name] = (dtype, weight_bytes(model), WEIGHT_ONLY.format(dtype))
    eager_names = set()
    if not emulated:
        eager, static = copy.deepcopy(hf).to(torch.bfloat16), hf_static_compiled(hf, torch.bfloat16)
        hf_eager, hf_static = f"hf: generate, bf16 model, {HF_EAGER}", f"hf: generate, bf16 model, {HF_STATIC}"
        fns[hf_eager], info[hf_eager] = lambda: hf_generate(eager, prompt), ("bf16", hf_weight_bytes(eager), HF_BF16)
        fns[hf_static] = lambda: hf_generate(static, prompt)
        info[hf_static] = ("bf16", hf_weight_bytes(static), HF_BF16)
        eager_names.add(hf_eager)
    if "int8" in ct2:
        name = next(iter(ct2_rows({"int8": ct2["int8"]}, [prompt[0].tolist()], "")))
        fns[name] = lambda g=ct2["int8"]: peers.ct2_generate(g, [prompt[0].tolist()], NEW)[0]
        info[name] = ("int8", None, CT2_INT8)
        eager_names.add(name)
    int8, no_int8 = hf_int8(hf)
    if int8 is not None:
        int8_static = hf_static_compiled(hf_int8(hf)[0], copied=True)
        names = f"hf: generate, torchao int8 weights, {HF_EAGER}", f"hf: generate, torchao int8 weights, {HF_STATIC}"
        fns[names[0]], fns[names[1]] = lambda: hf_generate(int8, prompt), lambda: hf_generate(int8_static, prompt)
        info[names[0]] = info[names[1]] = ("int8", None, TORCHAO_INT8)
        eager_names.add(names[0])
    return fns, set(fns) - eager_names, info, no_int8


def hf_int8(hf):
    """(a copy of ``hf`` with torchao's weight-only int8 on its 24 weight products, None) where torchao can do it
    here, else (None, why not). The products are GPT-2's ``Conv1D`` layers; the tied output head stays fp32, as
    in seqlab's int8 rows."""
    try:
        from torchao.quantization import Int8WeightOnlyConfig, quantize_
        from transformers.pytorch_utils import Conv1D
    except ImportError as e:
        return None, f"no peer: torchao is not installed ({e})"
    model = copy.deepcopy(hf)
    try:
        quantize_(model, Int8WeightOnlyConfig(), filter_fn=lambda module, fqn: isinstance(module, Conv1D))
        with torch.inference_mode():
            model(torch.zeros(1, 2, dtype=torch.long))
    except Exception as e:  # noqa: BLE001 (any failure means: no int8 peer, and the section says why)
        first = str(e).splitlines()[0].split(", types=")[0][:200]
        return None, f"{NO_INT8_PEER} ({type(e).__name__}: {first})"
    return model, None


def cold_calls(fns: dict, names: set) -> dict[str, float]:
    """Seconds of each compiling candidate's first call (its compile): made here, kept out of the timing."""
    seconds = {}
    for name in (n for n in fns if n in names):
        t = time.perf_counter()
        fns[name]()
        seconds[name] = time.perf_counter() - t
        print(f"cold call (compile) {seconds[name]:.0f} s: {name}", file=sys.stderr)
    return seconds


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


def low_verdicts(low: dict, info: dict, rate: dict, no_int8: str | None) -> dict:
    """Per weight dtype: seqlab's best low-precision row against the peers' best with weights in the same dtype (or
    why there is none), each side's arithmetic named (``seqlab_computes``, ``peer_computes``: the same phrase only
    where the two compute alike)."""
    out = {}
    for dtype in ("bf16", "int8"):
        ours = {n: rate[n] for n in low if n.startswith("seqlab") and info[n][0] == dtype}
        others = {n: rate[n] for n in low if not n.startswith("seqlab") and info[n][0] == dtype}
        if not ours:
            continue
        if others:
            v = verdict(ours, others)
            out[dtype] = {**v, "seqlab_computes": info[v["seqlab_best"]][2], "peer_computes": info[v["peer_best"]][2]}
        else:
            best = max(ours, key=ours.get)
            out[dtype] = {"seqlab_best": best, "seqlab_value": ours[best], "peer_best": None, "peer_value": None,
                          "ratio": None, "no_peer": no_int8 if dtype == "int8" else "no HF row in this dtype"}
    return out


def low_section(low, info, rate, agree, ours_fp32_best, verdicts, bw, ppl_run) -> str:
    """The low-precision batch-1 table, each row against HF's best in the same dtype, and the perplexity change."""
    if not low:
        return ""
    lines = ["", "Low precision, batch 1, each against the best peer in the same dtype (seqlab: weight-only, "
             "`seqlab generate --dtype`, activations in fp32; HF: the whole model in torch.bfloat16, eager and "
             "with its static cache + compile recipe; CTranslate2: its int8 conversion of the same weights, "
             "compute_type int8). Not in the fp32 ratios above; the tokens may differ from "
             "fp32's" + (f". No bf16 rows: {bf16_rows()}" if bf16_rows() else "") + ":",
             "", "| candidate | tokens/s | vs same-dtype peer best | vs seqlab fp32 best | weight MB per token | "
             "% of its bound | leading tokens equal to fp32's |", "|---|---|---|---|---|---|---|"]
    for name in low:
        dtype, nbytes, _ = info[name]
        peer = verdicts.get(dtype, {}).get("peer_best")
        vs_peer = f"{rate[name] / rate[peer]:.2f}" if peer else "no peer"
        lines.append(f"| {name} | {rate[name]:.0f} | {vs_peer} | {rate[name] / rate[ours_fp32_best]:.2f} | "
                     f"{f'{nbytes / 1e6:.1f} | {rate[name] / (bw / nbytes):.0%}' if nbytes else '- | -'} | "
                     f"{agree[name]} of {NEW} |")
    for dtype, v in verdicts.items():
        lines.append("")
        if v["peer_best"]:
            lines.append(low_bold_line(dtype, v))
        else:
            lines.append(f"**{dtype}: {v['no_peer']}.**")
    if ppl_run:
        rows = dtype_perplexity(ppl_run)
        base = rows[0][2]
        lines += ["", f"Validation perplexity of the trained run `{ppl_run}` with its linear weights in each dtype:", "",
                  "| dtype | valid loss | perplexity | change |", "|---|---|---|---|"]
        lines += [f"| {d} | {loss:.6f} | {ppl:.5f} | {100 * (ppl / base - 1):+.4f} % |" for d, loss, ppl in rows]
    return "\n".join(lines) + "\n"


def low_bold_line(dtype: str, v: dict) -> str:
    """The low-precision table's bold line for one weight dtype: seqlab's best over the peers' best, each named
    with the precision it computes in, and said to compare unlike arithmetic where the two differ."""
    like = v["seqlab_computes"] == v["peer_computes"]
    return (f"**{dtype} weights: seqlab best ({v['seqlab_computes']}) / peer best ({v['peer_computes']}) = "
            f"{v['seqlab_value'] / v['peer_value']:.2f}** ({v['seqlab_best']} over {v['peer_best']}; "
            + ("like with like)." if like else "not like with like: the two compute in different precisions)."))


def target_lines(ratio, ratio_batched, fraction, kind, met) -> str:
    """The section's target statement and whether this run met it."""
    word = {True: "**met**", False: "**not met**"}
    dram = (f" or {TARGET_BOUND:.0%} of the measured DRAM bound (allowed here: the weights exceed the L3)"
            if kind == "DRAM" else " (the weights fit in the L3, so the DRAM-bound alternative does not apply)")
    return (f"Targets: batch 1 >= {TARGET_RATIO}x HF's best{dram}: this run {ratio:.2f}x, {fraction:.0%} of the "
            f"{kind} bound: {word[met['batch1']]}. Batch 8 >= {TARGET_RATIO}x HF's best: this run "
            f"{ratio_batched:.2f}x: {word[met['batch8']]}.")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds after the discarded warm-up "
                    "(default 5; 1 with --quick)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads of every candidate, both sides "
                    "(default: torch's count)")
    ap.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_NEW} new tokens, 1 round, no BLAS row, "
                    "no GEMV table, no RSS subprocesses (figures not for RESULTS.md)")
    ap.add_argument("--no-compile", action="store_true", help="skip every compiled candidate (both sides)")
    ap.add_argument("--no-beam", action="store_true", help=f"skip the beam-search table (beam {BEAM})")
    ap.add_argument("--ppl-run", default=None, help="a trained LM run: its validation perplexity per --dtype")
    ap.add_argument("--isa", choices=("native", "avx2", "generic"), default="native",
                    help="run both sides capped to this instruction-set level (seqlab.base.machine.ISA_CAPS), in "
                         "the section generate-<CPU>-<level>-caps beside the native one")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where both sides decode (default cpu); cuda: fp32 on the GPU, HF with its static cache + "
                         "CUDA graphs, in the section generate-<GPU>-cuda")
    args = ap.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.threads = args.threads or torch.get_num_threads()
    return args


def main():
    global NEW
    args = parse_args()
    if args.quick:
        NEW = QUICK_NEW
    # every compiled HF copy (fp32 batch 1 and 8, bf16) adds prefill and decode graphs to GPT2LMHeadModel.forward's
    # code object: above the default limit (8), fullgraph=True would fail instead of compiling them
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 32)
    if args.device == "cuda":
        return main_cuda(args)
    threads, load_start = args.threads, os.getloadavg()[0]
    hf, ours, prompt = build()
    eos = assert_eos_unreachable(hf)
    prompts = batch_prompts()
    compile = not args.no_compile
    ct2_dir = tempfile.mkdtemp(prefix="seqlab-bench-ct2-")
    ct2, ct2_why = ct2_models(hf, ct2_dir, threads)
    blas_ours = copy.deepcopy(ours)  # the BLAS products' own compiled step (batch 4 and 16)
    single, compiling = batch1_candidates(hf, ours, prompt, compile, blas_row=not args.quick, ct2=ct2)
    batched, compiling_b = batched_candidates(hf, ours, prompts, compile, blas_row=not args.quick, ct2=ct2)
    low, compiling_l, low_info, no_int8 = low_candidates(hf, ours, prompt, ct2) if compile else ({}, set(), {},
                                                                                                   None)
    sized, size_of, compiling_s = sizes_candidates(hf, ours, blas_ours, args.quick) if compile else ({}, {}, set())
    beams, beam_prompts, compiling_k = beam_candidates(hf, ours, ct2, compile) if not args.no_beam else ({}, {},
                                                                                                          set())
    tables = [single, batched, low, sized, beams]
    assert sum(map(len, tables)) == len({n for t in tables for n in t}), "a candidate's name must say its table"
    rows_of = {**dict.fromkeys(single, 1), **dict.fromkeys(batched, len(prompts)), **dict.fromkeys(low, 1),
               **size_of, **{n: len(ps) for n, ps in beam_prompts.items()}}
    candidates = {name: at_threads(threads, fn) for t in tables for name, fn in t.items()}
    compile_s = cold_calls(candidates, compiling | compiling_b | compiling_l | compiling_s | compiling_k)

    outputs = {name: fn() for name, fn in candidates.items()}  # the correctness pass (also a warm call)
    reference = outputs[f"hf: generate, SDPA, fp32, {HF_EAGER}"]
    reference_batch = outputs[f"hf: generate, 8 left-padded prompts, attention mask, {HF_EAGER}"]
    references = {size: hf_generate_batch(hf, size_prompts(size)) for size in sorted(set(size_of.values()))}
    # the checks: every row holds all its tokens, and every fp32 row gives the reference's tokens (else no section)
    peers.require_lengths(outputs, NEW, {n for n in rows_of if n not in single and n not in low})
    peers.require_same(outputs, reference, list(single), "batch 1 (reference: HF eager)")
    peers.require_same(outputs, reference_batch, list(batched), "batch 8 (reference: HF eager)")
    for size, ref in references.items():
        peers.require_same(outputs, ref, [n for n, s in size_of.items() if s == size], f"batch {size} (HF eager)")
    for size in (1, 8):
        names = [n for n, ps in beam_prompts.items() if len(ps) == size]
        if not names:  # --no-beam
            continue
        fp32 = [n for n in names if "int8" not in n]
        ref = outputs[next(n for n in names if HF_EAGER in n)]
        peers.require_same(outputs, ref, fp32, f"beam {BEAM}, batch {size}: best hypotheses (reference: HF eager)")
    same = {name: True for t in (single, batched) for name in t}
    agree = {name: leading_agreement(outputs[name], reference) for name in low}
    agree.update({n: min(leading_agreement(a, b) for a, b in
                         zip(outputs[n], outputs[next(m for m, ps in beam_prompts.items()
                                                      if ps == beam_prompts[n] and HF_EAGER in m)]))
                  for n in beams if "int8" in n})

    nbytes, (l3, l3_source) = weight_bytes(ours), l3_bytes()
    shape = peers.model_shape(ours, nbytes)
    lengths = {size: list(map(len, size_prompts(size))) for size in SIZES}
    kinds = {size: probe_buffer(peers.footprint(shape, lengths[size], NEW), l3)[0] for size in SIZES}
    bound_kind = probe_buffer(nbytes, l3)[0]  # batch 1's weights alone, as before
    probes = {kind: probe_buffer(max((peers.footprint(shape, lengths[s], NEW) for s in SIZES if kinds[s] == kind),
                                     default=nbytes) if kind == "L3" else 1 << 62, l3)[1]
              for kind in {bound_kind, *kinds.values()}}
    gemm, gemm_flops = peers.gemm_seconds(ours)
    timed = {name: wall_timed(fn) for name, fn in candidates.items()}
    for kind, buffer in probes.items():
        timed[f"probe {kind}"] = lambda b=buffer: min(at_threads(n, lambda: read_seconds(b))()
                                                      for n in sorted({1, threads}))
    timed["gemm"] = at_threads(threads, gemm)
    times = interleaved(timed, args.rounds, warmup=1)
    bws = {kind: b.numel() * b.element_size() / median(times.pop(f"probe {kind}")) for kind, b in probes.items()}
    flop_rate = gemm_flops / median(times.pop("gemm"))
    bw = bws[bound_kind]
    probe_mib = probes[bound_kind].numel() * probes[bound_kind].element_size() / 2**20
    del probes
    rate = {name: NEW * rows_of[name] / median(ts) for name, ts in times.items()}
    load_end = os.getloadavg()[0]

    def sides(names, peer="hf"):  # the fp32 tables' ratios are against HF's best (CTranslate2's: ct2_text)
        seqlab = {n: rate[n] for n in names if n.startswith("seqlab")}
        return seqlab, {n: rate[n] for n in names if not n.startswith("seqlab") and n.startswith(peer)}

    v1, vb = verdict(*sides(single)), verdict(*sides(batched))
    ratio, ratio_batched = v1["ratio"], vb["ratio"]
    low_v = low_verdicts(low, low_info, rate, no_int8)
    bound = bw / nbytes
    fraction = v1["seqlab_value"] / bound
    met = {"batch1": ratio >= TARGET_RATIO or (bound_kind == "DRAM" and fraction >= TARGET_BOUND),
           "batch8": ratio_batched >= TARGET_RATIO}
    bounds = {size: peers.batch_bound(shape, lengths[size], NEW, bws[kinds[size]], flop_rate) for size in SIZES}
    by_size = {1: list(single), 8: list(batched),
               **{size: [n for n, s in size_of.items() if s == size] for size in (4, 16)}}
    beam_v = {size: verdict(*sides([n for n, ps in beam_prompts.items() if len(ps) == size and "int8" not in n], ""))
              for size in (1, 8) if any(len(ps) == size for ps in beam_prompts.values())
              and any(n.startswith("seqlab") for n, ps in beam_prompts.items() if len(ps) == size)}
    gemvs = [] if args.quick else at_threads(threads, lambda: gemv_table(ours, args.rounds))()
    rss = {} if args.quick else peak_rss(ours, compile)
    fastest = max((n for n in batched if n.startswith("seqlab: compiled") and (TILED in n or "BLAS" in n)),
                  key=rate.get, default=None)  # products a profile can tell apart (stream's are plain reductions)
    profile = step_profile(ours, prompts, fastest, threads) if fastest else None

    section = render(args, threads, load_start, load_end, single, batched, low, low_info, rate, same, agree, v1, vb,
                     low_v, bw, nbytes, l3, l3_source, bound_kind, probe_mib, fraction, met, gemvs, rss, compile_s,
                     eos)
    section += bound_text(bounds, kinds, bws, flop_rate, by_size, rate, lengths, shape)
    section += beam_text(beams, beam_prompts, rate, beam_v, agree, compile_s)
    section += ct2_text(ct2, ct2_why, single, batched, rate, threads)
    if profile:
        section += peers.profile_text(profile, len(prompts), profile["products"], shape, lengths[len(prompts)], NEW,
                                      bws[kinds[len(prompts)]], kinds[len(prompts)], rate[fastest])
    line = cpu_line()
    slug = re.sub(r"[^a-z0-9]+", "-", line.split(",")[0].lower()).strip("-")
    if "avx512f no" in line and not isa_cap():  # "AMD EPYC" names the AVX-512 and the AVX2-only class alike
        slug += "-avx2-only"
    if args.quick and not os.environ.get("SEQLAB_BENCH_RESULTS"):
        print("--quick without SEQLAB_BENCH_RESULTS: section not written (smoke figures stay out of RESULTS.md)",
              file=sys.stderr)
    else:
        write_section(f"generate-{slug}{isa_suffix()}", section)
    print(json.dumps({
        "seqlab_best": v1["seqlab_best"], "peer_best": v1["peer_best"], "ratio": round(ratio, 3),
        "seqlab_best_batched": vb["seqlab_best"], "peer_best_batched": vb["peer_best"],
        "ratio_batched": round(ratio_batched, 3),
        "medians_tokens_per_s": {name: round(r, 1) for name, r in rate.items()},
        "bound_kind": bound_kind, "bound_tokens_per_s": round(bound, 1), "bound_fraction": round(fraction, 3),
        "bounds": {size: {"kind": kinds[size], "tokens_per_s": round(b["tokens_per_s"], 1), "limiter": b["limiter"],
                          "seqlab_best": round(max((rate[n] for n in by_size[size] if n.startswith("seqlab")),
                                                   default=0), 1)}
                   for size, b in bounds.items()},
        "gemm_gflop_per_s": round(flop_rate / 1e9, 1),
        "beam": {size: {k: v[k] for k in ("seqlab_best", "peer_best", "ratio")} for size, v in beam_v.items()},
        "ctranslate2": ct2_why or ct2_version_line(),
        "read_gb_per_s": round(bw / 1e9, 2), "l3_mib": round(l3 / 2**20, 1) if l3 else None,
        "l3_source": l3_source,
        "weight_mb": round(nbytes / 1e6, 2), "same_tokens": all(same.values()),
        "low_precision": {d: {"seqlab_best": v["seqlab_best"], "seqlab_tokens_per_s": round(v["seqlab_value"], 1),
                              "peer_best": v["peer_best"], "ratio": v["ratio"],
                              **{k: v[k] for k in ("seqlab_computes", "peer_computes", "no_peer") if k in v}}
                          for d, v in low_v.items()},
        "targets_met": met, "compile_s": {name: round(s, 1) for name, s in compile_s.items()},
        "step_profile_ms": {k: round(v, 3) for k, v in profile["ms_a_step"].items()} if profile else None,
        "threads": threads, "rounds": args.rounds, "new_tokens": NEW, "quick": args.quick,
        "load": [load_start, load_end],
        **({"seqlab_peak_rss_mib": round(rss["ours"]), "hf_peak_rss_mib": round(rss["hf"])} if rss else {}),
        "machine": machine()}))


def step_profile(ours, prompts, name: str, threads: int) -> dict:
    """bench/generate_peers.py's profile of the candidate ``name`` (seqlab's faster compiled row at batch 8 of the
    two whose products the profile tells apart by name: inductor's C++ GEMM template or the BLAS calls), on
    a copy of ``ours`` (its step compiled apart, with kernel profiling) at ``threads`` threads; adds its products."""
    products = "tiled" if TILED in name else "blas" if "BLAS" in name else "stream"
    twin = copy.deepcopy(ours)
    profile = at_threads(threads, lambda: peers.step_profile(
        twin, lambda: ours_generate_batch(twin, prompts, True, products), NEW - 1))()
    return {**profile, "products": products}


def ct2_models(hf, folder: str, threads: int) -> tuple[dict, str | None]:
    """CTranslate2's generators ({"float32": ..., "int8": ...}) converted from ``hf`` into ``folder``, at
    ``threads`` intra-op threads; ({}, why) where ctranslate2 is not installed (the section says so)."""
    if peers.ct2_version() is None:
        return {}, "ctranslate2 is not installed (pip install -e '.[bench]')"
    paths = peers.ct2_convert(hf, Path(folder))
    return {q: peers.ct2_generator(path, q, threads) for q, path in paths.items()}, None


def bound_text(bounds, kinds, bws, flop_rate, by_size, rate, lengths, shape) -> str:
    """The bound for every batch size: its three terms, and each side's best tokens/s as a share of it."""
    def best(size, prefix):
        names = [n for n in by_size.get(size, []) if n.startswith(prefix) and "int8" not in n]
        return max(names, key=rate.get) if names else None

    lines = ["", f"Bound for every batch size (fp32, {NEW} new tokens a row): per step, the largest of the weight "
             f"bytes ({shape.weight_bytes / 1e6:.1f} MB) over the read bandwidth, the step's FLOPs (2 x "
             f"{shape.product_params / 1e6:.2f} M product parameters a token, 4 x d_model a layer and attended "
             f"position) over the GEMM rate, and the KV-cache bytes the step reads over the same bandwidth; step 0 "
             f"encodes the prompts. The bandwidth is the L3's where the weights and the whole KV cache fit in it, "
             f"else DRAM's (each probed in every round: " + ", ".join(f"{k} {b / 1e9:.1f} GB/s" for k, b in
                                                                      sorted(bws.items())) +
             f"); the GEMM rate is that of the model's products (every Linear's shape) on {peers.GEMM_ROWS} rows "
             f"through F.linear, measured in every round: "
             f"{flop_rate / 1e9:.1f} GFLOP/s.", "",
             "| batch | prompt lengths | memory | weights, ms | FLOPs, ms | KV cache, ms | limited by | bound "
             "tokens/s | seqlab best | % of bound | HF best | % of bound | CTranslate2 fp32 | % of bound |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for size, b in bounds.items():
        cells = []
        for prefix in ("seqlab", "hf", "ctranslate2"):
            name = best(size, prefix)
            cells += ([f"{rate[name]:.0f}", f"{rate[name] / b['tokens_per_s']:.0%}"] if name else ["-", "-"])
        terms = " | ".join(f"{b['terms_s'][k] * 1e3:.0f}" for k in ("weights", "FLOPs", "KV cache"))
        lines.append(f"| {size} | {', '.join(map(str, lengths[size]))} | {kinds[size]} | {terms} | {b['limiter']} "
                     f"({b['limit_steps'][b['limiter']]} of {NEW} steps) | {b['tokens_per_s']:.0f} | "
                     + " | ".join(cells) + " |")
    lines += ["", "The terms are summed over the decode's steps (ms a call). Batch 4 and 16 rows (seqlab's compiled "
              "step, each product choice that runs at that size; tokens checked equal to HF eager's on the same "
              "prompts):", "", "| candidate | tokens/s |", "|---|---|"]
    lines += [f"| {n} | {rate[n]:.0f} |" for size in (4, 16) for n in by_size.get(size, [])]
    return "\n".join(lines) + "\n"


def beam_text(beams, beam_prompts, rate, beam_v, agree, compile_s) -> str:
    """The beam-search table: batch 1 and 8, K = BEAM, each row's tokens/s (prompts x new tokens / time)."""
    if not beams:
        return ""
    lines = ["", f"Beam search, K = {BEAM}, {NEW} new tokens (tokens/s = prompts x {NEW} / time: the best "
             f"hypothesis' tokens). The bench LM cannot emit its end token, so every hypothesis runs the full length "
             f"and either length penalty ranks them by log-probability alone; every fp32 row's best hypothesis was "
             f"checked equal to HF eager's (the int8 rows: leading tokens equal, the fewest over the prompts):", "",
             "| candidate | tokens/s | vs peer best | cold first call (compile), s | leading tokens equal |",
             "|---|---|---|---|---|"]
    for size in (1, 8):
        names = [n for n, ps in beam_prompts.items() if len(ps) == size]
        v = beam_v.get(size)
        for n in names:
            vs = f"{rate[n] / v['peer_value']:.2f}" if v and "int8" not in n else "-"
            lines.append(f"| {n} | {rate[n]:.0f} | {vs} | {f'{compile_s[n]:.0f}' if n in compile_s else '-'} | "
                         f"{f'{agree[n]} of {NEW}' if n in agree else 'all (checked)'} |")
    for size, v in beam_v.items():
        lines += ["", f"**beam {BEAM}, batch {size}: seqlab best / peer best = {v['ratio']:.2f}** "
                      f"({v['seqlab_best']} over {v['peer_best']})."]
    return "\n".join(lines) + "\n"


def ct2_text(ct2, why, single, batched, rate, threads) -> str:
    """What CTranslate2 ran (or why not), and seqlab's best against its fp32 rows at batch 1 and 8."""
    if not ct2:
        return f"\nCTranslate2: not run: {why}.\n"
    lines = ["", f"CTranslate2 {peers.ct2_version()}: the same HF weights saved and converted offline "
             f"(`TransformersConverter`, quantization float32 and int8), run by `Generator(compute_type=..., "
             f"intra_threads={threads}, inter_threads=1).generate_batch(..., end_token=[])`: its "
             f"converter records an end token (`{peers.CT2_END}`) outside the 65 tokens, which CTranslate2 maps to "
             f"the unknown token's id, a real token here, so no end token is given and every row runs the full length "
             f"(checked)."]
    for label, names in (("batch 1", single), ("batch 8", batched)):
        ours = [n for n in names if n.startswith("seqlab")]
        theirs = [n for n in names if n.startswith("ctranslate2")]
        if ours and theirs:
            a, b = max(ours, key=rate.get), max(theirs, key=rate.get)
            lines += ["", f"**{label}: seqlab best / CTranslate2 fp32 = {rate[a] / rate[b]:.2f}** ({a} over {b})."]
    return "\n".join(lines) + "\n"


def ct2_version_line() -> str:
    return f"ctranslate2 {peers.ct2_version()}"


def render(args, threads, load_start, load_end, single, batched, low, low_info, rate, same, agree, v1, vb, low_v,
           bw, nbytes, l3, l3_source, bound_kind, probe_mib, fraction, met, gemvs, rss, compile_s, eos) -> str:
    """The whole RESULTS.md section: set-up, peer configuration, tables, bound, targets."""
    def rows(names, base):
        return "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[base]:.2f} | {'yes' if same[n] else 'NO'} | "
                         f"{f'{compile_s[n]:.0f}' if n in compile_s else '-'} |" for n in names)

    cold = "; ".join(f"{n.split(': ', 1)[1]} {s:.0f} s" for n, s in compile_s.items() if n in low)
    quick = (f"\n_Smoke run (`--quick`): {NEW} new tokens, {args.rounds} round; not a benchmark figure._\n"
             if args.quick else "")
    l3_text = f"{l3 / 2**20:.0f} MiB" if l3 else "unknown"
    fits = "fit in" if bound_kind == "L3" else "exceed"
    probe_text = ("about the weights' size, capped at 3/4 of the L3, so it stays in the L3" if bound_kind == "L3"
                  else f"at least {PROBE_MIB} MiB and 4x the L3, so it streams from DRAM")
    gemv_text = "" if not gemvs else f"""
The 24 weight products of one token alone (one row, the layer shapes
384x1152, 384x384, 384x1536, 1536x384, six layers; fp32 weights read per call / time):

| way | ms per token | GB/s |
|---|---|---|
{chr(10).join(f"| {name} | {ms:.2f} | {gbs:.1f} |" for name, ms, gbs in gemvs)}
"""
    rss_text = (f"\nPeak RSS, each side alone in a subprocess (eager HF, seqlab's compiled step): "
                f"HF {rss['hf']:.0f} MiB, seqlab {rss['ours']:.0f} MiB." if rss else "")
    return f"""## Generation on {cpu_line().split(';')[0]}{isa_heading()}: greedy, {NEW} new tokens (bench/generate.py)
{quick}
6 layers, 6 heads, d_model 384, vocab 65, max_len 272; the same weights on both sides. Every candidate, on
both sides, runs at {threads} torch thread{'s' * (threads > 1)} (set by this script, which owns the process;
seqlab's decoding never changes it). Medians of {args.rounds} interleaved, shuffled round{'s' * (args.rounds > 1)} after a discarded warm-up round
(bench/common.py `interleaved`). Each compiled candidate made one cold call before the rounds (its compile):
its seconds are in the last column, in no timed figure. Load average (other jobs on these {os.cpu_count()}
cores): {load_start:.1f} at the start, {load_end:.1f} at the end.

HF's configurations: eager with its dynamic cache, and the recipe of HF's docs "Optimizing inference", section
"Static kv-cache and torch.compile" ({HF_DOCS}): `model.generation_config.cache_implementation = "static"` and
`model.forward = torch.compile(model.forward, fullgraph=True, dynamic=False)`. The docs' `mode="reduce-overhead"`
is CUDA graphs, which inductor skips for CPU tensors, so the default mode is what applies on the CPU;
`dynamic=False` keeps each graph specialised (a decode's shapes never change). SDPA attention; batch 1 and the
batch of 8 each have their own compiled copy, so neither's static cache is re-made. No `min_new_tokens`: HF's
EOS id ({eos}) lies outside the 65-token vocabulary (asserted), so neither side can stop early; every row was
checked to hold all {NEW} tokens.

Batch 1, a 16-token prompt:

| candidate | tokens/s | vs HF best | same {NEW} tokens as HF eager | cold first call (compile), s |
|---|---|---|---|---|
{rows(single, v1["peer_best"])}

**ratio (seqlab best / HF best) = {v1["ratio"]:.2f}** ({v1["seqlab_best"]} over {v1["peer_best"]}).

Bound: this CPU's L3 is {l3_text} (read from {l3_source}); the {nbytes / 1e6:.1f} MB of fp32 weights
one token reads {fits} it, so the **{bound_kind} bound** applies. Its read bandwidth, probed in every round over
{probe_mib:.0f} MiB ({probe_text}; the faster of 1 and {threads} threads, median of the rounds):
{bw / 1e9:.1f} GB/s, so {bw / nbytes:.0f} tokens/s; seqlab's best is **{fraction:.0%} of the {bound_kind} bound**
(HF's best {v1["peer_value"] / (bw / nbytes):.0%}).

Batched, 8 prompts of {', '.join(map(str, BATCH_LENGTHS))} tokens, left-padded (tokens/s = 8 x {NEW} / time):

| candidate | tokens/s | vs HF best | same tokens as HF eager, every row | cold first call (compile), s |
|---|---|---|---|---|
{rows(batched, vb["peer_best"])}

**ratio_batched = {vb["ratio"]:.2f}** ({vb["seqlab_best"]} over {vb["peer_best"]}).
{low_section(low, low_info, rate, agree, v1["seqlab_best"], low_v, bw, args.ppl_run)}
{target_lines(v1["ratio"], vb["ratio"], fraction, bound_kind, met)}
{gemv_text}
How the compiled step reads its weights (a streaming reduction instead of the BLAS's GEMV where that is faster,
the products' inputs computed once): seqlab.nn.gemv's docstring. Where other jobs share the cores, each
parallel op of a token waits whenever its partner thread is descheduled, so seqlab's `decode_threads()` decodes
on one thread while the load average exceeds the core count; here both sides are held to {threads}
thread{'s' * (threads > 1)} instead.
{rss_text}
Cold first calls of the low-precision rows (compile included): {cold or "none"}.
"""


# ---- --device cuda: both sides on the GPU (bench/gpu.sh) ------------------------------------------------------------

HF_STATIC_CUDA = 'static cache + torch.compile(forward, mode="reduce-overhead" (CUDA graphs), fullgraph=True)'
HF_STATIC_AUTO_CUDA = "static cache, generate's own compile of its decoding step (CompileConfig defaults)"
HBM_PROBE_MIB = 1024  # the GPU memory's read-bandwidth probe


def hf_static_cuda(hf):
    """A copy of ``hf`` set up by HF's documented recipe as written for a GPU (llm_optims): static cache and
    ``model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)``. (On CUDA with a
    static cache, ``generate`` also compiles its decoding steps itself: its CompileConfig, reduce-overhead.)"""
    model = copy.deepcopy(hf)
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    return model


def hf_static_auto_cuda(hf):
    """A copy of ``hf`` with the static cache alone: on CUDA ``generate`` then compiles its decoding step itself
    (transformers' CompileConfig, reduce-overhead by default; the "Generation strategies / static cache" docs).
    A second candidate beside ``hf_static_cuda``: with transformers 5.17 on torch 2.11 that one fails its first
    call (a CUDA graph's output read after the next replay), and the peer's best is the best of those that run."""
    model = copy.deepcopy(hf)
    model.generation_config.cache_implementation = "static"
    return model


def synced(fn):
    """``fn`` followed by ``torch.cuda.synchronize()``: a call's wall time is the GPU work it queued."""
    def run():
        out = fn()
        torch.cuda.synchronize()
        return out
    return run


def hbm_read_bandwidth(tries: int = 5) -> float:
    """Bytes/s of the fastest of ``tries`` full reads (a sum) of an HBM_PROBE_MIB buffer on the GPU."""
    buffer = torch.ones(HBM_PROBE_MIB * 2**20 // 4, device="cuda")
    buffer.sum()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(tries):
        t = time.perf_counter()
        buffer.sum()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return buffer.numel() * buffer.element_size() / best


def cuda_candidates(hf, ours, prompt, prompts, compile: bool) -> tuple[dict, dict, set]:
    """(batch-1 candidates, batch-8 candidates, the compiling names) on the GPU; each call ends synchronised."""
    single = {
        f"hf: generate, SDPA, fp32, {HF_EAGER}": lambda: hf_generate(hf, prompt),
        "seqlab: eager, preallocated KV cache": lambda: ours_generate(ours, prompt),
    }
    batched = {
        f"hf: generate, 8 left-padded prompts, attention mask, {HF_EAGER}": lambda: hf_generate_batch(hf, prompts),
        "seqlab: eager, one left-padded batch": lambda: ours_generate_batch(ours, prompts),
    }
    compiled_single, compiled_batched = {}, {}
    if compile:
        static, static_b = hf_static_cuda(hf), hf_static_cuda(hf)  # each batch size its own static cache
        auto, auto_b = hf_static_auto_cuda(hf), hf_static_auto_cuda(hf)
        # the compiled step's products as seqlab.decoding.products.decode_products chooses off the CPU: the BLAS (cuBLAS)
        compiled_single = {
            f"hf: generate, SDPA, fp32, {HF_STATIC_CUDA}": lambda: hf_generate(static, prompt),
            f"hf: generate, SDPA, fp32, {HF_STATIC_AUTO_CUDA}": lambda: hf_generate(auto, prompt),
            "seqlab: compiled step": lambda: ours_generate(ours, prompt, True, "blas"),
        }
        compiled_batched = {
            f"hf: generate, 8 left-padded prompts, attention mask, {HF_STATIC_CUDA}":
                lambda: hf_generate_batch(static_b, prompts),
            f"hf: generate, 8 left-padded prompts, attention mask, {HF_STATIC_AUTO_CUDA}":
                lambda: hf_generate_batch(auto_b, prompts),
            "seqlab: compiled step, one left-padded batch": lambda: ours_generate_batch(ours, prompts, True, "blas"),
        }
    single, batched = {**single, **compiled_single}, {**batched, **compiled_batched}
    compiling = {*compiled_single, *compiled_batched}
    return ({n: synced(f) for n, f in single.items()}, {n: synced(f) for n, f in batched.items()}, compiling)


def main_cuda(args) -> None:
    """bench/generate.py --device cuda: both sides on the GPU, fp32, batch 1 and 8; its own section."""
    if not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    import transformers

    hf, ours, prompt = build()
    eos = assert_eos_unreachable(hf)
    hf, ours, prompt = hf.to("cuda"), ours.to("cuda"), prompt.to("cuda")
    prompts = batch_prompts()
    single, batched, compiling = cuda_candidates(hf, ours, prompt, prompts, not args.no_compile)
    compile_s, failed = {}, {}
    for name in [n for n in (*single, *batched) if n in compiling]:  # cold calls: the compiles, kept out of timing
        table = single if name in single else batched
        t = time.perf_counter()
        try:
            table[name]()
        except Exception as e:  # noqa: BLE001 (a candidate that cannot run here is left out, and the section says why)
            failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            del table[name]
            print(f"cold call FAILED, left out: {name}: {failed[name]}", file=sys.stderr)
            continue
        compile_s[name] = time.perf_counter() - t
        print(f"cold call (compile) {compile_s[name]:.0f} s: {name}", file=sys.stderr)
    candidates = {**single, **batched}
    outputs = {name: fn() for name, fn in candidates.items()}  # the correctness pass (also a warm call)
    reference = outputs[f"hf: generate, SDPA, fp32, {HF_EAGER}"]
    reference_batch = outputs[f"hf: generate, 8 left-padded prompts, attention mask, {HF_EAGER}"]
    # the checks, as on the CPU: every row holds all its tokens and gives HF eager's (else no section)
    peers.require_lengths(outputs, NEW, set(batched))
    peers.require_same(outputs, reference, list(single), "cuda, batch 1 (reference: HF eager)")
    peers.require_same(outputs, reference_batch, list(batched), "cuda, batch 8 (reference: HF eager)")
    same = {name: outputs[name] == reference for name in single}
    same.update({name: outputs[name] == reference_batch for name in batched})
    times = interleaved({name: wall_timed(fn) for name, fn in candidates.items()}, args.rounds, warmup=1)
    rate = {name: NEW * (len(prompts) if name in batched else 1) / median(ts) for name, ts in times.items()}

    def sides(names):
        seqlab = {n: rate[n] for n in names if n.startswith("seqlab")}
        return seqlab, {n: rate[n] for n in names if n.startswith("hf")}

    v1, vb = verdict(*sides(single)), verdict(*sides(batched))
    bw, nbytes = hbm_read_bandwidth(), weight_bytes(ours)
    fraction = v1["seqlab_value"] / (bw / nbytes)
    met = {"batch1": v1["ratio"] >= TARGET_RATIO, "batch8": vb["ratio"] >= TARGET_RATIO}
    section = render_cuda(args, single, batched, rate, same, v1, vb, bw, nbytes, fraction, met, compile_s, failed,
                          eos, transformers.__version__)
    slug = re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name().lower()).strip("-")
    if args.quick and not os.environ.get("SEQLAB_BENCH_RESULTS"):
        print("--quick without SEQLAB_BENCH_RESULTS: section not written (smoke figures stay out of RESULTS.md)",
              file=sys.stderr)
    else:
        write_section(f"generate-{slug}-cuda", section)
    print(json.dumps({
        "seqlab_best": v1["seqlab_best"], "peer_best": v1["peer_best"], "ratio": round(v1["ratio"], 3),
        "seqlab_best_batched": vb["seqlab_best"], "peer_best_batched": vb["peer_best"],
        "ratio_batched": round(vb["ratio"], 3),
        "medians_tokens_per_s": {name: round(r, 1) for name, r in rate.items()},
        "bound_kind": "HBM", "bound_tokens_per_s": round(bw / nbytes, 1), "bound_fraction": round(fraction, 4),
        "read_gb_per_s": round(bw / 1e9, 1), "weight_mb": round(nbytes / 1e6, 2), "same_tokens": all(same.values()),
        "targets_met": met, "compile_s": {name: round(s, 1) for name, s in compile_s.items()}, "failed": failed,
        "rounds": args.rounds, "new_tokens": NEW, "quick": args.quick, "device": "cuda",
        "machine": machine()}))


def render_cuda(args, single, batched, rate, same, v1, vb, bw, nbytes, fraction, met, compile_s, failed, eos,
                hf_version) -> str:
    """The GPU's RESULTS.md section: set-up, peer configuration, the two tables, bound, targets."""
    def rows(names, base):
        return "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[base]:.2f} | {'yes' if same[n] else 'NO'} | "
                         f"{f'{compile_s[n]:.0f}' if n in compile_s else '-'} |" for n in names)

    word = {True: "**met**", False: "**not met**"}
    quick = (f"\n_Smoke run (`--quick`): {NEW} new tokens, {args.rounds} round; not a benchmark figure._\n"
             if args.quick else "")
    left_out = "".join(f"\n- {name}: {why}" for name, why in failed.items())
    left_out = f"\nLeft out (their first call failed on this machine):{left_out}\n" if failed else ""
    gpu = torch.cuda.get_device_name()
    return f"""## Generation on {gpu}: greedy, {NEW} new tokens (bench/generate.py --device cuda)
{quick}
GPU: {gpu_line()}; torch {torch.__version__}, transformers {hf_version}. 6 layers, 6 heads, d_model 384, vocab
65, max_len 272; the same fp32 weights on both sides (torch's default fp32 matmul precision: no TF32). Medians of
{args.rounds} interleaved, shuffled round{'s' * (args.rounds > 1)} after a discarded warm-up round (bench/common.py
`interleaved`); every timed call ends in `torch.cuda.synchronize()`. Each compiled candidate made one cold call
before the rounds (its compile): its seconds are in the last column, in no timed figure.

HF's configurations: eager with its dynamic cache, and the recipe of HF's docs "Optimizing inference", section
"Static kv-cache and torch.compile" ({HF_DOCS}), as written there for a GPU:
`model.generation_config.cache_implementation = "static"` and
`model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)`; `reduce-overhead` is
CUDA graphs, which apply on the GPU (with a static cache on CUDA, `generate` also compiles its decoding steps
itself, with its CompileConfig, reduce-overhead by default). SDPA attention; batch 1 and the batch of 8 each
have their own compiled copy. seqlab: eager with its preallocated KV cache, and its compiled decode step
(`seqlab generate --compile`: inductor, C++ wrapper, frozen weights, the BLAS's products; no CUDA graphs). HF's EOS
id ({eos}) lies outside the 65-token vocabulary (asserted), so neither side can stop early.

Batch 1, a 16-token prompt:

| candidate | tokens/s | vs HF best | same {NEW} tokens as HF eager | cold first call (compile), s |
|---|---|---|---|---|
{rows(single, v1["peer_best"])}

**ratio (seqlab best / HF best) = {v1["ratio"]:.2f}** ({v1["seqlab_best"]} over {v1["peer_best"]}).

Bound: every batch-1 token reads the {nbytes / 1e6:.1f} MB of fp32 weights once; the GPU memory reads
{bw / 1e9:.0f} GB/s (the best of 5 sums over {HBM_PROBE_MIB} MiB), so {bw / nbytes:,.0f} tokens/s; seqlab's best
is **{fraction:.1%} of the HBM bound** (HF's best {v1["peer_value"] / (bw / nbytes):.1%}).

Batched, 8 prompts of {', '.join(map(str, BATCH_LENGTHS))} tokens, left-padded (tokens/s = 8 x {NEW} / time):

| candidate | tokens/s | vs HF best | same tokens as HF eager, every row | cold first call (compile), s |
|---|---|---|---|---|
{rows(batched, vb["peer_best"])}

**ratio_batched = {vb["ratio"]:.2f}** ({vb["seqlab_best"]} over {vb["peer_best"]}).
{left_out}
Targets: batch 1 >= {TARGET_RATIO}x HF's best: this run {v1["ratio"]:.2f}x: {word[met["batch1"]]}. Batch 8 >=
{TARGET_RATIO}x HF's best: this run {vb["ratio"]:.2f}x: {word[met["batch8"]]}. The low-precision rows, the GEMV
table and peak RSS are the CPU section's (not run on the GPU).
"""


if __name__ == "__main__":
    main()
