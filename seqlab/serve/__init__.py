"""``seqlab serve``: a local web inspector and JSON API for trained runs (the ``serve`` extra: FastAPI, uvicorn,
plotly). :mod:`.app` composes the app: :mod:`.access` (who may call it), :mod:`.served` (what every route reads,
and the errors as JSON) and :mod:`.routes` (one router per page kind); :mod:`.runs` has the discovery of runs and
path safety, :mod:`.cache` the least-recently-used model cache, :mod:`.operations` the calls into the trained
objects, ``static/`` our page, script and style sheet (plotly's own ``plotly.min.js`` is served from the installed
package)."""

from seqlab.base.lazy import lazy_exports

EXTRA = ("fastapi", "uvicorn", "plotly")  # the modules of the serve extra


# ``seqlab.serve.create_app(roots, token=None, cache_size=4)``, the ASGI app: imported on first use (it needs the
# extra, which ``seqlab serve`` checks first)
_EXPORTS: dict[str, str] = {"create_app": "seqlab.serve.app"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
