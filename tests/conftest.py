"""Shared fixtures. Tests that need ../shared/data skip with a clear reason when it is absent.

Under CI (``CI=true``, set by .ci/run) nothing that a parity test compares against may be missing: a reference
library that ``pytest.importorskip`` cannot import, or absent shared datasets, fail the test with the name
instead of skipping it, so a broken install can never turn the parity suite green."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", ROOT.parent / "shared" / "data"))
from needs import UNDER_CI  # noqa: E402 - one reading of CI=true for the suite


def _importorskip_strict(modname: str, *args, **kwargs):
    """``pytest.importorskip`` that fails, naming the module, where skipping would hide a missing reference."""
    try:
        return _importorskip(modname, *args, **kwargs)
    except pytest.skip.Exception as e:
        pytest.fail(f"CI=true: the reference library {modname!r} is missing ({e}); `make test` installs the "
                    "test extras: pip install -e '.[test,export,serve]'", pytrace=False)


_importorskip = pytest.importorskip
if UNDER_CI:
    pytest.importorskip = _importorskip_strict


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets (../shared/data); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        (pytest.fail if UNDER_CI else pytest.skip)(f"needs the shared datasets at {SHARED_DATA} (set SEQLAB_SHARED_DATA to point elsewhere)")
    return SHARED_DATA


@pytest.fixture(scope="module")
def one_thread():
    """One torch intra-op thread for a module of small models (``pytestmark = pytest.mark.usefixtures("one_thread")``):
    they gain nothing from threads, and on a busy 2-core machine OpenMP threads spinning against other processes
    make them 20-60x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def seqlab_cli(capsys):
    """``seqlab_cli(*args) -> (exit code, stdout, stderr)``: the command line run by ``seqlab.cli.main`` in this
    process, as ``python -m seqlab ARGS`` would run it (a subprocess starts torch again: 1.5 s each). For the
    error paths; what needs its own process (signals, exit on a kill) keeps a subprocess."""
    from seqlab import cli

    def run(*args: str) -> tuple[int, str, str]:
        logger = logging.getLogger("seqlab")
        handlers, level = logger.handlers[:], logger.level
        logger.handlers = []  # cli.main then shows the library's log on this test's stderr, as a process would
        capsys.readouterr()
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as e:  # argparse's own exit, had cli.main not caught it
            code = e.code
        finally:
            logger.handlers, logger.level = handlers, level
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def serve_runs(tmp_path_factory):
    """(runs folder, {task kind: run id}) of six tiny runs trained once for the `seqlab serve` tests."""
    from helpers import train_serve_runs

    base = tmp_path_factory.mktemp("serve")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ids = train_serve_runs(base / "runs", base / "data")
    finally:
        torch.set_num_threads(before)
    return base / "runs", ids


# ---- the suite's budget (tests/README.md): a report at the end, not a timed test -------------------------------

_SUITE_STARTED = time.perf_counter()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The CPU model and the suite's wall time, so every run records them beside its result: the budget is at
    most 4 min 10 s of tests on an idle 2-core AVX-512 EPYC (10 min on the AVX2 EPYC, 2.4x slower)."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports
        return
    from seqlab.base.machine import cpu_model

    flags = set(Path("/proc/cpuinfo").read_text().split()) if Path("/proc/cpuinfo").exists() else set()
    isa = "AMX" if "amx_bf16" in flags else "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "-"
    workers = getattr(config.option, "numprocesses", None) or 1
    terminalreporter.write_line(f"suite: {time.perf_counter() - _SUITE_STARTED:.0f} s wall on {cpu_model()} "
                                f"({isa}, {os.cpu_count()} cores, {workers} pytest worker(s)); budget: tests/README.md")


def pytest_runtest_setup(item):
    """``@needs(...)`` (tests/needs.py): skip where a module is missing, fail under CI=true."""
    from needs import require

    for mark in item.iter_markers("needs"):
        require(*mark.args, extra=mark.kwargs["extra"])


def pytest_collection_modifyitems(config, items):
    """The workers finish together (tests/README.md, the budget). pytest-xdist hands each worker runs of
    consecutive tests in collection order, so: the tests of the built docs site go first, as one block (each worker
    that runs one of them builds the site, 55 s); then each test function marked ``heavy`` (10 s or more of one
    worker on the slowest class), its parameters together (a module fixture stays set up), is spread over the first
    half of the other tests, so that the last minutes of the suite are short tests on every worker rather than one
    worker alone on a compile or a subprocess. On the per-test times of a one-worker run, a model of xdist's
    scheduler gives 2 workers 624 s where the file order gave 655 (the ideal 624), 4 workers 331 s (366)."""
    site = [item for item in items if "site" in getattr(item, "fixturenames", ())]
    placed = {id(item) for item in site}
    units: dict[str, list] = {}  # one per heavy test function, its parameters in their order
    for item in items:
        if item.get_closest_marker("heavy") and id(item) not in placed:
            units.setdefault(item.nodeid.split("[")[0], []).append(item)
            placed.add(id(item))
    rest = [item for item in items if id(item) not in placed]
    stride = max(1, len(rest) // 2 // max(1, len(units)))
    order = list(site)
    for k, unit in enumerate(units.values()):
        order += unit + rest[k * stride:(k + 1) * stride]
    order += rest[len(units) * stride:]
    assert len(order) == len(items)
    items[:] = order


def pytest_configure(config):
    """Under pytest-xdist (``make test`` runs ``-n auto``: one worker per core) each worker computes on one torch
    thread: two workers of two OpenMP threads each on two cores spin against each other (20-60x slower steps)."""
    if hasattr(config, "workerinput"):
        torch.set_num_threads(1)
