"""The tutorials' recorded documented-size results (docs/results/<page-stem>/, written by ``make docs FULL=1``
through docs/page_results.py) belong to the pages as they are now: each page has its results.json naming the
commit, the CPU and the date of a documented-size run, the hash of the page's executed code matches the page
(a change to a page's code means running it again: ``SEQLAB_DOCS_PAGES=NN make docs FULL=1``), every recorded
figure is shown by the page and every ``../results/...`` reference of the page exists. The seqlab files a page
ran are hashed in its results.json too (``library``): a page whose recorded files changed since fails, named with
the files and the command to run it again; a page recorded before that hash existed is an expected failure (xfail),
named with the command, until it is run again (``make docs-stale`` prints the same list).

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


@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_the_seqlab_files_the_page_ran_are_as_recorded(page):
    recorded = _recorded(page)
    library = recorded.get("library")
    if library is None:
        pytest.xfail(f"{page.stem}: not recorded with a library hash: run `{RESULTS.rerun_command(page.stem)}`")
    assert re.fullmatch(r"[0-9a-f]{64}", library.get("sha256", "")), library
    assert library.get("files") and all(path.startswith("seqlab/") and path.endswith(".py")
                                        for path in library["files"]), library.get("files")
    changes = RESULTS.library_changes(library)
    assert not changes, (f"{page.stem}: seqlab files it ran changed since its results were recorded "
                         f"({', '.join(changes)}); run `{RESULTS.rerun_command(page.stem)}` and commit "
                         f"docs/results/{page.stem}")


def test_the_library_hash_recomputes_and_names_the_changed_files(tmp_path, monkeypatch):
    """library_record over two files of a copied tree: the hash holds until one changes, then that file is named
    (and a file gone is named as gone)."""
    tree = tmp_path / "seqlab"
    (tree / "nn").mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    (tree / "nn" / "__init__.py").write_text("")
    (tree / "nn" / "masks.py").write_text("from seqlab.nn import attention\nLIMIT = 3\n")
    (tree / "nn" / "attention.py").write_text("def f():\n    from seqlab import unused\n")
    monkeypatch.setattr(RESULTS, "SEQLAB", tree)
    library = RESULTS.library_record({tree / "nn" / "masks.py"})
    assert sorted(library["files"]) == ["seqlab/__init__.py", "seqlab/nn/__init__.py", "seqlab/nn/attention.py",
                                        "seqlab/nn/masks.py"]
    assert RESULTS.library_changes(library) == []
    (tree / "nn" / "attention.py").write_text("def f():\n    return 1\n")
    assert RESULTS.library_changes(library) == ["seqlab/nn/attention.py"]
    (tree / "nn" / "attention.py").unlink()
    assert RESULTS.library_changes(library) == ["seqlab/nn/attention.py (gone)"]


def test_the_run_files_are_the_seqlab_code_that_ran(tmp_path):
    """_RunFiles keeps the seqlab files whose code ran while it watched (not this test's, not after it stopped),
    and puts back the trace function set before it."""
    import sys

    from seqlab.base import errors, io

    before = sys.gettrace()
    run = RESULTS._RunFiles.start()
    io.remove(tmp_path / "absent")
    seen = run.stop()
    assert sys.gettrace() is before
    errors.SeqlabError("after")
    assert Path(io.__file__).resolve() in seen, sorted(seen)
    assert all(RESULTS._under(f, RESULTS.SEQLAB) for f in seen)
    assert Path(errors.__file__).resolve() not in seen


def test_stale_pages_reads_the_recorded_results(tmp_path):
    """stale_pages: a page without results, one without a library hash (not judged: recorded False) and one whose
    recorded file changed (named)."""
    pages = sorted(RESULTS.TUTORIALS.glob("0*.md"))
    first, second, third = pages[:3]
    for page in pages[1:]:
        (tmp_path / page.stem).mkdir()
        recorded = {"page_sha256": RESULTS.code_sha256(page.read_text(encoding="utf-8"))}
        if page == third:
            files = {"seqlab/base/io.py": "0" * 64}
            recorded["library"] = {"sha256": RESULTS.library_sha256(files), "files": files}
        elif page != second:
            recorded["library"] = RESULTS.library_record({RESULTS.SEQLAB / "base" / "errors.py"})
        (tmp_path / page.stem / RESULTS.RESULTS_FILE).write_text(json.dumps(recorded), encoding="utf-8")
    stale = RESULTS.stale_pages(tmp_path)
    assert stale == [(first.stem, "no results recorded", True),
                     (second.stem, "not recorded with a library hash", False),
                     (third.stem, "seqlab files it ran changed: seqlab/base/io.py", True)]
