"""The forecasting page: the series with N forecasts after train + valid (``seqlab predict --steps N``)."""

from __future__ import annotations

from fastapi import APIRouter

from seqlab.serve import operations as ops
from seqlab.serve.schemas import ForecastIn
from seqlab.serve.served import Serving

router = APIRouter()


@router.post("/api/runs/{run_id:path}/forecast",
             summary="`seqlab predict --steps N`: the series with N forecasts after train + valid")
def api_forecast(run_id: str, body: ForecastIn, served: Serving):
    obj = served.of_kind(run_id, body.last, ("forecast",), "forecasts need a forecast run")
    return ops.forecast(obj, body.steps)
