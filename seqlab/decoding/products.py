"""How compiled decoding multiplies its few rows by the weights on this machine: :func:`decode_products`, the
BLAS or seqlab's streaming products (:mod:`seqlab.nn.gemv`), measured once per CPU and row count, cached in
``$SEQLAB_CACHE/choices.json``, overridable by ``SEQLAB_DECODE_GEMV``. The caller (the LM task, the bench) passes
the choice to :func:`seqlab.decoding.decode.generate` as an argument.
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

DECODE_PRODUCTS_KEY = "SEQLAB_DECODE_GEMV"  # "stream" | "blas" | "auto" (measure; the default)
CHOICES_FILE = "choices.json"  # under $SEQLAB_CACHE: {"CPU model | torch version | gemv rev": {"decode_products": ...}}


def decode_products(device: torch.device, rows: int = 1) -> str:
    """How compiled decoding on ``device`` multiplies ``rows`` rows (the batch's prompts) by the weights
    (:func:`seqlab.decoding.decode.decode_step`): "stream" (inductor reductions that stream each weight once: 2-3x
    the BLAS on an AMD EPYC at one row; at several rows each weight is read once for all of them,
    :func:`seqlab.nn.gemv._rows_product`) or "blas" (MKL's or oneDNN's GEMV/GEMM, which wins on Intel CPUs).
    ``SEQLAB_DECODE_GEMV=stream|blas`` decides; otherwise the choice measured on this CPU for that row count (cached
    in ``$SEQLAB_CACHE/choices.json``, keyed by the CPU model, torch version and :func:`gemv_revision`, one entry
    per row count), or measured now, once per row count (a few seconds), and logged once. More rows than the
    streaming products take (``seqlab.nn.gemv.ROWS``), and any device but the CPU: "blas"."""
    from seqlab.decoding.decode import PRODUCTS
    from seqlab.nn.gemv import ROWS

    choice = os.environ.get(DECODE_PRODUCTS_KEY, "auto").strip().lower() or "auto"
    if choice not in ("auto", *PRODUCTS):
        raise SeqlabError(f"{DECODE_PRODUCTS_KEY}={choice!r} is not a choice; use auto, {', '.join(PRODUCTS)}")
    if device.type != "cpu":
        return "blas"
    if choice != "auto":
        return choice
    return _measured_products(rows) if 1 <= rows <= ROWS else "blas"


@functools.cache
def gemv_revision() -> str:
    """The first 12 hex digits of the sha256 of seqlab.nn.gemv's source: a choice measured with other streaming
    products is measured again."""
    import hashlib

    from seqlab.nn import gemv

    return hashlib.sha256(Path(gemv.__file__).read_bytes()).hexdigest()[:12]


@functools.cache  # once per process and row count; the file keeps it across processes
def _measured_products(rows: int = 1) -> str:
    import torch

    from seqlab.decoding.decode import PRODUCTS

    key = f"{cpu_model()} | torch {torch.__version__} | gemv {gemv_revision()}"
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
    if by_rows.get(str(rows)) in PRODUCTS:
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
             "in %s; %s=stream|blas overrides)", rows, key, choice,
             ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in seconds.items()), path, DECODE_PRODUCTS_KEY)
    return choice


def _time_products(rows: int = 1, rounds: int = 5, calls: int = 100) -> dict[str, float]:
    """Seconds per call of a decode-shaped block (``rows`` rows through 384 -> 1536 -> GELU -> 384, the bench
    model's FFN) compiled both ways as the decode step is (frozen weights), timed interleaved; medians of
    ``rounds``."""
    import torch
    from torch import nn

    from seqlab.nn import gemv

    gen = torch.Generator().manual_seed(0)
    block = nn.Sequential(nn.Linear(384, 1536), nn.GELU(), nn.Linear(1536, 384)).eval()
    x = torch.randn(rows, 384, generator=gen)
    ways = {"blas": torch.compile(block, dynamic=False, options={"freezing": True}),
            "stream": torch.compile(block, dynamic=False, backend=functools.partial(gemv.backend, freezing=True))}
    times: dict[str, list[float]] = {name: [] for name in ways}
    with torch.no_grad():
        for step in ways.values():  # compile, warm
            step(x)
            step(x)
        for _ in range(rounds):
            for name, step in ways.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    step(x)
                times[name].append((time.perf_counter() - t0) / calls)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}

