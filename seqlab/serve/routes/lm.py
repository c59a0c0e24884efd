"""The language model's page: generation (whole, or streamed token by token as server-sent events) and the
self-attention of every layer and head on a text."""

from __future__ import annotations

import asyncio
import collections
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from seqlab.serve import operations as ops
from seqlab.serve.schemas import GenerateIn, TextIn
from seqlab.serve.served import Served, Serving

STREAM_POLL_S = 0.01  # how often a token stream sends what has been generated

router = APIRouter()


@router.post("/api/runs/{run_id:path}/generate", summary="`seqlab generate`: continue a prompt (LM)")
def api_generate(run_id: str, body: GenerateIn, served: Serving):
    return ops.generate(_lm(served, run_id, body.last), body.prompt, **_sampling(body))


@router.get("/api/runs/{run_id:path}/generate/stream",
            summary="generation as server-sent events: one `token` event per token, then `done` "
                    "(or `failure` with a message)")
def api_stream(run_id: str, served: Serving, query: GenerateIn = Depends()):
    events = ops.generation_events(_lm(served, run_id, query.last), query.prompt, **_sampling(query))
    start = time.perf_counter()
    first = next(events, None)  # a bad prompt or setting is a 422 before the stream starts
    return StreamingResponse(_sse(first, events, start), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store"})


@router.post("/api/runs/{run_id:path}/attention",
             summary="`seqlab attention`: every layer's and head's self-attention on a text (Transformer LM)")
def api_attention(run_id: str, body: TextIn, served: Serving):
    return ops.lm_attention(_lm(served, run_id, body.last), body.text)


def _lm(served: Served, run_id: str, last: bool):
    return served.of_kind(run_id, last, ("lm",), "generation and attention need a language model (lm)")


def _sampling(body: GenerateIn) -> dict:
    return {"max_new_tokens": body.max_new_tokens, "temperature": body.temperature, "top_k": body.top_k,
            "top_p": body.top_p, "seed": body.seed}


async def _sse(first: dict | None, events: Iterator[dict], start: float) -> AsyncIterator[str]:
    """The stream's text: the events made so far, sent every STREAM_POLL_S.

    The tokens are made in a thread of their own that never waits for the network or the event loop: it
    appends to a deque, which the loop drains every few milliseconds into one write. Handing each token to a
    pool thread and back (Starlette's way with a plain generator) cost a third of the speed of `seqlab generate`
    on this busy machine, a wake-up of the loop per token about a sixth."""
    made: collections.deque = collections.deque()
    stop = threading.Event()
    threading.Thread(target=_produce, args=(first, events, made, stop), name="seqlab-generate", daemon=True).start()
    sent = _Sent(start)
    try:
        while not sent.finished:
            out = []
            while made:
                out.append(sent.event(made.popleft()))
            if out:
                yield "".join(out)
            if not sent.finished:
                await asyncio.sleep(STREAM_POLL_S)
    finally:
        stop.set()  # the client went away: stop generating


def _produce(first: dict | None, events: Iterator[dict], made: collections.deque, stop: threading.Event) -> None:
    """Append each event to ``made`` until the generation ends (or ``stop``), then None."""
    try:
        event = first
        while event is not None and not stop.is_set():
            made.append(event)
            event = next(events, None)
    except Exception as e:  # noqa: BLE001 - reported to the client as a `failure` event
        made.append({"failure": f"{type(e).__name__}: {e}"})
    made.append(None)


class _Sent:
    """What a stream has sent: its tokens, their text, and whether it is done."""

    def __init__(self, start: float):
        self.start, self.count, self.text, self.finished, self.near_ties = start, 0, [], False, 0

    def event(self, event: dict | None) -> str:
        """One server-sent event: ``token`` (an event), ``failure`` (a message) or, for None, ``done``."""
        if event is None:
            self.finished = True
            done = {"text": "".join(self.text), "tokens": self.count, "seconds": time.perf_counter() - self.start,
                    "near_ties": self.near_ties}
            return "event: done\ndata: " + json.dumps(done) + "\n\n"
        if "failure" in event:
            return f"event: failure\ndata: {json.dumps(event)}\n\n"
        self.count += 1
        self.near_ties += event.get("near_tie", False)
        self.text.append(event["token"])
        return f"event: token\ndata: {json.dumps(event)}\n\n"
