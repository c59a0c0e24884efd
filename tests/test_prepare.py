"""Streaming LM preparation (seqlab.data.lm_tokens and the modules it streams through, seqlab.tasks.lm): the
pieces give the tokens and the tokenizer of the whole text, prepared folders (atomic, reused, refused on a token
key that differs), `seqlab data prepare` errors, and torchrun with two "nodes" on this machine."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from seqlab import api
from seqlab.data import lm_tokens, prepared, text_pieces, workers
from seqlab.data.beacon import Beacon, wait_for_beacon
from seqlab.data.sources import read_text, split_text
from seqlab.base.errors import SeqlabError
from seqlab.tasks import resolve
from seqlab.text.tokenizers import load_tokenizer

ROOT = Path(__file__).resolve().parents[1]
TINY = ["model.n_layers=1", "model.n_heads=2", "model.d_model=16", "model.d_ff=32", "model.max_len=16",
        "train.batch_size=4", 'train.precision="fp32"', "train.progress=false", "train.warmup_steps=1",
        "train.eval_every=0", "train.save_every=0", "train.threads=1"]
QUIET = dict(log=lambda *a, **k: None)

# Text that stresses the cuts: multi-byte characters, whitespace that is not ASCII (U+3000, U+00A0) before
# spaces and newlines, runs of blank lines, CRLF, and a stretch with no space or newline (shorter than a piece:
# a longer one is cut at a character boundary, the one place where the pieces may differ from the whole text).
TRICKY = ("Ünïcødé wörds — and “quotes”.\n\n\nIndented\n    code(x)\n\u3000 ideographic space\n"
          "no\u00a0break\u00a0 spaces\r\nCRLF line\r\n" + "長" * 50 + "\n" + "tail  two  spaces \n")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(read_text("pydocs")[:40_000] + TRICKY + read_text("pydocs")[40_000:70_000], encoding="utf-8")
    return path


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of ~300 bytes (encoding) and ~200 bytes (tokenizer training): many cuts, several workers."""
    monkeypatch.setattr(text_pieces, "ENCODE_PIECE", 300)
    monkeypatch.setattr(text_pieces, "TRAIN_PIECE", 200)


@pytest.mark.parametrize("tokenizer", ["char", "word", "bpe"])
def test_streaming_prepare_equals_in_memory(tmp_path, corpus, small_pieces, tokenizer):
    """Split by character fractions as split_text, a tokenizer trained on the pieces equal to one trained on the
    whole train split, and every split's ids equal to encoding its whole text, token for token."""
    cfg = resolve("lm-char", [f'data.source="{corpus}"', f'data.tokenizer="{tokenizer}"', "data.vocab_size=400",
                              "data.lowercase=true"])
    manifest = lm_tokens.prepare_tokens(cfg, tmp_path / "p")
    texts = dict(zip(lm_tokens.SPLITS, split_text(corpus.read_bytes().decode(), cfg.data.split)))
    whole = lm_tokens.train_tokenizer(cfg, texts["train"])
    assert load_tokenizer(tmp_path / "p" / "tokenizer.json").to_dict() == whole.to_dict()
    splits = prepared.memmap_splits(tmp_path / "p", manifest)
    for split in lm_tokens.SPLITS:
        assert splits[split].dtype == np.uint16
        np.testing.assert_array_equal(splits[split], np.asarray(whole.encode(texts[split])), err_msg=split)
    assert manifest["tokens"] == {s: len(splits[s]) for s in lm_tokens.SPLITS}
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "manifest.json", "test.bin", "tokenizer.json", "train.bin", "valid.bin"]


def test_explicit_split_files_and_tokenizer_sample(tmp_path, corpus, small_pieces):
    """data.train with data.valid (test cut from train by data.split); data.tokenizer_sample_mb trains the
    tokenizer on the first bytes of the train split only (cut safely), the encoding still covers all of it."""
    valid = tmp_path / "valid.txt"
    valid.write_text("A valid file, with a few characters: Ωmega ☃.\n", encoding="utf-8")
    cfg = resolve("lm-char", [f'data.train="{corpus}"', f'data.valid="{valid}"', "data.tokenizer_sample_mb=0.001"])
    manifest = lm_tokens.prepare_tokens(cfg, tmp_path / "p")
    train, _, test = split_text(corpus.read_bytes().decode(), cfg.data.split)
    with open(corpus, "rb") as f:
        sample_end = text_pieces.find_cut(f, 1000, len(train.encode()))
    sample = corpus.read_bytes()[:sample_end].decode()
    tok = load_tokenizer(tmp_path / "p" / "tokenizer.json")
    assert tok.to_dict() == lm_tokens.train_tokenizer(cfg, sample).to_dict()
    splits = prepared.memmap_splits(tmp_path / "p", manifest)
    for split, text in (("train", train), ("valid", valid.read_bytes().decode()), ("test", test)):
        np.testing.assert_array_equal(splits[split], tok.encode(text), err_msg=split)
    assert len(manifest["sources"]) == 2 and manifest["splits"]["valid"] == {"source": 1, "bytes": [0, valid.stat().st_size]}


def test_cuts_are_safe_positions():
    """A cut is before a space or newline that follows a non-whitespace character; a stretch without one is
    cut at the next character boundary, never inside a character."""
    data = "ab  cd\u3000 ef\n\ngh".encode()
    f = io.BytesIO(data)
    assert text_pieces.find_cut(f, 1, len(data)) == 2  # before the first of the two spaces after "ab"
    assert text_pieces.find_cut(f, 3, len(data)) == data.index(b"\n")  # not "  " (space), not "\u3000 " (whitespace)
    cjk = ("長" * 50).encode()
    for pos in range(1, 20):
        cut = text_pieces.find_cut(io.BytesIO(cjk), pos, len(cjk), search=10)
        assert cut >= pos and cut % 3 == 0 and cut - pos < 3  # the next character boundary


@pytest.mark.parametrize("vocab, dtype", [(100, np.uint16), (65_536, np.uint16), (65_537, np.uint32)])
def test_token_dtype(vocab, dtype):
    assert workers.token_dtype(vocab) == dtype


def test_uint32_tokens_when_the_vocabulary_passes_65536(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text("\n".join(" ".join(f"w{i}x{j}" for j in range(10)) for i in range(7_000)) + "\n", encoding="utf-8")
    cfg = resolve("lm-char", [f'data.source="{path}"', 'data.tokenizer="word"', "data.split=[1.0, 0.0, 0.0]"])
    manifest = lm_tokens.prepare_tokens(cfg, tmp_path / "p")
    tok = load_tokenizer(tmp_path / "p" / "tokenizer.json")
    assert tok.vocab_size == 70_004 and manifest["dtype"] == "uint32"
    train = prepared.memmap_splits(tmp_path / "p", manifest)["train"]
    assert train.dtype == np.uint32 and int(train.max()) > 65_535
    np.testing.assert_array_equal(train, tok.encode(path.read_text(encoding="utf-8")))
    assert (tmp_path / "p" / "train.bin").stat().st_size == 4 * 70_000


def test_prepared_folder_is_reused_without_tokenizing_again(tmp_path, corpus, monkeypatch):
    """Two runs train from one prepared folder: its shards are memory-mapped (not copied, not re-encoded); the
    model and train keys may differ; eval reads the folder."""
    out = tmp_path / "p"
    api.prepare("lm-char", out, overrides=[f'data.source="{corpus}"'], progress=False)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    monkeypatch.setattr(lm_tokens, "prepare_tokens", lambda *a, **k: pytest.fail("tokenized again"))
    monkeypatch.setattr(workers, "encode_ranges", lambda *a, **k: pytest.fail("encoded again"))
    runs = []
    for i, extra in enumerate((["train.max_steps=2"], ["train.max_steps=3", "model.d_model=8", "train.lr=1e-2"])):
        run = api.train_run("lm-char", tmp_path / f"r{i}", overrides=[*TINY, f'data.prepared="{out}"', *extra], **QUIET)
        runs.append(run)
        assert not (run / "data" / "train.bin").exists()
        splits = lm_tokens.load_splits(run)
        assert Path(splits["train"].filename) == (out / "train.bin").resolve()
        assert api.load(run, device="cpu").evaluate("valid")["tokens"] == len(splits["valid"]) - 1
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    resumed = api.train_run("lm-char", runs[0], overrides=[*TINY, f'data.prepared="{out}"', "train.max_steps=4"],
                        resume=True, **QUIET)
    assert json.loads((resumed / "state.json").read_text())["step"] == 4


def test_prepared_mismatch_is_refused_naming_the_key(tmp_path, corpus):
    out = tmp_path / "p"
    api.prepare("lm-char", out, overrides=[f'data.source="{corpus}"', "data.min_freq=2"], progress=False)
    base = [*TINY, f'data.prepared="{out}"', "train.max_steps=1"]
    with pytest.raises(SeqlabError, match=r"data.min_freq=1 \(prepared with 2\); set these keys"):
        api.train_run("lm-char", tmp_path / "r", overrides=base, **QUIET)
    with pytest.raises(SeqlabError, match=r'data.tokenizer="word" \(prepared with "char"\)'):
        api.train_run("lm-char", tmp_path / "r", overrides=[*base, "data.min_freq=2", 'data.tokenizer="word"'], **QUIET)
    with pytest.raises(SeqlabError, match=r"data.split=\[0.8, 0.1, 0.1\] \(prepared with \[0.9, 0.05, 0.05\]\)"):
        api.train_run("lm-char", tmp_path / "r", overrides=[*base, "data.min_freq=2", "data.split=[0.8,0.1,0.1]"], **QUIET)
    assert not (tmp_path / "r").exists()
    # keys that do not decide a char tokenizer's tokens, the source keys and model/train keys may differ
    run = api.train_run("lm-char", tmp_path / "r", overrides=[*base, "data.min_freq=2", "data.vocab_size=99",
                                                          'data.source="elsewhere.txt"', "model.d_model=8"], **QUIET)
    assert (run / "model.safetensors").exists()
    (out / "valid.bin").write_bytes(b"\0")
    with pytest.raises(SeqlabError, match="valid.bin holds 1 bytes.*damaged"):
        api.train_run("lm-char", tmp_path / "r2", overrides=[*base, "data.min_freq=2"], **QUIET)


def test_prepare_applies_the_overrides_of_a_run_config(tmp_path, corpus, monkeypatch):
    """api.prepare(RunConfig, overrides=...) applies them, as train_run does (they were dropped)."""
    from seqlab.tasks import lm

    seen = {}
    monkeypatch.setattr(lm, "prepare", lambda cfg, out, **kwargs: seen.setdefault("cfg", cfg))
    cfg = resolve("lm-char", [f'data.source="{corpus}"'])
    api.prepare(cfg, tmp_path / "p", overrides=["data.min_freq=3", "data.tokenizer=word"], progress=False)
    assert (seen["cfg"].data.min_freq, seen["cfg"].data.tokenizer) == (3, "word")
    assert seen["cfg"].data.source == str(corpus) and cfg.data.min_freq != 3


def test_interrupted_prepare_leaves_nothing(tmp_path, corpus, monkeypatch, small_pieces):
    """An error, Ctrl-C or SIGTERM while encoding removes the temporary folder; the old folder (--force) stays;
    a temporary folder left by a killed process is removed by the next preparation beside it."""
    encode = workers.encode_ranges

    def interrupted(signum):
        def fake(*args, **kwargs):
            encode(*args, **kwargs)  # the shards are written, then the interruption comes
            if signum:
                os.kill(os.getpid(), signum)
                time.sleep(5)
            raise KeyboardInterrupt

        return fake

    out = tmp_path / "p"
    for signum in (None, signal.SIGTERM):
        monkeypatch.setattr(workers, "encode_ranges", interrupted(signum))
        with pytest.raises(KeyboardInterrupt):
            api.prepare("lm-char", out, overrides=[f'data.source="{corpus}"'], progress=False)
        assert not list(tmp_path.iterdir())
    monkeypatch.setattr(workers, "encode_ranges", encode)
    api.prepare("lm-char", out, overrides=[f'data.source="{corpus}"'], progress=False)
    manifest = (out / "manifest.json").read_text()
    monkeypatch.setattr(workers, "encode_ranges", interrupted(None))
    with pytest.raises(KeyboardInterrupt):
        api.prepare("lm-char", out, overrides=[f'data.source="{corpus}"', "data.min_freq=3"], force=True, progress=False)
    assert (out / "manifest.json").read_text() == manifest and sorted(p.name for p in tmp_path.iterdir()) == ["p"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan = tmp_path / f".p2.{prepared._host()}-{dead.stdout.strip()}-deadbeef.tmp"
    orphan.mkdir()
    monkeypatch.setattr(workers, "encode_ranges", encode)
    api.prepare("lm-char", tmp_path / "p2", overrides=[f'data.source="{corpus}"'], progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "p2"]


def seqlab(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqlab", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, **kw)


def test_data_prepare_cli(tmp_path, corpus, seqlab_cli):
    out = tmp_path / "p"
    ok = seqlab("data", "prepare", "lm-char", "--set", f'data.source="{corpus}"', "--out", str(out), "--no-progress")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == str(out) and "MB/s" in ok.stderr and "char vocabulary" in ok.stderr
    bad_utf8 = tmp_path / "latin1.txt"
    bad_utf8.write_bytes("caf\xe9\n".encode("latin-1"))
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n", encoding="utf-8")
    cases = [
        (["lm-char", "--out", str(out)], f"error: {out} already exists; give another --out or replace it with --force"),
        (["ner-bilstm", "--out", str(tmp_path / "x")], 'error: seqlab data prepare supports task.kind = "lm"'),
        (["lm-char", "--set", f'data.prepared="{out}"', "--out", str(tmp_path / "x")], "is already prepared data"),
        (["lm-char", "--set", 'data.source="missing.txt"', "--out", str(tmp_path / "x")], "error: file not found"),
        (["lm-char", "--set", f'data.source="{bad_utf8}"', "--out", str(tmp_path / "x")],
         "is not UTF-8: byte 0xe9 at byte offset 3"),
        (["lm-char", "--set", f'data.source="{empty}"', "--out", str(tmp_path / "x")], "is empty (no text)"),
        (["lm-char", "--set", "data.tokenizer_sample_mb=-1", "--out", str(tmp_path / "x")],
         "data.tokenizer_sample_mb must be >= 0"),
        (["lm-char"], "the following arguments are required: --out"),
    ]
    for args, message in cases:  # in this process (each a subprocess would start torch again: 1.5 s)
        code, _, err = seqlab_cli("data", "prepare", *args, "--no-progress")
        assert code == 2 and err.startswith("error:") and message in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.txt", "latin1.txt", "p"]
    again = seqlab("data", "prepare", "lm-char", "--set", f'data.source="{corpus}"', "--set", 'data.tokenizer="word"',
                   "--out", str(out), "--force", "--no-progress")
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "manifest.json").read_text())["data"]["tokenizer"] == "word"


def test_waiting_rank_sees_ready_gone_or_no_shared_filesystem(tmp_path):
    beacon = Beacon(tmp_path / "b.json", every=0.05)
    done = threading.Timer(0.3, beacon.ready)
    done.start()
    wait_for_beacon(tmp_path / "b.json", beacon.token, "host0", 1, "HELP", poll=0.02)  # returns once ready
    beacon.close()
    beacon = Beacon(tmp_path / "b.json", every=0.05)
    threading.Timer(0.3, beacon.close).start()
    with pytest.raises(SeqlabError, match="rank 1: rank 0 \\(host host0\\) stopped preparing the data"):
        wait_for_beacon(tmp_path / "b.json", beacon.token, "host0", 1, "HELP", poll=0.02)
    with pytest.raises(SeqlabError, match=f"rank 1 on host {socket.gethostname()} cannot see .* the nodes share no "
                                          "filesystem there; HELP"):
        wait_for_beacon(tmp_path / "b.json", "other-token", "host0", 1, "HELP", visible_s=0.2, poll=0.02)
    assert "seqlab data prepare" in lm_tokens.PREPARE_HELP and "data.prepared=DIR" in lm_tokens.PREPARE_HELP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.heavy
def test_two_nodes_match_one_process(tmp_path, corpus, seqlab_cli):
    """Two torchrun "nodes" (c10d rendezvous on loopback, one process each) train lm-char from the corpus: rank 0
    prepares the data in the run directory while rank 1 waits for it, and the loss curve equals the
    single-process one for the same global batch (within 1e-5: gloo's all-reduce of two float32 gradients
    rounds each sum once, far below it); so does one node of two processes (`--standalone`). CI runs it: README
    advertises data-parallel and multi-node torchrun."""
    cfg = resolve("lm-char", [*TINY, f'data.source="{corpus}"', "train.max_steps=5", "train.log_every=1",
                              "train.batch_size=8", "model.max_len=32"])
    path = tmp_path / "run.toml"
    path.write_text(cfg.to_toml(), encoding="utf-8")
    code, _, err = seqlab_cli("train", path, "--out", tmp_path / "one")  # one process: this one
    assert code == 0, err
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    node = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=seqlab-test", "-m", "seqlab", "train", str(path),
            "--out", str(tmp_path / "two")]
    nodes = [subprocess.Popen(node, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in nodes]
    for p, (_, err) in zip(nodes, outputs):
        assert p.returncode == 0, err[-3000:]
    curve = lambda d: [r["loss"] for r in map(json.loads, (d / "metrics.jsonl").read_text().splitlines())
                       if r["split"] == "train"]
    a, b = curve(tmp_path / "one"), curve(tmp_path / "two")
    assert len(a) == len(b) == 5
    assert max(abs(x - y) for x, y in zip(a, b)) <= 1e-5, (a, b)
    assert not (tmp_path / "two" / "data.preparing.json").exists()
    assert (tmp_path / "two" / "data" / "manifest.json").exists()
    # one node, two processes (`torchrun --standalone --nproc_per_node=2`, the manual's data-parallel line): the
    # same curve again
    standalone = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                                 "-m", "seqlab", "train", str(path), "--out", str(tmp_path / "standalone")],
                                capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert standalone.returncode == 0, standalone.stderr[-2000:]
    c = curve(tmp_path / "standalone")
    assert len(c) == 5 and max(abs(x - y) for x, y in zip(a, c)) <= 1e-5, (a, c)


def test_new_data_keys_keep_older_runs_resumable_and_are_lm_only():
    """A config.toml written before data.prepared / data.tokenizer_sample_mb existed resumes (a missing key counts
    as its default); the other tasks refuse the two keys instead of ignoring them."""
    new = resolve("lm-char", []).to_dict()
    old = {**new, "data": {k: v for k, v in new["data"].items() if k not in ("prepared", "tokenizer_sample_mb")}}
    assert api.config_differences(old, new) == []
    assert api.config_differences(old, resolve("lm-char", ["data.tokenizer_sample_mb=1"]).to_dict()) == [
        "data.tokenizer_sample_mb"]
    for key in ('data.prepared="p"', "data.tokenizer_sample_mb=1"):
        with pytest.raises(SeqlabError, match=f'data.{key.split("=")[0][5:]} is used by task.kind = "lm" only'):
            resolve("ner-bilstm", [key])


def test_runs_of_earlier_versions_still_read_their_tokens(tmp_path):
    """data/meta.json (dtype, token counts) beside the binaries: the layout before prepared folders."""
    data = tmp_path / "data"
    data.mkdir()
    ids = {"train": np.arange(10, dtype=np.uint16), "valid": np.arange(3, dtype=np.uint16), "test": np.zeros(0, np.uint16)}
    for split, a in ids.items():
        a.tofile(data / f"{split}.bin")
    (data / "meta.json").write_text(json.dumps({"dtype": "uint16", "tokens": {s: len(a) for s, a in ids.items()}}))
    splits = lm_tokens.load_splits(tmp_path)
    for split, a in ids.items():
        np.testing.assert_array_equal(splits[split], a)


def test_sigterm_while_a_run_prepares_ends_the_workers_and_undoes_the_start(tmp_path, corpus):
    """SIGTERM while the workers encode (seqlab train preparing its own data): the workers are ended, nothing of
    the new run is left, and the command exits 143 as for any SIGTERM before training (README, Reliability)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    script = ("import os, sys, time\n"
              "import seqlab.data.workers as workers, seqlab.data.text_pieces as pieces\n"
              "pieces.ENCODE_PIECE = 2000\n"
              "def stuck(job, dtype, tokenizer=None):\n"
              f"    open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close(); time.sleep(120)\n"
              "workers._encode_job = stuck\n"
              "from seqlab.cli import main; sys.exit(main(sys.argv[1:]))\n")
    run = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-c", script, "train", "lm-char", "--out", str(run),
                             f'--set=data.source="{corpus}"', *(f"--set={o}" for o in TINY)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(pids.iterdir())) < 2:
        time.sleep(0.05)
    workers = [int(p.name) for p in pids.iterdir()]
    assert len(workers) == 2, proc.stderr.read() if proc.poll() is not None else "no workers"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert proc.stderr.read().splitlines()[-1] == "terminated by SIGTERM: nothing of the new run was kept"
    assert not run.exists() and not list(tmp_path.glob(".r*"))
    time.sleep(0.5)
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
