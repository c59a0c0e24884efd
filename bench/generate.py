"""Greedy generation speed: seqlab vs Hugging Face ``generate``, same weights, same run.

Batch 1, a 16-token prompt, 256 new tokens, max_len 272 on both sides; the 6-layer, 6-head,
384-dim GPT (vocab 65, GELU, pre-LN, tied embeddings). HF's weights are random; ours are copied
from them (seqlab.models.gpt2), so both must produce the same 256 tokens: the benchmark checks it.
Candidates are timed interleaved in shuffled rounds; each figure is a median. (HF's static cache is not
a candidate: transformers compiles the forward for it, and without compile the notes measured it within 3%
of the dynamic cache.) Peak RSS of each side
is measured in its own subprocess.

    .venv/bin/python bench/generate.py [--rounds 5] [--no-compile]

Prints one JSON line last: tokens/s of both, ``ratio`` = seqlab / HF (above 1 = seqlab faster).
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

from common import machine, median, run_json_subprocess, write_section  # noqa: E402

PROMPT, NEW, MAX_LEN = 16, 256, 272


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


def hf_generate(hf, prompt, cache_implementation=None):
    kw = {"cache_implementation": cache_implementation} if cache_implementation else {}
    with torch.inference_mode():
        out = hf.generate(prompt, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0, **kw)
    return out[0, PROMPT:].tolist()


def ours_generate(ours, prompt, compile=False):
    from seqlab.decode import Sampling, generate

    return generate(ours, [prompt[0].tolist()], NEW, Sampling(0), compile=compile)[0]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled decode step")
    args = ap.parse_args()
    hf, ours, prompt = build()
    candidates = {
        "hf: generate, SDPA, fp32, dynamic cache": lambda: hf_generate(hf, prompt),
        "seqlab: eager, preallocated KV cache": lambda: ours_generate(ours, prompt),
    }
    if not args.no_compile:
        t = time.perf_counter()
        ours_generate(ours, prompt, compile=True)
        print(f"compile (cold) {time.perf_counter() - t:.1f} s", file=sys.stderr)
        candidates["seqlab: compiled static decode step"] = lambda: ours_generate(ours, prompt, compile=True)
    reference = hf_generate(hf, prompt)
    same = {name: fn() == reference for name, fn in candidates.items()}
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for r in range(args.rounds):
        order = list(candidates)
        random.Random(r).shuffle(order)
        for name in order:
            t = time.perf_counter()
            candidates[name]()
            times[name].append(time.perf_counter() - t)
    rate = {name: NEW / median(ts) for name, ts in times.items()}
    hf_best = max((n for n in rate if n.startswith("hf")), key=rate.get)
    ours_best = max((n for n in rate if n.startswith("seqlab")), key=rate.get)
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
    rows = "\n".join(f"| {n} | {rate[n]:.0f} | {rate[n] / rate[hf_best]:.2f} | {'yes' if same[n] else 'NO'} |"
                     for n in candidates)
    ratio = rate[ours_best] / rate[hf_best]
    write_section("generate", f"""## Generation: greedy, batch 1, 16-token prompt, 256 new tokens (bench/generate.py)

6 layers, 6 heads, d_model 384, vocab 65, max_len 272; the same weights on both sides. Medians of
{args.rounds} interleaved rounds.

| candidate | tokens/s | vs HF best | same 256 tokens as HF |
|---|---|---|---|
{rows}

**ratio (seqlab best / HF best) = {ratio:.2f}**. Peak RSS, each side alone in a subprocess: HF
{rss['hf']:.0f} MiB, seqlab {rss['ours']:.0f} MiB.""")
    print(json.dumps({"seqlab_tokens_per_s": round(rate[ours_best], 1), "hf_tokens_per_s": round(rate[hf_best], 1),
                      "ratio": round(ratio, 3), "same_tokens": all(same.values()),
                      "seqlab_peak_rss_mib": round(rss["ours"]), "hf_peak_rss_mib": round(rss["hf"]),
                      "machine": machine()}))


if __name__ == "__main__":
    main()
