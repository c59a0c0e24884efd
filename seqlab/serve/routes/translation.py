"""The translation page: the beam translation of a sentence with its cross-attention (source x target)."""

from __future__ import annotations

from fastapi import APIRouter

from seqlab.serve import operations as ops
from seqlab.serve.schemas import TranslateIn
from seqlab.serve.served import Serving

router = APIRouter()


@router.post("/api/runs/{run_id:path}/translate",
             summary="beam translation of a sentence with its cross-attention (source x target)")
def api_translate(run_id: str, body: TranslateIn, served: Serving):
    tr = served.of_kind(run_id, body.last, ("translate",), "translation needs a translate run")
    return ops.translate(tr, body.text, body.beam)
