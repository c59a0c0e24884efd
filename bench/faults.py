"""Fault suite (issue #14): what happens to a run on kill -9, SIGTERM, a full disk and a damaged checkpoint.

For four families (a character LM, a seq2seq translator, a BiLSTM tagger, word2vec with one thread), each a tiny
model on a small corpus that checkpoints often (every 4 steps, every step for word2vec, keep_last = 2):

- kill -9 at random moments: half at a random time after the run started (its lock.json appeared), half the
  moment a checkpoint write is seen in progress (``.next/`` or ``checkpoints/.step-N.partial``); runs are killed
  1-4 times each, then resumed to the end (``--resume``) and compared with an uninterrupted run of the same
  config: weights and trainer state (optimiser, RNG, data position) must be bit-identical;
- SIGTERM at a random moment: exit 143 with its one line, then ``--resume`` to the end, compared likewise;
- a full disk at random byte offsets (``RLIMIT_FSIZE`` with SIGXFSZ ignored: the first write past the offset
  fails with EFBIG), on a fresh start and on a resume after a SIGTERM: exit 2 with one ``error: no space left``
  line, no temporary files, the earlier checkpoint intact (or, before the first, no run directory), then the
  command without the limit finishes the run, compared likewise;
- a damaged checkpoint (a flipped bit or a truncation in one of the three files of the final checkpoint): a
  reader (``--last``) exits 2 naming the file (one of the weights or the state; readers do not read
  ``trainer.safetensors``, so its damage must not stop them), ``--resume`` falls back to ``checkpoints/step-N``
  and says so, finishing bit-identical.

A trial is lost when the run cannot be finished or its result differs; a traceback anywhere is counted. Prints
a table and one JSON line (``ratio`` = trials recovered / trials: 1.0 is the target); writes its section of
bench/RESULTS.md (``--no-write`` to skip).

    python bench/faults.py [--kills 20] [--sigterms 5] [--disk-full 10] [--corrupt 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import write_section  # noqa: E402

FAMILIES = ("lm", "translate", "tag", "embed")
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
COMMIT_MARKS = (".next", "best/.next")  # a checkpoint write in progress (also checkpoints/.step-N.partial)


# ------------------------------------------------------------------------------------------------------
# the four runs


def write_configs(work: Path) -> dict[str, Path]:
    """A TOML config per family, on data written into ``work``."""
    from seqlab.data.sources import read_text
    from seqlab.tasks import from_dict, resolve

    rng = random.Random(0)
    (work / "data").mkdir(parents=True)
    corpus = work / "data" / "corpus.txt"
    corpus.write_text(read_text("pydocs")[:30_000], encoding="utf-8")
    common = {"progress": False, "precision": "fp32", "device": "cpu", "threads": 1, "save_every": 4,
              "eval_every": 20, "keep_last": 2}
    configs = {"lm": resolve("lm-char", [
        "model.n_layers=2", "model.n_heads=2", "model.d_model=32", "model.d_ff=64", "model.max_len=32",
        "model.dropout=0.1", f"data.source=\"{corpus}\"", "train.batch_size=8", "train.warmup_steps=5",
        "train.eval_batches=2", "train.max_steps=80", *(f"train.{k}={json.dumps(v)}" for k, v in common.items())])}

    words = ["red", "blue", "cat", "dog", "runs", "sleeps", "big", "small"]
    german = dict(zip(words, ["rot", "blau", "Katze", "Hund", "rennt", "schläft", "groß", "klein"]))
    splits = {}
    for split, n in (("train", 400), ("valid", 20), ("test", 12)):
        src = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 5))) for _ in range(n)]
        for suffix, lines in (("en", src), ("de", [" ".join(german[w] for w in reversed(s.split())) for s in src])):
            (work / "data" / f"{split}.{suffix}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        splits[split] = str(work / "data" / split)
    configs["translate"] = from_dict({
        "task": {"kind": "translate"},
        "data": {**splits, "src": "en", "tgt": "de", "tokenizer": "word"},
        "model": {"arch": "seq2seq-attention", "d_model": 16, "hidden_size": 32, "attn_size": 16, "dropout": 0.1,
                  "max_len": 16},
        "train": {"max_steps": 60, "batch_size": 16, "lr": 1e-2, "warmup_steps": 5, **common}})

    upper = ["Paris", "Anna", "Bonn", "Kim", "Oslo", "Ravi", "Lima", "Omar"]
    lower = ["the", "a", "runs", "sees", "big", "old", "and", "with", "near", "green"]
    conll = {}
    for split, n in (("train", 400), ("valid", 30), ("test", 30)):
        lines = ["-DOCSTART- -X- -X- O", ""]
        for _ in range(n):
            sentence = [rng.choice(upper if rng.random() < 0.35 else lower) for _ in range(rng.randint(2, 8))]
            lines += [f"{w} NN O {'B-NAME' if w[0].isupper() else 'O'}" for w in sentence] + [""]
        (work / "data" / f"{split}.conll").write_text("\n".join(lines) + "\n", encoding="utf-8")
        conll[split] = str(work / "data" / f"{split}.conll")
    configs["tag"] = from_dict({
        "task": {"kind": "tag"}, "data": {**conll, "tokenizer": "word"},
        "model": {"arch": "lstm", "d_model": 16, "hidden_size": 16, "n_layers": 1, "dropout": 0.1},
        "train": {"max_steps": 60, "batch_size": 16, "lr": 2e-2, "warmup_steps": 5, **common}})

    topics = [[f"t{t}w{rng.randrange(8)}" for _ in range(10)] for t in (rng.randrange(6) for _ in range(2500))]
    (work / "data" / "topics.txt").write_text("\n".join(" ".join(s) for s in topics) + "\n", encoding="utf-8")
    configs["embed"] = resolve("w2v-sgns", [
        f"data.source=\"{work / 'data' / 'topics.txt'}\"", "data.min_freq=1", "model.dim=12", "model.window=3",
        "train.threads=1", "train.progress=false", "train.epochs=4", "train.save_every=1", "train.keep_last=2"])
    paths = {}
    for family, cfg in configs.items():
        paths[family] = work / f"{family}.toml"
        paths[family].write_text(cfg.to_toml(), encoding="utf-8")
    return paths


READERS = {  # a reader of the final checkpoint per family: (arguments after RUN, stdin)
    "lm": (["generate", "{run}", "--prompt", "def ", "--max-new-tokens", "5", "--last"], None),
    "translate": (["predict", "{run}", "--last"], "red cat runs\n"),
    "tag": (["predict", "{run}", "--last"], "Anna sees Bonn\n"),
    "embed": (["neighbors", "{run}", "t0w1", "-k", "3"], None),
}


# ------------------------------------------------------------------------------------------------------
# processes


class Proc:
    """``python -m seqlab ARGS`` in the background, stderr to a file; with ``limit`` (which caps every file it
    writes, a log file too) it runs to its end at once, its stderr read through a pipe."""

    def __init__(self, args: list[str], log: Path, limit: int | None = None):
        def cap():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        self.log = log
        command = [sys.executable, "-m", "seqlab", *args]
        if limit:
            self.p = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      preexec_fn=cap)
            log.write_bytes(self.p.communicate(timeout=600)[1])
            return
        with open(log, "w") as err:
            self.p = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=err)

    def wait(self, timeout: float = 600) -> int:
        return self.p.wait(timeout)

    @property
    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def train(cfg: Path, run: Path, logs: Path, resume: bool | str = False, limit: int | None = None) -> Proc:
    """``seqlab train`` of ``cfg`` into ``run``; ``resume`` True adds ``--resume``, "auto" ``--resume auto``."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{run.name}-{len(list(logs.iterdir()))}.log"
    flags = ["--resume", "auto"] if resume == "auto" else ["--resume"] if resume else []
    return Proc(["train", str(cfg), "--out", str(run), *flags], log, limit)


def wait_started(proc: Proc, run: Path, timeout: float = 300) -> bool:
    """Until the run's lock names the process (training has begun); False when the process ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if json.loads((run / "lock.json").read_text())["pid"] == proc.p.pid:
                return True
        except (OSError, ValueError, KeyError):
            pass
        if proc.p.poll() is not None:
            return False
        time.sleep(0.005)
    return False


def committing(run: Path) -> bool:
    return any((run / mark).exists() for mark in COMMIT_MARKS) or any((run / "checkpoints").glob(".*.partial"))


def same_result(run: Path, reference: Path) -> bool:
    from safetensors.torch import load_file

    for name in ("model.safetensors", "trainer.safetensors"):
        a, b = load_file(reference / name), load_file(run / name)
        if a.keys() != b.keys() or not all(a[k].equal(b[k]) for k in a):
            return False
    return True


def leftovers(run: Path) -> list[str]:
    if not run.exists():
        return []
    return [str(p.relative_to(run)) for p in run.rglob("*") if ".tmp" in p.name or p.name in (".next", "lock.json")
            or p.name.endswith(".partial") or "stale" in p.name]


def tracebacks(*procs: Proc) -> int:
    return sum("Traceback" in p.stderr for p in procs)


# ------------------------------------------------------------------------------------------------------
# the trials


class Tally:
    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}
        self.notes: list[str] = []

    def add(self, fault: str, family: str, recovered: bool, tb: int = 0, inside_write: bool = False,
            note: str = "") -> None:
        row = self.rows.setdefault((fault, family), {"trials": 0, "recovered": 0, "lost": 0, "tracebacks": 0,
                                                     "inside_write": 0})
        row["trials"] += 1
        row["recovered"] += recovered
        row["lost"] += not recovered
        row["tracebacks"] += tb
        row["inside_write"] += inside_write
        if note:
            self.notes.append(f"{fault} / {family}: {note}")
            print(f"  ! {fault} / {family}: {note}", file=sys.stderr)


def finish(cfg: Path, run: Path, logs: Path, reference: Path) -> tuple[bool, int, str]:
    """Finish ``run`` with ``--resume auto``, the requeue command: it resumes what the interruption kept, and starts
    afresh where it kept nothing (a SIGTERM or a full disk before the first checkpoint undoes the start: no run
    directory is left); (same as the reference, tracebacks, note)."""
    proc = train(cfg, run, logs, resume="auto")
    code = proc.wait()
    if code != 0:
        return False, tracebacks(proc), f"--resume exited {code}: {proc.stderr.strip().splitlines()[-1:]}"
    if leftovers(run):
        return False, tracebacks(proc), f"left behind: {leftovers(run)}"
    if not same_result(run, reference):
        return False, tracebacks(proc), "the resumed run differs from the uninterrupted one"
    return True, tracebacks(proc), ""


def kill_trials(family: str, cfg: Path, reference: Path, duration: float, kills: int, work: Path, rng: random.Random,
                tally: Tally) -> None:
    """``kills`` kill -9s on runs of ``family``, 1-4 per run, each run then resumed to the end."""
    done = chain = 0
    while done < kills:
        chain += 1
        run, logs = work / f"kill-{family}-{chain}", work / "logs"
        planned = min(kills - done, rng.randint(1, 4))
        procs, inside, killed = [], [], 0
        while killed < planned:
            proc = train(cfg, run, logs, resume=bool(procs))
            procs.append(proc)
            if not wait_started(proc, run):
                break
            in_commit = rng.random() < 0.5
            deadline = time.time() + (duration if in_commit else rng.uniform(0.0, duration))
            clear = False  # in_commit: a write this process began (not one the previous kill left)
            while proc.p.poll() is None and time.time() < deadline:
                if in_commit:
                    if committing(run) and clear:
                        break
                    clear = clear or not committing(run)
                time.sleep(0.0005 if in_commit else 0.005)
            if proc.p.poll() is not None:
                break  # finished before the moment came: this run is done
            proc.p.send_signal(signal.SIGKILL)
            proc.wait()
            killed += 1
            inside.append(committing(run))
        if killed == 0:
            continue
        recovered, tb, note = finish(cfg, run, logs, reference)
        tb += tracebacks(*procs)
        for i in range(killed):
            tally.add("kill -9", family, recovered, tb if i == 0 else 0, inside[i], note if i == 0 else "")
        done += killed
        shutil.rmtree(run, ignore_errors=True)


def sigterm_trial(family: str, cfg: Path, reference: Path, duration: float, run: Path, rng: random.Random,
                  tally: Tally) -> None:
    logs = run.parent / "logs"
    proc = train(cfg, run, logs)
    wait_started(proc, run)
    time.sleep(rng.uniform(0.0, duration))
    proc.p.send_signal(signal.SIGTERM)
    code = proc.wait()
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    clean = code == 143 and ("interrupted by SIGTERM: checkpoint saved at step" in last
                             or last.startswith("terminated by SIGTERM:")) or code == 0
    if code == -signal.SIGTERM and not (run / "lock.json").exists() and checkpoint_step(run) == checkpoint_step(
            reference):
        clean = True  # the signal came after the run had ended and let go of it: the default action, nothing to do
        tally.notes.append(f"SIGTERM / {family}: arrived after the run had finished (exit -15, nothing to save)")
    recovered, tb, note = finish(cfg, run, logs, reference)
    if not clean:
        recovered, note = False, f"SIGTERM: exit {code}, last line {last!r}"
    tally.add("SIGTERM", family, recovered, tb + tracebacks(proc), note=note)


def disk_full_trial(family: str, cfg: Path, reference: Path, duration: float, run: Path, rng: random.Random,
                    tally: Tally, after_sigterm: bool) -> None:
    """A write limit at a random offset, on a fresh start or on a resume after a SIGTERM."""
    logs = run.parent / "logs"
    procs = []
    if after_sigterm:  # stopped part-way: at a random checkpoint before the last
        first = train(cfg, run, logs)
        procs.append(first)
        target = rng.randint(1, max(1, int(0.7 * checkpoint_step(reference))))
        while first.p.poll() is None and (checkpoint_step(run) or 0) < target:
            time.sleep(0.005)
        first.p.send_signal(signal.SIGTERM)
        first.wait()
    before = checkpoint_step(run)
    largest = (reference / "trainer.safetensors").stat().st_size  # rewritten by every checkpoint: always reached
    limit = rng.randrange(1, largest)
    proc = train(cfg, run, logs, resume=after_sigterm, limit=limit)
    procs.append(proc)
    code = proc.wait()
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    note = ""
    if code == 0:
        note = f"limit {limit} B was never reached"  # not a failure of seqlab: the trial did not test anything
    elif code != 2 or errors != lines[-1:] or "no space left" not in errors[0]:
        note = f"limit {limit} B: exit {code}, {lines[-1:]}"
    elif leftovers(run):
        note = f"limit {limit} B: left behind {leftovers(run)}"
    elif before is not None and (checkpoint_step(run) or -1) < before:
        note = f"limit {limit} B: the checkpoint of step {before} was lost"
    recovered, tb, finish_note = finish(cfg, run, logs, reference)
    tally.add("disk full", family, recovered and not note, tb + tracebacks(*procs), note=note or finish_note)


def checkpoint_step(run: Path) -> int | None:
    from seqlab.training import checkpoint

    return checkpoint.load_state(run)["step"] if checkpoint.exists(run) else None


DAMAGE = (("model.safetensors", "flip"), ("trainer.safetensors", "truncate"), ("state.json", "truncate"),
          ("model.safetensors", "truncate"), ("trainer.safetensors", "flip"))


def corrupt_trial(family: str, cfg: Path, reference: Path, run: Path, damage: tuple[str, str], rng: random.Random,
                  tally: Tally) -> None:
    name, how = damage
    shutil.copytree(reference, run)
    path = run / name
    data = bytearray(path.read_bytes())
    if how == "flip":
        data[rng.randrange(len(data) // 2, len(data))] ^= 1 << rng.randrange(8)
    else:
        data = data[:rng.randrange(1, len(data))]
    path.write_bytes(bytes(data))
    args, stdin = READERS[family]
    reader = subprocess.run([sys.executable, "-m", "seqlab", *[a.format(run=run) for a in args]], input=stdin,
                            capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=600)
    lines = reader.stderr.strip().splitlines()
    note = ""
    if name == "trainer.safetensors":  # readers do not read it: they must work; --resume must notice
        if reader.returncode != 0:
            note = f"reader: exit {reader.returncode}, {lines[-1:]}"
    elif reader.returncode != 2 or len(lines) != 1 or name not in lines[0]:
        note = f"reader: exit {reader.returncode}, {lines[-1:]}"
    logs = run.parent / "logs"
    proc = train(cfg, run, logs, resume=True)
    code = proc.wait()
    if not note and (code != 0 or "resumed from the newest intact checkpoint, checkpoints/step-" not in proc.stderr):
        note = f"--resume: exit {code}, {proc.stderr.strip().splitlines()[-2:]}"
    ok = not note and not leftovers(run) and same_result(run, reference)
    if not note and not ok:
        note = "the resumed run differs from the uninterrupted one"
    tally.add("corrupt checkpoint", family, ok, tracebacks(proc) + ("Traceback" in reader.stderr), note=note)


# ------------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=20, help="kill -9s per family")
    ap.add_argument("--sigterms", type=int, default=5)
    ap.add_argument("--disk-full", type=int, default=10)
    ap.add_argument("--corrupt", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--keep", action="store_true", help="keep the work folder (printed)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/RESULTS.md")
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="seqlab-faults-"))
    t0 = time.perf_counter()
    configs = write_configs(work)
    references, durations = {}, {}
    for family in families:  # the uninterrupted runs, and how long training takes after the lock appears
        run = work / f"ref-{family}"
        proc = train(configs[family], run, work / "logs")
        wait_started(proc, run)
        started = time.perf_counter()
        if proc.wait() != 0:
            raise SystemExit(f"the reference {family} run failed:\n{proc.stderr}")
        references[family], durations[family] = run, time.perf_counter() - started
        print(f"reference {family}: {durations[family]:.1f} s after the lock", file=sys.stderr)
    tally = Tally()
    for family in families:
        kill_trials(family, configs[family], references[family], durations[family], args.kills, work, rng, tally)
    for i in range(args.sigterms):
        family = families[i % len(families)]
        sigterm_trial(family, configs[family], references[family], durations[family], work / f"term-{i}", rng, tally)
    for i in range(args.disk_full):
        family = families[i % len(families)]
        disk_full_trial(family, configs[family], references[family], durations[family], work / f"full-{i}", rng,
                        tally, after_sigterm=i % 2 == 1)
    for i in range(args.corrupt):
        family = families[i % len(families)]
        corrupt_trial(family, configs[family], references[family], work / f"corrupt-{i}", DAMAGE[i % len(DAMAGE)],
                      rng, tally)
    minutes = (time.perf_counter() - t0) / 60

    header = "| fault | family | trials | recovered | runs lost | tracebacks | inside a checkpoint write |"
    lines = [header, "|---|---|---:|---:|---:|---:|---:|"]
    totals = {"trials": 0, "recovered": 0, "lost": 0, "tracebacks": 0, "inside_write": 0}
    for (fault, family), row in tally.rows.items():
        inside = str(row["inside_write"]) if fault == "kill -9" else ""
        lines.append(f"| {fault} | {family} | {row['trials']} | {row['recovered']} | {row['lost']} | "
                     f"{row['tracebacks']} | {inside} |")
        for k in totals:
            totals[k] += row[k]
    lines.append(f"| **all** | | **{totals['trials']}** | **{totals['recovered']}** | **{totals['lost']}** | "
                 f"**{totals['tracebacks']}** | {totals['inside_write']} |")
    table = "\n".join(lines)
    print(table)
    if tally.notes:
        print("\n".join(f"- {n}" for n in tally.notes))
    counts = (f"kill -9 x {args.kills} per family, SIGTERM x {args.sigterms}, disk full x {args.disk_full}, "
              f"corrupt checkpoint x {args.corrupt}")
    if not args.no_write:
        write_section("faults", f"""## Faults: kill -9, SIGTERM, full disk, damaged checkpoints (bench/faults.py)

`python bench/faults.py` ({counts}; seed {args.seed}; {minutes:.0f} min). Tiny lm (char Transformer, dropout 0.1),
translate (GRU + attention), tag (BiLSTM) and embed (word2vec SGNS, `train.threads=1`) runs checkpointing every 4
steps (word2vec: every step), `train.keep_last = 2`. Every interrupted run is finished with `--resume` and compared
with an uninterrupted run of the same config: **recovered** means it finished and its weights and trainer state
(optimiser moments, RNG states, data position) are bit-identical. Half the kills wait for a checkpoint write to be
in progress; "inside a checkpoint write" counts the kills after which `.next/` (or a `.partial` earlier
checkpoint) was left for the next writer to roll forward or discard. word2vec is compared bit for bit because it
trains with one thread here: with Hogwild threads a resume continues from the last checkpoint (every
`train.save_every` steps and every epoch end), which is exact for the weights saved but not bit-identical
afterwards. Disk full: `RLIMIT_FSIZE` at a random offset below the size of `trainer.safetensors`, so that some write
always reaches it (SIGXFSZ ignored, so the write fails with EFBIG), half on a fresh start (nothing may be left), half on a resume after a SIGTERM (the checkpoint must
survive); each must exit 2 with one `error: no space left ...` line. Damaged: a flipped bit or a truncation in
`model.safetensors`, `trainer.safetensors` or `state.json` of the final checkpoint; a reader (`--last`) must refuse
it naming the file (a damaged `trainer.safetensors`, which readers do not read, must not stop them), `--resume` must
fall back to `checkpoints/step-N` and say so.

{table}
""" + ("\n" + "\n".join(f"- {n}" for n in tally.notes) + "\n" if tally.notes else ""))
    print(json.dumps({"bench": "faults", "trials": totals["trials"], "recovered": totals["recovered"],
                      "lost": totals["lost"], "tracebacks": totals["tracebacks"],
                      "kills_inside_checkpoint_writes": totals["inside_write"], "minutes": round(minutes, 1),
                      "ratio": totals["recovered"] / max(totals["trials"], 1)}))
    if args.keep:
        print(f"work folder: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
