"""Parallel text for translation: two aligned files, their splits, tokenizers and vocabularies.

Conventions (docs/manual.md, "Config conventions"): ``data.train=PREFIX`` with ``data.src=de`` and
``data.tgt=en`` reads ``PREFIX.de`` and ``PREFIX.en``; line i of one is the translation of line i of
the other. ``data.valid`` / ``data.test`` are prefixes too; without them the validation and test pairs
are cut from the training pairs by ``data.split`` (contiguous, in file order, by pair counts). With
no ``data.train``, ``data.source`` names a downloadable parallel corpus (``multi30k``: its
``train``/``val``/``test`` files, the last being test2016).

Checks (one-line errors naming the fix): the two files of a prefix must have the same number of
lines (the error names both files and both counts); a line that is empty (or only whitespace) on one
side but not on the other is refused as ``FILE:LINE``; pairs empty on both sides are skipped.
A trailing newline ends the last line; ``\\r\\n`` line ends are accepted.

Reading: :func:`stream_parallel` makes the checks in passes over the files (one line at a time) and returns a
:class:`~seqlab.data.streamed.Streamed` view of the pairs, which the translation task's preparation reads
pair by pair (its memory is the index it writes, not the text); :func:`read_parallel` is the same in memory.

Tokenizers (notes: Tokens; :mod:`seqlab.text.tokenizers`): ``data.tokenizer`` char, word or
BPE, trained on the training pairs only. Separate by default: one vocabulary learned from the source
side, one from the target side; with a joint vocabulary (``data.joint_vocab``) one tokenizer is learned
from both sides and used for both (BPE: joint merges; the model may then share its embeddings).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from seqlab.data.streamed import Streamed
from seqlab.base.errors import SeqlabError
from seqlab.text.tokenizers import BPETokenizer, Tokenizer, train_configured

SPLITS = ("train", "valid", "test")
# Downloadable parallel corpora: data.source name -> split -> path prefix inside the dataset cache.
PARALLEL_SOURCES: dict[str, dict[str, str]] = {
    "multi30k": {"train": "multi30k/train", "valid": "multi30k/val", "test": "multi30k/test"},
}


@dataclass(frozen=True)
class ParallelCorpus:
    """Aligned sentence pairs: ``src[i]`` translates to ``tgt[i]``; iterates as (source, target) pairs and slices
    like a list, as a :class:`~seqlab.data.streamed.Streamed` view of the files does."""

    src: list[str]
    tgt: list[str]

    def __len__(self) -> int:
        return len(self.src)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self.src, self.tgt)

    def __getitem__(self, part: slice) -> ParallelCorpus:
        return ParallelCorpus(self.src[part], self.tgt[part])

    def slice(self, start: int, stop: int) -> ParallelCorpus:
        return self[start:stop]


def parallel_paths(prefix: str | os.PathLike, src: str, tgt: str) -> tuple[Path, Path]:
    """``PREFIX.src`` and ``PREFIX.tgt``."""
    if not src or not tgt:
        raise SeqlabError("parallel text needs the language suffixes data.src and data.tgt; "
                          "e.g. --set data.src=de --set data.tgt=en to read PREFIX.de and PREFIX.en")
    if src == tgt:
        raise SeqlabError(f"data.src and data.tgt are both {src!r}; give the two languages' file suffixes")
    prefix = os.fspath(prefix)
    return Path(f"{prefix}.{src}").expanduser(), Path(f"{prefix}.{tgt}").expanduser()


def _lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file, split on "\\n" only (never on other Unicode line separators), read one by one."""
    from seqlab.data.sources import read_lines

    return (line[:-1] if line.endswith("\r") else line for line in read_lines(path))


def _pairs(src_path: Path, tgt_path: Path) -> Iterator[tuple[str, str]]:
    """The sentence pairs of two aligned files, streamed; a pair empty on one side only is refused (FILE:LINE)."""
    for number, (s, t) in enumerate(zip(_lines(src_path), _lines(tgt_path)), start=1):
        s_empty, t_empty = not s.strip(), not t.strip()
        if s_empty and t_empty:
            continue
        if s_empty or t_empty:
            empty, other = (src_path, tgt_path) if s_empty else (tgt_path, src_path)
            raise SeqlabError(f"{empty}:{number} is empty but line {number} of {other} is not; "
                              "remove the pair from both files or fill in the missing side")
        yield s, t


def stream_parallel(prefix: str | os.PathLike, src: str, tgt: str) -> Streamed[tuple[str, str]]:
    """The sentence pairs of ``PREFIX.src`` / ``PREFIX.tgt`` as a streamed view, every check of the module
    docstring made (in :func:`read_parallel`'s order) by passes over the files before it returns."""
    src_path, tgt_path = parallel_paths(prefix, src, tgt)
    n_src, n_tgt = sum(1 for _ in _lines(src_path)), sum(1 for _ in _lines(tgt_path))
    if n_src != n_tgt:
        raise SeqlabError(f"{src_path} has {n_src} lines but {tgt_path} has {n_tgt}; "
                          "parallel files must be aligned line by line")
    pairs = Streamed(lambda: _pairs(src_path, tgt_path), (src_path, tgt_path))
    if not len(pairs):
        raise SeqlabError(f"{src_path} and {tgt_path} hold no sentence pairs; give files with text in them")
    return pairs


def read_parallel(prefix: str | os.PathLike, src: str, tgt: str) -> ParallelCorpus:
    """The sentence pairs of ``PREFIX.src`` / ``PREFIX.tgt`` in memory (see the module docstring for the checks)."""
    pairs = list(stream_parallel(prefix, src, tgt))
    return ParallelCorpus([s for s, _ in pairs], [t for _, t in pairs])


Pairs = ParallelCorpus | Streamed  # sentence pairs in memory, or streamed from their files


def split_prefixes(data) -> dict[str, str]:
    """The path prefix of each split named by a :class:`seqlab.base.config.DataConfig` ("" = cut from train)."""
    if data.train:
        return {"train": data.train, "valid": data.valid, "test": data.test}
    if data.source in PARALLEL_SOURCES:
        from seqlab.data import download

        root = download.get(data.source)
        return {split: str(root.parent / path) for split, path in PARALLEL_SOURCES[data.source].items()}
    raise SeqlabError(f"translation reads parallel files: set data.train=PREFIX (with data.src/data.tgt "
                      f"suffixes) or data.source to one of {', '.join(PARALLEL_SOURCES)}; "
                      f"got data.source={data.source!r}")


def cut(corpus: Pairs, fractions) -> tuple[Pairs, Pairs, Pairs]:
    """Contiguous train, valid, test pieces in file order: boundaries round(n f_train), round(n (f_train + f_valid))."""
    n = len(corpus)
    a = min(n, round(n * fractions[0]))
    b = max(a, min(n, round(n * (fractions[0] + fractions[1]))))
    parts = corpus[0:a], corpus[a:b], corpus[b:n]
    for part, fraction, split in zip(parts, fractions, SPLITS):
        if fraction > 0 and not len(part):
            raise SeqlabError(f"{n} sentence pairs are too few for a {split} split of {fraction:g}; "
                              f"give more pairs, change data.split or give data.{split}")
    return parts


def read_splits(data, splits: tuple[str, ...] = SPLITS, reader: Callable[..., Pairs] = read_parallel) -> dict[str, Pairs]:
    """The requested splits of the parallel data described by ``data`` (a DataConfig), read by ``reader``: in
    memory (:func:`read_parallel`) or as streamed views of the files (:func:`stream_parallel`)."""
    prefixes = split_prefixes(data)
    needs_cut = any(not prefixes[s] for s in splits if s != "train")
    out = {}
    if "train" in splits or needs_cut:
        train = reader(prefixes["train"], data.src, data.tgt)
        pieces = dict(zip(SPLITS, cut(train, data.split))) if any(not prefixes[s] for s in SPLITS[1:]) else {}
        out["train"] = pieces.get("train", train)
        for s in SPLITS[1:]:
            if not prefixes[s]:
                out[s] = pieces[s]
    for s in splits:
        if s not in out:
            out[s] = reader(prefixes[s], data.src, data.tgt)
    return {s: out[s] for s in splits}


def joint_vocab(data) -> bool:
    """``data.joint_vocab`` (one vocabulary for both languages); False when the config has no such key."""
    return bool(getattr(data, "joint_vocab", False))


def train_tokenizers(data, train: Pairs) -> tuple[Tokenizer, Tokenizer]:
    """(source tokenizer, target tokenizer), learned from the training pairs (streamed: one pass per side);
    one object for both when joint."""
    sources, targets = (s for s, _ in train), (t for _, t in train)
    if joint_vocab(data):
        tokenizer = train_configured(data, itertools.chain(sources, targets))
        return tokenizer, tokenizer
    return train_configured(data, sources), train_configured(data, targets)


def encode_lines(tokenizer: Tokenizer, lines: list[str]) -> list[list[int]]:
    """Token ids of each line (BPE in parallel threads)."""
    if isinstance(tokenizer, BPETokenizer):
        return tokenizer.encode_batch(lines)
    return [tokenizer.encode(line) for line in lines]

