"""Language-model token data: text files -> tokenizer -> memory-mapped token streams, one per split.

:func:`prepare_tokens` writes a prepared folder (:mod:`seqlab.data.prepared`) from a config's data.* keys,
streaming: the text is scanned and cut into pieces (:mod:`seqlab.data.text_pieces`), the tokenizer trained from
an iterator over them, the pieces encoded in worker processes (:mod:`seqlab.data.workers`), so memory
does not grow with the corpus and corpora larger than memory train. :func:`open_prepared` opens a data.prepared
folder, refused when a key that decides the tokens differs; :func:`prepare_data` gives a run its tokens, where
under torchrun rank 0 prepares and the others wait for it (:mod:`seqlab.data.beacon`); :func:`load_splits`
maps a run's token streams again.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import numpy as np

from seqlab.base.config import DataConfig, RunConfig
from seqlab.data import beacon, prepared, text_pieces, workers
from seqlab.data.prose import pyprose_manifest
from seqlab.data.sources import source_file, split_points
from seqlab.base.errors import SeqlabError, shown, spelled
from seqlab.base.io import copy_atomic, read_json, versions, write_json_atomic
from seqlab.text.tokenizers import Tokenizer, load_tokenizer, train_configured

SPLITS = ("train", "valid", "test")
MB = 1_000_000  # data.tokenizer_sample_mb and the progress bar count decimal megabytes

# The data.* keys that decide the tokens, by tokenizer kind (what a prepared folder's manifest records and
# data.prepared is checked against); the source keys are replaced by data.prepared, so not compared.
SOURCE_KEYS = ("source", "train", "valid", "test")
TOKEN_KEYS = {"char": ("min_freq", "max_size"), "word": ("lowercase", "min_freq", "max_size"),
              "bpe": ("vocab_size",)}
COMMON_TOKEN_KEYS = ("tokenizer", "split", "tokenizer_sample_mb")
DATA_DIR = "data"  # a run's own prepared data (a prepared folder); data/meta.json in runs of earlier versions
PREPARE_HELP = ("run `seqlab data prepare CONFIG --out DIR` with the same data.* keys on each node and pass "
                "--set data.prepared=DIR")


class Ranks(Protocol):
    """The processes of a run, as :class:`seqlab.training.devices.Dist` describes them: rank 0 of ``world`` prepares."""

    rank: int
    world: int

    @property
    def main(self) -> bool: ...

    def barrier(self) -> None: ...

    def share(self, obj): ...


def progress_bar(desc: str, total: int, enabled: bool):
    """A tqdm bar in bytes on stderr (its rate reads in MB/s); drawn on a terminal or in a notebook only
    (:func:`seqlab.base.console.bars_shown`)."""
    from tqdm.auto import tqdm

    from seqlab.base.console import bars_shown

    return tqdm(total=total, desc=desc, unit="B", unit_scale=True, unit_divisor=1000,
                disable=not (enabled and bars_shown()),
                dynamic_ncols=True, leave=False)


def token_keys(d: DataConfig) -> dict[str, object]:
    """The data.* keys (and values) that decide the tokens of config ``d``."""
    keys = (*SOURCE_KEYS, *COMMON_TOKEN_KEYS, *TOKEN_KEYS[d.tokenizer])
    return {k: list(v) if isinstance(v, tuple) else v for k, v in ((k, getattr(d, k)) for k in keys)}


def train_tokenizer(cfg: RunConfig, text: str | Iterable[str]) -> Tokenizer:
    """The configured tokenizer trained on ``text``: a str, or str pieces cut at safe points (read once)."""
    return train_configured(cfg.data, text)


def _text_file(source: str, tmp: Path, bar) -> text_pieces.TextFile:
    """A source scanned; an embedded corpus is written into the temporary folder first."""
    found = source_file(source)
    if isinstance(found, str):
        path = tmp / f".{source}.txt"
        path.write_text(found, encoding="utf-8")
        found = path
    return text_pieces.scan(found, bar)


def _split_ranges(d: DataConfig, tmp: Path, progress: bool) -> dict[str, tuple[text_pieces.TextFile, int, int]]:
    """(file, start byte, end byte) of each split: data.split cuts the main file by characters, as
    :func:`split_text` does; explicit data.valid / data.test files replace their split."""
    names = [d.train or d.source] + ([d.valid, d.test] if d.train else [])
    paths = {n: source_file(n) for n in names if n}  # bad names and paths are refused before any reading
    sizes = sum(len(p) if isinstance(p, str) else p.stat().st_size for p in paths.values())
    with progress_bar("reading", sizes, progress) as bar:
        files = {n: _text_file(n, tmp, bar) for n in paths}
    main = files[d.train or d.source]
    a, b = (main.byte_offset(c) for c in split_points(main.chars, d.split))
    ranges = {"train": (main, 0, a), "valid": (main, a, b), "test": (main, b, main.size)}
    for split in ("valid", "test"):
        if d.train and getattr(d, split):
            f = files[getattr(d, split)]
            ranges[split] = (f, 0, f.size)
    return ranges


def prepare_tokens(cfg: RunConfig, out: Path, *, tokenizer: Tokenizer | None = None, force: bool = False,
                   progress: bool = False) -> dict:
    """Tokenizer, token binaries and manifest of ``cfg``'s data, written into ``out`` atomically (a folder
    that appears complete or not at all); returns the manifest. The text streams through: the tokenizer is
    trained on pieces of the train split (its first data.tokenizer_sample_mb MB when set) unless one is given,
    and the splits are encoded in worker processes straight into ``SPLIT.bin``."""
    d = cfg.data
    started = time.perf_counter()
    with prepared.building(out, force) as tmp:
        ranges = _split_ranges(d, tmp, progress)
        if tokenizer is None:
            f, lo, hi = ranges["train"]
            if d.tokenizer_sample_mb:
                with open(f.path, "rb") as fh:
                    hi = text_pieces.find_cut(fh, lo + int(d.tokenizer_sample_mb * MB), hi)
            with progress_bar("tokenizer", hi - lo, progress) as bar:
                tokenizer = train_tokenizer(cfg, text_pieces.read_pieces(f.path, lo, hi, bar=bar))
        dtype = workers.token_dtype(tokenizer.vocab_size)
        jobs = [workers.Job(split, str(f.path), a, b) for split, (f, lo, hi) in ranges.items()
                for a, b in itertools.pairwise(text_pieces.cut_points(f.path, lo, hi, text_pieces.ENCODE_PIECE))]
        total = sum(hi - lo for _, lo, hi in ranges.values())
        with progress_bar("encoding", total, progress) as bar:
            counts = workers.encode_ranges(tokenizer, jobs, tmp, dtype, bar=bar)
        for split in SPLITS:
            (tmp / f"{split}.bin").touch()
        tokenizer.save(tmp / "tokenizer.json")
        sources, splits = [], {}
        for split, (f, lo, hi) in ranges.items():
            embedded = f.path.parent == tmp  # written there from memory: recorded by name
            name = f.path.name[1:-len(".txt")] if embedded else None
            ident = f.identity() | ({"path": None, "mtime": None, "embedded": name} if embedded else {})
            if name == "pyprose":  # what went into it: Python version, modules (missing ones), characters
                ident["corpus"] = pyprose_manifest()
            if ident not in sources:
                sources.append(ident)
            splits[split] = {"source": sources.index(ident), "bytes": [lo, hi]}
        manifest = {"task": "lm", "seqlab_version": versions()["seqlab"], "data": token_keys(d),
                    "sources": sources, "splits": splits,
                    "tokenizer": {"kind": tokenizer.kind, "vocab_size": tokenizer.vocab_size,
                                  "sha256": prepared.file_sha256(tmp / "tokenizer.json")},
                    "dtype": dtype.name, "tokens": {s: counts.get(s, 0) for s in SPLITS},
                    "seconds": round(time.perf_counter() - started, 3)}
        prepared.write_manifest(tmp, manifest)
        for f, _, _ in ranges.values():
            if f.path.parent == tmp:
                f.path.unlink(missing_ok=True)
    return manifest


def open_prepared(cfg: RunConfig, directory: str | Path) -> tuple[Path, dict]:
    """A data.prepared folder and its manifest, refused when a data.* key that decides the tokens differs
    from the one it was prepared with (naming the key); model.* and train.* keys may differ freely."""
    directory = Path(directory).expanduser()
    fix = f"prepare it with `seqlab data prepare CONFIG --out {shown(directory)}`"
    manifest = prepared.read_manifest(directory, fix)
    if manifest.get("task") != "lm":
        raise SeqlabError(f"data.prepared={shown(directory)} holds data of task {manifest.get('task')!r}, not lm; "
                          f"{fix}")
    recorded, kind = manifest["data"], manifest["data"].get("tokenizer")
    mine = token_keys(replace(cfg.data, tokenizer=kind) if kind in TOKEN_KEYS else cfg.data)
    differ = ["tokenizer"] if cfg.data.tokenizer != kind else []
    differ += [k for k in (*COMMON_TOKEN_KEYS[1:], *TOKEN_KEYS.get(kind, ())) if recorded.get(k) != mine[k]]
    if differ:
        keys = ", ".join(f"data.{k}={_toml(getattr(cfg.data, k))} (prepared with {_toml(recorded.get(k))})"
                         for k in differ)
        raise SeqlabError(f"data.prepared={shown(directory)} was prepared with other token settings: {keys}; "
                          "set these keys to the prepared values, or prepare the data again with them")
    tok_path = directory / "tokenizer.json"
    if prepared.file_sha256(tok_path) != manifest["tokenizer"]["sha256"]:
        raise SeqlabError(f"{shown(tok_path)} does not match the SHA-256 in its manifest: the prepared data is "
                          f"damaged; {fix}")
    return directory.resolve(), manifest


def _toml(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else (
        str(list(value)) if isinstance(value, (list, tuple)) else str(value))


def prepare_data(cfg: RunConfig, run_dir: Path, dist: Ranks, log=print, *,
                 given_tokenizer: bool = False) -> tuple[Tokenizer, dict[str, np.ndarray]]:
    """Tokenizer and memory-mapped splits. With data.prepared, that folder's (memory-mapped, not copied);
    else the run's own ``data/``, prepared once by rank 0 and reused on resume, while the other ranks of a
    torchrun wait for it (:func:`seqlab.data.beacon.wait_for_beacon`, no process-group timeout). With
    ``given_tokenizer`` the run's ``tokenizer.json`` is used as it is (model.pretrained's), not trained."""
    if cfg.data.prepared:
        directory, manifest = open_prepared(cfg, cfg.data.prepared)
        if dist.main:
            copy_atomic(directory / "tokenizer.json", run_dir / "tokenizer.json")
            write_json_atomic(run_dir / DATA_DIR / "meta.json", {"prepared": str(directory),
                                                                  "dtype": manifest["dtype"],
                                                                  "tokens": manifest["tokens"]})
            log(f"data.prepared: {directory} ({_sources_line(manifest)})")
        return load_tokenizer(directory / "tokenizer.json"), prepared.memmap_splits(directory, manifest)
    data = run_dir / DATA_DIR
    beacon_path = run_dir / "data.preparing.json"
    if dist.main:
        rank0 = beacon.Beacon(beacon_path) if dist.world > 1 else None
        if rank0:
            dist.share((rank0.token, rank0.doc["host"]))
        try:
            if not (data / prepared.MANIFEST).exists() and not (data / "meta.json").exists():
                given = load_tokenizer(run_dir / "tokenizer.json") if given_tokenizer else None
                big = sum(_source_size(n) for n in (cfg.data.train or cfg.data.source, cfg.data.valid, cfg.data.test)
                          if n) >= 16 * MB
                manifest = prepare_tokens(cfg, data, tokenizer=given, force=True,
                                          progress=cfg.train.progress and big)
                copy_atomic(data / "tokenizer.json", run_dir / "tokenizer.json")
                if big:
                    log(f"data: {_sources_line(manifest)}, prepared in {manifest['seconds']:.1f} s")
            if rank0:
                rank0.ready()
        except BaseException:
            if rank0:
                rank0.close()
            raise
        if rank0:
            dist.barrier()
            rank0.close()
    else:
        token, host = dist.share(None)
        beacon.wait_for_beacon(beacon_path, token, host, dist.rank, PREPARE_HELP)
        dist.barrier()
    return load_tokenizer(run_dir / "tokenizer.json"), load_splits(run_dir)


def _source_size(name: str) -> int:
    path = Path(name).expanduser()
    return path.stat().st_size if path.is_file() else 0


def _sources_line(manifest: dict) -> str:
    mb = text_bytes(manifest) / MB
    return (f"{mb:,.1f} MB of text, " + ", ".join(f"{s} {n:,}" for s, n in manifest["tokens"].items())
            + f" {manifest['dtype']} tokens")


def text_bytes(manifest: dict) -> int:
    """The bytes of text a prepared folder was encoded from."""
    return sum(hi - lo for lo, hi in (s["bytes"] for s in manifest["splits"].values()))


def load_splits(run_dir: Path) -> dict[str, np.ndarray]:
    """A run's token streams, memory-mapped: its own ``data/`` folder, or the data.prepared folder it names."""
    data = run_dir / DATA_DIR
    fix = f"train the run again with {spelled('force')}"
    if (data / prepared.MANIFEST).exists():
        return prepared.memmap_splits(data, prepared.read_manifest(data, fix))
    meta = read_json(data / "meta.json", "token data index", fix, expect=dict)
    if "prepared" in meta:
        directory = Path(meta["prepared"])
        return prepared.memmap_splits(directory, prepared.read_manifest(
            directory, f"the run reads its tokens from data.prepared={directory}; put that folder back"))
    return prepared.memmap_splits(data, meta)  # a run of an earlier version: data/meta.json with dtype and tokens
