"""mkdocs hooks of the seqlab site (mkdocs.yml ``hooks:``): the build's set-up and the pages made from the code.

Set-up, before any page is built:
- docs/ goes on ``sys.path`` (the pages' blocks ``from docs_support import ...``) and ``MPLBACKEND=Agg``;
- a temporary folder for the pages' runs (``SEQLAB_DOCS_WORK``, :func:`docs_support.workdir`) unless set;
- ``SEQLAB_CACHE``, when unset, becomes a folder whose entries link to ../shared/data (the cache's layout:
  ``NAME/...`` as in seqlab/data/download.py), so ``data.source=conll2003`` and the rest resolve offline.

Pages made from the code at build time (never committed; nothing typed by hand can drift):
- reference/cli.md: every verb's ``--help``, from the argparse parser of seqlab/cli.py;
- reference/config.md: every config key, per section and per model config, with its type, default and the
  comment on its line in the dataclass;
- reference/presets.md: every preset TOML of seqlab/base/presets;
- reference/api.md and reference/api/*.md: mkdocstrings pages of every module;
- notes-to-code.md: the equation tags of the docstrings (docs/notes_map.py);
- course.md: every exercise of the course by chapter (docs/course_pages.py);
- departures.md: the departure admonitions of the docstrings, "Notation and departures from the notes"
  (docs/notes_map.py), with the Transformer presets against the notes' Transformer.

Markers in a page's markdown, replaced before it is converted (an unknown marker fails the build):
- ``<!-- seqlab:results NAME ... -->``: those sections of bench/RESULTS.md (``all except NAME ...``: the others);
- ``<!-- seqlab:results-intro -->``: the text above RESULTS.md's first section;
- ``<!-- seqlab:tour PATH -->``: the jupytext notebook at PATH (relative to docs/), run cell by cell in its own
  workdir, each code cell shown with its printed output and the figures it made;
- ``<!-- seqlab:exercises CHAPTER -->``: the chapter's exercises of the course (docs/course_pages.py): statement,
  starter code, the ``check`` call, the solution collapsed with what ``check`` prints for it;
- ``<!-- seqlab:extras -->``: the optional dependencies of pyproject.toml, one row per extra with what it is for
  (the comment above it in pyproject.toml) and what it installs;
- ``<!-- seqlab:notebook -->``: the page's notebook (docs/notebook_pages.py), to download, and how to start.

The course's notebooks (seqlab/course/notebooks/*.ipynb, generated from the tutorials and the tour) are copied into
the site as ``notebooks/NAME.ipynb``, which each tutorial and the tour link.

The tutorials' documented-size results (docs/page_results.py): while a tutorial converts, its figures and key
numbers are recorded when the build writes results (FULL, or ``SEQLAB_DOCS_RESULTS=DIR``), and its folder under
docs/results (or DIR) is replaced once it has converted without a warning; a reference to a result not recorded
yet becomes a note. ``SEQLAB_DOCS_PAGES=01,03`` runs only those tutorials' blocks (the rest of the site still
builds, its executed blocks left out).

Math: MathJax 3 (es5 build) from the ``django-static-mathjax`` package (Apache-2.0) is copied into the site
(``javascripts/mathjax/``); no CDN.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import gc
import importlib
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import tokenize
import tomllib
import traceback
import typing
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))
os.environ["MPLBACKEND"] = "Agg"  # before anything imports matplotlib

import course_pages  # noqa: E402
import docs_support  # noqa: E402
import notebook_pages  # noqa: E402
import notes_map  # noqa: E402  (imported here: mkdocs takes docs/ off sys.path once this module is loaded)
import page_results  # noqa: E402
from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

log = logging.getLogger("mkdocs.hooks.seqlab")

RESULTS = ROOT / "bench" / "RESULTS.md"
MATHJAX_DIST = "django-static-mathjax"  # MathJax 3.2.2's es5 build as package data (Apache-2.0)
MATHJAX_DEST = "javascripts/mathjax"
MATHJAX_SCRIPT = "tex-chtml-full.js"  # every TeX extension built in: nothing loaded on demand
MATHJAX_CONFIG = "javascripts/mathjax-config.js"
API_PAGE = "reference/api.md"
API_DIR = "reference/api"
NOTEBOOKS_DIR = "notebooks"  # the site's copies of seqlab/course/notebooks/*.ipynb
MARKER = re.compile(r"<!--\s*seqlab:([\w-]+)(.*?)-->", re.S)

MADE_ENV = "SEQLAB_DOCS_WORK_MADE"  # the work folder this process made (removed at shutdown); hooks reload per build
_state: dict = {"timings": {}}


# --------------------------------------------------------------------------------------------------------
# events


def on_config(config):
    """The build's folders and environment (once per `mkdocs build`; `mkdocs serve` keeps them across rebuilds)."""
    if not os.environ.get(docs_support.WORK_ENV):
        work = tempfile.mkdtemp(prefix="seqlab-docs-")
        os.environ[docs_support.WORK_ENV] = os.environ[MADE_ENV] = work
    Path(os.environ[docs_support.WORK_ENV]).mkdir(parents=True, exist_ok=True)
    if not os.environ.get("SEQLAB_CACHE"):
        shared = Path(os.environ.get("SEQLAB_SHARED_DATA") or ROOT.parent / "shared" / "data")
        if shared.is_dir():
            from seqlab.data.download import DATASETS, is_cached, link_cache

            cache = link_cache(shared, Path(os.environ[docs_support.WORK_ENV]) / ".seqlab-cache")
            os.environ["SEQLAB_CACHE"] = str(cache)  # the build owns its process (and the pages' commands)

            cached = [name for name in DATASETS if is_cached(name)]
            log.info("SEQLAB_CACHE=%s (from %s): %s", cache, shared, ", ".join(cached) or "no dataset complete")
        else:
            log.info("no shared datasets at %s: datasets named by the pages come from SEQLAB_CACHE's default", shared)
    log.info("docs size: %s (SEQLAB_DOCS_FULL=%s)", "documented (FULL)" if docs_support.FULL else "tiny (CI)",
             os.environ.get("SEQLAB_DOCS_FULL", ""))
    if not docs_support.FULL:  # tiny models: one thread is faster, and far less hurt by other jobs on the cores
        import torch

        torch.set_num_threads(1)
    return config


def _notes_to_code() -> str:
    """notes-to-code.md from the equation tags in the docstrings (docs/notes_map.py); a tag that does not resolve,
    or whose declared default or option the configs and presets contradict, fails the build."""
    try:
        return notes_map.render()
    except notes_map.TagError as e:
        raise PluginError(f"From the notes to the code: {e}") from None


def _departures() -> str:
    """departures.md from the departure admonitions in the docstrings (docs/notes_map.py); fails as
    :func:`_notes_to_code` does."""
    try:
        return notes_map.render_departures()
    except notes_map.TagError as e:
        raise PluginError(f"Notation and departures from the notes: {e}") from None


def on_pre_build(config):
    docs_support._reset()
    _state["timings"] = {}
    _state["build_start"] = time.perf_counter()


def on_files(files, config):
    """Add the generated reference pages and the MathJax configuration (a file of the same name in docs/ is an
    error: these pages are made from the code, never committed)."""
    pages = {
        "reference/cli.md": cli_markdown(),
        "reference/config.md": config_markdown(),
        "reference/presets.md": presets_markdown(),
        "notes-to-code.md": _notes_to_code(),
        "departures.md": _departures(),
        "course.md": course_pages.course_index_markdown(),
        API_PAGE: api_index_markdown(),
        **{f"{API_DIR}/{slug}.md": text for slug, text in api_module_pages().items()},
        MATHJAX_CONFIG: MATHJAX_CONFIG_JS,
    }
    generated = []
    for uri, content in pages.items():
        if files.get_file_from_path(uri) is not None:
            raise PluginError(f"docs/{uri} is generated by docs/hooks.py at build time; delete the file in docs/")
        generated.append(File.generated(config, uri, content=content))
    for notebook in sorted(notebook_pages.OUT.glob("*.ipynb")):  # the course's notebooks, to download
        generated.append(File.generated(config, f"{NOTEBOOKS_DIR}/{notebook.name}", abs_src_path=str(notebook)))
    _state["api_pages"] = sorted(u for u in pages if u.startswith(API_DIR + "/"))
    # first: pages are converted in this order, and the reference renders 2-4x faster before the executed pages
    # have filled the heap (every garbage collection walks it)
    return Files([*generated, *files])


def on_nav(nav, config, files):
    """Every generated API page must be in mkdocs.yml's nav (a new subpackage means a new line there)."""
    in_nav = {page.file.src_uri for page in nav.pages}
    missing = [u for u in _state.get("api_pages", []) if u not in in_nav]
    if missing:
        log.warning("generated API pages missing from mkdocs.yml's nav (under Reference > Python API): %s",
                    ", ".join(missing))
    return nav


def on_page_markdown(markdown, page, config, files):
    _state["timings"][page.file.src_uri] = time.perf_counter()
    markdown = _results_page(markdown, page)

    def expand(match: re.Match) -> str:
        kind, args = match.group(1), match.group(2).split()
        if kind == "results":
            return results_markdown(args)
        if kind == "results-intro":
            return results_intro()
        if kind == "tour":
            if len(args) != 1:
                raise PluginError(f"{page.file.src_uri}: <!-- seqlab:tour PATH --> takes one path")
            note = notebook_note(page.file.src_uri, notebook_pages.TOUR_NAME)
            if not page_results.runs(page.file.src_uri):
                return note + "\n*(the tour is not run in this build: " + (
                    page_results.SKIP_NOTEBOOKS_ENV if os.environ.get(page_results.SKIP_NOTEBOOKS_ENV) == "1"
                    else page_results.PAGES_ENV) + ")*\n"
            return note + "\n" + tour_markdown(DOCS / args[0])
        if kind == "notebook":
            return notebook_note(page.file.src_uri, Path(page.file.src_uri).stem)
        if kind == "extras":
            return extras_markdown()
        if kind == "exercises":
            if len(args) != 1:
                raise PluginError(f"{page.file.src_uri}: <!-- seqlab:exercises CHAPTER --> takes one chapter")
            return course_pages.exercises_markdown(args[0], run=page_results.runs(page.file.src_uri))
        raise PluginError(f"{page.file.src_uri}: unknown marker <!-- seqlab:{kind} -->; known: results, "
                          "results-intro, tour, extras, exercises, notebook")

    return MARKER.sub(expand, markdown)


def notebook_note(src_uri: str, name: str) -> str:
    """The download link of the page's notebook and how to start, one shared note (``<!-- seqlab:notebook -->``)."""
    path = notebook_pages.OUT / f"{name}.ipynb"
    if not path.is_file():
        raise PluginError(f"{src_uri}: no notebook {path.relative_to(ROOT)}; run `python docs/notebook_pages.py`")
    up = "../" * src_uri.count("/")
    install = f"{up}install.md#the-course-as-notebooks"
    return (f'!!! tip "Run this as a notebook"\n'
            f"    [Download this chapter as a notebook]({up}{NOTEBOOKS_DIR}/{name}.ipynb) ({name}.ipynb), or get them "
            f"all: install seqlab with the `course` extra, then\n\n"
            f"    ```sh\n    pip install -e '.[course]'    # in a clone of seqlab (or pip install 'WHEEL[course]')\n"
            f"    seqlab course get all --dir course\n    jupyter lab course/\n    ```\n\n"
            f"    The first code cell chooses the size, tiny or documented ([the course as notebooks]({install})).\n")


def _results_page(markdown: str, page) -> str:
    """A page as this build converts it: without its executed blocks where ``SEQLAB_DOCS_PAGES`` leaves it out; a
    tutorial with its references to recorded results made buildable, and recorded while it converts where the
    build writes results (:mod:`page_results`)."""
    src = page.file.src_uri
    if page_results.is_tutorial(src):
        if page_results.runs(src) and page_results.begin_page(Path(src).stem, markdown):  # the code as it is
            _state["warnings"] = _Warnings.attach()
        markdown = page_results.link_results(markdown, Path(page.file.abs_src_path).parent)
    return markdown if page_results.runs(src) else page_results.without_executed_blocks(markdown)


class _Warnings(logging.Handler):
    """Counts the warnings logged while a recorded tutorial converts: markdown-exec only logs a failing block, so a
    page that logged any warning did not finish (the strict build fails on it as well), and its recorded results
    are left as they were."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1

    @classmethod
    def attach(cls) -> "_Warnings":
        handler = cls()
        logging.getLogger("mkdocs").addHandler(handler)
        return handler

    def detach(self) -> int:
        logging.getLogger("mkdocs").removeHandler(self)
        return self.count


def _finish_results(finished: bool) -> None:
    """End the recorded tutorial, if one is being recorded: its results replace the old ones only if it finished."""
    warnings = _state.pop("warnings", None)
    count = warnings.detach() if warnings is not None else 0
    page_results.finish_page(finished and count == 0)


def on_page_content(html, page, config, files):
    _finish_results(True)
    started = _state["timings"].get(page.file.src_uri)
    if isinstance(started, float):
        _state["timings"][page.file.src_uri] = round(time.perf_counter() - started, 3)
    _forget_sessions()
    return show_specials(html)


# The vocabulary's special tokens as prose writes them (docstrings, config comments): Markdown passes "<unk>" through
# as an HTML element, which a browser hides. No HTML element has these names, and code spans and blocks arrive
# escaped already, so every such tag left in a page's HTML is a token to show.
SPECIAL_TAGS = re.compile(r"<(/?)(pad|unk|sos|eos)>")


def show_specials(html: str) -> str:
    """``html`` with each special token written as a tag (``<unk>``) escaped to show as text."""
    return SPECIAL_TAGS.sub(lambda m: f"&lt;{m[1]}{m[2]}&gt;", html)


def _forget_sessions() -> None:
    """Drop the state of the page's executed blocks once it is converted (a page's blocks share a session named
    after it, never another page's), so its models and data do not stay in memory for the rest of the build."""
    try:
        from markdown_exec._internal.formatters import python as exec_python
    except ImportError:  # another markdown-exec layout: the state stays, the build is only slower
        return
    sessions = getattr(exec_python, "_sessions_globals", None)
    if sessions:
        sessions.clear()
        gc.collect()


def on_post_build(config):
    """Copy MathJax into the site; record each page's seconds (markdown, executed blocks, tour) in the work folder."""
    source = _mathjax_source()
    dest = Path(config["site_dir"]) / MATHJAX_DEST
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest, ignore=_mathjax_ignore)
    shutil.copy2(source.parent / "LICENSE", dest / "LICENSE")
    timings = {k: v for k, v in _state["timings"].items() if isinstance(v, float)}
    timings["(whole build)"] = round(time.perf_counter() - _state.get("build_start", time.perf_counter()), 3)
    work = Path(os.environ[docs_support.WORK_ENV])
    (work / "timings.json").write_text(json.dumps(timings, indent=1, sort_keys=True), encoding="utf-8")
    slow = sorted(((v, k) for k, v in timings.items() if k != "(whole build)"), reverse=True)[:5]
    log.info("slowest pages: %s", ", ".join(f"{k} {v:.1f} s" for v, k in slow))


def on_build_error(error):
    """A build stopped part-way (a plugin's error): the page being recorded did not finish."""
    _finish_results(False)


def on_shutdown():
    made = os.environ.pop(MADE_ENV, None)
    if made and os.environ.get(docs_support.WORK_ENV) == made:
        shutil.rmtree(made, ignore_errors=True)
        del os.environ[docs_support.WORK_ENV]
        if os.environ.get("SEQLAB_CACHE", "").startswith(made):
            del os.environ["SEQLAB_CACHE"]


# --------------------------------------------------------------------------------------------------------
# math: MathJax 3 from a Python package, configured for pymdownx.arithmatex's generic output

MATHJAX_CONFIG_JS = """\
// MathJax 3 for pymdownx.arithmatex (generic mode): only the spans and divs it marks are typeset, once, when the
// page loads (the theme's instant navigation is off; re-typesetting a typeset page blanks its glyphs).
window.MathJax = {
  tex: {inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]], processEscapes: true,
        processEnvironments: true},
  options: {ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex"}
};
"""


def _mathjax_source() -> Path:
    from importlib import metadata

    try:
        dist = metadata.distribution(MATHJAX_DIST)
    except metadata.PackageNotFoundError:
        raise PluginError(f"the site's math needs the {MATHJAX_DIST} package (MathJax 3, installed by the docs "
                          "extra): pip install -e '.[docs]'") from None
    es5 = Path(dist.locate_file("mathjax/static/mathjax/es5"))
    if not (es5 / MATHJAX_SCRIPT).is_file():
        raise PluginError(f"{es5 / MATHJAX_SCRIPT} is missing: reinstall {MATHJAX_DIST}")
    return es5


def _mathjax_ignore(folder: str, names: list[str]) -> list[str]:
    """What the site does not load: the other combined builds, the SVG output, the speech engine."""
    keep_js = {MATHJAX_SCRIPT}
    here = Path(folder)
    skipped = []
    for name in names:
        if here.name == "es5" and name.endswith(".js") and name not in keep_js:
            skipped.append(name)
        elif name in ("sre", "svg") or name.endswith(".map"):
            skipped.append(name)
    return skipped


# --------------------------------------------------------------------------------------------------------
# reference/cli.md: every verb's --help


def cli_markdown() -> str:
    from seqlab import cli

    with _columns(100):
        parser = cli.build_parser()
        out = ["# Command line", "",
               "Every verb's `--help`, generated from the argparse parser (`seqlab/cli.py` and "
               "`seqlab/commands/`) when the site is built. Errors are one line on stderr starting `error:`, "
               "exit code 2.", "",
               "| verb | what it does |", "|---|---|"]
        verbs = _subcommands(parser)
        for name, (sub, help_text) in verbs.items():
            out.append(f"| [`seqlab {name}`](#{_slug('seqlab ' + name)}) | {_cell(help_text)} |")
        out += ["", "## `seqlab`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, (sub, _) in verbs.items():
            out += _cli_section(sub, 2)
    return "\n".join(out) + "\n"


def _cli_section(parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = [f"{'#' * level} `{parser.prog}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for _, (sub, _) in _subcommands(parser).items():
        out += _cli_section(sub, level + 1)
    return out


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                found[name] = (sub, helps.get(name, ""))
    return found


@contextlib.contextmanager
def _columns(n: int):
    """argparse wraps its help to $COLUMNS: a fixed width, so the page does not depend on the terminal."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


# --------------------------------------------------------------------------------------------------------
# reference/config.md: every key with its type, default and the comment on its line


def config_markdown() -> str:
    from seqlab.base import config
    from seqlab.tasks import registry

    out = ["# Config keys", "",
           "Every key of the four sections, generated from the dataclasses when the site is built: the type and "
           "default of each field and the comment on its line in the source. Set a key in a TOML file's "
           "`[section]`, with `--set section.key=value` on the command line, or as "
           '`seqlab.train(..., config={"section": {"key": value}})`; an unknown key, a wrong type or a value out '
           "of range is refused with the valid keys or range.", ""]
    out += ["## `[task]`", "", "`seqlab.base.config.TaskConfig`", ""] + _fields_table(config.TaskConfig)
    data_notes = {key: f"only `task.kind = \"{kind}\"` ({what})" for key, (kind, what) in
                  registry.TASK_DATA_KEYS.items()}
    out += ["## `[data]`", "", "`seqlab.base.config.DataConfig`", ""] + _fields_table(config.DataConfig,
                                                                                  extra=("used by", data_notes))
    used: dict[str, list[str]] = {}
    combos = [(kind, arch) for kind in registry.TASK_MODULES for arch in registry.task_module(kind).MODEL_CONFIGS]
    for kind, arch in combos:
        for key in registry.train_keys(kind, arch):
            used.setdefault(key, []).append(f"{kind}/{arch}")
    train_notes = {}
    for f in dataclasses.fields(config.TrainConfig):
        users = used.get(f.name, [])
        train_notes[f.name] = "every task" if len(users) == len(combos) else _users(users, combos) or "none"
    out += ["## `[train]`", "", "`seqlab.base.config.TrainConfig`. A task refuses a key it does not use (the last "
            "column), rather than ignoring it.", ""]
    out += _fields_table(config.TrainConfig, extra=("used by", train_notes))
    derived = ", ".join(f"`{k}`" for k in sorted(registry.DERIVED_MODEL_KEYS))
    out += ["## `[model]`", "",
            "`model.arch` picks the model's config class for the task (`task.kind`); its fields are the other "
            f"`model.*` keys. The sizes read from the data ({derived}) cannot be set.", ""]
    for kind in registry.TASK_MODULES:
        out += [f"### `task.kind = \"{kind}\"`", ""]
        for arch, cls in registry.task_module(kind).MODEL_CONFIGS.items():
            out += [f"#### `{kind}`: `model.arch = \"{arch}\"`", "", f"`{cls.__module__}.{cls.__qualname__}`", ""]
            out += _fields_table(cls, skip=registry.DERIVED_MODEL_KEYS)
    missing = sorted(_state.get("uncommented", set()))
    if missing:
        log.info("config fields without a comment on their line: %s", ", ".join(missing))
    return "\n".join(out) + "\n"


def _users(users: list[str], combos: list[tuple[str, str]]) -> str:
    parts = []
    for kind in dict.fromkeys(k for k, _ in combos):
        archs = [a for k, a in combos if k == kind]
        mine = [u.split("/", 1)[1] for u in users if u.split("/", 1)[0] == kind]
        if mine == archs:
            parts.append(kind)
        elif mine:
            parts.append(f"{kind} ({', '.join(mine)})")
    return ", ".join(parts)


def _fields_table(cls, skip=frozenset(), extra: tuple[str, dict] | None = None) -> list[str]:
    comments = field_comments(cls)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an unresolvable annotation: show it as written
        hints = {}
    head = ["key", "type", "default", "meaning"] + ([extra[0]] if extra else [])
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init:
            continue
        meaning = comments.get(f.name, "")
        if not meaning:
            _state.setdefault("uncommented", set()).add(f"{cls.__qualname__}.{f.name}")
        cells = [f"`{f.name}`", _cell(f"`{_type_name(hints.get(f.name, f.type))}`"), _cell(f"`{_default(f)}`"),
                 _cell(meaning)]
        if extra:
            cells.append(_cell(extra[1].get(f.name, "")))
        rows.append("| " + " | ".join(cells) + " |")
    return rows + [""]


def field_comments(cls) -> dict[str, str]:
    """``{field: comment}``: the ``# ...`` comment on the line of each field's definition, from the nearest class
    in the MRO whose source has one (classes made at run time, without source, are skipped)."""
    found: dict[str, str] = {}
    for klass in cls.__mro__:
        if not dataclasses.is_dataclass(klass):
            continue
        for name, comment in _class_comments(klass).items():
            found.setdefault(name, comment)
    return found


_comment_cache: dict[str, tuple[ast.Module, dict[int, str]]] = {}


def _class_comments(klass) -> dict[str, str]:
    module = sys.modules.get(klass.__module__)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return {}
    if path not in _comment_cache:
        text = Path(path).read_text(encoding="utf-8")
        comments = {tok.start[0]: tok.string.lstrip("#").strip()
                    for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT}
        _comment_cache[path] = (ast.parse(text), comments)
    tree, comments = _comment_cache[path]
    node = _find_class(tree, klass.__qualname__.split("."))
    if node is None:
        return {}
    out = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            comment = comments.get(stmt.end_lineno) or comments.get(stmt.lineno)
            if comment:
                out[stmt.target.id] = comment
    return out


def _find_class(tree, qualname: list[str]):
    body = tree.body
    node = None
    for part in qualname:
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def _type_name(hint) -> str:
    if isinstance(hint, str):
        return hint
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__name__
    return str(hint).replace("typing.", "").replace("NoneType", "None")


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "(required)"
    return _toml(value)


def _toml(value) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


# --------------------------------------------------------------------------------------------------------
# reference/presets.md


def presets_markdown() -> str:
    from seqlab.base import config

    names = config.preset_names()
    out = ["# Presets", "",
           "The ready configs shipped in `seqlab/base/presets/` (`seqlab presets` lists them), generated from the TOML "
           "files when the site is built. A preset is a TOML file of the same shape as yours: `seqlab train "
           "PRESET --set section.key=value` changes any key ([every key](config.md)).", "",
           "| preset | task.kind | model.arch | data.source | what it is |", "|---|---|---|---|---|"]
    texts = {}
    for name in names:
        text = config.preset_text(name)
        texts[name] = text
        raw = tomllib.loads(text)
        cells = [raw.get("task", {}).get("kind", "lm"), raw.get("model", {}).get("arch", "transformer"),
                 raw.get("data", {}).get("source", "")]
        out.append(f"| [`{name}`](#{_slug(name)}) | " + " | ".join(f"`{c}`" if c else "" for c in cells) +
                   f" | {_cell(config.preset_summary(name))} |")
    out.append("")
    for name in names:
        out += [f"## {name}", "", _cell(config.preset_summary(name)), "",
                f"`seqlab train {name}`, or `seqlab.train(\"{name}\", ...)`:", "",
                "```toml", texts[name].rstrip(), "```", ""]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------------
# reference/api.md and reference/api/*.md: mkdocstrings pages of every module


def _modules() -> dict[str, list[str]]:
    """{page slug: [module names]}: "core" for seqlab's own modules, one page per subpackage."""
    pkg = ROOT / "seqlab"
    groups: dict[str, list[str]] = {"core": []}
    for path in sorted(pkg.glob("*.py")):
        if path.stem not in ("__init__", "__main__"):
            groups["core"].append(f"seqlab.{path.stem}")
    for sub in sorted(p for p in pkg.iterdir() if (p / "__init__.py").is_file()):
        modules = [".".join(("seqlab", *p.relative_to(pkg).with_suffix("").parts)).removesuffix(".__init__")
                   for p in sorted(sub.rglob("*.py")) if p.parent != sub or p.stem != "__init__"]
        modules = [m for m in modules if "__pycache__" not in m]  # a nested package (serve/routes) by its name
        if modules:
            groups[sub.name] = [f"seqlab.{sub.name}", *modules]
    return groups


def api_module_pages() -> dict[str, str]:
    pages = {}
    for slug, modules in _modules().items():
        title = "seqlab's own modules" if slug == "core" else f"seqlab.{slug}"
        out = [f"# {title}", "", "Generated from the source when the site is built (mkdocstrings, with each "
               "object's source).", ""]
        for name in modules:
            out += [f"::: {name}", "    options:", f"      members: {json.dumps(_own_names(name))}", ""]
        pages[slug] = "\n".join(out)
    return pages


def _own_names(module: str) -> list[str]:
    """The public names a module defines itself (functions, classes, constants), in source order: its page renders
    these, not what it imports (a package's re-exports are rendered where they are defined)."""
    parts = module.split(".")[1:]
    path = ROOT.joinpath("seqlab", *parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def api_index_markdown() -> str:
    import seqlab

    out = ["# Python API", "",
           "`import seqlab` gives the names below (imported on first use, so `import seqlab` stays fast); each "
           "links to its definition, rendered with its source. The modules' pages list everything else, for "
           "people building their own models from the blocks.", "",
           "::: seqlab", "    options:", "      members: false", "      show_source: false", "",
           "## The public names", ""]
    for name, module in seqlab._EXPORTS.items():
        obj = getattr(importlib.import_module(module), name)
        path = f"{obj.__module__}.{obj.__qualname__}"
        kind = "class" if isinstance(obj, type) else "function"
        doc = (obj.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out.append(f"- [`seqlab.{name}`][{path}] ({kind}): {_plain(doc)}")
    out += ["", "## Modules", ""]
    for slug, modules in _modules().items():
        title = "seqlab's own modules" if slug == "core" else f"seqlab.{slug}"
        out.append(f"- [{title}](api/{slug}.md): " + ", ".join(f"`{m}`" for m in modules))
    return "\n".join(out) + "\n"


def _plain(doc: str) -> str:
    """A docstring's first paragraph for a table cell: Sphinx roles (:func:`x`) as code."""
    doc = re.sub(r":(?:func|class|meth|mod|attr|data|obj|exc):`~?([^`]+)`", r"`\1`", doc)
    return doc


# --------------------------------------------------------------------------------------------------------
# benchmarks and reliability: sections of bench/RESULTS.md

_BLOCK = re.compile(r"<!-- (\S+?):start(?: (\S+))? -->\n(.*?)<!-- \1:end -->", re.S)


def _results() -> dict[str, str]:
    text = RESULTS.read_text(encoding="utf-8")
    return {m.group(1): m.group(3).strip() for m in _BLOCK.finditer(text)}


def results_intro() -> str:
    text = RESULTS.read_text(encoding="utf-8")
    first = _BLOCK.search(text)
    head = text[:first.start()] if first else text
    return "\n".join(line for line in head.splitlines() if not line.startswith("# ")).strip() + "\n"


def results_markdown(args: list[str]) -> str:
    """``NAME ...``: those sections in that order; ``all except NAME ...``: every other one, in the file's order.
    Each section keeps its heading, text, tables and its closing ``_Recorded ...`` line (the date and CPU)."""
    sections = _results()
    if args[:1] == ["all"]:
        rest = args[1:]
        if rest[:1] == ["except"]:
            rest = rest[1:]
        elif rest:
            raise PluginError(f"<!-- seqlab:results all ... -->: expected 'all except NAME ...', got {args}")
        names = [n for n in sections if n not in rest]
        unknown = [n for n in rest if n not in sections]
    else:
        names = args
        unknown = [n for n in args if n not in sections]
    if unknown or not names:
        raise PluginError(f"bench/RESULTS.md has no section {unknown or args}; its sections: {', '.join(sections)}")
    out = []
    for name in names:
        body = sections[name]
        if not body.splitlines()[-1].startswith("_Recorded "):
            raise PluginError(f"bench/RESULTS.md section {name} does not end with its _Recorded line (date, CPU)")
        out.append(body)
    return "\n\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------------
# pyproject.toml's extras


def extras_markdown() -> str:
    """The extras table: one row per ``[project.optional-dependencies]`` entry, in the file's order, with what it is
    for (the comment lines right above it in pyproject.toml; an extra without one fails the build) and what it
    installs."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"]
    comments = extras_comments(text)
    out = ["| extra | what it is for | installs |", "|---|---|---|"]
    for name, packages in project.get("optional-dependencies", {}).items():
        if not comments.get(name):
            raise PluginError(f"pyproject.toml: the extra {name!r} has no comment above it saying what it is for "
                              "(the install page shows it)")
        installs = ", ".join(f"`{p}`" for p in packages)
        out.append(f"| `{name}` | {_cell(comments[name])} | {_cell(installs)} |")
    return "\n".join(out) + "\n"


def extras_comments(text: str) -> dict[str, str]:
    """``{extra: comment}``: the ``#`` lines right above each ``name = [`` of ``[project.optional-dependencies]``,
    joined (a blank line ends a comment block)."""
    found: dict[str, str] = {}
    block: list[str] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"^\[[\w.-]+\]$", stripped):  # a table header: [project.optional-dependencies], [tool.mypy]
            inside = stripped == "[project.optional-dependencies]"
            block = []
            continue
        if not inside:
            continue
        if stripped.startswith("#"):
            block.append(stripped.lstrip("#").strip())
            continue
        m = re.match(r"^([A-Za-z0-9_-]+)\s*=\s*\[", line)
        if m:
            found[m.group(1)] = " ".join(block)
        if not line.startswith((" ", "\t")):  # a key or a blank line ends the block; a list's items do not
            block = []
    return found


# --------------------------------------------------------------------------------------------------------
# the tour: a jupytext percent-format notebook, run cell by cell


def tour_markdown(path: Path) -> str:
    """Run the notebook's code cells in order in one namespace, in its own workdir, and return the page: markdown
    cells as they are, each code cell followed by what it printed and the matplotlib figures it made. A failing cell
    fails the build."""
    from matplotlib.figure import Figure

    cells = notebook_pages.tour_cells(path)
    folder = docs_support.workdir(path.stem)
    namespace: dict = {"__name__": "__main__", "__file__": str(path)}
    shown: set[int] = set()
    out = []
    started = time.perf_counter()
    before = os.getcwd()
    os.chdir(folder)
    try:
        for index, (kind, text) in enumerate(cells, 1):
            if kind == "markdown":
                out += [text, ""]
                continue
            printed = io.StringIO()
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(text, f"{path.name}, cell {index}", "exec"), namespace)  # noqa: S102
            except Exception:  # noqa: BLE001 - reported whole, then the build stops
                raise PluginError(f"{path.relative_to(ROOT)}: cell {index} failed:\n{traceback.format_exc()}") from None
            out += ["```python", text, "```", ""]
            if printed.getvalue().strip():
                out += ["```text", printed.getvalue().rstrip(), "```", ""]
            figures = [v for v in namespace.values() if isinstance(v, Figure) and id(v) not in shown]
            if "matplotlib.pyplot" in sys.modules:
                plt = sys.modules["matplotlib.pyplot"]
                figures += [plt.figure(n) for n in plt.get_fignums() if id(plt.figure(n)) not in shown]
            for figure in dict.fromkeys(figures):
                shown.add(id(figure))
                out += [docs_support.img_tag(figure, f"figure of cell {index}"), ""]
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].close("all")
    finally:
        os.chdir(before)
    seconds = time.perf_counter() - started
    (folder / ".tour-seconds").write_text(f"{seconds:.3f}\n", encoding="utf-8")
    log.info("the tour (%s) ran in %.1f s in %s", path.relative_to(ROOT), seconds, folder)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------------
# markdown helpers


def _cell(text: str) -> str:
    """Text for one cell of a markdown table: ``|`` escaped outside code spans (inside them the table extension
    keeps it, and a backslash would show)."""
    parts = str(text).replace("\n", " ").split("`")
    if len(parts) % 2 == 0:  # an unclosed backtick: no code spans
        return "`".join(parts).replace("|", "\\|")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def _slug(text: str) -> str:
    """The anchor mkdocs' toc extension gives a heading of ``text`` (its default slugify)."""
    from markdown.extensions.toc import slugify

    return slugify(text, "-")
