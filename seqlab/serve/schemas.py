"""The JSON API's request bodies (pydantic models) and the input limits they enforce (422 beyond them)."""

from __future__ import annotations

from typing import Literal

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field

# ---- input limits ----------------------------------------------------------------------
MAX_TEXT = 2000  # characters of a prompt, sentence or word
MAX_LINES = 64  # lines of one predict request
MAX_NEW_TOKENS = 1000
MAX_BEAM = 16
MAX_MAP_WORDS = 1000
MAX_K = 100  # neighbours / analogy answers
MAX_STEPS = 1000  # forecast horizon


# ---- request bodies --------------------------------------------------------------------------------------

Text = Field(min_length=1, max_length=MAX_TEXT)


class Checkpoint(BaseModel):
    last: bool = Field(False, description="read the final checkpoint instead of the best one (`--last`)")


class GenerateIn(Checkpoint):
    prompt: str = Text
    max_new_tokens: int = Field(200, ge=0, le=MAX_NEW_TOKENS)
    temperature: float = Field(1.0, ge=0, le=100, description="0 = greedy")
    top_k: int = Field(0, ge=0, le=1_000_000, description="0 = off")
    top_p: float = Field(1.0, gt=0, le=1, description="1 = off")
    seed: int | None = Field(None, ge=0, le=2**63 - 1)


class TextIn(Checkpoint):
    text: str = Text


class TranslateIn(TextIn):
    beam: int = Field(5, ge=1, le=MAX_BEAM)


class PredictIn(Checkpoint):
    lines: list[str] = Field(min_length=1, max_length=MAX_LINES)
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)


class EvalIn(Checkpoint):
    split: Literal["valid", "test"] = "test"


class ForecastIn(Checkpoint):
    steps: int = Field(12, ge=1, le=MAX_STEPS)


class NeighborsIn(BaseModel):
    word: str = Field(min_length=1, max_length=200)
    k: int = Field(10, ge=1, le=MAX_K)


class AnalogyIn(BaseModel):
    a: str = Field(min_length=1, max_length=200)
    b: str = Field(min_length=1, max_length=200)
    c: str = Field(min_length=1, max_length=200)
    k: int = Field(10, ge=1, le=MAX_K)


class MapIn(BaseModel):
    words: int = Field(200, ge=3, le=MAX_MAP_WORDS)
    method: Literal["pca", "tsne"] = "pca"


class SimilarityIn(BaseModel):
    a: str = Text
    b: str = Text


def check_lines(lines: list[str]) -> list[str]:
    for i, line in enumerate(lines, start=1):
        if len(line) > MAX_TEXT:
            raise RequestValidationError([{"loc": ("body", "lines", i - 1), "type": "string_too_long",
                                           "msg": f"line {i} has {len(line)} characters, more than {MAX_TEXT}"}])
    return lines
