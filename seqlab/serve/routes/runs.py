"""The pages (the runs list, a run's page, their script and style sheet, plotly) and the API every run has: the
runs list, a run's metrics, its evaluation and its record (summary, resolved config, checkpoints).

``record`` is a router of its own, included after every other: its path ``/api/runs/{run_id:path}`` takes any
run id, so a GET of ``/api/runs/ID/metrics`` would reach it first."""

from __future__ import annotations

import html
import json
import tomllib
from importlib import resources
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_metrics
from seqlab.serve import operations as ops
from seqlab.training import checkpoint
from seqlab.serve.run_index import NotFound, RunIndex
from seqlab.serve.schemas import EvalIn
from seqlab.serve.served import Serving

STATIC = resources.files("seqlab.serve") / "static"

router = APIRouter()
record = APIRouter()


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def runs_page(served: Serving):
    return HTMLResponse(render("seqlab runs", {"page": "runs", "runs": summaries(served.index)}))


@router.get("/runs/{run_id:path}", response_class=HTMLResponse, include_in_schema=False)
def run_page(run_id: str, served: Serving):
    try:
        data = {"page": "run", **run_info(served.index, run_id)}
    except NotFound:
        return HTMLResponse(render("not found", {"page": "missing", "detail": f"no run {run_id!r}"}), 404)
    return HTMLResponse(render(f"seqlab {run_id}", data))


@router.get("/static/plotly.min.js", include_in_schema=False)
def plotly_js():
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})


@router.get("/favicon.ico", include_in_schema=False)
def favicon():
    return static("favicon.svg")


@router.get("/static/{name}", include_in_schema=False)
def static(name: str):
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    entry = STATIC / name
    if "/" in name or Path(name).suffix not in types or not entry.is_file():
        raise NotFound(f"no static file {name!r}")
    return Response(entry.read_bytes(), media_type=types[Path(name).suffix])


@router.get("/api/runs", summary="every run under the served folders")
def api_runs(served: Serving):
    return {"runs": summaries(served.index)}


@router.get("/api/runs/{run_id:path}/metrics", summary="the rows of the run's metrics.jsonl")
def api_metrics(run_id: str, served: Serving, since: int = 0):
    rows = read_metrics(served.run_dir(run_id) / "metrics.jsonl")
    return {"rows": ops.finite(rows[since:]), "count": len(rows), "summary": served.index.summary(run_id)}


@router.post("/api/runs/{run_id:path}/eval", summary="`seqlab eval`: the task's metrics on a split")
def api_eval(run_id: str, body: EvalIn, served: Serving):
    obj = served.loaded(run_id, body.last)
    ops.needs(obj, "evaluate", "evaluation", run_id)
    return ops.finite(obj.evaluate(body.split))


@record.get("/api/runs/{run_id:path}", summary="a run: summary, resolved config, checkpoints")
def api_run(run_id: str, served: Serving):
    return run_info(served.index, run_id)


def summaries(index: RunIndex) -> list[dict]:
    return [ops.finite(index.summary(run_id)) for run_id in index.ids()]


def run_info(index: RunIndex, run_id: str) -> dict:
    """A run's summary, resolved config (or the error reading it), checkpoints and, for an AR run, its fit."""
    path = index.resolve(run_id)
    info = {"run": ops.finite(index.summary(run_id)), "config": None, "checkpoints": []}
    if (path / "config.toml").is_file():
        try:
            info["config"] = tomllib.loads((path / "config.toml").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            info["run"]["error"] = f"{path / 'config.toml'} cannot be read ({e})"
        info["checkpoints"] = ops.finite(index.checkpoints(run_id))
    if info["run"]["arch"] == "ar" and not info["run"]["error"]:
        info["fit"] = ar_fit(path)
    return info


def ar_fit(path: Path) -> dict | None:
    """An AR run's fit (state.json's "ar": p, sigma2, nobs, llf, aic, bic, hqic): it has no steps or curves."""
    try:
        fit = checkpoint.load_state(path).get("ar")
    except SeqlabError:
        return None
    return ops.finite(fit) if isinstance(fit, dict) else None


def render(title: str, data: dict) -> str:
    """The page (``static/page.html``) with its title and its data for the script."""
    template = (STATIC / "page.html").read_text(encoding="utf-8")
    payload = json.dumps(data).replace("</", "<\\/")  # no "</script>" inside the script element
    return template.replace("{{title}}", html.escape(title)).replace("{{data}}", payload)
