"""`seqlab serve`'s pages in a real headless Chromium, shared by tests/test_serve_browser.py and
scripts/screenshots.py.

- :func:`serving`: an app (``seqlab.serve.app.create_app``, what `seqlab serve` runs) served by uvicorn in a
  thread on a free loopback port;
- :func:`chromium` and :func:`new_context`: Debian's Chromium (``/usr/bin/chromium``) driven by Playwright's Python
  package, no browser download, at a fixed viewport;
- one function per control of a page that fills it in and presses its button. They do not wait for the answer:
  the test checks what appears against the JSON API, the script waits for the result to be drawn before its
  screenshot.

Playwright, uvicorn and seqlab are imported where they are used, so :func:`missing` can say what is absent first.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import threading
import time
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1200, "height": 900}  # the screenshots' width; their height is the whole page's
TIMEOUT_MS = 20_000  # Playwright's default wait for one page action


def missing() -> str | None:
    """Why the pages cannot be driven on this machine (the serve extra, Playwright or Chromium absent), or None."""
    if importlib.util.find_spec("fastapi") is None:
        return "needs the serve extra (pip install 'seqlab[serve]')"
    if importlib.util.find_spec("playwright") is None:
        return "needs Playwright's Python package (pip install playwright; the system Chromium is used)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"needs Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@contextlib.contextmanager
def serving(app):
    """``app`` served by uvicorn in a thread on a free loopback port; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if not server.started:
        raise RuntimeError("uvicorn did not start within 20 s")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextlib.contextmanager
def chromium():
    """A headless Chromium (the system's, through Playwright), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser, timeout_ms: int = TIMEOUT_MS):
    """A browser context at :data:`VIEWPORT`. Keep one for all pages: its HTTP cache keeps plotly.min.js (4.8 MB)
    from page to page."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(timeout_ms)
    return context


def run_url(base: str, run_id: str) -> str:
    return f"{base}/runs/{run_id}"


def screenshot(page, folder: str | Path, name: str) -> Path:
    """The whole page (:data:`VIEWPORT` wide, as tall as the page) as ``folder/name.png``."""
    path = Path(folder) / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# ---- the controls of each page (seqlab/serve/static/seqlab.js) ----------------------------------------------

def generate(page, prompt: str, max_new_tokens: int, temperature: float, seed: int) -> None:
    """LM page: stream a sample (``#generation``; ``#generation-status`` says "N tokens in S s" when done)."""
    page.get_by_label("prompt", exact=True).fill(prompt)
    page.fill("#max-new-tokens", str(max_new_tokens))
    page.fill("#temperature", str(temperature))
    page.fill("#seed", str(seed))
    page.click("#generate")


def show_attention(page, text: str) -> None:
    """LM page: the layer x head grid of ``text``'s attention (``#attention-grid .cell``, ``#attention-large``)."""
    page.fill("#attention-text", text)
    page.click("#attention-button")


def enlarge_head(page, layer: int, head: int) -> None:
    """LM page: draw one cell of the attention grid large (layer and head from 0, as the page numbers them)."""
    page.locator(f'#attention-grid .cell[data-layer="{layer}"][data-head="{head}"]').click()


def translate(page, text: str, beam: int) -> None:
    """Translation page: ``#translation`` and the cross-attention heatmap ``#alignment``."""
    page.fill("#source", text)
    page.fill("#beam", str(beam))
    page.click("#translate")


def tag(page, text: str) -> None:
    """Tagging page: the sentence with its entities highlighted (``#tagged``, one ``.ent`` per entity)."""
    page.get_by_label("sentence", exact=True).fill(text)
    page.click("#tag")


def classify(page, text: str) -> None:
    """Classification page: the label (``#label``) and the probability bars (``#probabilities``)."""
    page.get_by_label("sentence", exact=True).fill(text)
    page.click("#classify")


def evaluate(page, split: str | None = None) -> None:
    """Any run page: `seqlab eval` on a split (``#eval-out`` gets a table; the page's default split is test)."""
    if split is not None:
        page.select_option("#eval-split", split)
    page.click("#eval-button")


def neighbours(page, word: str, k: int) -> None:
    """Embedding page: the ``k`` nearest words (``#neighbors tr``: a heading and k rows)."""
    page.get_by_label("word", exact=True).fill(word)
    page.fill("#k", str(k))
    page.click("#neighbors-button")


def analogy(page, a: str, b: str, c: str) -> None:
    """Embedding page: a is to b as c is to ? (``#analogy tr``)."""
    for x, w in zip("abc", (a, b, c), strict=True):
        page.fill(f"#analogy-{x}", w)
    page.click("#analogy-button")


def draw_map(page, words: int, method: str | None = None) -> None:
    """Embedding page: the ``words`` most frequent words in 2-D (``#map``; method "pca", the page's default, or
    "tsne")."""
    page.fill("#map-words", str(words))
    if method is not None:
        page.select_option("#map-method", method)
    page.click("#map-button")


def forecast(page, steps: int) -> None:
    """Forecast page: the series with ``steps`` forecasts (``#forecast``: history, held-out truth, forecast)."""
    page.fill("#steps", str(steps))
    page.click("#forecast-button")


def compare(page, a: str | None = None, b: str | None = None) -> None:
    """Encoder page: the cosine of two sentences (``#similarity``); None keeps the page's example sentence."""
    if a is not None:
        page.get_by_label("sentence A", exact=True).fill(a)
    if b is not None:
        page.get_by_label("sentence B", exact=True).fill(b)
    page.click("#similarity-button")
