"""The ``seqlab serve`` application: the pages and the JSON API (FastAPI; OpenAPI at ``/docs``).

:func:`create_app` composes it: the access check (:mod:`seqlab.serve.access`: without a token, this machine only;
with one, the token on every request), the errors as JSON (:mod:`seqlab.serve.served`: 404, 409, 422, 500 with one
readable sentence; 401 and 403 come from the access check), and one router per page kind
(:mod:`seqlab.serve.routes`). Every route reads a run through :class:`~seqlab.serve.run_index.RunIndex` (only runs
under the served folders) and :class:`~seqlab.serve.cache.ModelCache` (loaded once per committed checkpoint),
and computes with :mod:`seqlab.serve.operations`.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from seqlab.base.version import __version__
from seqlab.serve import operations as ops  # noqa: F401 - the operations the routes call (tests patch them here)
from seqlab.serve.access import guard
from seqlab.serve.cache import ModelCache
from seqlab.serve.routes import classification, embeddings, forecasting, lm, runs, tagging, translation
from seqlab.serve.run_index import RunIndex
from seqlab.serve.served import Served, answer_errors

# in this order: a route's path is tried before those below it, and runs.record takes any run id
ROUTERS = (runs.router, lm.router, translation.router, classification.router, tagging.router, forecasting.router,
           embeddings.router, runs.record)


def create_app(roots: list[str | Path], token: str | None = None, cache_size: int = 4,
               device: str | None = None) -> FastAPI:
    """The app serving the runs under ``roots``; ``token`` required on every request when given."""
    index = RunIndex(roots)
    cache = ModelCache(cache_size, device=device)
    app = FastAPI(title="seqlab serve", version=__version__,
                  description="Inspect trained seqlab runs: the same operations as the command line, JSON in "
                              "and out. Runs use their best checkpoint unless `last` is true.")
    app.state.index, app.state.cache = index, cache
    app.state.served = Served(index, cache)
    guard(app, token)
    answer_errors(app)
    for router in ROUTERS:
        app.include_router(router)
    return app
