"""CLI start-up and `seqlab bleu` end to end against sacreBLEU's CLI (issue #16).

Small (hypothesis, reference) file pairs are cut from the WMT17 en-de systems
(../shared/data/wmt17_en_de_systems): pair k holds 10 lines of system k mod 16 starting at line
10·k, against the same lines of newstest2017. "1 file" is one command on pair 0; "100 files" is 100
commands in a row, one per pair, as a shell loop scoring many small outputs would run them. Each
command is a fresh process: ``seqlab bleu HYP REF`` (the venv's ``seqlab`` script, or ``python -m
seqlab`` without one) against ``sacrebleu REF -i HYP``, timed with bench/common.py's ``interleaved``: both sides
once a round in a freshly shuffled order, one more warm-up round discarded (it runs every command of both sides
once, so both sides' files are in the page cache alike before anything is counted), ``gc.collect()`` in this process
before every call, medians of the rounds. seqlab is
imported from --root (default: this checkout) through PYTHONPATH. Peak RSS is measured apart, by
``/usr/bin/time -f %M`` on one more run of each command (a child's own rusage would carry this
process's size over the fork). Every seqlab score must equal sacreBLEU's library score exactly (==), and the
sacreBLEU CLI's rounded score, or the benchmark fails. Also timed: ``seqlab --help``, ``--version``,
``presets`` and ``data list`` (interleaved the same way), and whether any of the commands imported torch or
scikit-learn.

Prints one JSON line last: ``ratio`` = sacreBLEU CLI time / seqlab time (above 1 = seqlab faster),
for 1 and 100 files.

    .venv/bin/python bench/cli_startup.py [--rounds 7] [--rounds-100 3] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import cpu_line, interleaved, median, write_section  # noqa: E402

DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
WMT = DATA / "wmt17_en_de_systems"
LINES_PER_FILE = 10
BIN = Path(sys.prefix) / "bin"

# Run as `python -c PROBE VERB...`: seqlab.cli.main, then report which heavy modules it imported.
PROBE = """\
import contextlib, io, json, sys
from seqlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps([m for m in ("torch", "sklearn", "numpy") if m in sys.modules]))
"""


def read_lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:  # as both CLIs read them: BOM kept, split on \n
        return [line.rstrip("\n") for line in f]


def write_pairs(folder: Path, n: int) -> list[tuple[Path, Path]]:
    """n small (hyp, ref) file pairs from the WMT17 systems."""
    if not WMT.is_dir():
        raise SystemExit(f"error: needs {WMT}; set SEQLAB_SHARED_DATA to the shared data folder")
    ref = read_lines(WMT / "newstest2017-ende-ref.de")
    systems = [read_lines(p) for p in sorted((WMT / "systems").iterdir())]
    pairs = []
    for k in range(n):
        start = LINES_PER_FILE * k % (len(ref) - LINES_PER_FILE)
        span = slice(start, start + LINES_PER_FILE)
        hyp_path, ref_path = folder / f"hyp{k:03d}.txt", folder / f"ref{k:03d}.txt"
        hyp_path.write_text("".join(f"{line}\n" for line in systems[k % len(systems)][span]), encoding="utf-8")
        ref_path.write_text("".join(f"{line}\n" for line in ref[span]), encoding="utf-8")
        pairs.append((hyp_path, ref_path))
    return pairs


def run(cmd: list[str], env: dict) -> tuple[float, str]:
    """(wall seconds, stdout) of one command in a fresh process, run in the seqlab root (``python -c``
    puts the working directory first on sys.path)."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=env["PYTHONPATH"])
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    return wall, done.stdout


def peak_rss_mib(cmd: list[str], env: dict) -> float | None:
    """Peak RSS of one run of ``cmd`` as /usr/bin/time reports it (None without /usr/bin/time)."""
    if not Path("/usr/bin/time").exists():
        return None
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True, env=env,
                          cwd=env["PYTHONPATH"], check=True)
    return int(done.stderr.strip().splitlines()[-1]) / 1024


def seqlab_cmd() -> list[str]:
    script = BIN / "seqlab"
    return [str(script)] if script.exists() else [sys.executable, "-m", "seqlab"]


def compare_bleu(pairs, rounds: int, env: dict) -> dict:
    """Both CLIs over ``pairs``, timed by ``interleaved`` (shuffled rounds, the warm-up round discarded: it warms
    both sides' files alike); a side's figure in a round is the total wall time of its commands."""
    sacrebleu_cli = BIN / "sacrebleu"
    if not sacrebleu_cli.exists():
        raise SystemExit(f"error: needs {sacrebleu_cli} (the test extras: pip install sacrebleu==2.6.0)")
    commands = {"seqlab": lambda hyp, ref: [*seqlab_cmd(), "bleu", str(hyp), str(ref)],
                "sacrebleu": lambda hyp, ref: [str(sacrebleu_cli), str(ref), "-i", str(hyp)]}
    outputs = {}

    def side(name: str):
        def call() -> float:
            total = 0.0
            for hyp, ref in pairs:
                wall, out = run(commands[name](hyp, ref), env)
                total += wall
                outputs[name, hyp] = json.loads(out)["score"]
            return total
        return call

    totals = interleaved({name: side(name) for name in commands}, rounds)
    row = {"files": len(pairs), "seqlab_s": median(totals["seqlab"]), "sacrebleu_s": median(totals["sacrebleu"]),
           "rounds": rounds}
    for name, command in commands.items():
        row[f"{name}_rss_mib"] = peak_rss_mib(command(*pairs[0]), env)
    row["ratio"] = row["sacrebleu_s"] / row["seqlab_s"]
    row["identical"] = check_scores(pairs, outputs)
    return row


def check_scores(pairs, outputs: dict) -> bool:
    """seqlab's unrounded CLI score == sacreBLEU's library score, and == the sacreBLEU CLI's once rounded."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    for hyp, ref in pairs:
        theirs = SacreBLEU().corpus_score(read_lines(hyp), [read_lines(ref)]).score
        ours = outputs["seqlab", hyp]
        if ours != theirs or float(f"{ours:.1f}") != outputs["sacrebleu", hyp]:
            print(f"scores differ on {hyp.name}: seqlab {ours!r}, sacreBLEU {theirs!r}, "
                  f"sacreBLEU CLI {outputs['sacrebleu', hyp]!r}", file=sys.stderr)
            return False
    return True


def time_verbs(rounds: int, env: dict) -> list[dict]:
    """Median wall time and peak RSS of the model-free verbs, and what each imports."""
    verbs = (["--help"], ["--version"], ["presets"], ["data", "list"])
    walls = interleaved({" ".join(verb): (lambda verb=verb: run([*seqlab_cmd(), *verb], env)[0]) for verb in verbs},
                        rounds)
    rows = []
    for verb in verbs:
        imports = json.loads(run([sys.executable, "-c", PROBE, *verb], env)[1])
        rows.append({"verb": " ".join(verb), "s": median(walls[" ".join(verb)]),
                     "rss_mib": peak_rss_mib([*seqlab_cmd(), *verb], env), "imports": imports})
    return rows


def mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7,
                        help="shuffled rounds for 1 file and the verbs (one more warm-up round discarded)")
    parser.add_argument("--rounds-100", type=int, default=3,
                        help="shuffled rounds for 100 files (one more warm-up round discarded)")
    parser.add_argument("--root", type=Path, default=REPO,
                        help="the seqlab checkout to time (default: this one; another root is not written "
                             "to RESULTS.md)")
    args = parser.parse_args()

    root = args.root.resolve()
    env = dict(os.environ, PYTHONPATH=str(root))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="seqlab-cli-bench-") as tmp:
        pairs = write_pairs(Path(tmp), 100)
        one = compare_bleu(pairs[:1], args.rounds, env)
        hundred = compare_bleu(pairs, args.rounds_100, env)
        probe_bleu = run([sys.executable, "-c", PROBE, "bleu", str(pairs[0][0]), str(pairs[0][1])], env)[1]
    verbs = time_verbs(args.rounds, env)

    table = ["| command | files | seqlab s | sacreBLEU CLI s | ratio | seqlab peak MiB | sacreBLEU peak MiB "
             "| identical |", "|---|---|---|---|---|---|---|---|"]
    for row in (one, hundred):
        table.append(f"| `seqlab bleu HYP REF` vs `sacrebleu REF -i HYP` | {row['files']} | {row['seqlab_s']:.3f} | "
                     f"{row['sacrebleu_s']:.3f} | {row['ratio']:.2f}x | {mib(row['seqlab_rss_mib'])} | "
                     f"{mib(row['sacrebleu_rss_mib'])} | {'yes' if row['identical'] else 'NO'} |")
    verb_table = ["| command | s (median) | peak MiB | imports torch / sklearn / numpy |", "|---|---|---|---|"]
    verb_table.append(f"| `seqlab bleu HYP REF` | {one['seqlab_s']:.3f} | {mib(one['seqlab_rss_mib'])} | "
                      f"{', '.join(json.loads(probe_bleu)) or 'none'} |")
    for v in verbs:
        verb_table.append(f"| `seqlab {v['verb']}` | {v['s']:.3f} | {mib(v['rss_mib'])} | "
                          f"{', '.join(v['imports']) or 'none'} |")
    markdown = (
        "## CLI start-up: `seqlab bleu` vs sacreBLEU's CLI, and the model-free verbs (bench/cli_startup.py)\n\n"
        f"Each command is a fresh process ({' '.join(Path(c).name for c in seqlab_cmd())} / sacrebleu "
        f"{version('sacrebleu')} "
        f"scripts of one venv). Files: {LINES_PER_FILE}-line hypothesis/reference pairs cut from the WMT17 "
        "en-de systems and newstest2017; 100 files = 100 commands in a row, times summed. Rounds in a freshly "
        f"shuffled order ({args.rounds} for 1 file and the verbs, {args.rounds_100} for 100 files; bench/common.py "
        "`interleaved`), each after one more warm-up round, discarded, that runs every command of both sides once "
        "(both sides' files equally in the page cache), `gc.collect()` in the timing process before every call; "
        "medians; ratio = "
        "sacreBLEU CLI time / seqlab time (above 1 = seqlab faster). Identical = every seqlab score == "
        "sacreBLEU's (library, unrounded; and its CLI's one-decimal score). "
        f"CPU: {cpu_line()}. Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.\n\n"
        + "\n".join(table) + "\n\n" + "\n".join(verb_table) + "\n"
    )
    if root == REPO:
        write_section("cli_startup", markdown)
    print(f"machine: {cpu_line()}; Python {sys.version.split()[0]}; seqlab from {root}")
    print(markdown)
    ok = one["identical"] and hundred["identical"]
    print(json.dumps({"bench": "cli_startup", "identical": ok,
                      "peer_best": "sacrebleu CLI 2.6.0 (`sacrebleu REF -i HYP`, a fresh process per file)",
                      "ratio": round(one["ratio"], 3),
                      "ratio_100_files": round(hundred["ratio"], 3), "seqlab_1_file_s": round(one["seqlab_s"], 4),
                      "sacrebleu_1_file_s": round(one["sacrebleu_s"], 4),
                      "seqlab_100_files_s": round(hundred["seqlab_s"], 3),
                      "sacrebleu_100_files_s": round(hundred["sacrebleu_s"], 3),
                      "verbs_s": {v["verb"]: round(v["s"], 4) for v in verbs}}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
