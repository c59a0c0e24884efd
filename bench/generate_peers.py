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
