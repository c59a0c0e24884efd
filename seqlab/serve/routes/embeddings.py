"""The embeddings pages: a word-vector run's neighbours, analogies and 2-D map, and the cosine of two sentences
under a sentence encoder (a pretrained directory, or a run fine-tuned from one)."""

from __future__ import annotations

from fastapi import APIRouter

from seqlab.serve import operations as ops
from seqlab.serve.schemas import AnalogyIn, MapIn, NeighborsIn, SimilarityIn
from seqlab.serve.served import Served, Serving

router = APIRouter()


@router.post("/api/runs/{run_id:path}/neighbors", summary="`seqlab neighbors`: nearest words by cosine")
def api_neighbors(run_id: str, body: NeighborsIn, served: Serving):
    emb = _embeddings(served, run_id)
    return {"word": body.word, "neighbors": ops.answers(emb.most_similar(body.word, topn=body.k))}


@router.post("/api/runs/{run_id:path}/analogy", summary="`seqlab analogy`: a is to b as c is to ?")
def api_analogy(run_id: str, body: AnalogyIn, served: Serving):
    emb = _embeddings(served, run_id)
    return {"answers": ops.answers(emb.analogy(body.a, body.b, body.c, topn=body.k))}


@router.post("/api/runs/{run_id:path}/map", summary="2-D map (PCA or t-SNE) of the most frequent words")
def api_map(run_id: str, body: MapIn, served: Serving):
    emb = _embeddings(served, run_id)
    memo = served.cache.extras(served.run_dir(run_id))
    key = ("map", body.words, body.method)
    if key not in memo:
        memo[key] = ops.embedding_map(emb, body.words, body.method)
    return memo[key]


@router.post("/api/runs/{run_id:path}/similarity", summary="`seqlab similarity`: cosine of two sentences")
def api_similarity(run_id: str, body: SimilarityIn, served: Serving):
    encoder = ops.encoder_of(served.loaded(run_id), run_id)
    return ops.similarity(encoder, body.a, body.b)


def _embeddings(served: Served, run_id: str):
    return served.of_kind(run_id, False, ("embed",), "word vectors need an embedding run (embed)")
