"""The recorded results of the tutorials' documented-size runs: docs/results/<page-stem>/, one folder per tutorial.

The published build (``make docs FULL=1``) runs every tutorial at its documented size, which takes about an hour;
what it measured must outlive the build, so a reader of the raw markdown on a code host, and the CI build (tiny
sizes), can show it. While a tutorial builds, its executed blocks call :func:`docs_support.show` (each figure,
also saved here as a small PNG) and :func:`docs_support.record` (its key numbers); when the page has finished
without a warning, docs/hooks.py calls :func:`finish_page`, which writes ``results.json`` and renames the page's
folder into place whole. A page that failed leaves the previous folder as it was.

``results.json``: ``commit`` (HEAD, ``-dirty`` where docs/ or seqlab/ differ from it), ``cpu``
(:func:`seqlab.base.machine.cpu_line`), ``date``, ``size`` ("full" or "tiny"), ``seconds`` (the page's build,
its code and its exercises' checks: ``seqlab course list`` shows it for the chapter's notebook), ``page_sha256`` (of the page's
executed code, :func:`executed_code`: a change to a page's code makes its recorded results stale, and
tests/test_docs_results.py fails), ``library`` (the seqlab source the page ran, :func:`library_record`: a change
to one of those files makes the results stale too, and the test names the page), ``numbers`` and ``figures``.
``make docs-stale`` (``python docs/page_results.py``) prints the pages to run again and why (:func:`stale_pages`).

Environment:
- ``SEQLAB_DOCS_RESULTS=DIR`` writes the results to DIR instead of docs/results, at either size (trial runs and
  tests never touch the committed results); without it only the FULL build writes them, to docs/results;
- ``SEQLAB_DOCS_PAGES=01,03`` runs only those tutorials' code (by number or page stem): every other page's
  executed blocks are left out, so one page can be redone in minutes;
- ``SEQLAB_DOCS_SKIP_NOTEBOOKS=1`` leaves out the code of the pages that are notebooks (the tutorials and the
  tour): the test suite runs that code once, in a Jupyter kernel (tests/test_notebooks.py), and builds the site
  without running it a second time; every other page runs as usual.

Torch-free and importing nothing of docs/ (docs_support imports this module; so do the hooks and the tests).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import numbers
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import seqlab
from seqlab.base.io import remove, replace_atomic, write_bytes_atomic, write_json_atomic
from seqlab.base.machine import cpu_line

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TUTORIALS = DOCS / "tutorials"
RESULTS = DOCS / "results"  # the committed results of the last documented-size build
RESULTS_ENV = "SEQLAB_DOCS_RESULTS"
PAGES_ENV = "SEQLAB_DOCS_PAGES"
SKIP_NOTEBOOKS_ENV = "SEQLAB_DOCS_SKIP_NOTEBOOKS"
TOUR_PAGE = "tour.md"  # the tour's page (its notebook: docs/notebooks/tour.py)
RESULTS_FILE = "results.json"
PNG_LIMIT = 150_000  # bytes: a figure is committed, so it stays small (dpi lowered until it fits)
PNG_DPIS = (100, 80, 64, 50, 40)

# an executed block as markdown-exec finds it: a fence of 3+ backticks or tildes (indented inside an admonition
# or a list as a whole), ``python`` and options naming exec as on
EXECUTED_BLOCK = re.compile(
    r'^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})python\b(?P<options>[^\n]*\bexec="(?:on|true|yes|1)"[^\n]*)\n'
    r"(?P<code>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.M | re.S)
# a link or image to the recorded results from a tutorial: ![alt](../results/STEM/FILE) or [text](...)
SEQLAB = Path(seqlab.__file__).resolve().parent  # the package whose source a page's run is hashed over
RESULTS_REF = re.compile(r"(?P<image>!?)\[(?P<text>[^\]]*)\]\((?P<path>\.\./results/[^)\s]+)\)")

log = logging.getLogger("mkdocs.hooks.seqlab")
_page: dict | None = None  # the tutorial being built while results are written (begin_page .. finish_page)


# --------------------------------------------------------------------------------------------------------
# what a page runs, and which pages run


def executed_code(markdown: str) -> str:
    """The page's executed code: its executed blocks' code (dedented), each ending with a newline, in page order.
    The hooks hash it into ``page_sha256`` and the tests recompute it from the file: any change to a page's
    code changes the hash, a change of its prose does not."""
    return "".join(textwrap.dedent(m.group("code")).rstrip("\n") + "\n" for m in EXECUTED_BLOCK.finditer(markdown))


def code_sha256(markdown: str) -> str:
    return hashlib.sha256(executed_code(markdown).encode("utf-8")).hexdigest()


def is_tutorial(src_uri: str) -> bool:
    """A page whose documented-size results are recorded: docs/tutorials/0*.md."""
    path = Path(src_uri)
    return path.parent.as_posix() == "tutorials" and path.name.startswith("0") and path.suffix == ".md"


def selected_pages() -> set[str] | None:
    """``SEQLAB_DOCS_PAGES`` as a set of names (``01`` or ``01-time-series-ar``), or None when every page runs."""
    names = {name.strip() for name in os.environ.get(PAGES_ENV, "").split(",") if name.strip()}
    return names or None


def runs(src_uri: str) -> bool:
    """Whether this page's executed blocks run in this build (``SEQLAB_DOCS_PAGES``: only the tutorials named;
    ``SEQLAB_DOCS_SKIP_NOTEBOOKS=1``: none of the pages that are notebooks)."""
    if os.environ.get(SKIP_NOTEBOOKS_ENV, "") == "1" and (is_tutorial(src_uri) or src_uri == TOUR_PAGE):
        return False
    chosen = selected_pages()
    if chosen is None:
        return True
    stem = Path(src_uri).stem
    return is_tutorial(src_uri) and (stem in chosen or stem.split("-")[0] in chosen)


def without_executed_blocks(markdown: str) -> str:
    """The page with its executed blocks left out (a page ``SEQLAB_DOCS_PAGES`` does not name, or a notebook's
    under ``SEQLAB_DOCS_SKIP_NOTEBOOKS``): a one-line note stands in for each, so the page still converts, with
    its headings and links."""
    why = SKIP_NOTEBOOKS_ENV if os.environ.get(SKIP_NOTEBOOKS_ENV, "") == "1" else PAGES_ENV
    note = f"*(not run in this build: {why})*\n"
    return EXECUTED_BLOCK.sub(lambda m: m.group("indent") + note, markdown)


# --------------------------------------------------------------------------------------------------------
# where results go, and the references to them


def target() -> Path | None:
    """The folder the results are written to: ``SEQLAB_DOCS_RESULTS``, else docs/results in the FULL build, else
    None (the tiny CI build writes nothing)."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return RESULTS if os.environ.get("SEQLAB_DOCS_FULL", "") == "1" else None


def results_refs(markdown: str) -> list[str]:
    """The ``../results/...`` paths a tutorial refers to (figures and results.json), in page order."""
    return [m.group("path") for m in RESULTS_REF.finditer(markdown)]


def link_results(markdown: str, page_dir: Path) -> str:
    """The page with its references to recorded results made buildable: one to a file not recorded yet (before
    the first FULL build) becomes a note, so the strict build does not fail on it; a link to results.json reads
    ``commit ..., DATE`` from the file, so the site names the commit beside the figures."""

    def one(m: re.Match) -> str:
        path = (page_dir / m.group("path")).resolve()
        if not path.is_file():
            return f"*(not recorded yet: `make docs FULL=1` writes {m.group('path').removeprefix('../')})*"
        if path.name != RESULTS_FILE or m.group("image"):
            return m.group(0)
        recorded = json.loads(path.read_text(encoding="utf-8"))
        return f"[commit {recorded.get('commit', '?')}, {str(recorded.get('date', '?'))[:10]}]({m.group('path')})"

    return RESULTS_REF.sub(one, markdown)


# --------------------------------------------------------------------------------------------------------
# one page's results: begun by the hooks, filled by the page's blocks, finished by the hooks


def begin_page(stem: str, markdown: str) -> bool:
    """Start recording the tutorial ``stem`` (its markdown as the hooks convert it) when results are written in this
    build; its figures and numbers go to a staging folder beside the target. Returns whether it records."""
    global _page
    where = target()
    if where is None:
        _page = None
        return False
    staging = where / f".{stem}.{os.getpid()}.tmp"  # beside the target: the rename stays on one file system
    remove(staging)
    staging.mkdir(parents=True)
    _page = {"stem": stem, "target": where, "staging": staging, "commit": git_commit(), "start": time.perf_counter(),
             "page_sha256": code_sha256(markdown), "numbers": {}, "figures": [], "ran": _RunFiles.start()}
    return True


def recording() -> bool:
    return _page is not None


def finish_page(finished: bool) -> Path | None:
    """End the page begun: when it ``finished`` (every block ran, no warning), write its results.json and put its
    folder in place whole (the previous one removed only then); otherwise drop what it wrote. Returns the folder."""
    global _page
    page, _page = _page, None
    if page is None:
        return None
    ran = page["ran"].stop()
    if not finished:
        remove(page["staging"])
        log.warning("%s did not finish: its recorded results in %s are left as they were", page["stem"],
                    page["target"])
        return None
    page["library"] = library_record(ran)
    write_json_atomic(page["staging"] / RESULTS_FILE, results_document(page), indent=1)
    folder = page["target"] / page["stem"]
    replace_atomic(page["staging"], folder, aside=page["target"] / f".{page['stem']}.old-{os.getpid()}")
    log.info("%s: results written to %s", page["stem"], folder)
    return folder


def results_document(page: dict) -> dict:
    return {"commit": page["commit"], "cpu": cpu_line(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "size": "full" if os.environ.get("SEQLAB_DOCS_FULL", "") == "1" else "tiny",
            "seconds": round(time.perf_counter() - page["start"], 1),
            "page_sha256": page["page_sha256"], "library": page["library"], "numbers": page["numbers"],
            "figures": page["figures"]}


def record_number(name: str, value: Any) -> None:
    """Keep ``value`` under ``name`` in the page's numbers (a number, a string, or a list or dict of them; numpy
    and torch scalars as plain numbers). Two values under one name are an error: a page's record is a fact."""
    if _page is None:
        return
    if name in _page["numbers"]:
        raise ValueError(f"record({name!r}): the page recorded {name!r} already")
    _page["numbers"][name] = _plain(value)


def save_figure(name: str, png: bytes) -> None:
    """Keep a figure's PNG as ``name``.png in the page's folder."""
    if _page is None:
        return
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        raise ValueError(f"figure name {name!r}: use lower-case letters, digits and hyphens (it is a file name)")
    file = f"{name}.png"
    if file in _page["figures"]:
        raise ValueError(f"the page saved a figure named {name!r} already")
    write_bytes_atomic(_page["staging"] / file, png)
    _page["figures"].append(file)


def figure_count() -> int:
    return len(_page["figures"]) if _page is not None else 0


def small_png(figure: Any) -> bytes:
    """The PNG of a matplotlib Figure at the highest dpi of :data:`PNG_DPIS` that keeps it under
    :data:`PNG_LIMIT` bytes (the lowest where none does)."""
    import io

    for dpi in PNG_DPIS:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        if buffer.tell() <= PNG_LIMIT:
            break
    return buffer.getvalue()


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: numpy and torch values (``tolist()``) as Python numbers and lists, containers
    walked; anything else is refused, so results.json stays plain data."""
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"record: {type(value).__name__} is not a number, a string or a list or dict of them")


# --------------------------------------------------------------------------------------------------------
# the tree the results came from


def git_commit() -> str:
    """HEAD's hash, with ``-dirty`` where the work tree differs from it in docs/ or seqlab/ (the recorded results
    excepted), so results of uncommitted code say so; "unknown" outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True,
                              timeout=60).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--", "docs", "seqlab", ":(exclude)docs/results")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if changed else "")


# --------------------------------------------------------------------------------------------------------
# the library a page ran: which seqlab files, and their hash


class _RunFiles:
    """The source files whose code ran while a page was recorded: a trace function sees each Python frame start
    (a function, a generator resumed, a module's body as it is imported) and keeps its file, returning None so
    that no line is traced. Frames of threads the page starts are seen too (``threading.settrace``); a trace
    function already set (a debugger, coverage) is called as before. The modules of seqlab first imported while
    the page ran are kept as well (what a child process of the page ran is only seen so). The cost is one Python
    call per Python function call while the page runs, in recording builds only (FULL, or SEQLAB_DOCS_RESULTS):
    tiny runs of tutorials 01 and 06 measured 28 -> 36 s and 61 -> 70 s with it, on 2 cores shared with training
    jobs (noisy), so a page's recorded ``seconds`` include it."""

    def __init__(self):
        self.files: set[str] = set()
        self.modules_before = {name for name in sys.modules if name == "seqlab" or name.startswith("seqlab.")}
        self.previous = sys.gettrace()
        self.previous_threads = threading.gettrace()

    @classmethod
    def start(cls) -> "_RunFiles":
        run = cls()
        files, previous = run.files, run.previous

        if previous is None:
            def trace(frame, event, arg):
                files.add(frame.f_code.co_filename)
        else:
            def trace(frame, event, arg):
                files.add(frame.f_code.co_filename)
                return previous(frame, event, arg)

        run.trace = trace
        sys.settrace(trace)
        threading.settrace(trace)
        return run

    def stop(self) -> set[Path]:
        """Stop watching (the previous trace functions back); the seqlab files seen, as absolute paths."""
        if sys.gettrace() is self.trace:
            sys.settrace(self.previous)
        threading.settrace(self.previous_threads)
        seen = {Path(f) for f in self.files if f.endswith(".py")}
        for name, module in list(sys.modules.items()):
            if (name == "seqlab" or name.startswith("seqlab.")) and name not in self.modules_before:
                if getattr(module, "__file__", None):
                    seen.add(Path(module.__file__))
        return {f.resolve() for f in seen if _under(f.resolve(), SEQLAB)}


def _under(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def module_imports(path: Path) -> set[Path]:
    """The seqlab files importing ``path`` runs: the modules its import statements outside functions name
    (module level, class bodies, ``if``/``try`` blocks; ``from seqlab.a import b`` names seqlab/a/b.py where that
    is a module), with each one's packages (their ``__init__.py``). Imports inside functions are left out: those
    run only when the function does, and the page's run sees them then."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(SEQLAB.parent).with_suffix("").parts
    package = package[:-1] if package[-1] != "__init__" else package[:-1]
    names: list[str] = []

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                names.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = ".".join(package[:len(package) - child.level + 1]) if child.level else ""
                module = ".".join(part for part in (base, child.module or "") if part)
                names.append(module)
                names.extend(f"{module}.{alias.name}" for alias in child.names)
            else:
                visit(child)

    visit(tree)
    found: set[Path] = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != SEQLAB.name:
            continue
        for i in range(1, len(parts) + 1):
            file = _module_file(parts[:i])
            if file is not None:
                found.add(file)
    return found


def _module_file(parts: list[str]) -> Path | None:
    folder = SEQLAB.parent.joinpath(*parts)
    for file in (folder / "__init__.py", folder.with_suffix(".py")):
        if file.is_file():
            return file.resolve()
    return None


def library_files(ran: set[Path]) -> list[str]:
    """The seqlab files a page depends on: those whose code ran (:class:`_RunFiles`) and the seqlab modules those
    import outside functions (:func:`module_imports`: the constants a page reads through them come so), one step,
    not followed further (that would name most of the package for any page), as paths relative to the
    repository, sorted."""
    files = {file for file in ran if file.is_file()}
    files |= {imported for file in list(files) for imported in module_imports(file)}
    return sorted(file.relative_to(SEQLAB.parent).as_posix() for file in files)


def file_sha256(relative: str) -> str:
    """sha256 of the file at ``relative`` (to the repository) as it is now; "missing" where it is gone."""
    path = SEQLAB.parent / relative
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def library_sha256(files: dict[str, str]) -> str:
    """One hash over ``{path: sha256}``: sha256 of ``sha256sum``'s lines for them, sorted by path."""
    return hashlib.sha256("".join(f"{files[p]}  {p}\n" for p in sorted(files)).encode("utf-8")).hexdigest()


def library_record(ran: set[Path]) -> dict:
    """results.json's ``library``: ``sha256`` over the seqlab files the page ran and ``files``, each file's
    sha256 by its path, so a check recomputes both from the tree as it is (:func:`library_changes`)."""
    files = {path: file_sha256(path) for path in library_files(ran)}
    return {"sha256": library_sha256(files), "files": files}


def library_changes(library: dict) -> list[str]:
    """The files of a recorded ``library`` that differ from the tree now (changed, or "gone"); [] where its hash
    still holds."""
    files = library.get("files", {})
    now = {path: file_sha256(path) for path in files}
    if library_sha256(now) == library.get("sha256") and library_sha256(files) == library.get("sha256"):
        return []
    changed = [path + (" (gone)" if now[path] == "missing" else "") for path in sorted(files)
               if now[path] != files[path]]
    return changed or ["(the recorded hash does not match its files)"]


# --------------------------------------------------------------------------------------------------------
# which recorded pages must run again


def rerun_command(stem: str) -> str:
    return f"make docs FULL=1 PAGES={stem[:2]}"


def stale_pages(results: Path = RESULTS) -> list[tuple[str, str, bool]]:
    """``(page stem, why, recorded)`` for each tutorial to run again at the documented size: no results; its code
    changed (``page_sha256``); seqlab files it ran changed (``library``, naming them); or results recorded before
    the library was (no ``library``: ``recorded`` is False for those only, the ones a check cannot judge yet)."""
    out = []
    for page in sorted(TUTORIALS.glob("0*.md")):
        path = results / page.stem / RESULTS_FILE
        if not path.is_file():
            out.append((page.stem, "no results recorded", True))
            continue
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded.get("page_sha256") != code_sha256(page.read_text(encoding="utf-8")):
            out.append((page.stem, "its code changed since its results were recorded", True))
        library = recorded.get("library")
        if library is None:
            out.append((page.stem, "not recorded with a library hash", False))
        elif changes := library_changes(library):
            shown = ", ".join(changes[:8]) + (f" and {len(changes) - 8} more" if len(changes) > 8 else "")
            out.append((page.stem, f"seqlab files it ran changed: {shown}", True))
    return out


def main() -> int:
    """``make docs-stale``: each tutorial to run again and why, with the command; exit status 1 where a recorded
    hash (the page's code or its library) no longer holds, 0 where the only reason is a record without a library
    hash (results recorded before it was)."""
    stale = stale_pages()
    if not stale:
        print("every tutorial's recorded results match its code and the seqlab files it ran")
        return 0
    for stem, why, _ in stale:
        print(f"{stem}: {why}: run `{rerun_command(stem)}`")
    pages = ",".join(dict.fromkeys(stem[:2] for stem, _, _ in stale))
    print(f"all of them: make docs FULL=1 PAGES={pages}")
    return 1 if any(recorded for _, _, recorded in stale) else 0


if __name__ == "__main__":
    sys.exit(main())
