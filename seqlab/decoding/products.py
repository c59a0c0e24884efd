"""How compiled decoding multiplies its rows by the weights on this machine: :func:`decode_products`, the BLAS,
seqlab's streaming products (:mod:`seqlab.nn.gemv`) or inductor's register-blocked GEMM template, measured once per
CPU and row count, cached in ``$SEQLAB_CACHE/choices.json``, overridable by ``SEQLAB_DECODE_GEMV``. The caller (the
LM task, the bench) passes the choice to :func:`seqlab.decoding.decode.generate` as an argument.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from seqlab.base.errors import SeqlabError
from seqlab.base.io import cache_dir, write_json_atomic
from seqlab.base.machine import cpu_model

if TYPE_CHECKING:
    import torch

log = logging.getLogger("seqlab")

DECODE_PRODUCTS_KEY = "SEQLAB_DECODE_GEMV"  # "blas" | "stream" | "tiled" | "auto" (measure; the default)
CHOICES_FILE = "choices.json"  # under $SEQLAB_CACHE: {"CPU model | torch version | products rev": {...}}
MEASURED_ROWS = 64  # up to this many rows a step (batch x beam) the choice is measured; past it, the BLAS


def decode_products(device: torch.device, rows: int = 1) -> str:
    """How compiled decoding on ``device`` multiplies ``rows`` rows (batch x beam) by the weights
    (:func:`seqlab.decoding.decode.decode_step`): "stream" (inductor reductions that stream each weight once,
    2-3x the BLAS on an AMD EPYC at one row; at several rows each weight is read once for all of them,
    :func:`seqlab.nn.gemv._rows_product`), "tiled" (inductor's C++ GEMM template: register-blocked
    micro-kernels over the packed frozen weights) or "blas" (oneDNN's packed linear, MKL's GEMM).
    ``SEQLAB_DECODE_GEMV=blas|stream|tiled`` decides; otherwise the fastest of :func:`ways` measured on this CPU
    for that row count (cached in ``$SEQLAB_CACHE/choices.json``, keyed by the CPU model, torch version and
    :func:`products_revision`, one entry per row count), or measured now, once per row count (seconds, and the
    compiles), and logged once. Past ``MEASURED_ROWS`` rows, and on any device but the CPU: "blas"."""
    from seqlab.decoding.decode import PRODUCTS

    choice = os.environ.get(DECODE_PRODUCTS_KEY, "auto").strip().lower() or "auto"
    if choice not in ("auto", *PRODUCTS):
        raise SeqlabError(f"{DECODE_PRODUCTS_KEY}={choice!r} is not a choice; use auto, {', '.join(PRODUCTS)}")
    if device.type != "cpu":
        return "blas"
    if choice != "auto":
        return choice
    return _measured_products(rows) if 1 <= rows <= MEASURED_ROWS else "blas"


def ways(rows: int) -> tuple[str, ...]:
    """The product choices that differ at ``rows`` rows: the streaming products take at most
    ``seqlab.nn.gemv.ROWS`` (past it they are the BLAS's)."""
    from seqlab.nn.gemv import ROWS

    return ("blas", "stream", "tiled") if rows <= ROWS else ("blas", "tiled")


@functools.cache
def products_revision() -> str:
    """The first 12 hex digits of the sha256 of the sources that decide how each choice compiles
    (seqlab.nn.gemv and seqlab.decoding.decode): a choice measured with other products is measured again."""
    import hashlib

    from seqlab.decoding import decode
    from seqlab.nn import gemv

    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (gemv, decode))).hexdigest()[:12]


@functools.cache  # once per process and row count; the file keeps it across processes
def _measured_products(rows: int = 1) -> str:
    import torch

    key = f"{cpu_model()} | torch {torch.__version__} | products {products_revision()}"
    path = cache_dir() / CHOICES_FILE
    known = {}
    with contextlib.suppress(OSError, ValueError):  # no file yet, or a damaged one: measured (and rewritten)
        known = json.loads(path.read_text(encoding="utf-8"))
    known = known if isinstance(known, dict) else {}
    entry = known.get(key, {}) if isinstance(known.get(key), dict) else {}
    by_rows = entry.get("decode_products", {})
    if isinstance(by_rows, str):  # a file from before the choice was per row count: it measured one row
        by_rows = {"1": by_rows}
    by_rows = by_rows if isinstance(by_rows, dict) else {}
    if by_rows.get(str(rows)) in ways(rows):
        return by_rows[str(rows)]
    seconds = _time_products(rows)
    choice = min(seconds, key=seconds.get)
    timings = entry.get("decode_products_ms", {})
    timings = timings if isinstance(timings, dict) and all(isinstance(v, dict) for v in timings.values()) else {}
    known[key] = {"decode_products": {**by_rows, str(rows): choice},
                  "decode_products_ms": {**timings, str(rows): {k: round(v * 1e3, 4) for k, v in seconds.items()}}}
    with contextlib.suppress(OSError):  # a read-only cache: measured again next time, still correct
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, known)
    log.info("seqlab: compiled decoding of %d row(s) on this CPU (%s) uses %s products: %s (measured once, cached "
             "in %s; %s=blas|stream|tiled overrides)", rows, key, choice,
             ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in seconds.items()), path, DECODE_PRODUCTS_KEY)
    return choice


def _time_products(rows: int = 1, rounds: int = 5, calls: int = 100) -> dict[str, float]:
    """Seconds per call of a decode-shaped block (``rows`` rows through 384 -> 1536 -> GELU -> 384, the bench
    model's FFN) compiled each way that takes ``rows`` rows (:func:`ways`) as the decode step is (frozen
    weights), timed interleaved; medians of ``rounds``."""
    import torch
    from torch import nn

    from seqlab.decoding.decode import compile_products, inductor_options, tracing

    gen = torch.Generator().manual_seed(0)
    block = nn.Sequential(nn.Linear(384, 1536), nn.GELU(), nn.Linear(1536, 384)).eval()
    x = torch.randn(rows, 384, generator=gen)
    compiled = {name: (compile_products(block, name, inductor_options(name)), inductor_options(name))
                for name in ways(rows)}
    times: dict[str, list[float]] = {name: [] for name in compiled}
    with torch.no_grad():
        for step, options in compiled.values():  # compile, warm
            with tracing(options):
                step(x)
            step(x)
        for _ in range(rounds):
            for name, (step, _) in compiled.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    step(x)
                times[name].append((time.perf_counter() - t0) / calls)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}
