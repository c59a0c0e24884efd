"""sentence-transformers' ONNX and OpenVINO backends for bench/encoder.py, run by the second environment's Python.

sentence-transformers 6 requires transformers 5, and its ``onnx`` extra (optimum-onnx 0.1.0) requires transformers
< 4.58, so those backends cannot run in the project's environment. bench/encoder.py starts this script, one
process per thread count, in the environment ``make bench-peer-env`` makes (.venv-st5, pinned in
bench/st5-env.txt: sentence-transformers 5.x, transformers 4.57, optimum-onnx and optimum-intel) and times it
beside its own candidates. It imports nothing from seqlab (that environment has no seqlab).

    .venv-st5/bin/python bench/st_backends.py MODEL_DIR SENTENCES_JSON WORKDIR --threads N --batch 32

Offline, from a copy of MODEL_DIR in WORKDIR (optimum writes its exports beside the weights), it loads each backend
at N intra-op threads: ``backend="onnx"`` (optimum's export of the model, fp32), the same after
``export_optimized_onnx_model(model, "O3")`` (onnxruntime's transformer fusions and GELU approximation, fp32) and
``backend="openvino"`` (optimum-intel's export to OpenVINO IR, fp32). Each backend's load (its export included) is
timed apart and its embeddings of every sentence saved as WORKDIR/NAME.npy for the caller to check.

Protocol, one JSON object a line on stdout (whatever the libraries print goes to stderr): first ``{"versions": ...,
"requires": ...}``; then, per backend, ``{"backend", "config", "embeddings", "load_s"}`` or ``{"backend",
"error"}`` with the error that backend's load or first pass raised; then ``{"ready": true}``. Then one command a
line on stdin: a backend's name runs ``gc.collect()`` and one timed pass (``encode``, batch ``--batch``,
normalised embeddings), answered ``{"seconds": S}``; ``quit`` or the end of stdin ends the process.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # bench/onnx.py would shadow onnx

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402

DISTRIBUTIONS = ("sentence-transformers", "transformers", "torch", "optimum", "optimum-onnx", "optimum-intel",
                 "onnxruntime", "openvino", "huggingface-hub")
BACKENDS = ("onnx", "onnx O3", "openvino")


def versions() -> dict[str, str]:
    """Each distribution's installed version (or "not installed"), read from this environment's metadata."""
    found = {}
    for dist in DISTRIBUTIONS:
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def transformers_requirements() -> dict[str, str]:
    """What each installed optimum distribution requires of transformers, read from its metadata."""
    out = {}
    for dist in ("optimum-onnx", "optimum-intel"):
        try:
            wanted = [r.split(";")[0].strip() for r in metadata.requires(dist) or []
                      if r.startswith("transformers") and "extra ==" not in r]
        except metadata.PackageNotFoundError:
            continue
        out[dist] = ", ".join(wanted)
    return out


def error_text(exc: BaseException) -> str:
    """The error as raised: its type and message, whitespace folded, at most 400 characters."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}"[:400]


def load(name: str, model_dir: Path, threads: int, found: dict[str, str]):
    """(the SentenceTransformer of backend ``name`` at ``threads`` intra-op threads, its configuration)."""
    from sentence_transformers import SentenceTransformer

    st = f"sentence-transformers {found['sentence-transformers']}"
    if name.startswith("onnx"):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        kwargs = {"provider": "CPUExecutionProvider", "session_options": options}
        ort_config = (f"onnxruntime {found['onnxruntime']} CPUExecutionProvider, intra_op_num_threads = the row's "
                      "threads, inter_op_num_threads 1")
        model = SentenceTransformer(str(model_dir), device="cpu", backend="onnx", model_kwargs=kwargs)
        if name == "onnx":
            return model, (f"{st} `backend=\"onnx\"`: optimum-onnx {found['optimum-onnx']}'s fp32 export, "
                           f"{ort_config}")
        from sentence_transformers import export_optimized_onnx_model

        export_optimized_onnx_model(model, "O3", str(model_dir))
        model = SentenceTransformer(str(model_dir), device="cpu", backend="onnx",
                                    model_kwargs={**kwargs, "file_name": "onnx/model_O3.onnx"})
        return model, (f"{st} `backend=\"onnx\"` after `export_optimized_onnx_model(model, \"O3\")` (onnxruntime's "
                       f"transformer fusions + GELU approximation, fp32), {ort_config}")
    model = SentenceTransformer(str(model_dir), device="cpu", backend="openvino",
                                model_kwargs={"ov_config": {"INFERENCE_NUM_THREADS": threads}})
    return model, (f"{st} `backend=\"openvino\"`: optimum-intel {found['optimum-intel']}'s fp32 export to OpenVINO "
                   f"IR, openvino {found['openvino']} CPU, INFERENCE_NUM_THREADS = the row's threads")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("sentences", type=Path, help="a JSON list of the sentences")
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    args = ap.parse_args()

    answer = os.fdopen(os.dup(1), "w", buffering=1)  # the protocol's stdout
    os.dup2(2, 1)  # everything else printed, by Python or by native code, goes to stderr
    sys.stdout = sys.stderr
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"

    def say(obj: dict) -> None:
        answer.write(json.dumps(obj) + "\n")

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    found = versions()
    say({"versions": found, "requires": transformers_requirements()})
    sentences = json.loads(args.sentences.read_text(encoding="utf-8"))
    model_dir = args.workdir / "st-model"
    if not model_dir.exists():
        shutil.copytree(args.model_dir, model_dir)
    models = {}
    for name in BACKENDS:
        t = time.perf_counter()
        try:
            model, config = load(name, model_dir, args.threads, found)
            load_s = time.perf_counter() - t
            emb = np.asarray(model.encode(sentences, batch_size=args.batch, normalize_embeddings=True,
                                          convert_to_numpy=True), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - the caller's section prints the error this run raised
            say({"backend": name, "error": error_text(exc)})
            continue
        path = args.workdir / f"{name.replace(' ', '-')}.npy"
        np.save(path, emb)
        models[name] = model
        say({"backend": name, "config": config, "embeddings": str(path), "load_s": load_s})
    say({"ready": True})
    for line in sys.stdin:
        name = line.strip()
        if name == "quit":
            break
        gc.collect()
        t = time.perf_counter()
        models[name].encode(sentences, batch_size=args.batch, normalize_embeddings=True, convert_to_numpy=True)
        say({"seconds": time.perf_counter() - t})


if __name__ == "__main__":
    main()
