"""The numerically sensitive parity tests rerun with the CPU's vector width capped: AVX2 and generic x86-64.

Why: the parity tests compare float results with torch.nn, gensim, torchcrf, statsmodels and sacrebleu, and those
results depend on the instruction set the kernels of each library pick at run time (the vector width sets the
summation order of every dot product and reduction; FMA or not sets the rounding of each multiply-add). This
machine has AVX-512 (and AMX), users also run AVX2-only AMD EPYCs, and a tolerance once failed on an AVX2 machine
only. Each library reads a variable that caps the instruction set it dispatches to, so both levels can be
reproduced on any x86-64 machine that has at least them: each test below reruns SELECTION in a subprocess
(``python -m pytest -q -p no:cacheprovider -p isa_probe <node ids>``) under one level's caps, and the probe
(tests/isa_probe.py, a plugin run at that session's start, before any test module is collected) shows that
every cap took effect: one Python start and one collection a level for both. The host's own (uncapped) dispatch
is probed once, in a subprocess of its own, to show the caps change something here.

The caps (LEVELS), and what each does:

- numba (seqlab's word2vec and GloVe kernels): ``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES``, the CPU and the
  feature string LLVM compiles for. Both are needed: with ``NUMBA_CPU_NAME`` alone the JIT keeps the host's feature
  string (+avx512f ...), and ``haswell`` plus the host's features even makes zmm code (25 zmm in the probe's dot
  loop here). AVX2: ``haswell`` with the features of a Haswell, AVX-512 explicitly off. Generic: ``generic`` with
  an empty feature string (x86-64 baseline: SSE2, no FMA, 128-bit xmm vectors).
  The numba cache (``cache=True``) keys each build by (target triple, CPU name, feature string), so a capped run is
  never served a host build; on top of that each level caches into a folder of its own (NUMBA_CACHE_DIR), which the
  probe checks holds builds of that level only.
  Note: this host's uncapped build does NOT use zmm registers. LLVM tunes Intel's AVX-512 server CPUs (its name for
  this one: rocketlake) to prefer 256-bit vectors, so the host's float32 dot loop is the same 8-wide ymm loop as the
  AVX2 build (same summation order); the host build differs in using AVX-512 instructions on ymm (e.g. vpmullq,
  AVX512DQ+VL, for an int64 multiply), which the probe checks is there uncapped and gone under the AVX2 cap. The
  generic build is 4-wide xmm without FMA: another summation order and rounding.
- torch ATen (its vectorised CPU kernels: softmax, layer norm, reductions, the fused attention):
  ``ATEN_CPU_CAPABILITY`` = ``avx2`` / ``default`` (AVX512 on this host).
- oneDNN (torch.nn.LSTM on the CPU runs oneDNN's RNN primitive, with oneDNN's GEMM; GRU and RNN do not):
  ``ONEDNN_MAX_CPU_ISA`` = ``AVX2`` / ``SSE41``; checked from the ``isa:`` line of oneDNN's verbose output
  (switched on around the probe's calls with torch.backends.mkldnn.verbose, as ``ONEDNN_VERBOSE=1`` would) and
  the implementations it prints (jit:avx512_core -> jit:avx2 -> jit:sse41 for a conv2d).
- MKL (torch's CPU BLAS on x86: every float matmul/linear; torch links it statically):
  ``MKL_ENABLE_INSTRUCTIONS`` = ``AVX2`` / ``SSE4_2``; checked from the verbose header of a torch matmul
  (torch.backends.mkl.verbose, as ``MKL_VERBOSE=1``) on Intel CPUs. On other vendors' (AMD EPYC) MKL's header
  names no instruction set, so there the MKL cap is set but cannot be checked (``_mkl_header``).
- OpenBLAS (numpy's and scipy's, hence gensim's: gensim's Cython calls scipy.linalg.blas's sdot/saxpy/dsdot, it
  bundles no BLAS of its own; statsmodels' and seqlab's least squares): ``OPENBLAS_CORETYPE`` = ``Haswell`` /
  ``Nehalem`` (SSE-only kernels; this OpenBLAS build maps ``Prescott`` to ``Katmai``), checked with threadpoolctl's
  ``architecture`` of every OpenBLAS loaded (SkylakeX uncapped here). Some machines set OPENBLAS_CORETYPE in their
  environment: the subprocesses get it explicitly.

Not capped: glibc's libm (math.exp/log in Python, numba and torch's scalar paths) picks FMA variants on any
FMA-capable CPU, so it is the same at the AVX2 level as on this host (it has no AVX-512 variants); only
``GLIBC_TUNABLES=glibc.cpu.hwcaps=...`` would change it. BLEU/chrF are pure Python, hence only libm-dependent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.base.machine import ISA_CAPS, cpuinfo

ROOT = Path(__file__).resolve().parents[1]

# A capped run sets SEQLAB_ISA_CAP: this module never runs inside one (SELECTION does not name it either).
if os.environ.get("SEQLAB_ISA_CAP"):
    pytest.skip("inside a capped rerun", allow_module_level=True)

# The parity tests rerun under each cap: the fast ones whose floats go through a capped kernel (131 tests). The
# whole module: ~42 s wall on this idle 2-core AVX-512 machine with a probe subprocess per level, ~63 s the first
# time (each level then compiles seqlab's numba kernels into its own cache folder, ~10 s); the probe inside each
# rerun took ~11 s off the two levels' ~84 s on a busy one (alternating runs, load ~4.5).
SELECTION = [
    # word2vec: seqlab's numba SGD (fastmath float32 dot products: numba's vector width) against gensim's Cython
    # on OpenBLAS dsdot/saxpy, weight by weight after ~1,600-3,600 pair updates, within float rounding
    "tests/test_parity_vectors.py::test_sgd_updates_follow_gensim_step_by_step",
    # the numba SGD step against torch autograd of the same loss (numba vs ATen/MKL)
    "tests/test_word2vec.py::test_sgd_pair_is_a_gradient_step_on_the_torch_loss",
    # the numba and torch engines train the same vectors (whole epochs: rounding accumulates)
    "tests/test_word2vec.py::test_engines_learn_equivalent_vectors",
    # GloVe: the numba AdaGrad kernel against the torch engine, step by step
    "tests/test_glove.py::test_numba_and_torch_take_the_same_adagrad_steps",
    # GloVe's torch loss against the weighted least squares written out (ATen reductions)
    "tests/test_glove.py::test_torch_loss_is_the_weighted_least_squares_term",
    # recurrent cells and stacks against torch.nn's (oneDNN's RNN primitive and GEMM, MKL, ATen's tanh/sigmoid)
    "tests/test_parity_recurrent.py::test_cell_matches_torch_cell",
    "tests/test_parity_recurrent.py::test_stack_matches_torch",
    "tests/test_parity_recurrent.py::test_equations_equal_fused_including_empty_sequences",
    # attention, encoder/decoder layers and the KV cache against torch.nn (MKL GEMM, ATen softmax/layer norm and
    # the fused scaled_dot_product_attention kernels): the whole file runs in ~2 s
    "tests/test_parity_nn.py",
    # attention by hand and the fused vs equations paths (ATen's SDPA kernel against matmul + softmax)
    "tests/test_transformer.py::test_attention_hand_computed_value",
    "tests/test_transformer.py::test_switching_attention_impl_keeps_the_output",
    "tests/test_transformer.py::test_fully_masked_row_gives_zeros_not_nan",
    # the CRF's forward algorithm (logsumexp) and Viterbi against torchcrf and against enumerating every path
    "tests/test_crf.py::test_log_likelihood_and_viterbi_equal_torchcrf",
    "tests/test_crf.py::test_log_z_and_viterbi_equal_enumerating_every_path",
    # BLEU/chrF against sacrebleu (tests/test_parity_bleu.py; there is no tests/test_bleu.py): both sides are pure
    # Python (math.exp/log: glibc's libm, which no cap here changes, module docstring), so only the two fastest
    # cases (0.06 s, 0.15 s) stay, as a guard; the corpus-level wmt17 cases (~2 s a level) would recheck the same
    "tests/test_parity_bleu.py::test_sentence_bleu_equals_sacrebleu_sentence_bleu",
    "tests/test_parity_bleu.py::test_chrf_beta_0_is_precision_only_as_in_sacrebleu",
    # AR(p) against statsmodels AutoReg at rtol 1e-10 (least squares through numpy's OpenBLAS/LAPACK on both sides)
    "tests/test_parity_ar.py::test_sunspots_matches_autoreg",
]

# level: (the caps, what the probe must then see)
LEVELS = {
    "avx2": (
        ISA_CAPS["avx2"],
        {"numba_cpu": "haswell", "ymm": True, "aten": "AVX2", "onednn_isa": "Intel AVX2",
         "mkl": "(Intel(R) AVX2)", "openblas": "Haswell"},
    ),
    "generic": (
        ISA_CAPS["generic"],
        {"numba_cpu": "generic", "ymm": False, "aten": "DEFAULT", "onednn_isa": "Intel SSE4.1",
         "mkl": "(Intel(R) SSE4.2)", "openblas": "Nehalem"},
    ),
}
CAP_VARS = sorted({name for caps, _ in LEVELS.values() for name in caps} | {"DNNL_MAX_CPU_ISA"})

# The probe (tests/isa_probe.py): the host's runs alone in a subprocess; a capped level's runs as a pytest plugin at
# the start of its parity rerun (-p isa_probe), which writes its findings into the file PROBE_ENV names.
PROBE_ENV = "SEQLAB_ISA_PROBE_OUT"


def _env(caps: dict[str, str] | None, numba_cache: Path, level: str) -> dict[str, str]:
    """This process's environment (CI, SEQLAB_SHARED_DATA, PATH ... pass through) with every cap variable
    removed, then `caps` set; no pytest variables of this run (PYTEST_ADDOPTS might hold -n, -k ...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in CAP_VARS}
    env.update(caps or {})
    env["NUMBA_CACHE_DIR"] = str(numba_cache)
    env["SEQLAB_ISA_CAP"] = level
    for name in ("ONEDNN_VERBOSE", "DNNL_VERBOSE", "MKL_VERBOSE"):
        env.pop(name, None)
    if "PYTEST_XDIST_WORKER" in os.environ:  # as conftest.py's xdist workers: one torch thread
        env["OMP_NUM_THREADS"] = "1"
    return env


def _numba_cache(request, tmp_path_factory, level: str) -> Path:
    """Each level's own numba cache folder, kept between runs in .pytest_cache when pytest's cache is on."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir(f"numba-isa-{level}") if cache is not None else tmp_path_factory.mktemp(f"numba-{level}")


def _tail(text: str, n: int = 6000) -> str:
    return text if len(text) <= n else "...\n" + text[-n:]


def _findings(out: Path, log: str) -> tuple[dict, list[str], list[str]]:
    """(what numba, ATen, OpenBLAS report; oneDNN's verbose lines; MKL's verbose lines) as the probe wrote them
    into `out`; `log` is the probing process's output, shown when there is nothing to read."""
    assert out.is_file(), f"the probe wrote no findings:\n{_tail(log)}"
    got = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in got, f"the probe failed:\n{got.get('error')}"
    return got, got["onednn"], got["mkl"]


def _probe_importable(env: dict[str, str]) -> dict[str, str]:
    """`env` with tests/ first on PYTHONPATH, where isa_probe is imported from (by -p isa_probe or -c)."""
    return dict(env, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT / "tests"), env.get("PYTHONPATH")) if p))


def _probe(env: dict[str, str], out: Path) -> tuple[dict, list[str], list[str]]:
    """The probe alone, in a subprocess (the host's level, which reruns no test): its findings (:func:`_findings`)."""
    proc = subprocess.run([sys.executable, "-c", "import sys, isa_probe; isa_probe.write(sys.argv[1])", str(out)],
                          cwd=ROOT, env=_probe_importable(env), capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the probe failed (rc {proc.returncode}):\n{_tail(log)}"
    return _findings(out, log)


def _rerun_with_probe(env: dict[str, str], out: Path) -> subprocess.CompletedProcess:
    """SELECTION rerun in a subprocess whose session starts with the probe (the plugin writes to `out`): one
    Python start and one collection for both."""
    env = dict(_probe_importable(env), **{PROBE_ENV: str(out)})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "--tb=short", "-p", "no:cacheprovider",
                           "-p", "isa_probe", *SELECTION], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def _onednn(lines: list[str]) -> tuple[str, list[str]]:
    """(the ``isa:`` info line's value, the implementations of the primitives it ran)."""
    isa = [line.split("isa:", 1)[1] for line in lines if ",info,cpu,isa:" in line]
    impls = [line.split(",")[6] for line in lines if ",primitive,exec,cpu," in line]  # e.g. jit:avx2, ref
    assert isa and impls, "oneDNN printed no isa line or ran no primitive:\n" + "\n".join(lines)
    return isa[0], impls


def _mkl_header(lines: list[str]) -> str | None:
    """MKL's verbose header, or None where MKL names no instruction set in it: on CPUs not made by Intel
    (AMD EPYC: "... for Intel(R) 64 architecture Intel(R) Architecture processors, Lnx 2.60GHz ...") MKL prints
    no "(Intel(R) AVX2)" or "Intel(R) AVX-512" there, so its dispatch cannot be read; every other library's
    still is, and the parity tests still run under the caps."""
    header = [line for line in lines if line.startswith("MKL_VERBOSE oneMKL") or line.startswith("MKL_VERBOSE Intel")]
    assert header, "MKL printed no verbose header (is torch's BLAS MKL here? torch.__config__.show()):\n" + \
        "\n".join(lines[:5])
    if "(Intel(R)" not in header[0] and "AVX" not in header[0] and cpuinfo().get("vendor_id") != "GenuineIntel":
        return None
    return header[0]


def _host_has(flag: str) -> bool:
    return flag in cpuinfo().get("flags", "").split()


def test_host_dispatch_is_avx512(request, tmp_path_factory, tmp_path):
    """Uncapped, every library picks AVX-512 code on this host: what the caps below must take away."""
    if not _host_has("avx512f"):
        pytest.skip("the host has no AVX-512 (avx512f): nothing above AVX2 to cap")
    got, onednn, mkl = _probe(_env(None, _numba_cache(request, tmp_path_factory, "host"), "host"),
                              tmp_path / "probe.json")
    nb = got["numba"]
    assert "+avx512f" in nb["avx512_features"], nb
    assert nb["vpmullq"], f"the host build uses no AVX-512 instruction (vpmullq): {nb}"
    # no zmm asserted: LLVM's tuning prefers 256-bit vectors on Intel's AVX-512 server CPUs (module docstring)
    assert got["aten"] == "AVX512", got["aten"]
    isa, impls = _onednn(onednn)
    assert "AVX2" not in isa and "SSE" not in isa, isa  # "Intel AVX10.1 and Intel AMX ..." or "Intel AVX-512 ..."
    assert any("avx512" in impl or "amx" in impl for impl in impls), impls
    header = _mkl_header(mkl)
    assert header is None or "AVX-512" in header, header
    openblas = [b for b in got["blas"] if b["api"] == "openblas"]
    assert openblas and all(b["arch"] not in ("Haswell", "Nehalem", "Sandybridge") for b in openblas), got["blas"]


# The AVX2 level is the narrowest vector width of the CPUs our users run (an AVX2-only AMD EPYC): it runs in
# `make test` on every host wider than it (on an AVX2-only host it is the uncapped dispatch, so the suite's own
# run of SELECTION is that level's run, and the rerun, 60-80 s of the budget there, skips). The generic level
# (x86-64 baseline: 4-wide, no FMA) is below every one of them; it stays as a deeper guard, marked slow
# (`pytest -m slow tests/test_isa_caps.py`): 35-40 s of the suite's budget on a 2-core AVX-512 EPYC, compiling
# seqlab's numba kernels for that level from nothing as a fresh clone does.
@pytest.mark.parametrize("level", [pytest.param(level, marks=pytest.mark.slow) if level == "generic" else level
                                   for level in LEVELS])
def test_parity_under_isa_cap(level, request, tmp_path_factory, tmp_path):
    """The caps of `level` take effect in every library (the probe, at the start of the rerun's session), and
    SELECTION passes under them."""
    caps, want = LEVELS[level]
    if level == "avx2" and not (_host_has("avx2") and _host_has("fma")):
        pytest.skip("a cap only lowers the instruction set: the host has no AVX2 and FMA to run the AVX2 level on")
    if level == "avx2" and not _host_has("avx512f"):
        pytest.skip("the host's widest level is AVX2: the suite's own parity tests run at it, uncapped")
    env = _env(caps, _numba_cache(request, tmp_path_factory, level), level)
    proc = _rerun_with_probe(env, tmp_path / "probe.json")
    got, onednn, mkl = _findings(tmp_path / "probe.json", proc.stdout + proc.stderr)

    nb = got["numba"]
    assert nb["cpu"] == want["numba_cpu"] and not nb["avx512_features"], nb
    assert nb["zmm"] == 0 and not nb["vpmullq"], f"AVX-512 code under the {level} cap: {nb}"
    assert (nb["ymm"] > 0) == want["ymm"], f"the dot loop's vectors are not the {level} level's: {nb}"
    cache = got["numba_cache"]
    if "unavailable" not in cache:  # numba's internals moved: the keying by CPU still holds (module docstring)
        assert cache["this_build"], cache
        assert all(cpu == want["numba_cpu"] and not avx512 for cpu, avx512 in cache["builds"]), cache

    assert got["aten"] == want["aten"], got["aten"]

    isa, impls = _onednn(onednn)
    assert isa == want["onednn_isa"], isa
    banned = ("avx512", "amx") + (("avx",) if level == "generic" else ())
    assert not any(b in impl for impl in impls for b in banned), impls

    header = _mkl_header(mkl)
    assert header is None or (want["mkl"] in header and "AVX-512" not in header), header

    openblas = [b for b in got["blas"] if b["api"] == "openblas"]
    assert openblas, got["blas"]
    assert all(b["arch"] == want["openblas"] for b in openblas), got["blas"]

    assert proc.returncode == 0, (f"parity tests failed under the {level} cap {caps} (rc {proc.returncode}):\n"
                                  + _tail(proc.stdout + proc.stderr))
