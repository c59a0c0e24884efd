"""The course's notebooks run in a real Jupyter kernel (nbclient, ipykernel): as CI runs them, with the solutions.

    python docs/notebook_run.py [NAME ...]   # run them at the tiny size, one after another, and record the seconds
                                             # each took in seqlab/course/notebooks/recorded.json (make notebooks)

:func:`with_solutions` puts each exercise's solution (docs/course/solutions/, as the site shows it:
:func:`course_pages.solution_source`) in place of its starter cell, so every cell must pass, the ``check`` cells
included; :func:`exercises_only` is every chapter's exercise cells as shipped (starter, then ``check``), which
must each report "not passed" in words. :func:`execute` runs a notebook top to bottom in a fresh kernel in a
folder of its own, with the datasets of ../shared/data linked into a cache as the site's build does
(:func:`kernel_env`). tests/test_notebooks.py uses all three; the site's test build then leaves these pages'
code out (``SEQLAB_DOCS_SKIP_NOTEBOOKS=1``): one run of a page's code serves both.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

import course_pages  # noqa: E402
import notebook_pages  # noqa: E402

TIMEOUT_S = 900  # a cell's limit: a guard against a hang only


def load(name: str):
    """The committed notebook ``name`` as an nbformat node."""
    import nbformat

    return nbformat.reads((notebook_pages.OUT / f"{name}.ipynb").read_text(encoding="utf-8"), as_version=4)


def _exercise_of(cell) -> Any:
    """The exercise whose starter this code cell is, else None."""
    from seqlab import course

    if cell.cell_type != "code":
        return None
    return next((e for e in course.exercises() if cell.source.rstrip() == e.starter().rstrip()), None)


def with_solutions(nb):
    """``nb`` with every starter cell replaced by its exercise's solution, as the site shows it."""
    for cell in nb.cells:
        exercise = _exercise_of(cell)
        if exercise is not None:
            path = next(course_pages.SOLUTIONS.glob(f"ch{exercise.chapter}_*.py"))
            cell.source = course_pages.solution_source(path, exercise.name).rstrip()
    return nb


def exercises_only(names: list[str]):
    """One notebook of the exercise cells of ``names`` as shipped: each starter cell and the ``check`` cell under
    it, nothing of the chapters' training."""
    import nbformat

    cells = []
    for name in names:
        source = load(name).cells
        for i, cell in enumerate(source):
            if _exercise_of(cell) is not None:
                cells += [cell, source[i + 1]]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata.kernelspec = notebook_pages.KERNEL
    return nb


def kernel_env(work: Path, shared: Path | None = None) -> dict[str, str]:
    """The kernel's environment: this one's, with the named datasets from ``shared`` (../shared/data) linked into a
    cache under ``work`` (``SEQLAB_CACHE``), the chapters' runs under ``work/.workdirs`` (``SEQLAB_DOCS_WORK``), one OpenMP
    thread (the tiny models, as the site's build runs them), the inline plots of a notebook."""
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "SEQLAB_DOCS_FULL")}
    shared = shared or Path(os.environ.get("SEQLAB_SHARED_DATA") or ROOT.parent / "shared" / "data")
    if shared.is_dir() and not os.environ.get("SEQLAB_CACHE"):
        from seqlab.data.download import link_cache

        env["SEQLAB_CACHE"] = str(link_cache(shared, work / ".seqlab-cache"))
    env.update(SEQLAB_DOCS_WORK=str(work / ".workdirs"), OMP_NUM_THREADS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def execute(nb, folder: Path, env: dict[str, str]) -> float:
    """Run ``nb`` top to bottom in a fresh python3 kernel whose working folder is ``folder``; a cell that raises
    raises :class:`nbclient.exceptions.CellExecutionError` with its traceback. Returns the seconds it took, kernel
    start included."""
    from nbclient import NotebookClient

    folder.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    start = time.perf_counter()
    client.execute(env=env, cwd=str(folder))
    return time.perf_counter() - start


def outputs_text(cell) -> str:
    """What a cell showed, as text: its printed output, errors, and each display's markdown or plain text."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append("\n".join(out.traceback))
        else:
            data = out.get("data", {})
            parts.append(data.get("text/markdown") or data.get("text/plain") or "")
    return "\n".join(parts)


def record(names: list[str], work: Path) -> dict[str, Any]:
    """Run ``names`` one after another at the tiny size, as shipped (as a learner first runs them: the ``check``
    cells say "not passed"), and write the seconds each took (with the CPU and the date) into recorded.json.
    Returns the new tiny records."""
    from seqlab.base.machine import cpu_line

    tiny = notebook_pages.tiny_records()
    for name in names:
        folder = work / name
        seconds = execute(load(name), folder, kernel_env(folder))
        tiny[name] = {"seconds": round(seconds, 1), "cpu": cpu_line(),
                      "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        print(f"{name}: {seconds:.1f} s", flush=True)
    (notebook_pages.OUT / "recorded.json").write_text(notebook_pages.recorded_text(tiny), encoding="utf-8")
    return tiny


if __name__ == "__main__":
    import tempfile

    chosen = sys.argv[1:] or list(notebook_pages.sources())
    with tempfile.TemporaryDirectory(prefix="seqlab-notebooks-") as tmp:
        record(chosen, Path(tmp))
    print(json.dumps({"recorded": chosen}))
