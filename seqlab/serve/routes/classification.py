"""The classification page: ``seqlab predict --format json`` on lines (classify, and tag and translate alike)."""

from __future__ import annotations

from fastapi import APIRouter

from seqlab.serve import operations as ops
from seqlab.serve.schemas import PredictIn, check_lines
from seqlab.serve.served import Serving

router = APIRouter()


@router.post("/api/runs/{run_id:path}/predict",
             summary="`seqlab predict --format json`: one result per line (tag, classify, translate)")
def api_predict(run_id: str, body: PredictIn, served: Serving):
    obj = served.of_kind(run_id, body.last, ("tag", "classify", "translate"),
                         "predict takes lines for tag, classify and translate runs (forecast: /forecast)")
    return {"predictions": ops.predict(obj, check_lines(body.lines), body.beam)}
