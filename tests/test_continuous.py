"""Continuous batching (seqlab.decoding.continuous): greedy streams that join one batched decode loop at different
steps, with prompts of different lengths (one longer than the loop's clock, one that fills max_len) and outputs that
slide past max_len, give their solo runs' tokens (seqlab.decoding.decode.stream) except after a counted near tie;
concurrent threads share the loop; a closed stream leaves it."""

from __future__ import annotations

import threading

import pytest
import torch

from seqlab.decoding.continuous import ContinuousBatcher, TokenStream
from seqlab.decoding.decode import Sampling, stream
from seqlab.models.transformer import TransformerLM, TransformerLMConfig

pytestmark = pytest.mark.usefixtures("one_thread")
MAX_LEN = 16


def lm32(seed=0) -> TransformerLM:
    """A tiny float32 LM (rounding of the batched products is real here) with weights of std 0.3: peaked
    distributions, so greedy outputs vary."""
    torch.manual_seed(seed)
    cfg = TransformerLMConfig(vocab_size=13, n_layers=2, n_heads=2, d_model=8, d_ff=16, max_len=MAX_LEN,
                              dropout=0.0, positions="learned")
    model = TransformerLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.3)
    return model


def solo(model, prompt, new):
    return [t for t, _ in stream(model, prompt, new, Sampling(0))]


def check_against_solo(model, prompt, new, items):
    """A stream's tokens equal its solo run's up to the first difference, which must follow a near tie."""
    got, want = [i.token for i in items], solo(model, prompt, new)
    first = next((n for n, (a, b) in enumerate(zip(got, want)) if a != b), None)
    if first is None:
        assert got == want, (prompt, got, want)
    else:
        assert any(i.near_tie for i in items[:first + 1]), (prompt, first, got, want)


def drain(s: TokenStream) -> list:
    out = []
    while not s._queue.empty():
        item = s._queue.get()
        if not isinstance(item, tuple):
            break
        out.append(item)
    return out


def test_streams_joining_at_different_steps_equal_their_solo_runs():
    """Driven step by step (``iterate``): A starts alone, B joins at step 3, C at step 5 with a prompt longer than
    the clock (every row moves right), D at step 6 with a prompt of max_len tokens (it slides from its first step);
    A and C run past max_len (the clock compacts, then they slide)."""
    model = lm32()
    b = ContinuousBatcher(model, eos_id=None)
    requests = {"A": ([1, 2, 3], 30, 0), "B": ([4, 5], 9, 3), "C": (list(range(1, 12)), 24, 5),
                "D": ([7] * MAX_LEN, 5, 6)}
    streams = {name: TokenStream() for name in requests}
    items: dict[str, list] = {name: [] for name in requests}
    with torch.inference_mode():
        for step in range(40):
            new = [(streams[n], p, k, Sampling(0), None) for n, (p, k, at) in requests.items() if at == step]
            b.iterate(new)
            for n in requests:
                items[n] += drain(streams[n])
    for n, (prompt, new, _) in requests.items():
        assert len(items[n]) == new
        check_against_solo(model, prompt, new, items[n])
    assert b.rows_stepped > b.steps  # rows shared steps
    assert b.cache is None and not b.cached and not b.sliding


def test_concurrent_threads_share_the_loop():
    """Six threads submit greedy prompts of different lengths and lengths at once; each gets its solo tokens (up to
    near ties, counted per stream and in the loop)."""
    model = lm32(seed=1)
    b = ContinuousBatcher(model, eos_id=None, idle_s=0.2)
    jobs = [([1 + i] * (1 + 2 * i), 6 + 4 * i) for i in range(6)]  # prompts of 1..11 tokens, 6..26 new
    results: dict[int, list] = {}

    def run(i):
        prompt, new = jobs[i]
        results[i] = list(b.submit(prompt, new, Sampling(0)))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, (prompt, new) in enumerate(jobs):
        assert len(results[i]) == new
        check_against_solo(model, prompt, new, results[i])
    assert b.near_ties == sum(sum(x.near_tie for x in r) for r in results.values())


def test_eos_and_a_closed_stream_leave_the_batch():
    model = lm32()
    free = solo(model, [3, 4], 10)
    b = ContinuousBatcher(model, eos_id=free[4])
    ended = list(b.submit([3, 4], 10, Sampling(0)))
    assert [x.token for x in ended] == free[:free.index(free[4]) + 1]
    s = b.submit([5, 6, 7], 200)
    first = next(s)
    s.close()  # the row leaves at the loop's next step: what it queued by now, and at most the step in flight
    queued = s._queue.qsize()  # the loop runs in its own thread: on a loaded machine it may be several tokens ahead
    assert sum(1 for _ in s) <= queued + 1 and isinstance(first.token, int)
