"""Shared pieces of the fuzz tests (test_fuzz_readers.py, test_fuzz_config.py): the settings, the property
every reader must keep (:func:`explained`) and byte strategies for files."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from seqlab.base.errors import SeqlabError

# Examples per fuzz test: 250 in the suite (its time budget, tests/README.md); a deeper run sets
# SEQLAB_FUZZ_EXAMPLES (e.g. 5000) and keeps hypothesis' example database (.hypothesis/) between runs, so every
# failure found once is replayed first.
EXAMPLES = int(os.environ.get("SEQLAB_FUZZ_EXAMPLES", "250"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much])


def explained(call, *args, **kwargs):
    """``call(*args, **kwargs)``; None when it raises a SeqlabError whose message is one non-empty line.
    Any other exception propagates and fails the test."""
    name = getattr(call, "__name__", "call")
    try:
        result = call(*args, **kwargs)
    except SeqlabError as e:
        event(f"{name}: SeqlabError")  # the mix of outcomes shows with --hypothesis-show-statistics
        message = str(e)
        assert message.strip(), f"empty SeqlabError message from {name}"
        assert message.splitlines() == [message], f"SeqlabError message is not one line: {message!r}"
        return None
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        raise
    except BaseException as e:  # a Rust panic in tokenizers (pyo3's PanicException is no Exception): shrink it too
        raise AssertionError(f"{name} raised {type(e).__name__}: {e}") from e
    event(f"{name}: returned")
    return result


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A temporary folder for the examples' files, in memory (/dev/shm) where the system has one: on a busy disk
    each of the thousands of small writes and reads costs about a millisecond, in memory some microseconds."""
    memory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="seqlab-fuzz-", dir=memory) as folder:
        yield Path(folder)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------------------
# bytes: arbitrary binary, and lines of text joined with any line end, with or without a BOM

ANY_CHAR = st.characters(codec=None, exclude_categories=())  # every category, lone surrogates included
ANY_TEXT = st.text(ANY_CHAR, max_size=40)
BOM = b"\xef\xbb\xbf"


def _encode(piece: str | bytes) -> bytes:
    # surrogatepass turns a lone surrogate into the three bytes a careless encoder writes: invalid UTF-8
    return piece if isinstance(piece, bytes) else piece.encode("utf-8", "surrogatepass")


def _join(pieces: list[str | bytes], end: str, bom: bool, trailing: bool) -> bytes:
    data = end.encode().join(_encode(p) for p in pieces) + (end.encode() if trailing else b"")
    return (BOM if bom else b"") + data


LINE_END = st.sampled_from(["\n", "\n", "\r\n", "\r"])
RARELY = st.sampled_from([False, False, False, True])


def weighted(*options: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """One of the strategies, each as often as its weight: ``weighted((3, a), (1, b))`` (``st.one_of`` drops repeats)."""
    return st.sampled_from([s for weight, s in options for _ in range(weight)]).flatmap(lambda s: s)


def lines_of(line: st.SearchStrategy[str], max_lines: int = 10) -> st.SearchStrategy[bytes]:
    """A file of ``line``s (now and then a raw-bytes line), ends \\n, \\r\\n or \\r, optional BOM and final end."""
    piece = weighted((3, line), (1, st.binary(max_size=12)))
    return st.builds(_join, st.lists(piece, max_size=max_lines), LINE_END, st.booleans(), st.booleans())


@st.composite
def corrupted(draw, lines: st.SearchStrategy[list[str]], wrong: st.SearchStrategy[str | bytes]) -> list[str | bytes]:
    """A valid file's lines, and (two times in five) one to three of them replaced, inserted or deleted."""
    lines = list(draw(lines))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 3]))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["replace", "insert", "delete"]))
        if action == "insert" or at == len(lines):
            lines.insert(at, draw(wrong))
        elif action == "replace":
            lines[at] = draw(wrong)
        else:
            del lines[at]
    return lines


def text_file(lines: st.SearchStrategy[list[str | bytes]]) -> st.SearchStrategy[bytes]:
    """The lines joined by one kind of line end, now and then with a BOM, with or without a final line end."""
    return st.builds(_join, lines, LINE_END, RARELY, st.booleans())


# one long line (up to 140,000 characters, past csv's default field limit of 131,072)
HUGE = st.builds(lambda c, n: _encode(c * n), st.sampled_from(["x", "é", " ", ",", "\t", "(", "\x00", "\r\n", "\n"]),
                 st.integers(1, 140_000))
ANY_BYTES = st.one_of(st.binary(max_size=300), lines_of(ANY_TEXT), HUGE)
# (invalid UTF-8 comes from ANY_BYTES; a wrong line is valid text)
WRONG_LINE = st.one_of(st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=20),
                       st.sampled_from(["", " ", "\t", "\x00", "\ufeff", "\u2028", "\x85"]))


def file_bytes(valid_lines: st.SearchStrategy[list[str]], wrong_line: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes (one time in four), else a valid file, often with a few wrong lines."""
    structured = text_file(corrupted(valid_lines, st.one_of(wrong_line, WRONG_LINE)))
    return weighted((1, ANY_BYTES), (3, structured))


@contextlib.contextmanager
def cwd(path: Path):
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=6),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=12,
)
