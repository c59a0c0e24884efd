"""Shared helpers for the benchmarks in bench/: timing, peak memory, and bench/RESULTS.md sections.

Each benchmark owns one section of bench/RESULTS.md between ``<!-- NAME:start bench/SCRIPT.py -->`` and
``<!-- NAME:end -->`` markers and rewrites only that section, whole (its text included), so benchmarks run in
any order and nothing in RESULTS.md is typed by hand (tests/test_results.py checks the markers).
Every comparing benchmark prints one JSON line last, with ``peer_best`` (the winning peer candidate, named
with its configuration) and ``ratio`` = seqlab's best over the peer's best, oriented so that above 1 means
seqlab is better (docs/manual.md, "Rules of the code"). ``interleaved`` times candidates in shuffled rounds with a discarded warm-up;
``verdict`` picks each side's best and forms the ratio.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import inspect
import json
import os
import platform
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from seqlab.base.machine import ISA_CAPS, cpu_line, cpu_model, isa_cap  # noqa: F401 - benches import cpu_line here

# SEQLAB_BENCH_RESULTS=FILE sends a trial run's sections elsewhere (smoke runs must not overwrite real figures)
RESULTS = Path(os.environ.get("SEQLAB_BENCH_RESULTS") or Path(__file__).resolve().parent / "RESULTS.md")
HEADER = "# Benchmark results\n\nEach section is rewritten by the benchmark named in its heading. Figures within one\nsection come from one run; never compare figures across sections or runs (this machine's speed\nswings by about 25% from minute to minute).\n"


def machine() -> str:
    """A one-line description of the machine (CPU model and ISA flags) and library versions; where this process
    has used a CUDA device (a ``--device cuda`` run), the GPU first."""
    import torch

    host = f"{cpu_line()}; Python {platform.python_version()}, torch {torch.__version__}"
    return f"GPU {gpu_line()}; host {host}" if torch.cuda.is_initialized() else host


def run_under_isa_cap(argv: list[str] | None = None) -> str | None:
    """``--isa LEVEL`` on this bench's command line (``native``, the default, or a level of
    ``seqlab.base.machine.ISA_CAPS``: ``avx2``, ``generic``): re-execute the script with that level's caps set, so
    that every library dispatches as on a CPU of that level (an AVX2 EPYC's kernels measured on an AVX-512 or AMX
    machine); the level once running under it, None natively. Call it before torch is imported: the libraries read
    the caps when they load. Each capped level caches numba and inductor builds in folders of its own: inductor's
    cache does not key its builds by ATEN_CPU_CAPABILITY, and a host build served to an AVX2-capped process
    crashed it (a segmentation fault in HF's compiled forward, seen on an AMX Xeon with torch 2.13)."""
    argv = sys.argv[1:] if argv is None else argv
    level = "native"
    for i, arg in enumerate(argv):
        if arg == "--isa" and i + 1 < len(argv):
            level = argv[i + 1]
        elif arg.startswith("--isa="):
            level = arg.split("=", 1)[1]
    if level == "native":
        return None
    if level not in ISA_CAPS:
        raise SystemExit(f"--isa {level}: choose native or {', '.join(ISA_CAPS)}")
    if isa_cap() == level:
        return level
    if "torch" in sys.modules:
        raise SystemExit("--isa: torch is already imported; call run_under_isa_cap before importing it")
    env = {**os.environ, **ISA_CAPS[level],
           "NUMBA_CACHE_DIR": str(Path(tempfile.gettempdir()) / f"seqlab-numba-cache-{level}"),
           "TORCHINDUCTOR_CACHE_DIR": str(Path(tempfile.gettempdir()) / f"seqlab-inductor-cache-{level}")}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)
    return level  # not reached


def isa_suffix() -> str:
    """The section-name suffix of a capped run (``-avx2-caps``), so it sits beside the native section instead of
    replacing it; empty natively."""
    cap = isa_cap()
    return f"-{cap}-caps" if cap else ""


def isa_heading() -> str:
    """The heading's words for a capped run ("(capped to AVX2: ...)"), empty natively."""
    cap = isa_cap()
    if not cap:
        return ""
    return (f" (capped to {cap.upper()}: " + ", ".join(f"{k}={v}" for k, v in ISA_CAPS[cap].items()
                                                       if k != "NUMBA_CPU_FEATURES") + ")")


def init_device(device: str) -> None:
    """Initialise CUDA where runs of ``train.device = device`` train on it, so that a process writing a section
    from rows stored by other processes names the GPU in its ``_Recorded`` line (:func:`machine`)."""
    import torch

    if device in ("auto", "cuda") and torch.cuda.is_available():
        torch.cuda.init()


def device_name() -> str:
    """What this process trained on: the GPU (:func:`gpu_line`) where it has used one, else the CPU model."""
    import torch

    return gpu_line() if torch.cuda.is_initialized() else cpu_model()


def gpu_line() -> str:
    """The GPU: its name (torch.cuda.get_device_name), memory and CUDA version."""
    import torch

    props = torch.cuda.get_device_properties(0)
    return f"{torch.cuda.get_device_name()} ({props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda})"


def bf16_rows() -> str | None:
    """None where this CPU computes bf16 natively as the bench runs (seqlab.training.devices: the CPU's flags and what
    ONEDNN_MAX_CPU_ISA leaves); else why not, for the section to say why its bf16 rows are skipped (emulated bf16
    matrix products run 40-400x slower than fp32: a bf16 row would take hours and compare nothing useful)."""
    from seqlab.training.devices import bf16_emulation_reason

    return bf16_emulation_reason()


class BenchCheckFailed(AssertionError):
    """A check of a bench did not hold: the run stops here, before any section is written (a bench whose check
    only warned would record a figure it could not stand behind)."""


def require(ok: bool, message: str) -> None:
    """Stop the bench (:class:`BenchCheckFailed`, a non-zero exit, no section written) unless ``ok``."""
    if not ok:
        raise BenchCheckFailed(message)


def note_line(note: str) -> str:
    """A ``--note`` given on a bench's command line, shown as a note apart from the measured lines: its own
    block quote, marked as typed by whoever ran the bench (it is hashed with the section, so an edit after the run
    still shows, but it is nothing the run measured). Empty where there is no note."""
    note = " ".join(note.split())
    return f"\n\n> Note given on the command line (typed by whoever ran the bench, not measured): {note}" if note else ""


def _caller_script() -> str:
    """The bench script that called ``write_section``, relative to the repository (``bench/generate.py``)."""
    here = Path(__file__).resolve()
    for frame in inspect.stack()[2:]:
        path = Path(frame.filename).resolve()
        if path != here and path.parent == here.parent:
            return f"bench/{path.name}"
    return f"bench/{Path(sys.argv[0]).name}"


def section_pattern(name: str) -> re.Pattern:
    """The whole block of section ``name``: its start marker (naming its script, or none in old files) to its end."""
    return re.compile(rf"<!-- {re.escape(name)}:start(?: [^ >]+)? -->.*?<!-- {re.escape(name)}:end -->", re.S)


def write_section(name: str, markdown: str, script: str | None = None) -> None:
    """Replace the section ``name`` of bench/RESULTS.md with ``markdown`` (atomic write).

    The start marker names the script that wrote it (``script``, by default the calling bench file), so a
    reader, and tests/test_results.py, can tell which script owns every figure; the closing ``_Recorded`` line
    names the date, the machine (CPU model and instruction sets) and :func:`body_hash` of the text above it, so
    the test can tell that nothing in the section was edited after the script wrote it.
    """
    script = script or _caller_script()
    body = markdown.rstrip()
    block = (f"<!-- {name}:start {script} -->\n{body}\n\n"
             f"_Recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}; "
             f"body sha256 {body_hash(body)}._\n<!-- {name}:end -->")
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    write_results(RESULTS, put_block(text, name, block)[0])
    record_code(name, script)


# Benches that measure seqlab in processes of their own (the CLI, the server, killed runs) or write their section from
# runs stored by earlier invocations (the quality rows): a section of theirs depends on the whole package, not on
# the modules the writing process imported.
WHOLE_PACKAGE = frozenset({"bench/cli_startup.py", "bench/serve.py", "bench/faults.py", "bench/ner.py",
                           "bench/sentiment.py"})
# Files a bench's section measured outside its own process's imports: bench/encoder.py runs sentence-transformers'
# ONNX and OpenVINO backends through bench/st_backends.py in a second environment pinned by bench/st5-env.txt.
ALSO_MEASURED = {"bench/encoder.py": ("bench/st_backends.py", "bench/st5-env.txt")}
REPO = Path(__file__).resolve().parents[1]


def measured_files(script: str) -> list[str]:
    """The files a section written by ``script`` measured, relative to the repository: the bench files this process
    loaded (the script among them), the seqlab source it imported (every seqlab file for :data:`WHOLE_PACKAGE`) and
    the files it ran elsewhere (:data:`ALSO_MEASURED`)."""
    loaded = {Path(m.__file__).resolve() for m in list(sys.modules.values()) if getattr(m, "__file__", None)}
    package = REPO / "seqlab"
    if script in WHOLE_PACKAGE:
        loaded |= set(package.rglob("*.py"))
    bench = REPO / "bench"
    files = {REPO / script} | {p for p in loaded if p.suffix == ".py" and (p.parent == bench or package in p.parents)}
    files |= {REPO / path for path in ALSO_MEASURED.get(script, ())}
    return sorted(str(p.relative_to(REPO)) for p in files if p.is_file())


def file_sha256(relative: str) -> str:
    """sha256 of the repository file at ``relative`` as it is now; "missing" where it is gone."""
    path = REPO / relative
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def code_file() -> Path:
    """What each section measured, for bench/stale.py: the files whose change makes a section older than its code,
    written by :func:`write_section` beside RESULTS.md (``RESULTS.code.json``), one entry per section."""
    return RESULTS.with_name(RESULTS.stem + ".code.json")


def record_code(name: str, script: str) -> None:
    """Record in :func:`code_file` the files section ``name`` measured, each with its sha256 (bench/stale.py)."""
    code = code_file()
    records = json.loads(code.read_text(encoding="utf-8")) if code.exists() else {}
    records[name] = {"script": script, "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "files": {path: file_sha256(path) for path in measured_files(script)}}
    write_results(code, json.dumps(dict(sorted(records.items())), indent=1) + "\n")


def body_hash(body: str) -> str:
    """The first 16 hex digits of the SHA-256 of a section's text (heading to the last line before ``_Recorded``,
    trailing whitespace stripped), as ``write_section`` records it."""
    return hashlib.sha256(body.rstrip().encode("utf-8")).hexdigest()[:16]


def put_block(text: str, name: str, block: str) -> tuple[str, bool]:
    """``text`` with the section ``name`` replaced by ``block`` (a whole block, markers included), or ``block``
    appended where there is none: (the new text, whether a section was replaced)."""
    pattern = section_pattern(name)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text, count=1), True
    return text.rstrip() + "\n\n" + block + "\n", False


def write_results(path: Path, text: str) -> None:
    """Write a results file atomically (a temporary file beside it, then replaced)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_section(name: str) -> str | None:
    """The text of section ``name`` of bench/RESULTS.md (markers excluded), or None when it was never written.

    Benches that cite another bench's figure read it from here, so no figure is typed in twice."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    found = section_pattern(name).search(text)
    return found.group(0).split("\n", 1)[1].rsplit("\n", 1)[0] if found else None


def interleaved(candidates: dict[str, Callable[[], float | None]], rounds: int, warmup: int = 1,
                seed: int = 0, collect: bool = True) -> dict[str, list[float]]:
    """Time every candidate once per round, in a freshly shuffled order each round; discard the warm-up rounds.

    A candidate returns the figure it measured itself (e.g. the seconds of its timed part), or None to be
    timed by the wall clock around the call. ``gc.collect()`` runs before each call (outside the timing)
    so no side pays for the other's garbage. Returns each candidate's kept figures (``rounds`` of them).
    """
    order = list(candidates)
    rng = random.Random(seed)
    kept: dict[str, list[float]] = {name: [] for name in order}
    for r in range(warmup + rounds):
        rng.shuffle(order)
        for name in order:
            if collect:
                gc.collect()
            t0 = time.perf_counter()
            figure = candidates[name]()
            seconds = time.perf_counter() - t0 if figure is None else figure
            if r >= warmup:
                kept[name].append(seconds)
    return kept


def verdict(ours: dict[str, float], peers: dict[str, float], higher_is_better: bool = True) -> dict:
    """Each side's best candidate and ``ratio`` = seqlab best / peer best (above 1: seqlab better).

    ``ours`` and ``peers`` map a candidate's name, which names its configuration, to its median figure.
    """
    pick = max if higher_is_better else min
    ours_best, peer_best = pick(ours, key=ours.get), pick(peers, key=peers.get)
    ratio = ours[ours_best] / peers[peer_best] if higher_is_better else peers[peer_best] / ours[ours_best]
    return {"seqlab_best": ours_best, "seqlab_value": ours[ours_best], "peer_best": peer_best,
            "peer_value": peers[peer_best], "ratio": round(ratio, 3)}


def peak_rss_mib() -> float:
    """Peak resident set size of this process, in MiB.

    Linux's VmHWM belongs to the address space, which exec replaces; ``ru_maxrss`` instead carries the
    parent's peak over fork + exec, so a small child of a big benchmark would report the parent's size.
    """
    with contextlib.suppress(OSError), open("/proc/self/status") as status:  # no /proc: ru_maxrss below
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_json_subprocess(code: str, *args: str, timeout: float = 1800) -> dict:
    """Run ``python -c code args...`` in a fresh process and parse the last stdout line as JSON.

    Used to measure each side's peak RSS on its own.
    """
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         timeout=timeout, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


ROW_FILE = "bench-row.json"  # a row's result beside its run: a later invocation reuses it (same overrides)


def stored_row(run_dir: Path, overrides: list[str]) -> dict | None:
    """The result an earlier invocation stored beside ``run_dir`` (:func:`store_row`), if it trained the same
    overrides; None otherwise. Long quality benchmarks resume this way, row by row."""
    path = Path(run_dir) / ROW_FILE
    if not path.exists():
        return None
    stored = json.loads(path.read_text(encoding="utf-8"))
    return stored["result"] if stored.get("overrides") == overrides else None


def store_row(run_dir: Path, overrides: list[str], result: dict) -> None:
    """Keep a row's ``result`` beside its run, keyed by the overrides that trained it."""
    (Path(run_dir) / ROW_FILE).write_text(json.dumps({"overrides": overrides, "result": result}) + "\n",
                                          encoding="utf-8")


def train_resumable(cfg, run_dir: Path, key: list[str] | None = None,
                    to_max_steps: bool = False) -> tuple[float, str | None]:
    """Train ``cfg`` into ``run_dir``; (training minutes, the coverage line training logged for ``model.vectors``,
    ``embeddings: N of V words from ...``, or None without vectors).

    With ``key`` (the row's :func:`store_row` key) a row whose training was cut off (a killed process, the end of
    a session) resumes from its last checkpoint when the same key trains it again, and its minutes add up the
    tries, each counted to its last checkpoint (``state.json``'s time); otherwise ``run_dir`` is replaced. The
    try in progress is noted beside the run (``RUN.pending.json``: the key, its start, the minutes before it, and
    the coverage line once training logs it: a resumed run starts from its checkpoint's E and logs none).

    With ``to_max_steps`` the row's budget is its ``train.max_steps``: a try that ``train.max_minutes`` (a hard stop
    for one try, counted in wall-clock time, pauses included) ended short of them keeps the note, so the next try
    with the same key continues from that checkpoint instead of counting the row as done."""
    from seqlab import api

    run_dir = Path(run_dir)
    pending, before = run_dir.with_name(run_dir.name + ".pending.json"), 0.0
    earlier = json.loads(pending.read_text(encoding="utf-8")) if pending.exists() else {}
    resume = key is not None and earlier.get("overrides") == key and (run_dir / "state.json").exists()
    if resume:
        before = earlier["minutes_before"] + max(0.0, ((run_dir / "state.json").stat().st_mtime
                                                         - earlier["started"]) / 60)
    note = {"overrides": key, "started": time.time(), "minutes_before": before,
            "coverage": earlier.get("coverage") if resume else None}

    def write_note() -> None:
        pending.write_text(json.dumps(note) + "\n", encoding="utf-8")

    def log(*parts, **_) -> None:
        line = " ".join(map(str, parts))
        if line.startswith("embeddings:"):
            note["coverage"] = line
            if key is not None:
                write_note()

    if key is not None:
        pending.parent.mkdir(parents=True, exist_ok=True)
        write_note()
    started = time.perf_counter()
    api.train_run(cfg, run_dir, resume=resume, force=not resume, log=log)
    minutes = before + (time.perf_counter() - started) / 60
    state = json.loads((run_dir / "state.json").read_text(encoding="utf-8"))
    if not (to_max_steps and state["step"] < cfg.train.max_steps and not state.get("stopped_early")):
        pending.unlink(missing_ok=True)
    return minutes, note["coverage"]


def ablation_arguments(parser, rows) -> None:
    """The ablation benches' shared options (bench/ner.py, bench/sentiment.py): which ``rows`` to train, the w2v
    run the w2v row reads (what it was trained on is read from the run: :func:`w2v_corpus`), and how many rows ran
    at once (for the table)."""
    parser.add_argument("--ablation", default="", help=f"comma-separated ablation rows from {', '.join(rows)}")
    parser.add_argument("--w2v", type=Path, default=Path(__file__).resolve().parents[1] / "runs" / "w2v-shakespeare",
                        help="the w2v-sgns run whose vectors the w2v row reads")
    parser.add_argument("--concurrent", type=int, default=1, help="how many rows ran at once (for the table)")


def w2v_corpus(run: Path) -> str:
    """What the w2v run was trained on, read from the run itself: its ``config.toml``'s ``data.source`` and, where
    that file is at hand, its size in MB (decimal), counted now; "unknown" where the run has no config."""
    import tomllib

    config = run / "config.toml"
    if not config.is_file():
        return f"unknown: {run.name} has no config.toml"
    source = str(tomllib.loads(config.read_text(encoding="utf-8")).get("data", {}).get("source", "unknown"))
    path = next((p for p in (Path(source), run / source) if p.is_file()), None)
    return f"{Path(source).name}, {path.stat().st_size / 1e6:.1f} MB" if path else Path(source).name


def coverage_note(rows: dict, w2v: Path) -> list[str]:
    """The ablation tables' closing lines: each vector row's coverage, the w2v run named by its folder alone."""
    coverage = [f"{n}: {r['vectors_found']}" for n, r in rows.items() if r and r.get("vectors_found")]
    if not coverage:
        return []
    return ["", "Vector coverage (from each run's log): " + "; ".join(coverage).replace(str(w2v), w2v.name) + "."]
