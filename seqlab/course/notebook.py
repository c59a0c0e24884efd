"""What the course's notebooks import: the size switch, a folder for their runs, and the helpers that show results.

    from seqlab.course.notebook import choose_size, size, workdir, show, record, size_note, table, show_source

Each notebook (``seqlab course get``) is generated from a tutorial of the site (docs/notebook_pages.py), whose
code blocks import the same names from docs/docs_support.py; the site's module takes the size switch and the work
folder from here, so the two never differ. Two sizes exist: "tiny" (what CI runs at every commit: minutes on a
laptop CPU) and "documented" (the figures of the published site; ``SEQLAB_DOCS_FULL=1`` there). A notebook's first
code cell chooses one (:func:`choose_size`); a page writes both, ``steps = size(30, 3000)``.

In a notebook, :func:`show`, :func:`table`, :func:`size_note` and :func:`show_source` display a picture, a table
or a note below the cell (through IPython's display; printed as text elsewhere). The site's module prints the same
into the page's markdown instead, and records the documented-size results (docs/page_results.py).
"""

from __future__ import annotations

import atexit
import base64
import inspect
import json
import numbers
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["SIZES", "FULL", "choose_size", "size", "workdir", "show", "record", "documented", "size_note", "table",
           "show_source"]

SIZES = ("tiny", "documented")
SIZE_ENV = "SEQLAB_DOCS_FULL"  # "1": the documented size (the site's published build); a notebook's cell overrides it
WORK_ENV = "SEQLAB_DOCS_WORK"  # the folder the runs go under (the site's build names one; else a temporary folder)
RECORDED = "recorded.json"  # beside the notebooks: each one's measured seconds, the documented run's numbers

FULL: bool = os.environ.get(SIZE_ENV, "") == "1"
_made: dict[str, Path] = {}  # workdir name -> folder, forgotten by forget_workdirs()


def choose_size(name: str) -> str:
    """Run the cells below at ``name``'s size: "tiny" or "documented" (a notebook's first code cell calls it).
    Returns the name; anything else is a ValueError naming the two."""
    global FULL
    if name not in SIZES:
        raise ValueError(f"SIZE must be one of {', '.join(repr(s) for s in SIZES)}, got {name!r}")
    FULL = name == "documented"
    return name


def size(tiny: Any, full: Any) -> Any:
    """``full`` at the documented size, else ``tiny``: ``steps = size(30, 3000)``."""
    return full if FULL else tiny


def workdir(name: str) -> Path:
    """A folder for a chapter's runs, empty the first time ``name`` is asked for, the same folder afterwards:
    under ``SEQLAB_DOCS_WORK`` (the site's build sets it), else under a temporary folder of this process, removed
    when it exits (a notebook's kernel), never in the folder you work in. ``out=workdir("ch03") / "ner"``."""
    if name in _made:
        return _made[name]
    if not name or Path(name).name != name or name in (".", ".."):
        raise ValueError(f"workdir name must be a plain folder name like 'ch03', got {name!r}")
    root = os.environ.get(WORK_ENV) or _own_root()
    folder = Path(root) / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _made[name] = folder
    return folder


def _own_root() -> str:
    """This process's temporary folder of runs (made once, removed at exit; the environment is left alone)."""
    if "" not in _made:
        root = Path(tempfile.mkdtemp(prefix="seqlab-course-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _made[""] = root
    return str(_made[""])


def forget_workdirs() -> None:
    """Forget the folders handed out (the site's build, at its start: `mkdocs serve` rebuilds in one process)."""
    _made.clear()


# --------------------------------------------------------------------------------------------------------
# what a notebook shows below a cell


def show(obj: Any, alt: str, name: str | None = None) -> None:
    """Show a matplotlib Figure, or an object with ``_repr_png_()`` (seqlab's result tuples), below the cell, as a
    PNG with ``alt`` as its text (``name`` is the file the site's build keeps it as; unused here)."""
    png = png_bytes(obj)
    plt = sys.modules.get("matplotlib.pyplot")  # never imported here: a library leaves the backend alone
    if plt is not None and hasattr(obj, "savefig"):  # shown once: pyplot's inline backend would draw it again
        plt.close(obj)
    _display({"image/png": base64.b64encode(png).decode("ascii"), "text/plain": alt}, alt)


def record(name: str, value: Any) -> Any:
    """Return ``value`` (the site's build also keeps it under ``name`` among the chapter's recorded numbers)."""
    return value


def documented(page: str) -> dict[str, Any]:
    """The numbers the published documented-size run of tutorial ``page`` recorded ({} where not recorded), as
    the notebooks ship them beside themselves (``recorded.json``)."""
    entry = recorded().get(page) or {}
    return dict((entry.get("documented") or {}).get("numbers") or {})


def recorded() -> dict[str, Any]:
    """``recorded.json`` beside the notebooks: ``{notebook: {"tiny": {...}, "documented": {...}}}`` with the
    seconds each took, the CPU and the date (``seqlab course list`` reads it); {} when it is missing."""
    path = notebooks_folder() / RECORDED
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")))


def notebooks_folder() -> Path:
    """The folder of the notebooks in the installed package (``seqlab/course/notebooks``)."""
    return Path(str(resources.files("seqlab.course") / "notebooks"))


def size_note(what: str) -> None:
    """Say which size produced the results above, and what that was (``size_note("30 steps on 200 sentences")``)."""
    if FULL:
        text = f"**Size: documented.** The results above come from the documented size: {what}."
    else:
        text = (f"**Size: tiny.** The results above come from the tiny size: {what}. Set `SIZE = \"documented\"` "
                "in the first code cell and run the notebook again for the published figures (`seqlab course list` "
                "says how long each size takes).")
    _display({"text/markdown": text, "text/plain": text}, text)


def table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> None:
    """Show a table (floats as ``{:.4g}``)."""
    text = markdown_table(rows, headers)
    _display({"text/markdown": text, "text/plain": text}, text)


def markdown_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> str:
    """A markdown table (floats as ``{:.4g}``; ``|`` and newlines in cells escaped); a row of another length than
    ``headers`` is a ValueError."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"table: a row has {len(row)} cells for {len(headers)} headers: {row!r}")
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def show_source(*objects: Any) -> None:
    """Show the source of each function, method or class, read from the installed code: headed by its dotted
    name, file and lines and the notes' equation tags of its docstring (:func:`source_of`)."""
    for obj in objects:
        head, body = source_of(obj)
        text = f"{head}\n\n```python\n{body}\n```\n"
        _display({"text/markdown": text, "text/plain": text}, text)


_EQUATION = re.compile(r'^\s*!!! equation "([^"]+)"', re.M)


def source_of(obj: Any) -> tuple[str, str]:
    """``(head, source)`` of a function, method or class (a numba kernel: its Python source): the head names it,
    its file relative to the folder that holds the ``seqlab`` package, its lines, and the equation tags
    (``!!! equation "Topic › Section"``) of its docstring, else of its class's or module's."""
    func = inspect.unwrap(getattr(obj, "py_func", obj))
    lines, start = inspect.getsourcelines(func)
    root = Path(__file__).resolve().parents[2]
    path = Path(inspect.getsourcefile(func) or "").resolve().relative_to(root).as_posix()
    head = f"**`{func.__module__}.{func.__qualname__}`** · `{path}` lines {start}-{start + len(lines) - 1}"
    tags = _equation_tags(func)
    if tags:
        head += " · the notes' " + ", ".join(f"*{t}*" for t in tags)
    return head, "".join(lines).rstrip()


def _equation_tags(func: Any) -> list[str]:
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


def _display(bundle: dict[str, Any], text: str) -> None:
    """Show a MIME bundle below the cell in IPython (a notebook's kernel), else print ``text``."""
    if "IPython" in sys.modules:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is not None:
            display(bundle, raw=True)
            return
    print(text)


def _cell(value: Any) -> str:
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):  # numpy floats too
        text = f"{value:.4g}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")
