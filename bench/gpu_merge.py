"""Merge the sections a GPU run wrote (bench/gpu.sh: SEQLAB_BENCH_RESULTS=$OUT/RESULTS.gpu.md) into bench/RESULTS.md.

Each whole block, start marker to end marker (bench/common.py ``put_block``), replaces the block of the same
name in RESULTS.md, or is appended where there is none; every other section stays as it is. The blocks keep the
start marker naming their script and their ``_Recorded ...`` line (which names the GPU), so tests/test_results.py
holds for the merged file. A block without its ``_Recorded`` line (a run cut off mid-write cannot leave one, but
a hand-edited file can) is refused. Only the GPU's sections (names ending in ``-cuda``) are merged unless ``--all``
says otherwise: a CPU section written on the device machine's host CPU must not replace this machine's.

    .venv/bin/python bench/gpu_merge.py PATH/RESULTS.gpu.md [--into bench/RESULTS.md] [--dry-run] [--all]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import HEADER, put_block, write_results  # noqa: E402

BLOCK = re.compile(r"<!-- (\S+?):start(?: (\S+))? -->\n(.*?)<!-- \1:end -->", re.S)  # as tests/test_results.py


def blocks(text: str) -> list[tuple[str, str]]:
    """(name, whole block) of every section in ``text``, in order; raises ValueError on a malformed block."""
    found = []
    for match in BLOCK.finditer(text):
        name, script, body = match.groups()
        lines = body.rstrip().splitlines()
        if not script or not lines or not lines[0].startswith("## ") or not lines[-1].startswith("_Recorded "):
            raise ValueError(f"section {name}: not a whole block written by bench/common.py write_section")
        found.append((name, match.group(0)))
    return found


GPU_SUFFIX = "-cuda"  # the sections of `--device cuda` runs (bench/lm_throughput.py, bench/generate.py)


def merge(source: str, target: str, gpu_only: bool = True) -> tuple[str, list[str], list[str], list[str]]:
    """``target`` with the blocks of ``source`` put in (only the GPU's with ``gpu_only``): (merged text, names
    replaced, names appended, names skipped)."""
    replaced, appended, skipped = [], [], []
    for name, block in blocks(source):
        if gpu_only and not name.endswith(GPU_SUFFIX):
            skipped.append(name)
            continue
        target, was_there = put_block(target, name, block)
        (replaced if was_there else appended).append(name)
    return target, replaced, appended, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="the RESULTS.gpu.md a GPU run returned")
    ap.add_argument("--into", type=Path, default=HERE / "RESULTS.md", help="the file to merge into (bench/RESULTS.md)")
    ap.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    ap.add_argument("--all", action="store_true", help=f"merge every section, not only those ending in {GPU_SUFFIX}")
    args = ap.parse_args(argv)
    source = args.source.read_text(encoding="utf-8")
    target = args.into.read_text(encoding="utf-8") if args.into.exists() else HEADER
    if not blocks(source):
        print(f"{args.source}: no sections to merge", file=sys.stderr)
        return 1
    merged, replaced, appended, skipped = merge(source, target, gpu_only=not args.all)
    skipped_verb = f"skipped (not a {GPU_SUFFIX} section; --all merges it)"
    for verb, names in (("replaced", replaced), ("added", appended), (skipped_verb, skipped)):
        for name in names:
            print(f"{verb}: {name}")
    if not args.dry_run and (replaced or appended):
        write_results(args.into, merged)
    return 0


if __name__ == "__main__":
    sys.exit(main())
