"""Helpers for the executed code blocks of the documentation pages (markdown-exec runs them while mkdocs builds).

    from docs_support import FULL, size, workdir, show, record, size_note, table, show_source

docs/hooks.py puts docs/ on sys.path, so the pages import this module by name. Two sizes exist: the tiny one CI
builds on every commit (each page's blocks in seconds), and the documented one of the published build
(``make docs FULL=1``, which sets ``SEQLAB_DOCS_FULL=1``). A page writes both, ``steps = size(30, 3000)``, and
says which produced its figures with :func:`size_note`.

A tutorial's documented-size results outlive the build (docs/page_results.py): :func:`show` also keeps each figure
under its ``name`` and :func:`record` each key number, in docs/results/<page-stem>/ when the FULL build finishes
the page; the page's markdown shows the kept figures beside the tiny ones (``![...](../results/STEM/NAME.png)``).
"""

from __future__ import annotations

import base64
import builtins
import html
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import page_results
from seqlab.course import notebook
from seqlab.course.notebook import FULL, WORK_ENV, png_bytes, size, source_of, workdir

__all__ = ["FULL", "size", "workdir", "show", "record", "documented", "size_note", "table", "show_source"]
# FULL, size and workdir are the notebooks' own (seqlab.course.notebook): the site's switch (SEQLAB_DOCS_FULL=1)
# and the build's work folder (SEQLAB_DOCS_WORK) are read in one place; a notebook's first cell chooses its size
_ = (FULL, WORK_ENV, size, workdir)  # re-exported for the pages and docs/hooks.py


def _reset() -> None:
    """Forget the folders handed out (docs/hooks.py, at the start of each build: `mkdocs serve` rebuilds in-process)."""
    notebook.forget_workdirs()


def img_tag(obj: Any, alt: str) -> str:
    """An ``<img>`` tag with ``obj``'s PNG inlined as base64 (what :func:`show` prints)."""
    data = base64.b64encode(png_bytes(obj)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def show(obj: Any, alt: str, name: str | None = None) -> None:
    """Print an ``<img>`` tag with the PNG inlined (base64) of a matplotlib Figure, or of an object with
    ``_repr_png_()``: in a block whose output is markdown (no ``result=``), the picture appears on the page.

    Where the build records the page's results, the figure is also kept as ``name``.png (small, for the
    repository: :func:`page_results.small_png`), ``figure-N`` when unnamed; the page refers to it by that name."""
    _print(img_tag(obj, alt) + "\n")
    if page_results.recording():
        name = name or f"figure-{page_results.figure_count() + 1}"
        figure = _figure(obj)
        page_results.save_figure(name, page_results.small_png(figure) if figure is not None else png_bytes(obj))


def _figure(obj: Any) -> Any:
    """The matplotlib Figure behind ``obj``: itself, or what its ``plot()`` draws (seqlab's result tuples, whose
    ``_repr_png_`` is that plot's PNG), else None."""
    if hasattr(obj, "savefig"):
        return obj
    plot = getattr(obj, "plot", None)
    return plot() if hasattr(obj, "_repr_png_") and callable(plot) else None


def record(name: str, value: Any) -> Any:
    """Return ``value``, kept under ``name`` in the page's recorded numbers where the build records results
    (``rmse = record("rmse_ar", rmse(one_step))``); elsewhere it only returns it."""
    page_results.record_number(name, value)
    return value


def documented(page: str) -> dict[str, Any]:
    """The numbers the committed documented-size run of tutorial ``page`` recorded (docs/results/<page>/results.json,
    ``make docs FULL=1``), so that prose can cite them without typing them; {} where that page is not recorded."""
    path = page_results.RESULTS / page / page_results.RESULTS_FILE
    if not path.is_file():
        return {}
    import json

    return dict(json.loads(path.read_text(encoding="utf-8")).get("numbers", {}))


def size_note(what: str) -> None:
    """Print an admonition saying which size produced this page's figures, and what that was
    (``size_note("30 steps on 200 sentences")``)."""
    if FULL:
        _print(f'!!! note "Size"\n    The figures on this page come from the documented size: {what}.\n')
    else:
        _print(f'!!! note "Size: tiny (CI)"\n    The figures on this page come from the tiny size CI builds on every '
               f"commit: {what}. The published build (`make docs FULL=1`) runs the documented size; expect better "
               "numbers there.\n")


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> None:
    """Print a markdown table (floats as ``{:.4g}``; ``|`` and newlines in cells escaped)."""
    _print(notebook.markdown_table(rows, headers))


def show_source(*objects: Any) -> None:
    """Print the source of each function, method or class, read from the code while the page builds (so it
    cannot drift from it), in a block of CSS class ``source-beside-equation``: headed by its dotted name, file and
    lines, and the equation tags (``!!! equation "Topic › Section"``) of its docstring, else of its class's or
    module's (:func:`seqlab.course.notebook.source_of`, which the notebooks show too). A numba kernel shows its
    Python source."""
    for obj in objects:
        head, body = source_of(obj)
        _print(f'<div class="source-beside-equation" markdown>\n\n{head}\n\n```python\n{body}\n```\n\n</div>\n')


def _print(text: str) -> None:
    """``print`` as the calling code block sees it: markdown-exec gives each block its own ``print`` (its output
    goes to the page), not a redirected ``sys.stdout``; outside a block, the builtin."""
    frame = sys._getframe(2)
    while frame is not None:
        candidate = frame.f_globals.get("print")
        if candidate is not None and candidate is not builtins.print:
            candidate(text)
            return
        frame = frame.f_back
    print(text)
