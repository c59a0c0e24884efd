"""What every route of ``seqlab serve`` shares: the runs served and their loaded models (:class:`Served`, a
dependency of each route), the check that a run's task has what a request needs, and the errors as JSON
``{"detail": "..."}`` with one readable sentence:

- 404: no such page or run (ids that try to leave the served folders included);
- 422: input out of bounds (the limits of :mod:`seqlab.serve.schemas`) or that the model cannot take (an unknown
  word, a sentence longer than ``model.max_len``, an operation the run's task does not have);
- 409: the run cannot be read (a missing or damaged file, no checkpoint yet): the message names the file;
- 500: anything else, without a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from seqlab.base.errors import SeqlabError
from seqlab.serve.cache import ModelCache
from seqlab.serve.run_index import NotFound, RunIndex


class RunError(SeqlabError):
    """The run cannot be read (409)."""


class Served:
    """The runs under the served folders (:class:`~seqlab.serve.run_index.RunIndex`) and their models, each loaded
    once per committed checkpoint (:class:`~seqlab.serve.cache.ModelCache`)."""

    def __init__(self, index: RunIndex, cache: ModelCache):
        self.index, self.cache = index, cache

    def run_dir(self, run_id: str) -> Path:
        return self.index.resolve(run_id)

    def loaded(self, run_id: str, last: bool = False):
        """The run's object (``seqlab.load``), or a 409 naming what cannot be read."""
        path = self.index.resolve(run_id)
        try:
            return self.cache.get(path, last)
        except NotFound:
            raise
        except SeqlabError as e:
            raise RunError(f"cannot read {run_id}: {e}") from None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a damaged file the loaders do not name (tokenizer, labels...); the Rust
            # tokenizers' PanicException is a BaseException
            raise RunError(f"cannot read {run_id}: {type(e).__name__}: {e}") from None

    def of_kind(self, run_id: str, last: bool, kinds: tuple[str, ...], need: str):
        """The loaded run when its task is one of ``kinds``; else a 422 naming its task and what the request
        ``need``s."""
        obj = self.loaded(run_id, last)
        kind = obj.config.task.kind if hasattr(obj, "config") else "pretrained encoder"
        if kind not in kinds:
            raise SeqlabError(f"{run_id} is a {kind} run; {need}")
        return obj


def served(request: Request) -> Served:
    """The dependency every route takes: the app's :class:`Served` (``create_app`` sets it)."""
    return request.app.state.served


Serving = Annotated[Served, Depends(served)]  # a route's parameter: ``served: Serving``


def answer_errors(app: FastAPI) -> None:
    """Turn every error into its status code and ``{"detail": one sentence}`` (the module docstring)."""
    statuses = {NotFound: 404, RunError: 409, SeqlabError: 422}
    for error, status in statuses.items():
        app.add_exception_handler(error, _detail_with(status))
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)


def _detail_with(status: int):
    async def handler(request, e):
        return JSONResponse({"detail": str(e)}, status_code=status)

    return handler


async def _invalid(request, e):
    parts = []
    for err in e.errors():
        where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("body", "query"))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return JSONResponse({"detail": "; ".join(parts)}, status_code=422)


async def _http_error(request, e):
    return JSONResponse({"detail": "not found" if e.status_code == 404 else str(e.detail)}, status_code=e.status_code)


async def _unexpected(request, e):  # no traceback leaves the server
    return JSONResponse({"detail": f"internal error: {type(e).__name__}: {e}"}, status_code=500)
