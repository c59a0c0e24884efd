"""bench/generate.py's peers beyond HF's documented recipe, its beam-search table and its bound for every batch size
(issue #55). Imported by bench/generate.py; nothing here runs on its own.

- **HF with seqlab's inductor options**: HF's static cache + ``torch.compile(model.forward, fullgraph=True,
  dynamic=False)`` given what seqlab's compiled decode step sets (seqlab.decoding.decode.inductor_options at its
  widest): ``cpp_wrapper``, ``freezing`` (set while the forward traces, where dynamo reads it) and max_autotune over
  inductor's C++ GEMM template and the BLAS, and from the second call on the guards left unchecked
  (``torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)``).
- **CTranslate2** on the same weights: the HF model saved (``save_pretrained``) and converted offline by
  ``ctranslate2.converters.TransformersConverter`` to float32 and int8. The converter reads a tokenizer for the
  vocabulary; the bench model has none, so it is given the 65 ids as tokens ``<0>`` ... ``<64>`` and an end token
  outside them (``<|endoftext|>``, as GPT-2 names it). CTranslate2 maps a token outside its vocabulary to the
  unknown token's id, a real one here, so generation passes ``end_token=[]`` (no end token: every row runs the
  full length; ``min_length`` would instead forbid that real token). Every call is checked to return the full
  number of tokens a row.
- **The bound for every batch size**: per step, the largest of the weight bytes over the read bandwidth (the L3's
  where weights and the KV cache fit in it, else DRAM's), the step's FLOPs over the GEMM rate measured on the
  products' shapes, and the KV-cache bytes the step reads over the same bandwidth (:func:`batch_bound`).
- **Where the batched step's time goes**: :func:`step_profile` (torch.profiler over a copy compiled with inductor's
  kernel profiling, its records grouped into :data:`PARTS`) and what bounds the step (:func:`profile_text`).
- **Checks that fail**: :func:`require_same` raises :class:`BenchCheckFailed` (the bench exits non-zero, no
  section written) when an fp32 row's tokens differ from the reference's.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from seqlab.decoding.decode import inductor_options, tracing

# seqlab.decoding.decode.decode_step's inductor options at their widest (fp32, products "tiled"): the C++ wrapper,
# frozen weights (set while tracing, where dynamo reads it), max_autotune over inductor's C++ GEMM template and the BLAS
SEQLAB_OPTIONS = inductor_options("tiled")
HF_SEQLAB = ("static cache + torch.compile(forward, fullgraph=True) with seqlab's inductor options "
             "(cpp_wrapper, freezing, max_autotune over inductor's C++ GEMM template and the BLAS, guards skipped "
             "after warm-up)")
CT2_END = "<|endoftext|>"  # the end token the converter records; not among the 65 tokens
GEMM_ROWS = 256  # rows of the GEMM-rate probe: enough that the products' FLOPs, not their weight reads, bound it


class BenchCheckFailed(AssertionError):
    """A check of the bench did not hold: the run stops here, before any section is written."""


def require_same(outputs: dict, reference, names, what: str) -> None:
    """Every fp32 row named in ``names`` must give the reference's tokens; otherwise :class:`BenchCheckFailed`
    naming the rows and the first position each differs at (such a row never enters a ratio)."""
    bad = []
    for name in names:
        if outputs[name] != reference:
            rows = outputs[name] if isinstance(reference[0], list) else [outputs[name]]
            refs = reference if isinstance(reference[0], list) else [reference]
            first = [first_difference(a, b) for a, b in zip(rows, refs)]
            bad.append(f"{name}: rows differ at {first}")
    if bad:
        raise BenchCheckFailed(f"{what}: fp32 tokens differ from the reference's:\n  " + "\n  ".join(bad))


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first position where the token lists differ (a length difference counts), None when equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def require_lengths(outputs: dict, new: int, batched: set) -> None:
    """No end token can stop a row: every row of every candidate holds all ``new`` tokens."""
    short = [n for n, out in outputs.items() if any(len(r) != new for r in (out if n in batched else [out]))]
    if short:
        raise BenchCheckFailed(f"not {new} tokens in every row: {short}")


# ---- HF with seqlab's inductor options -----------------------------------------------------------------------

class SkipGuardsAfterWarmup:
    """``call()`` runs ``fn``: its first call (where the compiled forward traces) with the weights frozen as
    seqlab's step freezes them (seqlab.decoding.decode.tracing), the later ones with the guards of compiled code
    unchecked (as seqlab's decode step does once warm)."""

    def __init__(self, fn):
        self.fn, self.warm = fn, False

    def __call__(self):
        if not self.warm:
            with tracing(SEQLAB_OPTIONS):
                out = self.fn()
            self.warm = True
            return out
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
            return self.fn()


def hf_seqlab_options(hf):
    """A copy of ``hf`` with its static cache and a forward compiled with seqlab's options."""
    model = copy.deepcopy(hf)
    model.generation_config.cache_implementation = "static"
    model.forward = torch.compile(model.forward, fullgraph=True, dynamic=False, options=dict(SEQLAB_OPTIONS))
    return model


# ---- CTranslate2 ------------------------------------------------------------------------------------------------

def ct2_convert(hf, folder: Path, quantizations=("float32", "int8")) -> dict[str, Path]:
    """Save ``hf`` and convert it offline with CTranslate2's converter, once per quantization: {q: model dir}."""
    from ctranslate2.converters import TransformersConverter

    vocab = hf.config.vocab_size

    class Vocabulary:  # the converter's tokenizer: the ids as tokens, an end token outside them
        bos_token, unk_token, eos_token = "<0>", "<0>", CT2_END

        def get_vocab(self):
            return {f"<{i}>": i for i in range(vocab)}

    class Converter(TransformersConverter):
        def load_tokenizer(self, *args, **kwargs):
            return Vocabulary()

    folder = Path(folder)
    hf.save_pretrained(folder / "hf")
    out = {}
    for q in quantizations:
        out[q] = Path(Converter(str(folder / "hf")).convert(str(folder / f"ct2-{q}"), quantization=q, force=True))
        config = json.loads((out[q] / "config.json").read_text())
        if config.get("eos_token") != CT2_END:
            raise BenchCheckFailed(f"CTranslate2's converted config names another end token: {config}")
        tokens = (out[q] / "vocabulary.json").read_text() if (out[q] / "vocabulary.json").exists() else None
        if tokens is not None and len(json.loads(tokens)) != vocab:
            raise BenchCheckFailed(f"CTranslate2's vocabulary holds {len(json.loads(tokens))} tokens, not {vocab}")
    return out


def ct2_generator(path: Path, compute_type: str, threads: int):
    import ctranslate2

    return ctranslate2.Generator(str(path), device="cpu", compute_type=compute_type, intra_threads=threads,
                                 inter_threads=1)


def ct2_generate(generator, prompts: list[list[int]], new: int, beam: int = 1) -> list[list[int]]:
    """Each prompt's ``new`` tokens (greedy, or the best of ``beam``), no end token."""
    tokens = [[f"<{i}>" for i in p] for p in prompts]
    results = generator.generate_batch(tokens, max_length=new, beam_size=beam, sampling_topk=1, end_token=[],
                                       include_prompt_in_result=False, max_batch_size=0)
    return [r.sequences_ids[0] for r in results]


def ct2_version() -> str | None:
    try:
        import ctranslate2
    except ImportError:
        return None
    return ctranslate2.__version__


# ---- the bound for every batch size -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Shape:
    """What one decode of the bench model reads and computes: fp32 bytes of the weights one step reads, the
    parameters of its matrix products (24 + the output head), layers, d_model."""

    weight_bytes: int
    product_params: int
    layers: int
    d_model: int


def model_shape(model, weight_bytes: int) -> Shape:
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    return Shape(weight_bytes, sum(m.weight.numel() for m in linears), model.cfg.n_layers, model.cfg.d_model)


def kv_bytes(shape: Shape, positions: int, element: int = 4) -> int:
    """Bytes of keys and values a step reads for a row attending ``positions`` positions."""
    return 2 * shape.layers * shape.d_model * positions * element


def batch_bound(shape: Shape, lengths: list[int], new: int, bandwidth: float, flop_rate: float) -> dict:
    """The bound of one decode of ``len(lengths)`` rows (prompt lengths ``lengths``, ``new`` tokens each).

    Step 0 encodes the prompts and gives the first token; step s (1 .. new-1) feeds one token a row, which attends
    its L + s positions. Each step takes at least the largest of: the weight bytes / ``bandwidth``, its FLOPs
    (2 x product parameters per token, 4 x d_model per attended position and layer) / ``flop_rate``, and the KV bytes
    it reads / ``bandwidth``. Returns the bound tokens/s (rows x new / the steps' sum), each term's share of the
    steps it limits, and the three terms summed over the steps (s)."""
    terms = {"weights": 0.0, "FLOPs": 0.0, "KV cache": 0.0}
    limits = dict.fromkeys(terms, 0)
    total = 0.0
    for s in range(new):
        if s == 0:
            tokens = sum(lengths)
            attended = sum(n * (n + 1) // 2 for n in lengths)  # causal prefill
            kv = 0
        else:
            tokens = len(lengths)
            attended = sum(n + s for n in lengths)
            kv = kv_bytes(shape, attended)
        flops = 2 * shape.product_params * tokens + 4 * shape.d_model * shape.layers * attended
        step = {"weights": shape.weight_bytes / bandwidth, "FLOPs": flops / flop_rate, "KV cache": kv / bandwidth}
        for k, v in step.items():
            terms[k] += v
        worst = max(step, key=step.get)
        limits[worst] += 1
        total += step[worst]
    return {"tokens_per_s": len(lengths) * new / total, "seconds": total, "terms_s": terms,
            "limiter": max(limits, key=limits.get), "limit_steps": limits}


def footprint(shape: Shape, lengths: list[int], new: int) -> int:
    """Bytes the last step touches: the weights and every row's keys and values."""
    return shape.weight_bytes + sum(kv_bytes(shape, n + new) for n in lengths)


def gemm_seconds(model, rows: int = GEMM_ROWS):
    """A probe for ``interleaved``: the seconds of the model's matrix products (every Linear, its (out, in) shape) on
    ``rows`` rows through F.linear, and the FLOPs that took (2 x rows x parameters)."""
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    xs = [torch.randn(rows, m.in_features) for m in linears]
    flops = 2 * rows * sum(m.weight.numel() for m in linears)

    def run() -> float:
        with torch.inference_mode():
            t = time.perf_counter()
            for x, m in zip(xs, linears):
                F.linear(x, m.weight, m.bias)
            return time.perf_counter() - t
    return run, flops


# ---- where the batched step's time goes -------------------------------------------------------------------------

GRAPH_CALL = "## Call CompiledFxGraph"  # torch.profiler's record of one compiled graph's call
STEP_ENTRY = ("TorchDynamo Cache Lookup", "Torch-Compiled Region", "AOTDispatcher Runtime Wrapper Prologue",
              "Pregraph bytecode")  # dynamo's and AOTAutograd's records around a compiled call
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear", "aten::_weight_int8pack_mm")
PARTS = ("weight products", "attention over the KV cache", "other kernels of the step",
         "the graph's C++ wrapper between its kernels", "entering the compiled step (dynamo, AOT wrappers)",
         "outside the compiled step")


def profile_part(name: str, in_graph: bool) -> str | None:
    """The part of the step a profiler record's self time belongs to (None: left to "outside", the remainder).
    Inductor names its kernels after what they fuse: ``..._gemm_m8n1536k384_...`` a product through its C++ GEMM
    template, ``..._softmax_...`` the attention (the bmm of one query per head decomposed into the same kernel); the
    BLAS's products are their own records (aten's, oneDNN's packed linear). "stream"'s products are reductions fused
    with their neighbours, which no name tells apart: not profiled."""
    if name.startswith(GRAPH_CALL):
        return PARTS[3]
    if name.startswith(STEP_ENTRY):
        return PARTS[4]
    if not in_graph:
        return None
    if "_gemm_" in name or name in MATMULS or name.startswith(("mkldnn::", "onednn::")):
        return PARTS[0]
    if "softmax" in name or "attention" in name:
        return PARTS[1]
    return PARTS[2]


def step_profile(model, call, steps: int) -> dict:
    """Where one ``call()`` (a decode through ``model``'s compiled step, ``steps`` steps of it) spends its time:
    ms a step per part (:data:`PARTS`). ``model`` is a copy compiled for this alone, with inductor's kernel profiling
    on (each generated kernel records itself), warmed twice; the profiled call's wall time less every record
    attributed is "outside" (the prompt's encoding, choosing the tokens, the Python loop, the profiler's own work)."""
    with torch._inductor.config.patch({"cpp.enable_kernel_profile": True}):
        call(), call()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        call()
        wall = time.perf_counter() - start
    parts = dict.fromkeys(PARTS, 0.0)
    for event in prof.events():
        parent, in_graph = event.cpu_parent, False
        while parent is not None and not in_graph:
            in_graph, parent = parent.name.startswith(GRAPH_CALL), parent.cpu_parent
        part = profile_part(event.name, in_graph)
        if part is not None:
            parts[part] += event.self_cpu_time_total / 1e6
    parts[PARTS[5]] = max(0.0, wall - sum(parts.values()))
    if parts[PARTS[0]] == 0 or parts[PARTS[1]] == 0:
        raise BenchCheckFailed(f"the step profile found no {'product' if not parts[PARTS[0]] else 'attention'} "
                               f"kernel: inductor's kernel names changed (bench/generate_peers.py profile_part)")
    return {"wall_s": wall, "steps": steps, "ms_a_step": {k: v / steps * 1e3 for k, v in parts.items()}}


def profile_text(profile: dict, rows: int, products: str, shape: Shape, lengths: list[int], new: int,
                 bandwidth: float, memory: str, best: float) -> str:
    """The profile's table and what bounds the step: the weights and the keys and values it reads, each at the
    rate the profile implies, against the probed bandwidth."""
    ms = profile["ms_a_step"]
    total = sum(ms.values())
    kv = sum(kv_bytes(shape, sum(n + s for n in lengths)) for s in range(1, new)) / (new - 1)  # a step, on average
    memory_s = (shape.weight_bytes + kv) / bandwidth
    lines = ["", f"Where the batched step's time goes (batch {rows}, seqlab's compiled step, products "
             f"\"{products}\"): one decode of {rows} x {new} tokens profiled with torch.profiler on a copy of the "
             f"model compiled with inductor's kernel profiling (each generated kernel records itself), after two "
             f"warm calls; the records cost time of their own, so the parts are shares of this call ({total:.2f} ms "
             f"a step, {rows * 1e3 / total:.0f} tokens/s), not speeds:", "",
             "| part | ms a step | share |", "|---|---|---|"]
    lines += [f"| {part} | {v:.2f} | {v / total:.0%} |" for part, v in ms.items()]
    products_rate = shape.weight_bytes / (ms[PARTS[0]] / 1e3)
    attention_rate = kv / (ms[PARTS[1]] / 1e3)
    lines += ["", f"What bounds it: a step reads the weights ({shape.weight_bytes / 1e6:.1f} MB) and, on average over "
              f"the decode, {kv / 1e6:.1f} MB of keys and values, from {memory} (the bound's memory for this batch, "
              f"above): read once each at the probed {bandwidth / 1e9:.1f} GB/s, {memory_s * 1e3:.2f} ms a "
              f"step, at most {rows / memory_s:.0f} tokens/s (the profiled row in the timed rounds above, {best:.0f} "
              f"tokens/s, is {best * memory_s / rows:.0%} of that). In the profiled call the products read the "
              f"weights at {products_rate / 1e9:.1f} GB/s and the attention its keys and values at "
              f"{attention_rate / 1e9:.1f} GB/s."]
    return "\n".join(lines) + "\n"
