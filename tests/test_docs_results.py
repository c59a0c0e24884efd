"""The tutorials' recorded documented-size results (docs/results/<page-stem>/, written by ``make docs FULL=1``
through docs/page_results.py) belong to the pages as they are now: each page has its results.json naming the
commit, the CPU and the date of a documented-size run, the hash of the page's executed code matches the page
(a change to a page's code means running it again: ``SEQLAB_DOCS_PAGES=NN make docs FULL=1``), every recorded
figure is shown by the page and every ``../results/...`` reference of the page exists.

Reads files only: no build, no training."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _page_results():
    """docs/page_results.py, the module the hooks record with (its hash and its references), loaded by path."""
    spec = importlib.util.spec_from_file_location("page_results", ROOT / "docs" / "page_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS = _page_results()
TUTORIALS = sorted(RESULTS.TUTORIALS.glob("0*.md"))


def _recorded(page: Path) -> dict:
    path = RESULTS.RESULTS / page.stem / RESULTS.RESULTS_FILE
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing: SEQLAB_DOCS_PAGES={page.stem[:2]} make docs FULL=1"
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_tutorial_is_checked():
    assert len(TUTORIALS) == 7, [p.name for p in TUTORIALS]


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_the_results_name_their_run_and_match_the_page_code(page):
    recorded = _recorded(page)
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", recorded.get("commit", "")), recorded.get("commit")
    assert recorded.get("cpu") and re.search(r"avx2 (yes|no), avx512f (yes|no)", recorded["cpu"]), recorded.get("cpu")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", recorded.get("date", "")), recorded.get("date")
    assert recorded.get("size") == "full", f"{page.stem}: recorded at the {recorded.get('size')} size, not FULL=1"
    assert isinstance(recorded.get("numbers"), dict) and recorded["numbers"], f"{page.stem}: no numbers recorded"
    assert recorded.get("page_sha256") == RESULTS.code_sha256(page.read_text(encoding="utf-8")), (
        f"{page.stem}: its code changed since its results were recorded; run "
        f"SEQLAB_DOCS_PAGES={page.stem[:2]} make docs FULL=1 and commit docs/results/{page.stem}")


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_every_recorded_figure_is_small_and_shown_and_every_reference_exists(page):
    recorded = _recorded(page)
    refs = RESULTS.results_refs(page.read_text(encoding="utf-8"))
    assert recorded.get("figures"), f"{page.stem}: no figure recorded"
    for name in recorded["figures"]:
        path = RESULTS.RESULTS / page.stem / name
        assert path.is_file(), f"{path.relative_to(ROOT)} is listed in results.json but missing"
        assert path.stat().st_size <= RESULTS.PNG_LIMIT * 1.1, f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes"
        assert f"../results/{page.stem}/{name}" in refs, f"{page.name} does not show {name}"
    for ref in refs:
        assert (page.parent / ref).resolve().is_file(), f"{page.name} refers to {ref}, which does not exist"
    on_disk = {p.name for p in (RESULTS.RESULTS / page.stem).iterdir()}
    assert on_disk == {RESULTS.RESULTS_FILE, *recorded["figures"]}, f"{page.stem}: files not in results.json"
