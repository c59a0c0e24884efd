"""The course's notebooks, generated from the site's pages: one per tutorial and the tour, never edited by hand.

    python docs/notebook_pages.py        # rewrite seqlab/course/notebooks/ from the pages (make notebooks)

A tutorial (docs/tutorials/NN-*.md) becomes a notebook of its prose and its executed code: each stretch of
markdown between executed blocks is a markdown cell (split at its ``## `` headings), each executed block
(```` ```python exec="on" ````) a code cell, in page order. The page's ``docs_support`` imports become
``seqlab.course.notebook`` (the package's helpers: the notebook runs wherever seqlab installs), a first code
cell chooses the size (:data:`SIZE_CELL`), and the markers are expanded for a notebook:

- ``<!-- seqlab:exercises NN -->``: the chapter's exercises, each as its statement, a starter cell and the
  ``course.check`` cell under it; no solutions (the site shows them, the tests insert them: docs/notebook_run.py);
- ``<!-- seqlab:notebook -->``: on the site, the download link and how to start; in the notebook, where it came
  from;
- ``<!-- seqlab:results NAME ... -->``: on the site, those sections of bench/RESULTS.md; in the notebook, a line
  naming them and where the site shows them (the package ships no RESULTS.md, and a notebook that copied the
  sections would go stale with every benchmark run).

Links that only the site resolves are made plain text (an API reference ``[name][seqlab.x.y]``, a link to another
page ``[text](../x.md)``), and a figure of the recorded documented-size run (``../results/...``) becomes a line
pointing to the site's page. The tour (docs/notebooks/tour.py, a jupytext ``py:percent`` file) becomes a notebook
cell for cell.

The JSON is deterministic: cells without outputs or execution counts, ids numbered in order, keys sorted, so a
change to a page shows as a change of its notebook, and tests/test_notebooks.py fails while the two differ.
``recorded.json`` beside the notebooks carries what was measured of each (docs/notebook_run.py): the seconds of
the tiny run, and the documented-size run's seconds, CPU and numbers copied from docs/results/ here.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

import page_results  # noqa: E402

OUT = ROOT / "seqlab" / "course" / "notebooks"
TOUR = DOCS / "notebooks" / "tour.py"
TOUR_NAME = "tour"
HELPERS = "seqlab.course.notebook"
MARKER = re.compile(r"<!--\s*seqlab:([\w-]+)(.*?)-->", re.S)
AUTOREF = re.compile(r"\[([^\]]+)\]\[[\w.]+\]")  # [`name`][seqlab.x.y]: mkdocstrings' cross-reference
PAGE_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\((?!https?:)[^)\s]*\.md(?:#[^)\s]*)?\)")  # [text](../x.md#y)
RESULTS_FIGURE = re.compile(r"^!\[(?P<alt>[^\]]*)\]\(\.\./results/[^)]+\)[ \t]*\n(?:\n?\*Documented size[^\n]*\n)?",
                            re.M)
SIZE_CELL = '''\
# The size of this chapter's runs: "tiny" (minutes on a laptop CPU; CI runs every notebook at it) or "documented"
# (the published site's figures; `seqlab course list` says how long each size took). Choose, then run all cells.
SIZE = "tiny"

from seqlab.course.notebook import choose_size

choose_size(SIZE)'''
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}


# --------------------------------------------------------------------------------------------------------
# the sources


def sources() -> dict[str, Path]:
    """``{notebook name: source}``: the tour, then every tutorial (docs/tutorials/0*.md), by name."""
    tutorials = sorted(p for p in (DOCS / "tutorials").glob("0*.md"))
    return {TOUR_NAME: TOUR, **{p.stem: p for p in tutorials}}


def chapter_of(name: str) -> str | None:
    """The course chapter of a notebook ("03" for 03-recurrent-networks), None for the tour."""
    return name[:2] if name[:2].isdigit() else None


def notebook(name: str) -> dict[str, Any]:
    """The notebook ``name`` (:func:`sources`) as nbformat 4 JSON data."""
    path = sources()[name]
    cells = tour_cells(path) if name == TOUR_NAME else page_cells(path.read_text(encoding="utf-8"), name)
    return _document(name, path, cells)


def notebook_text(name: str) -> str:
    """The file seqlab ships for ``name``: sorted keys, one space of indent, a final newline."""
    return json.dumps(notebook(name), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _document(name: str, path: Path, cells: list[tuple[str, str]]) -> dict[str, Any]:
    out = []
    for index, (kind, text) in enumerate(cells, 1):
        cell: dict[str, Any] = {"cell_type": kind, "id": f"{name[:40]}-{index:03d}", "metadata": {},
                                "source": text.splitlines(keepends=True)}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    meta = {"kernelspec": KERNEL, "language_info": {"name": "python"},
            "seqlab": {"notebook": name, "chapter": chapter_of(name), "source": path.relative_to(ROOT).as_posix(),
                       "generated_by": "docs/notebook_pages.py"}}
    return {"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


# --------------------------------------------------------------------------------------------------------
# a tutorial page


def page_cells(markdown: str, name: str) -> list[tuple[str, str]]:
    """[(kind, text)] of a tutorial: markdown and code cells in page order, the size cell before the first code
    cell, the markers expanded."""
    cells: list[tuple[str, str]] = []
    at = 0
    for block in page_results.EXECUTED_BLOCK.finditer(markdown):
        cells += _prose(markdown[at:block.start()], name)
        if not any(kind == "code" for kind, _ in cells):
            cells.append(("code", SIZE_CELL))
        cells.append(("code", _code(textwrap.dedent(block.group("code")).rstrip("\n"), name)))
        at = block.end()
    cells += _prose(markdown[at:], name)
    return [(kind, text) for kind, text in cells if text.strip()]


def _code(code: str, name: str) -> str:
    """A block's code as the notebook runs it: ``from docs_support import ...`` from the package's helpers."""
    from seqlab.course import notebook as helpers

    def rewrite(m: re.Match) -> str:
        names = [n.strip() for n in m.group(1).split(",")]
        missing = [n for n in names if n not in helpers.__all__]
        if missing:
            raise LookupError(f"{name}: the page imports {', '.join(missing)} from docs_support, which {HELPERS} "
                              "does not provide; a notebook needs every name it imports from the package")
        return f"from {HELPERS} import {', '.join(names)}"

    code = re.sub(r"^from docs_support import ([\w, ]+)$", rewrite, code, flags=re.M)
    if "docs_support" in code:
        raise LookupError(f"{name}: a block uses docs_support other than `from docs_support import NAMES`, which "
                          "a notebook cannot follow")
    return code


def _prose(markdown: str, name: str) -> list[tuple[str, str]]:
    """Markdown between executed blocks: its markers expanded, site-only links made text, split at ``## ``."""
    cells: list[tuple[str, str]] = []
    at = 0
    for m in MARKER.finditer(markdown):
        cells += _split(_plain_links(markdown[at:m.start()]))
        kind, args = m.group(1), m.group(2).split()
        if kind == "exercises":
            cells += exercise_cells(args[0])
        elif kind == "notebook":
            cells.append(("markdown", _origin_note(name)))
        elif kind == "results":
            cells.append(("markdown", _results_note(args)))
        else:
            raise LookupError(f"{name}: a notebook has no form for the marker <!-- seqlab:{kind} -->")
        at = m.end()
    return cells + _split(_plain_links(markdown[at:]))


def _plain_links(markdown: str) -> str:
    markdown = RESULTS_FIGURE.sub(lambda m: f"*(The documented-size run's figure, \"{m['alt']}\", is on this "
                                            "chapter's page of the site.)*\n", markdown)
    markdown = AUTOREF.sub(r"\1", markdown)
    return PAGE_LINK.sub(r"\1", markdown)


def _split(markdown: str) -> list[tuple[str, str]]:
    """Markdown cells: one per ``## `` section (outside code fences)."""
    parts: list[list[str]] = [[]]
    fence = None
    for line in markdown.strip("\n").splitlines():
        opened = re.match(r"^\s*(`{3,}|~{3,})", line)
        if opened and fence is None:
            fence = opened.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None and line.startswith("## ") and any(s.strip() for s in parts[-1]):
            parts.append([])
        parts[-1].append(line)
    return [("markdown", "\n".join(p).strip("\n")) for p in parts if "\n".join(p).strip()]


def _results_note(sections: list[str]) -> str:
    names = ", ".join(f"`{s}`" for s in sections)
    return (f"*(The sections {names} of bench/RESULTS.md are on this chapter's page of the site and on its "
            "Benchmarks page.)*")


def _origin_note(name: str) -> str:
    return (f"*This notebook is the site's tutorial page `{name}`, generated from it with every code block as a "
            "cell: run the cells in order. The first code cell chooses the size; the exercises at the end each "
            "have a cell for your function and a `check` cell under it.*")


def exercise_cells(chapter: str) -> list[tuple[str, str]]:
    """The chapter's exercises: a heading and how to check, then for each its statement (markdown), the starter
    code (code) and the ``check`` call (code). No solution."""
    from seqlab import course

    exercises = course.exercises(chapter)
    if not exercises:
        return []
    cells = [("markdown", "## Exercises\n\nWrite each function in the cell under its statement, run it, then run "
              "the `check` cell below it: it calls your function on inputs at several sizes and compares it with "
              "seqlab's own implementation. Until you write it, `check` reports \"not passed\"; a wrong answer gets "
              "the first case that differs and, when it is a usual mistake, its name and the notes' equation. "
              f"The solutions are on the site's page of this chapter. From a shell: "
              f"`seqlab course check {exercises[0].id} FILE.py`.")]
    for exercise in exercises:
        follows = f" {exercise.follows}" if exercise.follows else ""
        cells += [("markdown", f"### {exercise.id} {exercise.title}\n\n*The notes: {exercise.section}.*{follows}\n\n"
                               f"{exercise.statement.strip()}"),
                  ("code", exercise.starter().rstrip()),
                  ("code", check_code(exercise))]
    return cells


def check_code(exercise) -> str:
    """The cell that checks ``exercise``'s function (the same two lines as the site's block)."""
    return f"from seqlab import course\n\ncourse.check({exercise.id!r}, {exercise.name})"


# --------------------------------------------------------------------------------------------------------
# the tour: a jupytext percent-format file


def tour_cells(path: Path) -> list[tuple[str, str]]:
    """[(kind, text)] of a jupytext ``py:percent`` file: "markdown" cells with their ``# `` prefixes removed, and
    "code" cells; the header block (``# ---`` ... ``# ---``) is skipped (docs/hooks.py renders the tour from the
    same cells)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if lines and lines[0].strip() == "# ---":
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "# ---")
        lines = lines[end + 1:]
    cells: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
    out = []
    for kind, body in cells:
        if kind == "markdown":
            body = [re.sub(r"^# ?", "", line) if line.startswith("#") else line for line in body]
        text = "\n".join(body).strip("\n")
        if text.strip():
            out.append((kind, text))
    return out


# --------------------------------------------------------------------------------------------------------
# recorded.json: what was measured of each notebook


def documented_records() -> dict[str, Any]:
    """``{notebook: the documented-size record}`` from docs/results/<page>/results.json: the seconds the page
    took (None where that build did not measure them), the CPU, the date, the commit and the numbers."""
    out: dict[str, Any] = {}
    for name in sources():
        path = page_results.RESULTS / name / page_results.RESULTS_FILE
        if not path.is_file():
            continue
        doc = json.loads(path.read_text(encoding="utf-8"))
        out[name] = {"seconds": doc.get("seconds"), "cpu": doc.get("cpu"), "date": doc.get("date"),
                     "commit": doc.get("commit"), "numbers": doc.get("numbers", {})}
    return out


def recorded_text(tiny: dict[str, Any]) -> str:
    """recorded.json: each notebook's ``tiny`` record (measured by docs/notebook_run.py) and its ``documented``
    one (:func:`documented_records`), null where none exists."""
    documented = documented_records()
    doc = {name: {"tiny": tiny.get(name), "documented": documented.get(name)} for name in sources()}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def tiny_records(path: Path | None = None) -> dict[str, Any]:
    """The tiny runs' records in the committed recorded.json ({} where none)."""
    path = path or OUT / "recorded.json"
    if not path.is_file():
        return {}
    return {name: entry["tiny"] for name, entry in json.loads(path.read_text(encoding="utf-8")).items()
            if entry.get("tiny")}


def write_all() -> list[Path]:
    """Write every notebook and recorded.json (keeping its tiny records) into seqlab/course/notebooks/; remove a
    notebook whose page is gone. Returns the files that changed."""
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = {f"{name}.ipynb": notebook_text(name) for name in sources()}
    wanted["recorded.json"] = recorded_text(tiny_records())
    changed = []
    for file, text in wanted.items():
        path = OUT / file
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for stale in OUT.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
            changed.append(stale)
    return changed


if __name__ == "__main__":
    for path in write_all():
        print(f"wrote {path.relative_to(ROOT)}")
