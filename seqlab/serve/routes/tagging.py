"""The tagging page: a sentence's tags and entities, and a CRF tagger's transition scores."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from seqlab.serve import operations as ops
from seqlab.serve.schemas import Checkpoint, TextIn
from seqlab.serve.served import Serving

router = APIRouter()


@router.post("/api/runs/{run_id:path}/tag", summary="tag one sentence; its entities grouped by type")
def api_tag(run_id: str, body: TextIn, served: Serving):
    return ops.tag(served.of_kind(run_id, body.last, ("tag",), "tagging needs a tag run"), body.text)


@router.get("/api/runs/{run_id:path}/transitions",
            summary="a CRF tagger's transition scores [from][to], start and end scores, and which the tagging "
                    "scheme allows")
def api_transitions(run_id: str, served: Serving, query: Checkpoint = Depends()):
    obj = served.of_kind(run_id, query.last, ("tag",), "transition scores need a tag run with model.crf=true")
    return ops.transitions(obj, run_id)
