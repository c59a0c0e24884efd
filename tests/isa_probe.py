"""What each library dispatches to in this process: the probe of tests/test_isa_caps.py (its module docstring says
what each check shows).

Two ways in, one probe:

- a pytest plugin (``python -m pytest -p isa_probe ...``, with tests/ on PYTHONPATH): when SEQLAB_ISA_PROBE_OUT
  names a file, the session's start runs the probe and writes its findings there as JSON, before collection
  imports a test module. A capped level then pays one Python start, one torch import and one collection for the
  probe and the parity rerun together (a probe subprocess of its own cost ~5-8 s a level).
- on its own (``python -c "import isa_probe; isa_probe.write(OUT)"``): the host's uncapped probe, which reruns
  no test.

oneDNN's and MKL's verbose output is switched on around the probe's own calls only (torch.backends.mkldnn.verbose,
torch.backends.mkl.verbose), not by ONEDNN_VERBOSE / MKL_VERBOSE for the whole process: the parity tests then run
without printing a line per primitive. Both libraries print with C stdio to fd 1, so the lines are caught there
(:func:`_fd_stdout`). The findings of a failing probe are its traceback ("error"), which the outer test shows.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path

OUT_ENV = "SEQLAB_ISA_PROBE_OUT"


def _numba() -> dict:
    """The CPU name and features numba compiles for, and the vector registers of two small kernels' code."""
    import numpy as np
    from numba import njit
    from numba.core.registry import cpu_target

    @njit(fastmath=True)
    def dot(a, b):
        s = np.float32(0.0)
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s

    @njit
    def mul64(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * b[i]

    f = np.ones(64, np.float32)
    dot(f, f)
    n = np.ones(64, np.int64)
    mul64(n, n, n.copy())
    asm = "\n".join(dot.inspect_asm().values())
    asm64 = "\n".join(mul64.inspect_asm().values())
    magic = cpu_target.target_context.codegen().magic_tuple()
    return {"cpu": magic[1], "avx512_features": sorted(set(re.findall(r"\+avx512\w*", magic[2]))),
            "zmm": asm.count("%zmm"), "ymm": asm.count("%ymm"), "vpmullq": "vpmullq" in asm64,
            "magic": list(magic)}


def _numba_cache(magic: list) -> dict:
    """Which builds the cache index (in NUMBA_CACHE_DIR) of a cache=True kernel of seqlab's holds after a call."""
    import numpy as np

    from seqlab.models.word2vec_kernels import _sgd_pair

    _sgd_pair(np.full((3, 16), 0.1, np.float32), np.full((3, 16), 0.01, np.float32), 0, np.array([[1, 2]]),
              np.array([[1.0, 0.0]], np.float32), 0, 2, np.float32(0.025), np.zeros((2, 16), np.float32))
    try:  # numba internals (0.68): the index maps (signature, magic tuple, hashes) to the stored build
        index = _sgd_pair._cache._cache_file._load_index()
    except AttributeError as e:
        return {"unavailable": repr(e)}
    builds = sorted({(k[1][1], bool(re.search(r"\+avx512", k[1][2]))) for k in index})
    return {"path": _sgd_pair.stats.cache_path, "builds": builds, "this_build": any(list(k[1]) == magic for k in index)}


@contextlib.contextmanager
def _fd_stdout(into: list[str]):
    """Fd 1 (where oneDNN and MKL printf their verbose lines) into a temporary file for the block; its lines are
    appended to ``into``. C stdio is flushed on both sides, so no line lands on the wrong side."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            into.extend(tmp.read().decode("utf-8", "replace").splitlines())


def _torch() -> tuple[str, list[str]]:
    """(ATen's CPU capability, the verbose lines of oneDNN's LSTM and convolution and MKL's sgemm)."""
    import torch

    lines: list[str] = []
    with torch.random.fork_rng(devices=[]):  # the tests' random streams stay as they would be without the probe
        torch.manual_seed(0)
        lstm, x = torch.nn.LSTM(8, 16, batch_first=True), torch.randn(2, 5, 8)
        conv = torch.randn(2, 16, 16, 16), torch.randn(16, 16, 3, 3)
        a = torch.randn(64, 64)
    with _fd_stdout(lines):
        with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            lstm(x)  # oneDNN's RNN primitive
            torch.nn.functional.conv2d(*conv)  # oneDNN's jit convolution
        with torch.backends.mkl.verbose(torch.backends.mkl.VERBOSE_ON):
            a @ a  # MKL's sgemm
    return torch.backends.cpu.get_cpu_capability(), lines


def _blas() -> list[dict]:
    """Every BLAS threadpoolctl finds loaded once numpy, scipy's BLAS and gensim's Cython are imported."""
    import gensim.models.word2vec_inner  # noqa: F401 - loads what gensim calls
    import scipy.linalg.blas  # noqa: F401
    import threadpoolctl

    return [{"api": d["internal_api"], "lib": os.path.basename(d["filepath"]), "arch": d.get("architecture")}
            for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"]


def probe() -> dict:
    """numba's build (and its cache's), ATen's capability, oneDNN's and MKL's verbose lines, OpenBLAS's cores."""
    nb = _numba()
    res = {"numba": {k: v for k, v in nb.items() if k != "magic"}, "numba_cache": _numba_cache(nb["magic"])}
    res["aten"], lines = _torch()
    res["onednn"] = [line for line in lines if line.startswith("onednn_verbose")]
    res["mkl"] = [line for line in lines if line.startswith("MKL_VERBOSE")]
    res["blas"] = _blas()
    return res


def write(out: str | Path) -> None:
    """The probe's findings into ``out`` as JSON; a failing probe writes its traceback as {"error": ...}."""
    try:
        res = probe()
    except Exception:  # noqa: BLE001 - the outer test reports it; the parity rerun still runs
        res = {"error": traceback.format_exc()}
    Path(out).write_text(json.dumps(res), encoding="utf-8")


def pytest_sessionstart(session):
    """In a capped rerun (SEQLAB_ISA_PROBE_OUT set): the probe, before any test module is collected."""
    out = os.environ.get(OUT_ENV)
    if out:
        write(out)
