"""Corpus BLEU on WMT17 en-de system outputs: seqlab against sacreBLEU 2.6.0, one system and several.

The data are the 16 WMT17 en-de system outputs (../shared/data/wmt17_en_de_systems), in file-name order,
each scored against the newstest2017 reference (3,004 segments). Two rows:

* one system (the first, 3,004 pairs): the headline. Each library's ``BLEU().corpus_score(hyps, [refs])``.
* ``--systems`` systems against the same references, one score per system, as when a shared task scores all
  its submissions. sacreBLEU's documented way is one ``BLEU(references=[refs])`` object, which tokenises and
  counts the references once, then ``corpus_score(hyps, None)`` per system; building that cache is inside the
  timed figure (it is work the task needs) and its median is also reported apart. seqlab's ``BLEU`` has no
  reference cache (it is a frozen options object; its own reuse only spans the segments of one call), so it
  scores each system with a separate ``corpus_score(hyps, [refs])`` call and re-tokenises the references each
  time.

Garbage collection: seqlab's ``corpus_score`` pauses the cyclic collector inside itself (``gc_paused``), as
shipped. So that GC pausing is not one side's privilege, each row also times sacreBLEU with the caller pausing
the collector around the call, and seqlab with its pause disabled; each side's best candidate counts. All
candidates run in this process through ``bench.common.interleaved``: shuffled order every round, the warm-up
round discarded, ``gc.collect()`` before every call, fresh metric objects per call (no cache survives a
round). Every row checks that both libraries' scores (score, precisions, bp, sys_len, ref_len, counts,
totals) are identical with ``==``, system by system; a mismatch fails the benchmark.

Prints one JSON line last: ``peer_best``, ``ratio`` = sacreBLEU's best median time / seqlab's best on the one
system row (above 1 = seqlab faster), the multi-system ratio, and every candidate's median.

    .venv/bin/python bench/bleu.py [--systems 7] [--rounds 11]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import seqlab.metrics.bleu as seqlab_bleu  # noqa: E402
from bench.common import interleaved, median, require, verdict, write_section  # noqa: E402
from seqlab.metrics.bleu import BLEU  # noqa: E402

DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
WMT = DATA / "wmt17_en_de_systems"
TARGET = 1.5  # seqlab's one-system BLEU at least 1.5x as fast as sacreBLEU's best
PEER_DOC = ("sacreBLEU 2.6.0 `sacrebleu.metrics.BLEU` docstring, parameter `references`: \"the reference n-grams "
            "and lengths will be pre-computed and cached for faster BLEU computation across many systems\" "
            "(https://github.com/mjpost/sacrebleu, sacrebleu/metrics/bleu.py); README \"Using SacreBLEU from "
            "Python\" (the object-oriented `BLEU().corpus_score` API)")
STATS = ("score", "precisions", "bp", "sys_len", "ref_len", "counts", "totals")


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:  # as sacreBLEU's CLI: BOM kept, split on \n
        return [line.rstrip("\n") for line in f]


def load_systems(n_systems: int) -> tuple[list[str], dict[str, list[str]]]:
    """(reference lines, system name -> hypothesis lines) for the first ``n_systems`` systems by file name."""
    if not WMT.is_dir():
        raise SystemExit(f"error: needs {WMT}; set SEQLAB_SHARED_DATA to the shared data folder")
    paths = sorted((WMT / "systems").iterdir())
    if not 1 <= n_systems <= len(paths):
        raise SystemExit(f"error: --systems must be 1..{len(paths)}")
    ref = read_lines(WMT / "newstest2017-ende-ref.de")
    return ref, {path.name.split(".")[1]: read_lines(path) for path in paths[:n_systems]}


@contextlib.contextmanager
def seqlab_gc_left_on():
    """Make seqlab's corpus_score leave the garbage collector running (its ``gc_paused`` becomes a no-op)."""
    saved = seqlab_bleu.gc_paused
    seqlab_bleu.gc_paused = contextlib.nullcontext
    try:
        yield
    finally:
        seqlab_bleu.gc_paused = saved


@contextlib.contextmanager
def caller_gc_paused():
    """The caller pauses the cyclic garbage collector around a sacreBLEU call (restored afterwards)."""
    with seqlab_bleu.gc_paused():
        yield


def candidates(ref: list[str], systems: dict[str, list[str]], outputs: dict, cache_s: list[float]) -> dict:
    """name (with its configuration) -> callable scoring every system; each stores its scores in ``outputs``.

    sacreBLEU's callables build one ``BLEU(references=[ref])`` cache per call (timed) and append its build
    time to ``cache_s``. With one system the cache is the same work as a plain call, so that row uses
    sacreBLEU's plain ``corpus_score(hyps, [refs])`` instead.
    """
    from sacrebleu.metrics import BLEU as SacreBLEU

    many = len(systems) > 1

    def ours(context):
        def run(name):
            with context():
                outputs[name] = [BLEU().corpus_score(hyps, [ref]) for hyps in systems.values()]
        return run

    def theirs(context):
        def run(name):
            with context():
                if not many:
                    outputs[name] = [SacreBLEU().corpus_score(hyps, [ref]) for hyps in systems.values()]
                    return
                t0 = time.perf_counter()
                cached = SacreBLEU(references=[ref])
                cache_s.append(time.perf_counter() - t0)
                outputs[name] = [cached.corpus_score(hyps, None) for hyps in systems.values()]
        return run

    call = ("BLEU(references=[refs]) once (timed), then corpus_score(hyps, None) per system" if many
            else "BLEU().corpus_score(hyps, [refs])")
    per_system = "BLEU().corpus_score(hyps, [refs]) per system" if many else "BLEU().corpus_score(hyps, [refs])"
    runs = {f"seqlab {per_system}, GC paused inside (as shipped)": ours(contextlib.nullcontext),
            f"seqlab {per_system}, its GC pause disabled": ours(seqlab_gc_left_on),
            f"sacreBLEU {call}": theirs(contextlib.nullcontext),
            f"sacreBLEU {call}, GC paused by the caller": theirs(caller_gc_paused)}
    return {name: (lambda run=run, name=name: run(name)) for name, run in runs.items()}


def identical(a, b) -> bool:
    return all(getattr(a, key) == getattr(b, key) for key in STATS)


def require_identical(*rows: dict) -> None:
    """Every row's scores identical on both sides (``identical``, exact: counting n-grams has no rounding, and
    both sides form the score from the same counts in float64), or the bench fails before its section is written."""
    bad = [f"{row['systems']} system(s)" for row in rows if not row["identical"]]
    require(not bad, f"seqlab's and sacreBLEU's scores differ ({', '.join(STATS)} compared with ==): {', '.join(bad)}")


def measure(ref: list[str], systems: dict[str, list[str]], rounds: int) -> dict:
    """Interleaved medians of every candidate on ``systems``; checks every system's scores agree."""
    outputs: dict[str, list] = {}
    cache_s: list[float] = []
    calls = candidates(ref, systems, outputs, cache_s)
    times = interleaved(calls, rounds, warmup=1)
    medians = {name: median(ts) for name, ts in times.items()}
    first = next(iter(calls))  # seqlab as shipped
    same = all(identical(a, b) for name in outputs for a, b in zip(outputs[name], outputs[first]))
    ours = {name: s for name, s in medians.items() if name.startswith("seqlab")}
    peers = {name: s for name, s in medians.items() if name.startswith("sacreBLEU")}
    return {"systems": len(systems), "pairs": sum(map(len, systems.values())), "medians": medians,
            "identical": same, "scores": [s.score for s in outputs[first]], "signature": outputs[first][0].signature,
            "cache_s": median(cache_s) if cache_s else None, **verdict(ours, peers, higher_is_better=False)}


def table(label: str, row: dict) -> list[str]:
    best = row["peer_value"]
    return [f"| {label} | {name} | {s:.3f} | {best / s:.2f}x | {'yes' if row['identical'] else 'NO'} |"
            for name, s in row["medians"].items()]


def section(one: dict, many: dict, rounds: int, load: float, names: list[str], sacrebleu_version: str) -> str:
    met = "met" if one["ratio"] >= TARGET else "NOT met"
    rows = ["| row | candidate (configuration) | median s | speed vs sacreBLEU best | scores identical |",
            "|---|---|---|---|---|",
            *table(f"1 system ({names[0]}, {one['pairs']:,} pairs)", one),
            *table(f"{many['systems']} systems, same refs ({many['pairs']:,} pairs)", many)]
    cache = f"{many['cache_s']:.3f} s" if many["cache_s"] is not None else "n/a (one system)"
    return (
        f"## BLEU: seqlab vs sacreBLEU {sacrebleu_version} (bench/bleu.py)\n\n"
        f"Corpus BLEU (13a, exp smoothing) of WMT17 en-de system outputs against newstest2017 (3,004 segments). "
        f"Row 1, the headline: one system ({names[0]}), each library's `BLEU().corpus_score(hyps, [refs])`. "
        f"Row 2: the systems {', '.join(names)}, one score each, against the same references. sacreBLEU scores "
        f"them as its documentation recommends for many systems: one `BLEU(references=[refs])` object, which "
        f"tokenises and counts the references once, then `corpus_score(hyps, None)` per system; building that "
        f"cache is inside the timed figure (median {cache} of it). seqlab's `BLEU` has no such reference cache "
        f"in its API (a frozen options object; it reuses a reference's n-grams only within one call), so it "
        f"makes a separate `corpus_score` call per system and re-tokenises the references each time.\n\n"
        f"seqlab's `corpus_score` pauses the cyclic garbage collector inside itself (as shipped). So that GC "
        f"pausing is not one side's alone, sacreBLEU is also timed with the caller pausing the collector "
        f"around its call, and seqlab with its pause disabled; each side's best counts. All candidates run "
        f"in one process, {rounds} rounds in a freshly shuffled order, one warm-up round discarded, "
        f"`gc.collect()` before every call, fresh metric objects per call; medians. Scores identical = score, "
        f"precisions, bp, sys_len, ref_len, counts and totals equal with ==, for every system of the row. "
        f"Load average at the start: {load:.1f}.\n\n"
        + "\n".join(rows) + "\n\n"
        f"Peer configuration follows: {PEER_DOC}.\n\n"
        f"**ratio (one system, sacreBLEU best / seqlab best) = {one['ratio']:.2f}** (peer best: {one['peer_best']}); "
        f"{many['systems']} systems against one reference set: {many['ratio']:.2f}.\n\n"
        f"Target: BLEU one system >= {TARGET}x sacreBLEU: **{met}** in this run.\n\n"
        f"Score of {names[0]}: {one['scores'][0]!r} ({one['signature']}).\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=7, help="systems scored against one reference set (2-16)")
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds kept (after 1 warm-up)")
    args = parser.parse_args()
    if args.systems < 2:
        raise SystemExit("error: --systems must be at least 2 (the one-system row is always run)")

    import sacrebleu

    ref, systems = load_systems(args.systems)
    names = list(systems)
    load = os.getloadavg()[0]
    one = measure(ref, {names[0]: systems[names[0]]}, args.rounds)
    many = measure(ref, systems, args.rounds)
    require_identical(one, many)  # a mismatch stops here: no section
    markdown = section(one, many, args.rounds, load, names, sacrebleu.__version__)
    write_section("bleu", markdown)
    print(markdown)
    ok = one["identical"] and many["identical"]
    print(json.dumps({"bench": "bleu", "identical": ok, "seqlab_best": one["seqlab_best"],
                      "peer_best": one["peer_best"], "ratio": one["ratio"], "target": TARGET,
                      "target_met": one["ratio"] >= TARGET, "multi_system_ratio": many["ratio"],
                      "multi_system_peer_best": many["peer_best"], "systems": many["systems"],
                      "sacrebleu_cache_s": round(many["cache_s"], 4),
                      "one_system_medians_s": {k: round(v, 4) for k, v in one["medians"].items()},
                      "multi_system_medians_s": {k: round(v, 4) for k, v in many["medians"].items()}}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
