"""Corpus BLEU on 20,000 WMT17 (hypothesis, reference) pairs: seqlab against sacreBLEU 2.6.0.

The pairs are the 16 WMT17 en-de system outputs (../shared/data/wmt17_en_de_systems), in file-name
order, each paired line by line with the newstest2017 reference and concatenated, cut at 20,000: the
same 3,004 references recur about 7 times, as when one scores several systems at once. A second row
scores one system alone (3,004 pairs, every reference once). Both libraries run in this process,
interleaved, on fresh metric objects (so no cache survives a repeat); the figures are medians. The
scores must be identical (==) or the benchmark fails.

Prints one JSON line last: ``ratio`` = sacreBLEU's median wall time / seqlab's (above 1 = seqlab faster).

    .venv/bin/python bench/bleu.py [--pairs 20000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import median, write_section  # noqa: E402
from seqlab.metrics.bleu import BLEU  # noqa: E402

DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
WMT = DATA / "wmt17_en_de_systems"


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:  # as sacreBLEU's CLI: BOM kept, split on \n
        return [line.rstrip("\n") for line in f]


def build_pairs(n_pairs: int) -> tuple[list[str], list[str], list[str]]:
    """(hypotheses, references, system names used), n_pairs long."""
    if not WMT.is_dir():
        raise SystemExit(f"error: needs {WMT}; set SEQLAB_SHARED_DATA to the shared data folder")
    ref = read_lines(WMT / "newstest2017-ende-ref.de")
    hyps, refs, names = [], [], []
    for path in sorted((WMT / "systems").iterdir()):
        if len(hyps) >= n_pairs:
            break
        hyps += read_lines(path)
        refs += ref
        names.append(path.name.split(".")[1])
    if len(hyps) < n_pairs:
        raise SystemExit(f"error: only {len(hyps)} pairs available, asked for {n_pairs}")
    return hyps[:n_pairs], refs[:n_pairs], names


def compare(hyps: list[str], refs: list[str], repeats: int) -> dict:
    """Interleaved timings of both libraries; checks the scores are identical."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    wall = {"seqlab": [], "sacrebleu": []}
    cpu = {"seqlab": [], "sacrebleu": []}
    results = {}
    for _ in range(repeats):
        for name, make in [("seqlab", BLEU), ("sacrebleu", SacreBLEU)]:
            t0, c0 = time.perf_counter(), time.process_time()
            results[name] = make().corpus_score(hyps, [refs])
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    ours, theirs = results["seqlab"], results["sacrebleu"]
    identical = (ours.score, ours.precisions, ours.bp, ours.sys_len, ours.ref_len, ours.counts, ours.totals) == (
        theirs.score, theirs.precisions, theirs.bp, theirs.sys_len, theirs.ref_len, theirs.counts, theirs.totals)
    row = {"pairs": len(hyps), "score": ours.score, "identical": identical, "signature": ours.signature}
    for name in wall:
        row[f"{name}_s"] = median(wall[name])
        row[f"{name}_cpu_s"] = median(cpu[name])
    row["ratio"] = row["sacrebleu_s"] / row["seqlab_s"]
    row["cpu_ratio"] = row["sacrebleu_cpu_s"] / row["seqlab_cpu_s"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=20000, help="number of (hypothesis, reference) pairs")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved repeats per library")
    args = parser.parse_args()

    import sacrebleu

    hyps, refs, names = build_pairs(args.pairs)
    load = os.getloadavg()[0]
    main_row = compare(hyps, refs, args.repeats)
    one_system = compare(hyps[:3004], refs[:3004], args.repeats)
    rows = [(f"{args.pairs:,} pairs, {len(names)} systems", main_row), (f"1 system ({names[0]})", one_system)]
    table = ["| corpus | pairs | seqlab s (median) | sacreBLEU s (median) | ratio (wall) | ratio (CPU) | identical |",
             "|---|---|---|---|---|---|---|"]
    for label, row in rows:
        table.append(f"| {label} | {row['pairs']:,} | {row['seqlab_s']:.3f} | {row['sacrebleu_s']:.3f} | "
                     f"{row['ratio']:.2f}x | {row['cpu_ratio']:.2f}x | {'yes' if row['identical'] else 'NO'} |")
    markdown = (
        f"## BLEU: seqlab vs sacreBLEU {sacrebleu.__version__} (bench/bleu.py)\n\n"
        f"Corpus BLEU (13a, exp smoothing) of WMT17 en-de system outputs against newstest2017: the first "
        f"{args.pairs:,} pairs of the systems {', '.join(names)} (each vs the same reference), and one "
        f"system alone. Fresh metric objects, {args.repeats} interleaved repeats, medians; ratio = "
        f"sacreBLEU time / seqlab time (above 1 = seqlab faster). Identical = score, precisions, bp, "
        f"sys_len, ref_len, counts and totals equal with ==. Load average at the start: {load:.1f} "
        f"(other jobs share the cores; CPU-time medians are the steadier figure).\n\n" + "\n".join(table) + "\n\n"
        f"Score: {main_row['score']!r} ({main_row['signature']}).\n"
    )
    write_section("bleu", markdown)
    print(markdown)
    ok = main_row["identical"] and one_system["identical"]
    print(json.dumps({"bench": "bleu", "pairs": main_row["pairs"], "seqlab_s": round(main_row["seqlab_s"], 4),
                      "sacrebleu_s": round(main_row["sacrebleu_s"], 4), "identical": ok,
                      "ratio": round(main_row["ratio"], 3), "cpu_ratio": round(main_row["cpu_ratio"], 3),
                      "one_system_ratio": round(one_system["ratio"], 3)}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
