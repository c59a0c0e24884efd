"""`seqlab serve` under load on loopback, and streaming generation against `seqlab generate`.

1. Trains tiny runs (tests/helpers.py: an lm-char, a tagger, an embedding run...) and an lm-char of the preset's
   size (4 layers, d_model 128, max_len 128; a few steps: speed does not depend on quality), then starts the real
   command, `python -m seqlab serve ROOT --port P`, in a subprocess.
2. Load: ``--clients`` threads (default 8) send ``--requests`` requests in all (default 400), a fixed shuffled mix
   of generate (tiny LM, 20 new tokens), predict (tagger, 2 lines) and neighbors (word vectors); then stop. Reports
   p50/p95 latency, requests/s and the error count (anything but 200).
3. Streaming: 256 new tokens (greedy, 16-character prompt) from the preset-size LM over server-sent events, end to
   end (request to the `done` event), against the same generation through the library call `seqlab generate` makes
   (`seqlab.load(RUN).generate(...)`, model loaded once: the CLI's start-up is not generation), timed by
   bench/common.py's ``interleaved``: each round runs both sides in an order shuffled afresh (seeded), the warm-up
   round discarded, ``gc.collect()`` before each timed side; medians. Both sides' texts are checked equal in every
   round (a difference stops the bench, no section written). ``ratio`` = streamed tokens/s over `seqlab
   generate`'s (target >= 0.9).
4. Concurrent streams (issue #55, section ``serve-streams``): 1, 2, 4 and 8 greedy streams at once (each its own
   16-character prompt) through the served preset-size LM, whose requests share one batched decode loop
   (``LanguageModel.stream``: seqlab.decoding.continuous.ContinuousBatcher), at two lengths: as many new tokens as
   the KV cache holds after the prompt (max_len less the prompt's tokens: every token a cached step), and
   ``--tokens`` (256), past max_len, where each further token recomputes its row's whole window; total tokens/s
   (every stream's tokens over the wall time from the first request to the last ``done``), its ratio to one stream
   (target: 8 streams >= 4x), interleaved shuffled rounds, medians. Check (a failure exits non-zero, no section
   written): each stream's token ids equal its solo run's (``seqlab.decoding.decode.generate``, greedy, in this
   process) up to its first difference, and that difference falls on a token the server flagged as a near tie
   (``near_tie``: its top two logits within the batched step's rounding bound); the near ties are counted in the
   section.

    .venv/bin/python bench/serve.py [--clients 8] [--requests 400] [--rounds 5] [--parts load,stream,concurrent]
    SEQLAB_BENCH_RESULTS=/tmp/x.md .venv/bin/python bench/serve.py --parts concurrent --rounds 1 --tokens 32

Prints one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import interleaved, machine, median, require, write_section  # noqa: E402

NEW_TOKENS, PROMPT = 256, "The result of th"  # 16 characters
STREAMS = (1, 2, 4, 8)  # concurrent greedy streams
STREAM_PROMPTS = ("The result of th", "Once upon a time", "In the beginning", "A cat sat on the",
                  "She said that he", "We went down to ", "It was a dark ni", "All of them were")
TARGET_STREAMS = 4.0  # 8 streams >= 4x one stream's total tokens/s
THREADS = 1  # torch threads on both sides: on this shared 2-core machine more threads spin against other jobs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root: Path, port: int) -> subprocess.Popen:
    import httpx

    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS)}  # torch's intra-op threads in the server
    proc = subprocess.Popen([sys.executable, "-m", "seqlab", "serve", str(root), "--port", str(port)],
                            cwd=HERE.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"seqlab serve did not start: {proc.stdout.read()}")


def load_test(base: str, ids: dict, clients: int, total: int) -> dict:
    import httpx

    mix = [("generate", f"/api/runs/{ids['lm']}/generate", {"prompt": "The cat", "max_new_tokens": 20, "seed": 1}),
           ("predict", f"/api/runs/{ids['tag']}/predict", {"lines": ["the cat sees Anna", "a dog near Oslo"]}),
           ("neighbors", f"/api/runs/{ids['embed']}/neighbors", {"word": "cat", "k": 5})]
    work = [mix[i % 3] for i in range(total)]
    random.Random(0).shuffle(work)
    with httpx.Client(base_url=base, timeout=60) as warm:  # load every model once: the cache, not the load, is timed
        for _, path, body in mix:
            warm.post(path, json=body).raise_for_status()
    lock = threading.Lock()
    latencies: dict[str, list[float]] = {name: [] for name, _, _ in mix}
    errors: list[str] = []

    def client():
        with httpx.Client(base_url=base, timeout=60) as c:
            while True:
                with lock:
                    if not work:
                        return
                    name, path, body = work.pop()
                t = time.perf_counter()
                try:
                    r = c.post(path, json=body)
                    ok = r.status_code == 200
                except httpx.HTTPError as e:
                    ok, r = False, e
                dt = time.perf_counter() - t
                with lock:
                    latencies[name].append(dt)
                    if not ok:
                        errors.append(f"{name}: {getattr(r, 'status_code', r)}")

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    every = sorted(x for v in latencies.values() for x in v)

    def pct(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(q * len(values)))] * 1000

    return {"requests": len(every), "errors": len(errors), "error_samples": errors[:3], "seconds": wall,
            "requests_per_s": len(every) / wall, "p50_ms": pct(every, 0.5), "p95_ms": pct(every, 0.95),
            "by_kind": {k: {"n": len(v), "p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)} for k, v in latencies.items()}}


def stream_rate(base: str, run_id: str) -> tuple[float, str]:
    import httpx

    params = {"prompt": PROMPT, "max_new_tokens": NEW_TOKENS, "temperature": 0}
    count, text = 0, ""
    t = time.perf_counter()
    with httpx.stream("GET", f"{base}/api/runs/{run_id}/generate/stream", params=params, timeout=120) as r:
        r.raise_for_status()
        event = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "token":
                count += 1
            elif line.startswith("data: ") and event == "done":
                text = json.loads(line[6:])["text"]
    dt = time.perf_counter() - t
    return count / dt, text


def stream_ids(base: str, run_id: str, prompt: str, tokens: int) -> tuple[list[int], list[bool]]:
    """One greedy stream's token ids and their near-tie flags (the server's ``token`` events)."""
    import httpx

    params = {"prompt": prompt, "max_new_tokens": tokens, "temperature": 0}
    ids, near, event = [], [], None
    with httpx.stream("GET", f"{base}/api/runs/{run_id}/generate/stream", params=params, timeout=600) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "token":
                data = json.loads(line[6:])
                ids.append(data["id"])
                near.append(bool(data["near_tie"]))
            elif line.startswith("data: ") and event == "failure":
                raise RuntimeError(f"stream failed: {line[6:]}")
    return ids, near


def concurrent_streams(base: str, run_id: str, n: int, tokens: int) -> tuple[float, list]:
    """``n`` streams at once (prompts STREAM_PROMPTS[:n]): (wall seconds, each stream's (ids, near ties))."""
    out: list = [None] * n
    errors: list[BaseException] = []

    def client(i):
        try:
            out[i] = stream_ids(base, run_id, STREAM_PROMPTS[i], tokens)
        except BaseException as e:  # noqa: BLE001 - raised below, in the bench's thread
            errors.append(e)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    seconds = time.perf_counter() - t
    if errors:
        raise errors[0]
    return seconds, out


def check_stream(ids: list[int], near: list[bool], solo: list[int]) -> tuple[bool, int | None]:
    """(whether a stream's tokens are its solo run's up to a flagged near tie, the first differing position or
    None): equal, or the first difference falls on a token flagged as a near tie (after it the two may diverge)."""
    for i, (a, b) in enumerate(zip(ids, solo)):
        if a != b:
            return near[i], i
    if len(ids) != len(solo):  # equal tokens, another length: no near tie explains it
        return False, min(len(ids), len(solo))
    return True, None


def streams_part(base: str, run_id: str, lm, rounds: int, tokens: int) -> dict:
    """1, 2, 4, 8 concurrent streams: each count's median total tokens/s, checked against the solo runs."""
    from seqlab.decoding.decode import Sampling, generate

    solo = {p: generate(lm.model, [lm.tokenizer.encode(p)], tokens, Sampling(0), eos_id=lm.tokenizer.eos_id,
                        device=lm.device)[0] for p in STREAM_PROMPTS[:max(STREAMS)]}
    seen: dict[int, list] = {n: [] for n in STREAMS}

    def candidate(n):
        def run():
            seconds, out = concurrent_streams(base, run_id, n, tokens)
            seen[n].append(out)
            return seconds
        return run

    counts = {n: sum(len(solo[p]) for p in STREAM_PROMPTS[:n]) for n in STREAMS}
    times = interleaved({str(n): candidate(n) for n in STREAMS}, rounds, warmup=1)
    bad, ties, diverged = [], {n: 0 for n in STREAMS}, {n: 0 for n in STREAMS}
    for n in STREAMS:
        for out in seen[n]:
            for prompt, (ids, near) in zip(STREAM_PROMPTS, out):
                ok, first = check_stream(ids, near, solo[prompt])
                ties[n] += sum(near)
                diverged[n] += first is not None
                if not ok:
                    bad.append(f"{n} streams, prompt {prompt!r}: differs from its solo run at token {first}, "
                               f"not a flagged near tie")
    if bad:
        raise SystemExit("concurrent streams: check failed (no section written):\n  " + "\n  ".join(bad))
    rate = {n: counts[n] / median(times[str(n)]) for n in STREAMS}
    return {"rate": rate, "ratio": {n: rate[n] / rate[1] for n in STREAMS}, "near_ties": ties,
            "diverged": diverged, "streams_checked": {n: len(seen[n]) * n for n in STREAMS}, "tokens": tokens,
            "rounds": rounds}


def within_cache(lm) -> int:
    """The most new tokens every stream prompt's row takes from the shared KV cache: each prompt's tokens and its
    new ones up to the model's max_len; a later token recomputes its row's whole window (module docstring)."""
    return lm.model.cfg.max_len - max(len(lm.tokenizer.encode(p)) for p in STREAM_PROMPTS)


def streams_section(runs: dict, threads: int, max_len: int, within: int) -> str:
    """``runs``: streams_part's result per new-token count (``within`` of them inside the cache, and more)."""
    first = next(iter(runs.values()))
    lines = [f"## `seqlab serve`: concurrent greedy streams (bench/serve.py)", "",
             f"The real command on loopback (`python -m seqlab serve`, {threads} torch thread{'s' * (threads > 1)}), "
             f"the lm-char run at the preset's size (max_len {max_len}); N streams at once, each its own 16-character "
             f"prompt, greedy, sharing the model's one batched decode loop (`LanguageModel.stream`, "
             f"seqlab.decoding.continuous), at {' and '.join(map(str, runs))} new tokens: up to {within} every token "
             f"comes from the shared KV cache (prompt and output within max_len)"
             + (f"; past that, every further token recomputes its row's last {max_len} tokens without a cache (the "
                f"rows of one step in one batch; solo generation recomputes them the same way). "
                if any(t > within for t in runs) else ". ") +
             f"Total tokens/s = "
             f"every stream's tokens / the wall time from the first request to the last `done`; medians of "
             f"{first['rounds']} interleaved, shuffled round{'s' * (first['rounds'] > 1)} after a discarded warm-up "
             f"round, each length apart. Load average at the end: {os.getloadavg()[0]:.1f}.", "",
             "| new tokens | streams | total tokens/s | vs one stream | streams checked (warm-up round included) | "
             "near ties flagged | streams that left their solo run's tokens (at a near tie) |",
             "|---|---|---|---|---|---|---|"]
    for tokens, res in runs.items():
        lines += [f"| {tokens} | {n} | {res['rate'][n]:.0f} | {res['ratio'][n]:.2f} | {res['streams_checked'][n]} | "
                  f"{res['near_ties'][n]} | {res['diverged'][n]} |" for n in STREAMS]
    lines += ["", f"Every stream's token ids equal its solo run's (`seqlab.decoding.decode.generate`, greedy) up to "
              f"its first difference, and every difference fell on a token the server flagged as a near tie "
              f"(checked; a failure writes no section).", ""]
    for tokens, res in runs.items():
        met = res["ratio"][max(STREAMS)] >= TARGET_STREAMS
        lines.append(f"Target: {max(STREAMS)} streams >= {TARGET_STREAMS:.0f}x one stream's total tokens/s, "
                     f"{tokens} new tokens: this run {res['ratio'][max(STREAMS)]:.2f}x: "
                     f"{'**met**' if met else '**not met**'}.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--parts", default="load,stream,concurrent",
                        help="which parts run: load (the load test), stream (streaming vs seqlab generate), concurrent "
                             "(1-8 concurrent streams); the sections of the parts that ran are written")
    parser.add_argument("--tokens", type=int, default=NEW_TOKENS, help="new tokens a stream (concurrent part)")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"load", "stream", "concurrent"}:
        raise SystemExit(f"--parts: choose among load, stream, concurrent, got {args.parts}")
    if parts & {"load", "stream"} and parts & {"load", "stream"} != {"load", "stream"}:
        raise SystemExit("--parts: load and stream write one section together: give both or neither")

    import torch

    from helpers import train_serve_runs

    from seqlab import api

    tmp = Path(tempfile.mkdtemp(prefix="seqlab-bench-serve-"))
    root = tmp / "runs"
    print("training the runs ...", file=sys.stderr, flush=True)
    torch.set_num_threads(THREADS)
    ids = train_serve_runs(root, tmp / "data")
    corpus = tmp / "data" / "big.txt"
    corpus.write_text((tmp / "data" / "lm.txt").read_text() * 20)
    api.train_run("lm-char", root / "big", overrides=[f"data.source={corpus}", "train.max_steps=10",
                                                 "train.eval_every=5", "train.save_every=5", "train.warmup_steps=1",
                                                 "train.progress=false", "train.device=cpu"], log=lambda *a, **k: None)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(root, port)
    lm = api.load(root / "big", device="cpu")
    try:
        within = within_cache(lm)
        streams = {tokens: streams_part(base, "runs/big", lm, args.rounds, tokens)
                   for tokens in dict.fromkeys((within, args.tokens))} if "concurrent" in parts else None
        if "load" in parts:
            load_and_stream(base, ids, lm, args)
    finally:
        server.terminate()
        server.wait(10)
    if streams is not None:  # checked in streams_part: a failed check exits before this
        write_section("serve-streams", streams_section(streams, THREADS, lm.model.cfg.max_len, within))
        print(json.dumps({"streams": {tokens: {"tokens_per_s": {n: round(r, 1) for n, r in res["rate"].items()},
                                               "ratio": {n: round(r, 3) for n, r in res["ratio"].items()},
                                               "near_ties": res["near_ties"], "diverged": res["diverged"],
                                               "target_met": res["ratio"][max(STREAMS)] >= TARGET_STREAMS}
                                      for tokens, res in streams.items()}, "machine": machine()}))


def stream_rounds(served_call, direct_call, count_tokens, rounds: int, seed: int = 0) -> tuple[list, list]:
    """Streaming against the library call, ``rounds`` kept rounds of both sides through ``interleaved`` (an order
    shuffled afresh every round from ``seed``, one warm-up round discarded, ``gc.collect()`` before each side):
    (served tokens/s per round, direct tokens/s per round), paired by round. ``served_call`` returns (tokens/s
    measured end to end, text); ``direct_call`` returns the text, timed here; each round's two texts must be equal
    (``require``: a difference stops the bench before any section is written)."""
    texts: dict[str, str] = {}

    def served() -> float:
        rate, texts["served"] = served_call()
        return rate

    def direct() -> float:
        t = time.perf_counter()
        texts["direct"] = direct_call()
        return count_tokens(texts["direct"]) / (time.perf_counter() - t)

    def checked(fn):
        def call() -> float:
            rate = fn()
            if len(texts) == 2:  # both sides of this round ran: their texts must agree
                require(texts["served"] == texts["direct"], "the stream and seqlab generate differ: "
                        f"{texts['served'][:60]!r} against {texts['direct'][:60]!r}")
                texts.clear()
            return rate
        return call

    kept = interleaved({"served": checked(served), "direct": checked(direct)}, rounds, warmup=1, seed=seed)
    return kept["served"], kept["direct"]


def load_and_stream(base: str, ids: dict, lm, args) -> None:
    """Parts 2 and 3 (module docstring): the load test, then streaming against `seqlab generate`; the serve
    section."""
    load_start = os.getloadavg()[0]
    print("load test ...", file=sys.stderr, flush=True)
    load = load_test(base, ids, args.clients, args.requests)
    print(json.dumps(load), file=sys.stderr)
    served, direct = stream_rounds(lambda: stream_rate(base, "runs/big"),
                                   lambda: lm.generate(PROMPT, max_new_tokens=NEW_TOKENS, temperature=0),
                                   lambda text: len(lm.tokenizer.encode(text)), args.rounds)
    rs, rd = median(served), median(direct)
    load_avg = os.getloadavg()
    lines = [f"## `seqlab serve`: load test and streaming generation (bench/serve.py)", "",
             f"The real command on loopback (`python -m seqlab serve`, one process); the tiny runs of "
             f"tests/helpers.py; one torch thread in the server and in the `seqlab generate` process. Load average "
             f"{load_start:.1f} at the start, {load_avg[0]:.1f} at the end ({os.cpu_count()} cores).", "",
             f"**Load**: {args.clients} concurrent clients, {load['requests']} requests (generate 20 tokens / predict "
             f"2 lines / neighbors, shuffled), {load['errors']} errors; {load['requests_per_s']:.1f} requests/s, "
             f"latency p50 {load['p50_ms']:.0f} ms, p95 {load['p95_ms']:.0f} ms.", "",
             "| request | n | p50 ms | p95 ms |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['p50_ms']:.0f} | {v['p95_ms']:.0f} |" for k, v in load["by_kind"].items()]
    size = lm.config.model
    lines += ["", f"**Streaming**: lm-char at the preset's size ({size.n_layers} layers, d_model {size.d_model}), "
                  f"greedy, {NEW_TOKENS} new tokens, median of {args.rounds} rounds after a discarded warm-up round "
                  f"(in which the server loads the model); each round runs both sides, in an order shuffled afresh "
                  f"every round (seeded), `gc.collect()` in this process (the library call's) before each timed side "
                  f"(bench/common.py `interleaved`): "
                  f"server-sent events end to end "
                  f"{rs:.0f} tokens/s, `seqlab generate`'s library call {rd:.0f} tokens/s: **{rs / rd:.2f}x** "
                  f"(target >= 0.9x); the same text both ways in every round (checked). The rounds' ratios, a "
                  f"measure of this machine's noise: {', '.join(f'{a / b:.2f}' for a, b in zip(served, direct))}."]
    write_section("serve", "\n".join(lines))
    print(json.dumps({"requests": load["requests"], "errors": load["errors"],
                      "requests_per_s": round(load["requests_per_s"], 1), "p50_ms": round(load["p50_ms"], 1),
                      "p95_ms": round(load["p95_ms"], 1), "stream_tokens_per_s": round(rs, 1),
                      "generate_tokens_per_s": round(rd, 1), "ratio": round(rs / rd, 3), "machine": machine()}))


if __name__ == "__main__":
    main()
