"""Does a refactor cost speed? Two source trees of seqlab, the same work, interleaved in one run.

For each tree a long-lived child process (``cwd`` and ``PYTHONPATH`` = the tree, so its own ``seqlab`` is
imported) builds the bench model of bench/generate.py (a 6-layer, 6-head, 384-wide GPT: vocab 65, GELU, pre-LN,
tied embeddings, seed 0) and warms up, compiles included, untimed. Then the parent asks the children, one
workload at a time, in a freshly shuffled order each round (the first round discarded), for:

- ``decode b1``: compiled greedy decoding, one 16-token prompt, 256 new tokens (tokens/s);
- ``decode b8``: the same for 8 left-padded prompts of 3-16 tokens (tokens/s of all rows);
- ``train step``: forward, backward and AdamW on 12 x 256 tokens under bf16 autocast with the explicit attention
  path (what both trees' language-model training runs on a CPU with bf16), eager (tokens/s); in fp32 on a CPU
  that emulates bf16 (the section says why).

Both trees decode with the same products (``--products``, default ``stream``: an older tree reads
``SEQLAB_DECODE_GEMV``, a newer one takes ``products=``) and the same thread count (an older tree's load-average
rule is held to it); the children's greedy tokens are compared. Figures are medians; ``ratio`` = new / old (above 1: the new tree is faster).

    python bench/tree_speed.py --old /work/oldtree --new . [--rounds 5] [--products stream]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bf16_rows, cpu_line, median, write_section  # noqa: E402

WORKLOADS = ("decode b1", "decode b8", "train step")
EMULATED = bf16_rows()  # the train step in bf16 autocast where the CPU computes bf16 natively, else in fp32
PRECISION = "fp32" if EMULATED else "bf16"
CHILD = r'''
import inspect, json, os, sys, time
import torch
from seqlab import Sampling, generate  # the root's names: every tree has them, wherever decoding lives
from seqlab.models.transformer import TransformerLM, TransformerLMConfig
from seqlab.nn.attention import set_attention_impl

products, precision = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = TransformerLM(TransformerLMConfig(vocab_size=65, n_layers=6, n_heads=6, d_model=384, d_ff=1536,
                                          max_len=272, dropout=0.0, positions="learned")).eval()
g = torch.Generator().manual_seed(1)
prompt = torch.randint(0, 65, (16,), generator=g).tolist()
prompts = [torch.randint(0, 65, (n,), generator=g).tolist() for n in (16, 3, 11, 7, 14, 5, 9, 12)]
kw = {"products": products} if "products" in inspect.signature(generate).parameters else {}
if not kw:  # an older tree: the products from the environment, and no load-average rule on the threads
    os.environ["SEQLAB_DECODE_GEMV"] = products
    decode_module = sys.modules[generate.__module__]
    if hasattr(decode_module, "decode_threads"):
        decode_module.decode_threads = torch.get_num_threads

def decode(rows):
    return generate(model, rows, 256, Sampling(0), compile=True, **kw)

trainee = TransformerLM(TransformerLMConfig(vocab_size=65, n_layers=6, n_heads=6, d_model=384, d_ff=1536,
                                            max_len=256, dropout=0.0, positions="learned"))
set_attention_impl(trainee, "equations")
opt = torch.optim.AdamW(trainee.parameters(), lr=1e-4, fused=True)
batch = torch.randint(0, 65, (12, 257), generator=g)

def train():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        logits = trainee(batch[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), batch[:, 1:].flatten())
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)

work = {"decode b1": lambda: decode([prompt]), "decode b8": lambda: decode(prompts), "train step": train}
tokens = {"decode b1": 256, "decode b8": 256 * 8, "train step": 12 * 256}
t0 = time.perf_counter()
first = {"decode b1": decode([prompt]), "decode b8": decode(prompts)}
train(); train()
print(json.dumps({"ready": time.perf_counter() - t0, "tokens": first}), flush=True)
for line in sys.stdin:
    name = line.strip()
    t0 = time.perf_counter()
    work[name]()
    print(json.dumps({"tokens_per_s": tokens[name] / (time.perf_counter() - t0)}), flush=True)
'''


class Child:
    def __init__(self, tree: Path, products: str, threads: int):
        env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(threads)}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, products, PRECISION], cwd=tree, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.ready = json.loads(self.proc.stdout.readline())

    def run(self, name: str) -> float:
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())["tokens_per_s"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", type=Path, required=True)
    p.add_argument("--new", type=Path, default=Path("."))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--products", choices=("stream", "blas"), default="stream")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--label", default="", help="names the section (tree_speed-LABEL)")
    args = p.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    children = {side: Child(tree, args.products, args.threads) for side, tree in trees.items()}
    same = children["old"].ready["tokens"] == children["new"].ready["tokens"]
    rates = {(side, w): [] for side in trees for w in WORKLOADS}
    rng = random.Random(0)
    jobs = [(side, w) for side in trees for w in WORKLOADS]
    for r in range(args.rounds + 1):
        rng.shuffle(jobs)
        for side, w in jobs:
            rate = children[side].run(w)
            if r:  # the first round is the warm-up
                rates[side, w].append(rate)
    for child in children.values():
        child.close()
    med = {k: median(v) for k, v in rates.items()}
    ratios = {w: med["new", w] / med["old", w] for w in WORKLOADS}
    rows = "\n".join(f"| {w} | {med['old', w]:,.0f} | {med['new', w]:,.0f} | **{ratios[w]:.3f}** | "
                     f"{min(rates['old', w]):,.0f}-{max(rates['old', w]):,.0f} / "
                     f"{min(rates['new', w]):,.0f}-{max(rates['new', w]):,.0f} |" for w in WORKLOADS)
    within = all(r >= 0.95 for r in ratios.values())
    write_section(f"tree_speed{'-' + args.label if args.label else ''}", f"""## Refactor speed: the same work on two source trees, interleaved (bench/tree_speed.py)

Old tree `{trees['old']}`, new tree `{trees['new']}`; {args.threads} threads; compiled decoding with `{args.products}`
products; the train step in {'bf16 autocast' if PRECISION == 'bf16' else f'fp32 (no bf16: {EMULATED})'}; {args.rounds} rounds after a discarded one, each workload of each tree once per round in a shuffled
order, medians. The bench GPT (6 layers, 6 heads, 384 wide, vocabulary 65). Both trees' greedy tokens are
{'identical' if same else '**different**'}. Compile and warm-up time (untimed): old {children['old'].ready['ready']:.0f} s,
new {children['new'].ready['ready']:.0f} s. CPU: {cpu_line()}.

| workload | old tokens/s | new tokens/s | new / old | range old / new |
|---|---:|---:|---:|---|
{rows}

Target: the new tree within 5 % of the old (new / old >= 0.95) on every workload: {'met' if within else 'missed'}.
""")
    result = {"bench": "tree_speed", "same_tokens": same, "ratio": round(min(ratios.values()), 3),
              "ratios": {w: round(r, 3) for w, r in ratios.items()},
              "tokens_per_s": {f"{s} {w}": round(v, 1) for (s, w), v in med.items()}, "within_5_percent": within}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
