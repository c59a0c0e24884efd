"""`seqlab serve` on a CRF tagger (``model.crf = true``): ``GET /api/runs/ID/transitions`` against the model's own
parameters and masks, its 422 for a tagger without a CRF and for another task, and the tagging page's heatmap of
the transitions in headless Chromium (skipped as tests/test_serve_browser.py is: without Chromium or Playwright;
failing under CI).

The CRF run is trained here on the NER files of conftest.py's ``serve_runs``, in a folder of its own: added to
those runs it would change the counts the other serve tests check."""

from __future__ import annotations

import contextlib

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'seqlab[serve]'")

from fastapi.testclient import TestClient  # noqa: E402

from seqlab import api  # noqa: E402
from seqlab.serve.app import create_app  # noqa: E402
from seqlab.tasks.tag_output import crf_of  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")
CRF_ID = "crf/ner"  # the run's id: its served folder's name, then its path


@pytest.fixture(scope="module")
def runs(serve_runs, tmp_path_factory):
    """(served folders, {kind: run id} of serve_runs plus "crf"): a BiLSTM-CRF tagger, 12 steps on the tiny NER
    files of serve_runs (sentences with one B-PER name)."""
    root, ids = serve_runs
    data = root.parent / "data"
    folder = tmp_path_factory.mktemp("serve_crf") / "crf"
    api.train_run("ner-bilstm-crf", folder / "ner", overrides=[
        *(f"data.{s}={data / f'ner.{s}.txt'}" for s in ("train", "valid", "test")), "data.min_freq=1",
        "data.tag_scheme=auto", "model.n_layers=1", "model.d_model=8", "model.hidden_size=8",
        "model.tanh_hidden_size=8", "model.dropout=0", "train.max_steps=12", "train.batch_size=8", "train.lr=3e-2",
        "train.eval_every=6", "train.save_every=6", "train.warmup_steps=1", "train.progress=false",
        "train.device=cpu", "train.threads=1"], log=lambda *a, **k: None)
    return [root, folder], {**ids, "crf": CRF_ID}


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(create_app(runs[0]), base_url="http://127.0.0.1:8000", client=("127.0.0.1", 50000))


# ---- the JSON API ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("last", [False, True])
def test_transitions_are_the_crf_parameters_and_masks(client, runs, last):
    j = client.get(f"/api/runs/{CRF_ID}/transitions", params={"last": last}).json()
    tagger = api.load(runs[0][1] / "ner", device="cpu", last=last)
    crf = crf_of(tagger.model)
    assert j["labels"] == tagger.labels.names == ["O", "B-PER"]  # the order the tests below index by
    for name in ("transitions", "start", "end", "allowed", "allowed_start", "allowed_end"):
        assert j[name] == getattr(crf, name).tolist(), name  # float32 values survive JSON exactly
    assert any(x != 0 for row in j["transitions"] for x in row)  # trained: no longer the zeros they start at
    # IOB2 without I- tags allows everything; the masks are the model's, not recomputed
    assert all(all(row) for row in j["allowed"]) and all(j["allowed_start"]) and all(j["allowed_end"])


@contextlib.contextmanager
def forbidding(app, run_dir):
    """The served CRF with B-PER -> O and starting with B-PER forbidden (as a scheme with I- tags would forbid
    some), set on the model in ``app``'s cache and restored after."""
    crf = crf_of(app.state.cache.get(run_dir).model)
    before = [m.clone() for m in (crf.allowed, crf.allowed_start)]
    crf.allowed[1, 0] = False
    crf.allowed_start[1] = False
    try:
        yield crf
    finally:
        crf.allowed.copy_(before[0])
        crf.allowed_start.copy_(before[1])


def test_transitions_mark_what_the_masks_forbid_and_keep_the_scores(client, runs):
    with forbidding(client.app, runs[0][1] / "ner") as crf:
        j = client.get(f"/api/runs/{CRF_ID}/transitions").json()
        assert j["allowed"] == [[True, True], [False, True]] and j["allowed_start"] == [True, False]
        assert j["transitions"][1][0] == float(crf.transitions.detach()[1, 0])  # the parameter, marked forbidden


@pytest.mark.parametrize("kind, message", [
    ("tag", ("is a tagger without a CRF, so it has no transition scores; train one with model.crf=true (e.g. the "
             "ner-bilstm-crf preset)")),
    ("classify", "is a classify run; transition scores need a tag run with model.crf=true"),
    ("lm", "is a lm run; transition scores need a tag run with model.crf=true"),
])
def test_transitions_of_a_run_without_a_crf_is_a_422(client, runs, kind, message):
    r = client.get(f"/api/runs/{runs[1][kind]}/transitions")
    assert r.status_code == 422 and r.json()["detail"] == f"{runs[1][kind]} {message}"


def test_transitions_are_documented(client):
    schema = client.get("/openapi.json").json()["paths"]["/api/runs/{run_id}/transitions"]["get"]
    assert "transition scores" in schema["summary"] and [p["name"] for p in schema["parameters"]] == ["run_id", "last"]


# ---- the tagging page in Chromium ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(runs):
    """(a Chromium page, the base URL, the app) of `seqlab serve` on the runs, uvicorn in a thread; no JavaScript
    error may occur on the page."""
    import test_serve_browser  # noqa: F401  skips (or fails under CI) as that module does, without a browser
    import serve_pages as pages  # scripts/serve_pages.py, on sys.path once test_serve_browser is imported

    app = create_app(runs[0])
    errors: list[str] = []
    with pages.serving(app) as url, pages.chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.set_default_timeout(pages.TIMEOUT_MS)
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page, url, app
    assert not errors, f"JavaScript errors on the page: {errors}"


def test_tagging_page_of_a_crf_run_shows_the_transition_heatmap(browser, runs):
    from playwright.sync_api import expect

    page, base, app = browser
    with forbidding(app, runs[0][1] / "ner"):
        page.goto(f"{base}/runs/{CRF_ID}")
        expect(page.locator("#transitions .main-svg").first).to_be_visible()
        want = page.request.get(f"{base}/api/runs/{CRF_ID}/transitions").json()
        trace = page.evaluate("(({x, y, z}) => ({x, y, z}))(document.getElementById('transitions').data[0])")
    expect(page.locator("#transitions-caption")).to_contain_text("grey: forbidden by the tagging scheme")
    assert trace["x"] == ["O", "B-PER", "⟨end⟩"] and trace["y"] == ["⟨start⟩", "O", "B-PER"]
    (o_o, o_b), (_, b_b) = want["transitions"]
    assert trace["z"] == [[want["start"][0], None, None],  # no B-PER first; ⟨start⟩ -> ⟨end⟩ is no transition
                          [o_o, o_b, want["end"][0]],
                          [None, b_b, want["end"][1]]]  # B-PER -> O forbidden: a grey gap
    expect(page.locator("#tag-section")).to_be_visible()  # the tagging panel is still there

    page.goto(f"{base}/runs/{runs[1]['tag']}")  # a tagger without a CRF: the page as before, no heatmap
    expect(page.locator("#tag-section")).to_be_visible()
    expect(page.locator("#curves .main-svg").first).to_be_visible()
    expect(page.locator("#transitions-section")).to_have_count(0)
