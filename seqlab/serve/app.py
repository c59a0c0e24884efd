"""The ``seqlab serve`` application: the pages and the JSON API (FastAPI; OpenAPI at ``/docs``).

Every endpoint reads a run through :class:`~seqlab.serve.runs.RunIndex` (only runs under the served folders)
and :class:`~seqlab.serve.cache.ModelCache` (loaded once per committed checkpoint), and computes with
:mod:`seqlab.serve.operations`. Errors are JSON ``{"detail": "..."}`` with one readable sentence:

- 404: no such page or run (ids that try to leave the served folders included);
- 422: input out of bounds (the limits below) or that the model cannot take (an unknown word, a sentence longer
  than ``model.max_len``, an operation the run's task does not have);
- 409: the run cannot be read (a missing or damaged file, no checkpoint yet): the message names the file;
- 401: a token is required and was not given;
- 403: without a token, a client that is not this machine, or a ``Host`` that is not a loopback name.

Access is enforced by the app itself, whatever server runs it:

- without a token it answers loopback clients only (127.0.0.0/8, ::1): any other client address gets 403. The
  ``Host`` header must also be a loopback name, so that a web page elsewhere cannot reach the API through DNS
  rebinding (that check guards the browser, it is not authentication);
- with a token, every request carries it, as ``Authorization: Bearer T`` or in the ``seqlab_token`` cookie
  (HttpOnly, SameSite=Strict). A page opened with ``?token=T`` sets the cookie and redirects (303) to the same
  URL without the token, so the token stays out of logs and history.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import ipaddress
import json
import threading
import time
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response,
                               StreamingResponse)
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqlab.base.version import __version__
from seqlab.base.errors import SeqlabError
from seqlab.serve import operations as ops
from seqlab.serve.cache import ModelCache
from seqlab.serve.runs import NotFound, RunIndex
from seqlab.serve.schemas import (AnalogyIn, Checkpoint, EvalIn, ForecastIn, GenerateIn, MapIn, NeighborsIn,
                                  PredictIn, SimilarityIn, TextIn, TranslateIn, check_lines)

STREAM_POLL_S = 0.01  # how often a token stream sends what has been generated

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
COOKIE = "seqlab_token"
STATIC = resources.files("seqlab.serve") / "static"


class RunError(SeqlabError):
    """The run cannot be read (409)."""


# ---- the application -------------------------------------------------------------------------------------

def create_app(roots: list[str | Path], token: str | None = None, cache_size: int = 4,
               device: str | None = None) -> FastAPI:
    """The app serving the runs under ``roots``; ``token`` required on every request when given."""
    index = RunIndex(roots)
    cache = ModelCache(cache_size, device=device)
    app = FastAPI(title="seqlab serve", version=__version__,
                  description="Inspect trained seqlab runs: the same operations as the command line, JSON in "
                              "and out. Runs use their best checkpoint unless `last` is true.")
    app.state.index, app.state.cache = index, cache

    @app.middleware("http")
    async def access(request: Request, call_next):
        if token is None:
            client = request.client.host if request.client else ""
            if not is_loopback(client):
                return JSONResponse({"detail": f"client {client or 'unknown'} refused: seqlab serve without --token "
                                               "answers this machine only; start it with --token TOKEN to serve "
                                               "others"}, status_code=403)
            header = request.headers.get("host") or ""
            host = header[:header.find("]") + 1] if header.startswith("[") else header.rsplit(":", 1)[0]
            if host not in LOOPBACK:
                return JSONResponse({"detail": f"host {host!r} refused: seqlab serve without --token answers "
                                               "127.0.0.1 and localhost only"}, status_code=403)
            return await call_next(request)
        query = request.query_params.get("token")
        if query is not None and request.method in ("GET", "HEAD") and _same(query, token):
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            response = RedirectResponse(target, status_code=303)  # the token leaves the URL: logs, history
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return response
        if not _same(_bearer(request) or request.cookies.get(COOKIE) or "", token):
            return JSONResponse({"detail": "a token is required: send `Authorization: Bearer TOKEN`, or open "
                                           "a page once with ?token=TOKEN"}, status_code=401)
        return await call_next(request)

    @app.exception_handler(NotFound)
    async def not_found(request, e):
        return JSONResponse({"detail": str(e)}, status_code=404)

    @app.exception_handler(RunError)
    async def run_error(request, e):
        return JSONResponse({"detail": str(e)}, status_code=409)

    @app.exception_handler(SeqlabError)
    async def bad_input(request, e):
        return JSONResponse({"detail": str(e)}, status_code=422)

    @app.exception_handler(RequestValidationError)
    async def invalid(request, e):
        parts = []
        for err in e.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body", "query"))
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return JSONResponse({"detail": "; ".join(parts)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, e):
        return JSONResponse({"detail": "not found" if e.status_code == 404 else str(e.detail)},
                            status_code=e.status_code)

    @app.exception_handler(Exception)
    async def unexpected(request, e):  # no traceback leaves the server
        return JSONResponse({"detail": f"internal error: {type(e).__name__}: {e}"}, status_code=500)

    def run_dir(run_id: str) -> Path:
        return index.resolve(run_id)

    def loaded(run_id: str, last: bool = False):
        path = index.resolve(run_id)
        try:
            return cache.get(path, last)
        except NotFound:
            raise
        except SeqlabError as e:
            raise RunError(f"cannot read {run_id}: {e}") from None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a damaged file the loaders do not name (tokenizer, labels...); the Rust
            # tokenizers' PanicException is a BaseException
            raise RunError(f"cannot read {run_id}: {type(e).__name__}: {e}") from None

    # ---- pages -------------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def runs_page():
        return _page("seqlab runs", {"page": "runs", "runs": _summaries(index)})

    @app.get("/runs/{run_id:path}", response_class=HTMLResponse, include_in_schema=False)
    def run_page(run_id: str):
        try:
            data = {"page": "run", **_run_info(index, run_id)}
        except NotFound:
            return HTMLResponse(_render("not found", {"page": "missing", "detail": f"no run {run_id!r}"}), 404)
        return _page(f"seqlab {run_id}", data)

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js():
        import plotly

        path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str):
        types = {".js": "text/javascript", ".css": "text/css"}
        entry = STATIC / name
        if "/" in name or Path(name).suffix not in types or not entry.is_file():
            raise NotFound(f"no static file {name!r}")
        return Response(entry.read_bytes(), media_type=types[Path(name).suffix])

    # ---- the API: runs -----------------------------------------------------------------------------------

    @app.get("/api/runs", summary="every run under the served folders")
    def api_runs():
        return {"runs": _summaries(index)}

    @app.get("/api/runs/{run_id:path}/metrics", summary="the rows of the run's metrics.jsonl")
    def api_metrics(run_id: str, since: int = 0):
        from seqlab.base.io import read_metrics

        rows = read_metrics(run_dir(run_id) / "metrics.jsonl")
        return {"rows": ops._finite(rows[since:]), "count": len(rows),
                "summary": index.summary(run_id)}

    @app.post("/api/runs/{run_id:path}/eval", summary="`seqlab eval`: the task's metrics on a split")
    def api_eval(run_id: str, body: EvalIn):
        obj = loaded(run_id, body.last)
        ops.needs(obj, "evaluate", "evaluation", run_id)
        return ops._finite(obj.evaluate(body.split))

    @app.post("/api/runs/{run_id:path}/generate", summary="`seqlab generate`: continue a prompt (LM)")
    def api_generate(run_id: str, body: GenerateIn):
        lm = _lm(loaded(run_id, body.last), run_id)
        return ops.generate(lm, body.prompt, **_sampling(body))

    @app.get("/api/runs/{run_id:path}/generate/stream",
             summary="generation as server-sent events: one `token` event per token, then `done` "
                     "(or `failure` with a message)")
    def api_stream(run_id: str, query: GenerateIn = Depends()):
        lm = _lm(loaded(run_id, query.last), run_id)
        events = ops.generation_events(lm, query.prompt, **_sampling(query))
        start = time.perf_counter()
        first = next(events, None)  # a bad prompt or setting is a 422 before the stream starts

        async def sse():
            # The tokens are made in a thread of their own that never waits for the network or the event loop:
            # it appends to a deque, which the loop drains every few milliseconds into one write. Handing each
            # token to a pool thread and back (Starlette's way with a plain generator) cost a third of the speed
            # of `seqlab generate` on this busy machine, a wake-up of the loop per token about a sixth.
            made: collections.deque = collections.deque()
            stop = threading.Event()

            def produce():
                try:
                    event = first
                    while event is not None and not stop.is_set():
                        made.append(event)
                        event = next(events, None)
                except Exception as e:  # noqa: BLE001 - reported to the client as a `failure` event
                    made.append({"failure": f"{type(e).__name__}: {e}"})
                made.append(None)

            threading.Thread(target=produce, name="seqlab-generate", daemon=True).start()
            count, text, finished = 0, [], False
            try:
                while not finished:
                    out = []
                    while made:
                        event = made.popleft()
                        if event is None:
                            finished = True
                            seconds = time.perf_counter() - start
                            out.append("event: done\ndata: " + json.dumps(
                                {"text": "".join(text), "tokens": count, "seconds": seconds}) + "\n\n")
                        elif "failure" in event:
                            out.append(f"event: failure\ndata: {json.dumps(event)}\n\n")
                        else:
                            count += 1
                            text.append(event["token"])
                            out.append(f"event: token\ndata: {json.dumps(event)}\n\n")
                    if out:
                        yield "".join(out)
                    if not finished:
                        await asyncio.sleep(STREAM_POLL_S)
            finally:
                stop.set()  # the client went away: stop generating

        return StreamingResponse(sse(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.post("/api/runs/{run_id:path}/attention",
              summary="`seqlab attention`: every layer's and head's self-attention on a text (Transformer LM)")
    def api_attention(run_id: str, body: TextIn):
        lm = _lm(loaded(run_id, body.last), run_id)
        return ops.lm_attention(lm, body.text)

    @app.post("/api/runs/{run_id:path}/translate",
              summary="beam translation of a sentence with its cross-attention (source x target)")
    def api_translate(run_id: str, body: TranslateIn):
        tr = _of_kind(loaded(run_id, body.last), run_id, ("translate",), "translation needs a translate run")
        return ops.translate(tr, body.text, body.beam)

    @app.post("/api/runs/{run_id:path}/predict",
              summary="`seqlab predict --format json`: one result per line (tag, classify, translate)")
    def api_predict(run_id: str, body: PredictIn):
        obj = _of_kind(loaded(run_id, body.last), run_id, ("tag", "classify", "translate"),
                       "predict takes lines for tag, classify and translate runs (forecast: /forecast)")
        return {"predictions": ops.predict(obj, check_lines(body.lines), body.beam)}

    @app.post("/api/runs/{run_id:path}/tag", summary="tag one sentence; its entities grouped by type")
    def api_tag(run_id: str, body: TextIn):
        obj = _of_kind(loaded(run_id, body.last), run_id, ("tag",), "tagging needs a tag run")
        return ops.tag(obj, body.text)

    @app.get("/api/runs/{run_id:path}/transitions",
             summary="a CRF tagger's transition scores [from][to], start and end scores, and which the tagging "
                     "scheme allows")
    def api_transitions(run_id: str, query: Checkpoint = Depends()):
        obj = _of_kind(loaded(run_id, query.last), run_id, ("tag",), "transition scores need a tag run with "
                       "model.crf=true")
        return ops.transitions(obj, run_id)

    @app.post("/api/runs/{run_id:path}/forecast",
              summary="`seqlab predict --steps N`: the series with N forecasts after train + valid")
    def api_forecast(run_id: str, body: ForecastIn):
        obj = _of_kind(loaded(run_id, body.last), run_id, ("forecast",), "forecasts need a forecast run")
        return ops.forecast(obj, body.steps)

    @app.post("/api/runs/{run_id:path}/neighbors", summary="`seqlab neighbors`: nearest words by cosine")
    def api_neighbors(run_id: str, body: NeighborsIn):
        emb = _embeddings(loaded(run_id), run_id)
        return {"word": body.word, "neighbors": ops.answers(emb.most_similar(body.word, topn=body.k))}

    @app.post("/api/runs/{run_id:path}/analogy", summary="`seqlab analogy`: a is to b as c is to ?")
    def api_analogy(run_id: str, body: AnalogyIn):
        emb = _embeddings(loaded(run_id), run_id)
        return {"answers": ops.answers(emb.analogy(body.a, body.b, body.c, topn=body.k))}

    @app.post("/api/runs/{run_id:path}/map", summary="2-D map (PCA or t-SNE) of the most frequent words")
    def api_map(run_id: str, body: MapIn):
        emb = _embeddings(loaded(run_id), run_id)
        memo = cache.extras(run_dir(run_id))
        key = ("map", body.words, body.method)
        if key not in memo:
            memo[key] = ops.embedding_map(emb, body.words, body.method)
        return memo[key]

    @app.post("/api/runs/{run_id:path}/similarity", summary="`seqlab similarity`: cosine of two sentences")
    def api_similarity(run_id: str, body: SimilarityIn):
        encoder = ops.encoder_of(loaded(run_id), run_id)
        return ops.similarity(encoder, body.a, body.b)

    @app.get("/api/runs/{run_id:path}", summary="a run: summary, resolved config, checkpoints")
    def api_run(run_id: str):
        return _run_info(index, run_id)

    return app


# ---- helpers ---------------------------------------------------------------------------------------------

def is_loopback(address: str) -> bool:
    """Whether a client address is this machine: 127.0.0.0/8, ::1, or IPv4-mapped loopback."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization") or ""
    return value[7:].strip() if value.lower().startswith("bearer ") else None


def _kind(obj) -> str:
    return obj.config.task.kind if hasattr(obj, "config") else "pretrained encoder"


def _of_kind(obj, run_id: str, kinds: tuple[str, ...], need: str):
    """``obj`` when its task is one of ``kinds``; else a 422 naming its task and what the request ``need``s."""
    if _kind(obj) not in kinds:
        raise SeqlabError(f"{run_id} is a {_kind(obj)} run; {need}")
    return obj


def _lm(obj, run_id: str):
    return _of_kind(obj, run_id, ("lm",), "generation and attention need a language model (lm)")


def _embeddings(obj, run_id: str):
    return _of_kind(obj, run_id, ("embed",), "word vectors need an embedding run (embed)")


def _sampling(body: GenerateIn) -> dict:
    return {"max_new_tokens": body.max_new_tokens, "temperature": body.temperature, "top_k": body.top_k,
            "top_p": body.top_p, "seed": body.seed}


def _summaries(index: RunIndex) -> list[dict]:
    return [ops._finite(index.summary(run_id)) for run_id in index.ids()]


def _run_info(index: RunIndex, run_id: str) -> dict:
    """A run's summary, resolved config (or the error reading it) and checkpoints."""
    import tomllib

    path = index.resolve(run_id)
    info = {"run": ops._finite(index.summary(run_id)), "config": None, "checkpoints": []}
    if (path / "config.toml").is_file():
        try:
            info["config"] = tomllib.loads((path / "config.toml").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            info["run"]["error"] = f"{path / 'config.toml'} cannot be read ({e})"
        info["checkpoints"] = ops._finite(index.checkpoints(run_id))
    return info


def _render(title: str, data: dict) -> str:
    template = (STATIC / "page.html").read_text(encoding="utf-8")
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the script element
    import html

    return template.replace("{{title}}", html.escape(title)).replace("{{data}}", payload)


def _page(title: str, data: dict) -> HTMLResponse:
    return HTMLResponse(_render(title, data))
