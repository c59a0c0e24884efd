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

import atexit
import base64
import builtins
import html
import inspect
import numbers
import re
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import page_results

__all__ = ["FULL", "size", "workdir", "show", "record", "documented", "size_note", "table", "show_source"]

FULL: bool = os.environ.get("SEQLAB_DOCS_FULL", "") == "1"  # the published build: the documented sizes
WORK_ENV = "SEQLAB_DOCS_WORK"  # the build's temporary folder (docs/hooks.py makes one; the docs test names its own)

_made: dict[str, Path] = {}  # workdir name -> folder, emptied once per build (docs/hooks.py calls _reset)


def size(tiny: Any, full: Any) -> Any:
    """``full`` in the published build (``FULL``), else ``tiny``: ``steps = size(30, 3000)``."""
    return full if FULL else tiny


def workdir(name: str) -> Path:
    """A folder for a page's runs under the build's temporary folder (never in the repository): empty the first time
    a build asks for ``name``, the same folder on later calls of that build. ``out=workdir("ch03") / "ner"``."""
    if name in _made:
        return _made[name]
    if not name or Path(name).name != name or name in (".", ".."):
        raise ValueError(f"workdir name must be a plain folder name like 'ch03', got {name!r}")
    root = os.environ.get(WORK_ENV)
    if not root:  # outside a build (a notebook, a script): a temporary folder of this process, removed at its exit
        root = tempfile.mkdtemp(prefix="seqlab-docs-")
        os.environ[WORK_ENV] = root
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    folder = Path(root) / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _made[name] = folder
    return folder


def _reset() -> None:
    """Forget the folders handed out (docs/hooks.py, at the start of each build: `mkdocs serve` rebuilds in-process)."""
    _made.clear()


def png_bytes(obj: Any) -> bytes:
    """The PNG of a matplotlib Figure, or of an object with ``_repr_png_()`` (seqlab's result tuples)."""
    if hasattr(obj, "savefig"):
        import io

        buffer = io.BytesIO()
        obj.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()
    if hasattr(obj, "_repr_png_"):
        data = obj._repr_png_()
        if isinstance(data, bytes) and data:
            return data
    raise TypeError(f"show() needs a matplotlib Figure or an object with _repr_png_(), got {type(obj).__name__}")


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
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"table: a row has {len(row)} cells for {len(headers)} headers: {row!r}")
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    _print("\n".join(lines) + "\n")


ROOT = Path(__file__).resolve().parents[1]
_EQUATION = re.compile(r'^\s*!!! equation "([^"]+)"', re.M)


def show_source(*objects: Any) -> None:
    """Print the source of each function, method or class, read from the code while the page builds (so it
    cannot drift from it), in a block of CSS class ``source-beside-equation``: headed by its dotted name, file and
    lines, and the equation tags (``!!! equation "Topic › Section"``) of its docstring, else of its class's or
    module's. A numba kernel shows its Python source."""
    for obj in objects:
        func = inspect.unwrap(getattr(obj, "py_func", obj))
        lines, start = inspect.getsourcelines(func)
        path = Path(inspect.getsourcefile(func) or "").resolve().relative_to(ROOT).as_posix()
        name = f"{func.__module__}.{func.__qualname__}"
        tags = _equation_tags(func)
        head = f"**`{name}`** · `{path}` lines {start}-{start + len(lines) - 1}"
        if tags:
            head += " · the notes' " + ", ".join(f"*{t}*" for t in tags)
        body = "".join(lines).rstrip()
        _print(f'<div class="source-beside-equation" markdown>\n\n{head}\n\n```python\n{body}\n```\n\n</div>\n')


def _equation_tags(func: Any) -> list[str]:
    """The equation tags of ``func``'s docstring, else of the class that defines it, else of its module."""
    owners = [func]
    qualname = getattr(func, "__qualname__", "")
    module = sys.modules.get(func.__module__)
    if "." in qualname and module is not None:  # a method: its class
        owner: Any = module
        for part in qualname.split(".")[:-1]:
            owner = getattr(owner, part, None)
        owners.append(owner)
    owners.append(module)
    for owner in owners:
        tags = _EQUATION.findall(inspect.getdoc(owner) or "") if owner is not None else []
        if tags:
            return list(dict.fromkeys(tags))
    return []


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


def _cell(value: Any) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):  # numpy floats too
        text = f"{value:.4g}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
