"""Reliability (issue #14): a failed start leaves nothing behind, one writer per run (the lock), readers see
committed checkpoints only, SHA-256-verified checkpoints with train.keep_last fallbacks, and a full disk."""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from seqlab import api
from seqlab.training import checkpoint, rundir
from seqlab.base.errors import SeqlabError

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32", "model.max_len=16",
        "train.batch_size=4", "train.precision=\"fp32\"", "train.progress=false", "train.warmup_steps=2",
        "train.eval_batches=1", "train.threads=1", "train.eval_every=0"]
quiet = lambda *a, **k: None  # noqa: E731
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    from seqlab.data.sources import read_text

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:20_000], encoding="utf-8")
    return path


def lm(corpus: Path, steps: int, *extra: str) -> list[str]:
    return [*TINY, f"data.source=\"{corpus}\"", f"train.max_steps={steps}", *extra]


def seqlab(*args: str, limit: int | None = None, **kw) -> subprocess.CompletedProcess:
    """`python -m seqlab ARGS`; with ``limit``, every file it writes is capped at that many bytes (RLIMIT_FSIZE,
    SIGXFSZ ignored: a write past it fails with EFBIG, a full disk at that offset)."""
    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "seqlab", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env=env, preexec_fn=cap if limit else None, **kw)


def leftovers(path: Path) -> list[str]:
    """Temporary files and unfinished commits under ``path``."""
    return [str(p) for p in path.rglob("*") if ".tmp" in p.name or p.name in (".next", "COMPLETE")
            or p.name.endswith(".partial")]


# ------------------------------------------------------------------------------------------------------
# a failed start leaves nothing behind


def _bad_inputs(tmp: Path) -> dict[str, tuple[str, list[str]]]:
    (tmp / "folder").mkdir()
    (tmp / "empty.txt").write_text("")
    (tmp / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (tmp / "p.de").write_text("ein haus\nzwei\n")
    (tmp / "p.en").write_text("a house\n")
    (tmp / "bad.conll").write_text("EU B-ORG\nrejects\n\n")
    (tmp / "bad.tsv").write_text("sentence\tlabel\ngood film\tpos\nno label here\n")
    (tmp / "bad.csv").write_text("v\n1\n2\nx\n3\n")
    (tmp / "short.csv").write_text("v\n" + "".join(f"{(i * 7) % 5 + 0.5 * i}\n" for i in range(12)))
    return {
        "missing file": ("lm-char", [f"data.source=\"{tmp / 'nope.txt'}\""]),
        "a directory": ("lm-char", [f"data.source=\"{tmp / 'folder'}\""]),
        "an empty corpus": ("lm-char", [f"data.source=\"{tmp / 'empty.txt'}\""]),
        "not UTF-8": ("lm-char", [f"data.source=\"{tmp / 'latin1.txt'}\""]),
        "mismatched parallel files": ("mt-gru-attention", [f"data.train=\"{tmp / 'p'}\"", "data.src=\"de\"",
                                                           "data.tgt=\"en\""]),
        "a malformed CoNLL line": ("ner-bilstm", [f"data.train=\"{tmp / 'bad.conll'}\""]),
        "a TSV line without a label": ("sentiment-lstm", [f"data.train=\"{tmp / 'bad.tsv'}\""]),
        "a non-numeric CSV value": ("ar", [f"data.source=\"{tmp / 'bad.csv'}\""]),
        "a series shorter than 2p+2": ("ar", [f"data.source=\"{tmp / 'short.csv'}\"", "model.max_p=0", "model.p=8"]),
    }


def test_a_failed_start_leaves_no_run_directory_and_the_corrected_command_works(tmp_path, corpus):
    for case, (preset, overrides) in _bad_inputs(tmp_path).items():
        out = tmp_path / "runs" / "deep" / "x"
        with pytest.raises(SeqlabError):
            api.train_run(preset, out, overrides=overrides, log=quiet)
        assert not (tmp_path / "runs").exists(), f"{case}: {sorted(map(str, (tmp_path / 'runs').rglob('*')))}"
    with pytest.raises(SeqlabError, match="file not found"):
        api.train_run("lm-char", tmp_path / "x", overrides=lm(tmp_path / "nope.txt", 2), log=quiet)
    run = api.train_run("lm-char", tmp_path / "x", overrides=lm(corpus, 2), log=quiet)  # the corrected command
    assert checkpoint.load_state(run)["step"] == 2 and not (run / rundir.LOCK).exists()


def test_a_failed_start_keeps_the_users_files(tmp_path, corpus):
    """An existing empty folder stays (empty); a folder of the user's keeps exactly its own files, config.toml
    included (--resume with no checkpoint); --force with bad data puts the old run back."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SeqlabError):
        api.train_run("lm-char", empty, overrides=lm(tmp_path / "nope.txt", 2), log=quiet)
    assert empty.is_dir() and not any(empty.iterdir())
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    (mine / "config.toml").write_text("# my own\n")
    with pytest.raises(SeqlabError):
        api.train_run("lm-char", mine, overrides=lm(tmp_path / "nope.txt", 2), resume=True, log=quiet)
    assert sorted(p.name for p in mine.iterdir()) == ["config.toml", "notes.txt"]
    assert (mine / "config.toml").read_text() == "# my own\n"

    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 3), log=quiet)
    before = (run / "model.safetensors").read_bytes()
    with pytest.raises(SeqlabError, match="file not found"):
        api.train_run("lm-char", run, overrides=lm(tmp_path / "nope.txt", 2), force=True, log=quiet)
    assert (run / "model.safetensors").read_bytes() == before and checkpoint.load_state(run)["step"] == 3
    assert [p.name for p in tmp_path.iterdir() if "replaced" in p.name] == []
    api.train_run("lm-char", run, overrides=lm(corpus, 2), force=True, log=quiet)
    assert checkpoint.load_state(run)["step"] == 2
    assert [p.name for p in tmp_path.iterdir() if "replaced" in p.name] == []


# ------------------------------------------------------------------------------------------------------
# one writer per run: the lock


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _lock(run: Path, pid: int, host: str | None = None, journal: dict | None = None) -> None:
    owner = {"pid": pid, "host": host or socket.gethostname(), "started": "2020-01-01T00:00:00+00:00",
             "proc_start": None, "token": "t", "journal": journal}
    (run / rundir.LOCK).write_text(json.dumps(owner))


def test_a_live_lock_refuses_a_second_writer_and_readers_ignore_it(tmp_path, corpus):
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 2), log=quiet)
    _lock(run, os.getpid())
    with pytest.raises(SeqlabError, match=f"is being trained by PID {os.getpid()} on .*; one process writes a run"):
        api.train_run("lm-char", run, overrides=lm(corpus, 4), resume=True, log=quiet)
    with pytest.raises(SeqlabError, match="is being trained by"):
        api.train_run("lm-char", run, overrides=lm(corpus, 4), force=True, log=quiet)
    assert api.load(run, device="cpu").checkpoint["step"] == 2  # readers never take the lock
    _lock(run, 12345, host="elsewhere")
    with pytest.raises(SeqlabError, match="another host, .*delete .*lock.json"):
        api.train_run("lm-char", run, overrides=lm(corpus, 4), resume=True, log=quiet)


def test_a_stale_lock_is_taken_over_with_a_message(tmp_path, corpus):
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 2), log=quiet)
    dead = _dead_pid()
    _lock(run, dead)
    lines = []
    api.train_run("lm-char", run, overrides=lm(corpus, 4), resume=True, log=lines.append)
    assert f"taking over {run / rundir.LOCK}: PID {dead} on {socket.gethostname()}" in lines[0]
    assert checkpoint.load_state(run)["step"] == 4 and not (run / rundir.LOCK).exists()


def test_a_start_killed_before_its_first_checkpoint_is_undone_by_the_next_writer(tmp_path, corpus):
    run = tmp_path / "runs" / "x"
    run.mkdir(parents=True)
    (run / "config.toml").write_text("[task]\nkind = 'lm'\n")
    (run / "tokenizer.json").write_text("{}")
    _lock(run, _dead_pid(), journal={"made": str(tmp_path / "runs")})
    with pytest.raises(SeqlabError, match="has no checkpoint yet"):
        api.load(run)
    lines = []
    api.train_run("lm-char", run, overrides=lm(corpus, 2), log=lines.append)  # no --resume, no --force needed
    assert "ended before its first checkpoint (the process is gone); removed what it had written" in lines[0]
    assert checkpoint.load_state(run)["step"] == 2


@pytest.mark.heavy
def test_a_second_writer_is_refused_in_one_line_and_readers_see_committed_checkpoints(tmp_path, corpus, seqlab_cli):
    cfg = tmp_path / "run.toml"
    from seqlab.tasks import resolve

    cfg.write_text(resolve("lm-char", lm(corpus, 100_000, "train.save_every=2", "train.eval_every=10")).to_toml())
    run = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "seqlab", "train", str(cfg), "--out", str(run)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not checkpoint.exists(run):
            time.sleep(0.05)
        code, _, err = seqlab_cli("train", cfg, "--out", run, "--resume")  # the second writer
        assert code == 2, err
        assert err.startswith(f"error: {run} is being trained by PID {proc.pid}") and err.count("\n") == 1, err
        # readers, while the writer commits a checkpoint every 2 steps: always a whole one; and the writer, whose
        # commits they never disturb, stops normally
        steps, until = [], time.time() + 3
        while time.time() < until:
            steps.append(api.load(run, device="cpu", last=True).checkpoint["step"])
            api.load(run, device="cpu")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 143, proc.stderr.read()
        assert "interrupted by SIGTERM: checkpoint saved" in proc.stderr.read()
        assert len(steps) > 2 and steps == sorted(steps) and steps[-1] > steps[0]
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------------------------------------------
# SHA-256 in state.json, train.keep_last, falling back to an intact checkpoint


def _flip_a_bit(path: Path, at: float = 0.6) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0x10
    path.write_bytes(bytes(data))


def test_state_records_hashes_and_keep_last_keeps_earlier_checkpoints(tmp_path, corpus):
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 10, "train.save_every=2", "train.keep_last=3",
                                                                "train.eval_every=4"), log=quiet)
    for directory in (run, run / "best", run / "checkpoints" / "step-8"):
        state = checkpoint.load_state(directory)
        assert set(state["files"]) == {"model.safetensors", "trainer.safetensors"}, directory
        for name, digest in state["files"].items():
            assert checkpoint.sha256((directory / name).read_bytes()) == digest
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-6", "step-8"]
    with pytest.raises(SeqlabError, match="train.keep_last must be >= 1"):
        api.train_run("lm-char", tmp_path / "k", overrides=lm(corpus, 2, "train.keep_last=0"), log=quiet)


def test_damage_is_detected_on_load_and_resume_falls_back_bit_for_bit(tmp_path, corpus):
    extra = ("train.save_every=3", "model.dropout=0.1")
    straight = api.train_run("lm-char", tmp_path / "a", overrides=lm(corpus, 12, *extra), log=quiet)
    run = api.train_run("lm-char", tmp_path / "b", overrides=lm(corpus, 12, *extra), log=quiet)
    assert checkpoint.load_state(run)["step"] == 12 and (run / "checkpoints" / "step-9").is_dir()
    _flip_a_bit(run / "model.safetensors")
    with pytest.raises(SeqlabError, match=f"{run / 'model.safetensors'} is damaged: its SHA-256 does not match"):
        api.load(run, last=True)
    (run / "trainer.safetensors").write_bytes((run / "trainer.safetensors").read_bytes()[:100])  # truncated too
    lines = []
    api.train_run("lm-char", run, overrides=lm(corpus, 12, *extra), resume=True, log=lines.append)
    warning = next(line for line in lines if line.startswith("warning:"))
    assert "model.safetensors is damaged" in warning
    assert "resumed from the newest intact checkpoint, checkpoints/step-9 (step 9)" in warning
    assert (run / "checkpoints" / "damaged-step-12" / "model.safetensors").exists()
    for name in ("model.safetensors", "trainer.safetensors"):
        a, b = load_file(straight / name), load_file(run / name)
        assert all(torch.equal(a[k], b[k]) for k in a), name


def test_damage_without_a_fallback_is_one_clear_error(tmp_path, corpus):
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 4, "train.keep_last=1", "train.save_every=2"),
                    log=quiet)
    assert not (run / "checkpoints").exists()
    (run / "state.json").write_text('{"format_version": 1, "st')
    with pytest.raises(SeqlabError, match="state.json is not a valid checkpoint state JSON file .*no intact "
                                          "earlier checkpoint is kept \\(train.keep_last\\)"):
        api.train_run("lm-char", run, overrides=lm(corpus, 6, "train.keep_last=1", "train.save_every=2"), resume=True,
                  log=quiet)
    assert not (run / rundir.LOCK).exists()


def test_a_reader_meeting_a_commit_in_progress_reads_the_committed_checkpoint(tmp_path, corpus):
    """A kill between COMPLETE and the last rename leaves a mix of old and new files in the run root: readers
    take the committed (new) checkpoint without changing anything; the next writer rolls it forward."""
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 2), log=quiet)
    new = api.train_run("lm-char", tmp_path / "n", overrides=lm(corpus, 3), log=quiet)
    (run / ".next").mkdir()
    for name in ("trainer.safetensors", "state.json"):
        (run / ".next" / name).write_bytes((new / name).read_bytes())
    (run / "model.safetensors").write_bytes((new / "model.safetensors").read_bytes())  # already renamed
    (run / ".next" / "COMPLETE").write_bytes(b"")
    assert api.load(run, device="cpu", last=True).checkpoint["step"] == 3
    assert (run / ".next" / "state.json").exists()  # the reader changed nothing
    checkpoint.recover(run)
    assert checkpoint.load_state(run)["step"] == 3 and not (run / ".next").exists()


# ------------------------------------------------------------------------------------------------------
# a full disk


def test_a_failed_checkpoint_write_keeps_the_previous_one(tmp_path, monkeypatch):
    """Writes failing with ENOSPC at random byte offsets: the previous checkpoint stays, no temporaries."""
    model = torch.nn.Linear(8, 4)
    checkpoint.save(tmp_path, model, {"x": torch.zeros(3)}, {"step": 1}, keep_last=2)
    before = {name: (tmp_path / name).read_bytes() for name in checkpoint.FILES}
    real = checkpoint.write_fsynced
    rng = random.Random(0)
    for trial in range(10):
        budget = [rng.randrange(0, 2000)]

        def full_disk(path, data):
            n = min(len(data), budget[0])
            budget[0] -= n
            real(path, data[:n])
            if n < len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

        monkeypatch.setattr(checkpoint, "write_fsynced", full_disk)
        with torch.no_grad():
            model.weight.add_(1.0)
        try:
            checkpoint.save(tmp_path, model, {"x": torch.ones(3)}, {"step": 2 + trial}, keep_last=2)
        except OSError as e:
            assert e.errno == errno.ENOSPC
            assert {name: (tmp_path / name).read_bytes() for name in checkpoint.FILES} == before
        else:
            before = {name: (tmp_path / name).read_bytes() for name in checkpoint.FILES}
        assert leftovers(tmp_path) == []
    monkeypatch.setattr(checkpoint, "write_fsynced", real)
    checkpoint.load_model(torch.nn.Linear(8, 4), tmp_path / "model.safetensors")


@pytest.mark.heavy
def test_disk_full_during_training_is_one_error_and_resume_finishes(tmp_path, corpus):
    """RLIMIT_FSIZE at random offsets: `seqlab train` exits 2 with `error: no space left ...` (no traceback),
    the previous checkpoint is intact (or, before the first one, nothing is left), and --resume finishes."""
    cfg = tmp_path / "run.toml"
    from seqlab.tasks import resolve

    cfg.write_text(resolve("lm-char", lm(corpus, 12, "train.save_every=3", "train.eval_every=6")).to_toml())
    first = seqlab("train", str(cfg), "--out", str(tmp_path / "r"), limit=300)  # config.toml fits, little else
    assert first.returncode == 2 and first.stderr.startswith("error: no space left to write ")
    assert "nothing of the new run" in first.stderr and not (tmp_path / "r").exists()
    run = api.train_run(str(cfg), tmp_path / "r", overrides=["train.max_steps=3"], log=quiet)
    sizes = sorted(p.stat().st_size for p in run.rglob("*") if p.is_file())
    limit = random.Random(1).randrange(sizes[len(sizes) // 2], sizes[-1])  # a write mid-way through a file fails
    out = seqlab("train", str(cfg), "--out", str(run), "--resume", limit=limit)
    assert out.returncode == 2, (limit, out.stderr)
    error = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert error == out.stderr.splitlines()[-1:] and "Traceback" not in out.stderr
    assert error[0].startswith("error: no space left to write ") and error[0].endswith("continue with --resume")
    assert ".next" not in error[0] and leftovers(run) == [] and not (run / rundir.LOCK).exists()
    api.load(run, device="cpu", last=True)  # intact
    api.train_run(str(cfg), run, resume=True, log=quiet)
    assert checkpoint.load_state(run)["step"] == 12


def test_disk_full_writing_an_out_file_keeps_the_old_one(tmp_path, corpus):
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 2), log=quiet)
    out = tmp_path / "att.png"
    out.write_bytes(b"old")
    done = seqlab("attention", str(run), "--text", "def f", "--out", str(out), limit=2000)
    assert done.returncode == 2 and done.stderr.startswith(f"error: no space left to write {out}")
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["att.png", "r"]


def test_a_stale_lock_takeover_finishes_the_dead_writers_writes(tmp_path, corpus):
    """kill -9 in the middle of writes: the next writer rolls a complete commit forward, discards an incomplete
    one (best/ included) and removes the temporaries of atomic writes, its lock's included."""
    run = api.train_run("lm-char", tmp_path / "r", overrides=lm(corpus, 2), log=quiet)
    dead = _dead_pid()
    _lock(run, dead)
    (run / f".{rundir.LOCK}.{dead}.tmp").write_text("{")
    (run / "plots" / ".loss.abc123.tmp.png").write_bytes(b"half")
    (run / "best" / ".next").mkdir()
    (run / "best" / ".next" / "model.safetensors").write_bytes(b"half")
    api.train_run("lm-char", run, overrides=lm(corpus, 3), resume=True, log=quiet)
    assert leftovers(run) == [] and checkpoint.load_state(run)["step"] == 3


def test_sigterm_before_training_starts_undoes_the_start(tmp_path, corpus):
    """SIGTERM while the data is prepared (outside the training loop, whose StopSignals save and stop): exit 143
    with one line, and nothing of the new run is left."""
    run = tmp_path / "r"
    slow = ("import sys, time; import seqlab.data.lm_tokens as lm_tokens; real = lm_tokens.prepare_data\n"
            "def slow(*args, **kwargs):\n    out = real(*args, **kwargs); time.sleep(60); return out\n"
            "lm_tokens.prepare_data = slow\nfrom seqlab.cli import main; sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.Popen([sys.executable, "-c", slow, "train", "lm-char", "--out", str(run),
                             *(f"--set={o}" for o in lm(corpus, 5))], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not (run / "data" / "manifest.json").exists():
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert proc.stderr.read().splitlines()[-1] == "terminated by SIGTERM: nothing of the new run was kept"
    assert not run.exists()
