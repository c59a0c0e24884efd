"""What the pages and the JSON API compute, each a thin call into the verbs of the trained object ``seqlab.load``
returns (its ``generate``, ``hypotheses``, ``tag``, ``forecast``, ``map``, ``predict``, ``evaluate``,
``attention``...), shaped as JSON.

Where an output overlaps the command line it is the same: ``predict`` results are the objects
``seqlab predict --format json`` prints, ``evaluate`` the object ``seqlab eval`` prints, and generation gives
the tokens ``seqlab generate`` prints for the same seed (``LanguageModel.stream``: one decode loop that concurrent
requests share, :mod:`seqlab.decoding.continuous`).
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from seqlab.decoding.decode import Sampling
from seqlab.base.errors import SeqlabError

TOP_ALTERNATIVES = 5  # the alternatives each streamed token carries


def finite(x):
    """JSON has no NaN or infinity: None instead."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def needs(obj, method: str, what: str, run_id: str) -> None:
    """A run whose task cannot do ``what`` is a clear error (e.g. generation on a tagger)."""
    if not hasattr(obj, method):
        kind = obj.config.task.kind if hasattr(obj, "config") else "pretrained encoder"
        raise SeqlabError(f"{run_id} is a {kind} run, which has no {what}")


# ---- language models -------------------------------------------------------------------------------------

def generation_events(lm, prompt: str, max_new_tokens: int, temperature: float, top_k: int, top_p: float,
                      seed: int | None) -> Iterator[dict]:
    """One event per generated token: ``{"token": TEXT, "id", "probability", "top": [{"token", "id",
    "probability"} x 5], "near_tie"}``; TEXT is what the token adds to the decoded text (so the texts of the events
    join into the continuation ``seqlab generate`` prints, even when a token is part of a multi-byte character).

    The tokens come from the model's shared decode loop (``lm.stream``: concurrent requests share one batched
    step, :mod:`seqlab.decoding.continuous`); ``near_tie`` marks a greedy token whose top two logits lay within
    the batched step's rounding bound, the one place it may differ from ``seqlab generate``'s."""
    Sampling(temperature, top_k, top_p)  # a bad setting is an error before anything is queued
    tokens = lm.stream(prompt, max_new_tokens, temperature, top_k, top_p, seed)
    new: list[int] = []
    shown = ""
    decode, decode_generated = lm.tokenizer.decode, lm.tokenizer.decode_generated
    try:
        for token, probs, near_tie in tokens:
            new.append(token)
            text = decode_generated(new)  # as `seqlab generate` prints it: no <unk> shown as U+FFFD
            delta = text[len(shown):] if text.startswith(shown) else text
            shown = text
            top_p_, top_i = probs.topk(min(TOP_ALTERNATIVES, probs.numel()))
            yield {"token": delta, "id": token, "probability": float(probs[token]),
                   "top": [{"token": decode([int(i)]), "id": int(i), "probability": float(p)}
                           for p, i in zip(top_p_.tolist(), top_i.tolist())], "near_tie": near_tie}
    finally:
        close = getattr(tokens, "close", None)
        if close is not None:  # the client left: the stream's row leaves the batch at the next step
            close()


def generate(lm, prompt: str, **options) -> dict:
    """The whole continuation at once: ``{"prompt", "text", "tokens": [events], "near_ties"}``."""
    events = list(generation_events(lm, prompt, **options))
    return {"prompt": prompt, "text": "".join(e["token"] for e in events), "tokens": events,
            "near_ties": sum(e["near_tie"] for e in events)}


def lm_attention(lm, text: str) -> dict:
    """``{"tokens", "weights": [layer][head][query][key]}``: the self-attention of every layer and head."""
    tokens, layers = lm.attention(text)
    return {"tokens": tokens, "weights": [np.round(w.numpy(), 5).tolist() for w in layers]}  # (head, seq, seq)


# ---- translation -----------------------------------------------------------------------------------------

def translate(tr, text: str, beam: int) -> dict:
    """The beam translation of one sentence and its cross-attention: ``{"source", "translation", "score",
    "source_tokens", "target_tokens", "weights": [head][target][source]}``."""
    if not text.strip():
        raise SeqlabError("the source text is empty; give a sentence to translate")
    hyp = tr.hypotheses([text], beam)[0]  # one beam search: its hypothesis is also the one the weights show
    src, tgt, weights = tr.attention(text, hypothesis=hyp)
    return {**tr.result(text, hyp), "source_tokens": src, "target_tokens": tgt,
            "weights": np.round(weights.numpy(), 5).tolist()}  # (heads or 1, tgt, src)


# ---- tagging and classification --------------------------------------------------------------------------

def predict(obj, lines: list[str], beam: int | None = None) -> list[dict]:
    """The ``seqlab predict --format json`` objects, one per line."""
    options = {"beam": beam} if beam is not None else {}
    return finite(obj.predict(lines, **options))


def tag(tagger, text: str) -> dict:
    """The tagged sentence and its entities: ``{"tokens", "tags", "entities": [{"type", "start", "end",
    "text"}]}`` (``end`` inclusive, token positions; seqeval's default-mode chunks)."""
    if not text.split():
        raise SeqlabError("the sentence is empty; give some words to tag")
    pairs = tagger.tag(text)
    tokens, tags = [w for w, _ in pairs], [t for _, t in pairs]
    entities = [{"type": e.type, "start": e.start, "end": e.end - 1, "text": e.text}
                for e in tagger.spans(tokens, tags)]
    return {"tokens": tokens, "tags": tags, "entities": entities}


def transitions(tagger, run_id: str) -> dict:
    """A CRF tagger's scores (:class:`seqlab.nn.crf.CRF`, ``model.crf = true``), as the model holds them:
    ``{"labels", "transitions": [from][to], "start", "end", "allowed": [from][to], "allowed_start",
    "allowed_end"}``, labels in id order; a score the scheme forbids is still its parameter's value, with
    ``allowed`` False (training never uses it)."""
    crf = tagger.crf
    if crf is None:
        raise SeqlabError(f"{run_id} is a tagger without a CRF, so it has no transition scores; train one with "
                          "model.crf=true (e.g. the ner-bilstm-crf preset)")
    values = {name: getattr(crf, name).detach().cpu().tolist() for name in
              ("transitions", "start", "end", "allowed", "allowed_start", "allowed_end")}  # (labels, labels), (labels,)
    return finite({"labels": list(tagger.labels.names), **values})


# ---- forecasting -----------------------------------------------------------------------------------------

def forecast(fc, steps: int) -> dict:
    """The series and ``steps`` forecasts after train + valid: ``{"name", "values", "origin", "forecast",
    "dates"}`` (the held-out tail is ``values[origin:]``)."""
    values = [float(v) for v in fc.forecast(steps, split="test")]
    s = fc.series
    return finite({"name": s.name, "values": [float(v) for v in s.values], "origin": s.start("test"),
                    "forecast": values, "dates": list(s.dates) if s.dates else None})


# ---- word vectors ----------------------------------------------------------------------------------------

def answers(pairs: list[tuple[str, float]]) -> list[dict]:
    """``seqlab neighbors`` / ``analogy`` lines (WORD<TAB>COSINE) as objects."""
    return [{"word": w, "cosine": float(c)} for w, c in pairs]


def embedding_map(emb, n_words: int, method: str) -> dict:
    """The ``n_words`` most frequent words in 2-D (:meth:`~seqlab.tasks.word_vectors.Embeddings.map`: t-SNE, cosine
    geometry, or PCA of the unit vectors). ``{"method", "words", "x", "y"}``."""
    words, coords = emb.map(n_words, method)
    return {"method": method, "words": list(words), "x": coords[:, 0].round(5).tolist(),
            "y": coords[:, 1].round(5).tolist()}


# ---- sentence encoders -----------------------------------------------------------------------------------

def encoder_of(obj, run_id: str):
    """The sentence encoder of a pretrained directory, or of a run fine-tuned from one."""
    if hasattr(obj, "similarity") and hasattr(obj, "embed"):
        return obj
    make = getattr(obj, "sentence_encoder", None)
    encoder = None if make is None else make()
    if encoder is None:
        kind = obj.config.task.kind
        raise SeqlabError(f"{run_id} is a {kind} run without a pretrained encoder, so it has no sentence embeddings")
    return encoder


def similarity(encoder, a: str, b: str) -> dict:
    if not a.strip() or not b.strip():
        raise SeqlabError("both sentences must have some text")
    return {"a": a, "b": b, "cosine": encoder.similarity(a, b)}
