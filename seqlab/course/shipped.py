"""The course's notebooks as the package ships them (``seqlab/course/notebooks/``): which there are, how long each
took, and writing them where a learner asks (``seqlab course list``, ``seqlab course get``).

One notebook per tutorial of the site (``03-recurrent-networks.ipynb``) and the tour (``tour.ipynb``), generated
from the pages by docs/notebook_pages.py; ``recorded.json`` beside them holds the seconds each took at the tiny
size (measured by docs/notebook_run.py) and at the documented size (the published site's build, docs/results/),
each with its CPU. Nothing here is typed: a size never measured says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqlab.base.errors import SeqlabError, shown, spelled
from seqlab.base.io import write_bytes_atomic
from seqlab.base.outputs import check_replaceable
from seqlab.course.notebook import notebooks_folder, recorded

TOUR = "tour"
NOT_MEASURED = "not measured yet"


def names() -> list[str]:
    """Every shipped notebook's name: the tour, then the chapters in order."""
    stems = sorted(p.stem for p in notebooks_folder().glob("*.ipynb"))
    return sorted(stems, key=lambda s: (s != TOUR, s))


def resolve(which: str) -> list[str]:
    """The notebooks ``which`` names: "all", "tour", or a chapter ("03" or "3"); anything else is refused in one
    line listing what there is."""
    every = names()
    text = str(which).strip()
    if text == "all":
        return every
    key = f"{int(text):02d}" if text.isdigit() else text
    found = [n for n in every if n == key or n.split("-")[0] == key]
    if not found:
        chapters = [n.split("-")[0] for n in every if n != TOUR]
        raise SeqlabError(f"there is no notebook {which!r}; give a chapter ({', '.join(chapters)}), tour or all")
    return found


def title(name: str) -> str:
    """The notebook's title: its first heading."""
    doc = json.loads((notebooks_folder() / f"{name}.ipynb").read_text(encoding="utf-8"))
    for cell in doc["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("# "):
                return line[2:].strip()
    return name


def duration(record: dict[str, Any] | None) -> str:
    """A record's seconds as "41 s", "12 min" or "2.1 h"; :data:`NOT_MEASURED` without one."""
    seconds = (record or {}).get("seconds")
    if not isinstance(seconds, (int, float)):
        return NOT_MEASURED
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def listing() -> list[dict[str, Any]]:
    """One row per notebook: ``name``, ``title``, and the ``tiny`` and ``documented`` records (None where none)."""
    records = recorded()
    return [{"name": name, "title": title(name), "tiny": (records.get(name) or {}).get("tiny"),
             "documented": (records.get(name) or {}).get("documented")} for name in names()]


def write(chosen: list[str], folder: str | Path, force: bool = False) -> list[tuple[Path, str]]:
    """Write the notebooks ``chosen`` into ``folder`` (made when missing) and nothing else. A file equal to what
    would be written is left as it is ("unchanged"); another file of the same name is refused, before anything
    is written, unless ``force``, which replaces only a seqlab notebook (:func:`check_replaceable`), edited or not.
    Returns ``(path, "wrote" | "unchanged" | "replaced")`` per notebook."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise SeqlabError(f"{spelled('dir')} {shown(folder)} is a file; give a folder")
    plan = []
    for name in chosen:
        data = (notebooks_folder() / f"{name}.ipynb").read_bytes()
        target = folder / f"{name}.ipynb"
        if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
            plan.append((target, data, "unchanged"))
            continue
        if target.exists() or target.is_symlink():
            if not force:
                raise SeqlabError(f"{shown(target)} exists and differs from seqlab's {name}.ipynb (your edits?); "
                                  f"give {spelled('force')} to replace it, or another {spelled('dir')}")
            if target.is_dir() and not target.is_symlink():
                raise SeqlabError(f"{shown(target)} is a folder; give another {spelled('dir')}")
            check_replaceable(target, "dir")
            plan.append((target, data, "replaced"))
            continue
        plan.append((target, data, "wrote"))
    folder.mkdir(parents=True, exist_ok=True)
    for target, data, what in plan:
        if what != "unchanged":
            write_bytes_atomic(target, data)
    return [(target, what) for target, _, what in plan]
