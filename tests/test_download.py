"""The download path, end to end, against a local HTTP server that serves ../shared/data under the
upstream GitHub paths (gzipping the multi30k files on the fly, and serving the time series with CRLF line endings
and no final newline, as upstream stores them)."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from seqlab.data import download
from seqlab.data.sources import list_sources, read_text
from seqlab.base.errors import SeqlabError


class Mirror:
    """raw.githubusercontent.com on 127.0.0.1: URL path -> bytes of the shared data file."""

    def __init__(self, shared: Path):
        self.files = {f.url_path: (shared / f.path, f.gzip, f.crlf) for d in download.DATASETS.values() for f in d.files}
        self.requests: list[str] = []
        self.corrupt: set[str] = set()  # local paths (RemoteFile.path) served with one byte flipped
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                mirror.requests.append(self.path)
                if self.path not in mirror.files:
                    self.send_error(404)
                    return
                path, gz, crlf = mirror.files[self.path]
                body = path.read_bytes()
                if crlf:
                    body = body.removesuffix(b"\n").replace(b"\n", b"\r\n")
                if any(path.as_posix().endswith(c) for c in mirror.corrupt):
                    body = body[:100] + bytes([body[100] ^ 0x01]) + body[101:]
                if gz:
                    body = gzip.compress(body, compresslevel=1)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(shared_data, tmp_path, monkeypatch):
    m = Mirror(shared_data)
    monkeypatch.setenv("SEQLAB_MIRROR", m.url)
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    yield m
    m.close()


def _files_in(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_registry_matches_shared_checksums(shared_data, monkeypatch):
    monkeypatch.delenv("SEQLAB_MIRROR", raising=False)
    sums = dict(line.split()[::-1] for line in (shared_data / "SHA256SUMS").read_text().splitlines())
    for ds in download.DATASETS.values():
        assert ds.main in {f.path for f in ds.files}
        for f in ds.files:
            assert sums[f.path] == f.sha256, f.path
            assert f.url() == download.GITHUB_RAW + f.url_path and f.url_path.count("/") >= 4


def test_cache_dir_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("SEQLAB_CACHE", raising=False)
    assert download.cache_dir() == Path("~/.cache/seqlab").expanduser()
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path))
    assert download.cache_dir() == tmp_path


def test_get_tinyshakespeare_verifies_and_caches(mirror, shared_data, capsys):
    folder = download.get("tinyshakespeare")  # progress bar on: exercised, goes to stderr
    assert folder == download.cache_dir() / "tinyshakespeare"
    assert _sha256(folder / "input.txt") == _sha256(shared_data / "tinyshakespeare/input.txt")
    assert _files_in(download.cache_dir()) == ["tinyshakespeare/input.txt"]  # no staging leftovers
    assert len(mirror.requests) == 1
    assert read_text("tinyshakespeare").startswith("First Citizen:")
    assert len(mirror.requests) == 1  # read from the cache
    assert capsys.readouterr().out == ""


def test_get_multi30k_gunzips_and_verifies(mirror, shared_data):
    folder = download.get("multi30k", progress=False)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["test.de", "test.en", "train.de", "train.en", "val.de", "val.en"]
    for name in ("train.en", "test.de"):
        assert (folder / name).read_bytes() == (shared_data / "multi30k" / name).read_bytes()
    assert all(r.endswith(".gz") for r in mirror.requests) and len(mirror.requests) == 6
    assert "test_2016_flickr.en.gz" in " ".join(mirror.requests)
    assert {r["name"]: r["cached"] for r in list_sources()}["multi30k"] is True


def test_corrupt_download_is_rejected_and_not_cached(mirror):
    mirror.corrupt = {"tinyshakespeare/input.txt"}
    expected = download.DATASETS["tinyshakespeare"].files[0].sha256
    pattern = rf"checksum mismatch for tinyshakespeare/input.txt.*expected sha256 {expected}, got [0-9a-f]{{64}}"
    with pytest.raises(SeqlabError, match=pattern):
        download.get("tinyshakespeare", progress=False)
    assert _files_in(download.cache_dir()) == []
    assert not download.is_cached("tinyshakespeare")


def test_one_corrupt_file_caches_none_of_the_dataset(mirror):
    mirror.corrupt = {"multi30k/val.de"}  # the 4th of 6 files; flipped before gzip, so the checksum catches it
    with pytest.raises(SeqlabError, match="checksum mismatch for multi30k/val.de"):
        download.get("multi30k", progress=False)
    assert _files_in(download.cache_dir()) == []


def test_no_network_error_says_how_to_use_local_files(monkeypatch, tmp_path):
    monkeypatch.setenv("SEQLAB_MIRROR", "http://127.0.0.1:1")  # nothing listens on port 1
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SeqlabError, match=r"cannot download .*point data\.train") as err:
        download.get("tinyshakespeare", progress=False)
    assert "\n" not in str(err.value)
    assert _files_in(tmp_path / "cache") == []


def test_file_mirror(shared_data, tmp_path, monkeypatch):
    (f,) = download.DATASETS["tinyshakespeare"].files
    local = tmp_path / "mirror" / f.url_path.lstrip("/")
    local.parent.mkdir(parents=True)
    local.symlink_to(shared_data / f.path)
    monkeypatch.setenv("SEQLAB_MIRROR", (tmp_path / "mirror").as_uri())
    monkeypatch.setenv("SEQLAB_CACHE", str(tmp_path / "cache"))
    assert (download.get("tinyshakespeare", progress=False) / "input.txt").stat().st_size == 1_115_394


def _cli(argv: list[str], monkeypatch) -> int:
    from seqlab import cli

    # only the verbs whose modules exist in this tree (the others are built in parallel)
    present = [c for c in cli.COMMANDS if importlib.util.find_spec(f"seqlab.commands.{c}") is not None]
    monkeypatch.setattr(cli, "COMMANDS", present)
    return cli.main(argv)


def test_cli_data_get_prints_terms_and_uses_cache(mirror, monkeypatch, capsys):
    assert _cli(["data", "get", "tinyshakespeare", "--no-progress"], monkeypatch) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("terms of use:") and "public domain" in out[0]
    assert out[-1] == str(download.cache_dir() / "tinyshakespeare")
    assert len(mirror.requests) == 1
    assert _cli(["data", "get", "tinyshakespeare"], monkeypatch) == 0  # cached: no request
    assert len(mirror.requests) == 1
    assert _cli(["data", "get", "tinyshakespeare", "--force", "--no-progress"], monkeypatch) == 0
    assert len(mirror.requests) == 2
    capsys.readouterr()
    assert _cli(["data", "list"], monkeypatch) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].split() == ["name", "kind", "cached", "description"]
    row = next(line for line in table.splitlines() if line.startswith("tinyshakespeare"))
    assert row.split()[1:3] == ["download", "yes"]


def test_cli_data_errors(mirror, monkeypatch, capsys):
    assert _cli(["data", "get", "nope"], monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown dataset 'nope'") and err.count("\n") == 1
    mirror.corrupt = {"tinyshakespeare/input.txt"}
    assert _cli(["data", "get", "tinyshakespeare", "--no-progress"], monkeypatch) == 2
    assert "checksum mismatch" in capsys.readouterr().err
    assert _files_in(download.cache_dir()) == []


def test_gunzip_stream_handles_chunks_members_and_corruption():
    data = bytes(range(256)) * 400
    packed = gzip.compress(data[:50_000]) + gzip.compress(data[50_000:])  # two gzip members
    g = download._Gunzip("u")
    out = b"".join(g.feed(packed[i : i + 777]) for i in range(0, len(packed), 777))
    g.finish()
    assert out == data
    cut = download._Gunzip("u")
    cut.feed(packed[:1000])
    with pytest.raises(SeqlabError, match="cut short"):
        cut.finish()
    with pytest.raises(SeqlabError, match="not valid gzip"):
        download._Gunzip("u").feed(b"this is not gzip at all")


def test_named_series_download_turns_crlf_into_lf(mirror, shared_data):
    for name in ("daily-min-temperatures", "airline-passengers", "daily-total-female-births"):
        path = download.main_file(name)
        assert path == download.cache_dir() / "timeseries" / f"{name}.csv"
        assert path.read_bytes() == (shared_data / "timeseries" / f"{name}.csv").read_bytes()
    assert len(mirror.requests) == 3 and all("/jbrownlee/Datasets/" in r for r in mirror.requests)
    assert "Time Series Data Library" in download.dataset("airline-passengers").terms
    assert {r["name"]: r["cached"] for r in list_sources()}["daily-min-temperatures"] is True


def test_cli_data_get_prints_the_file_of_a_named_series(mirror, monkeypatch, capsys):
    assert _cli(["data", "get", "airline-passengers", "--no-progress"], monkeypatch) == 0
    out = capsys.readouterr().out.splitlines()
    assert "Box & Jenkins" in out[0] and out[-1] == str(download.cache_dir() / "timeseries/airline-passengers.csv")


def test_crlf_stream_handles_chunks_and_the_final_newline():
    text = b'"Date","Temp"\r\n"1981-01-01",20.7\r\n"1981-01-02",17.9'
    for size in (1, 2, 5, 7, len(text)):
        t = download._ToLF()
        out = b"".join(t.feed(text[i:i + size]) for i in range(0, len(text), size)) + t.finish()
        assert out == b'"Date","Temp"\n"1981-01-01",20.7\n"1981-01-02",17.9\n', size
    t = download._ToLF()
    assert t.feed(b"a\nb\n") + t.finish() == b"a\nb\n"  # LF already: unchanged
