"""A large UTF-8 text file read in pieces, never whole: one scanning pass, then safe cuts between pre-tokens.

- :func:`scan` reads a UTF-8 file once in blocks: its size, mtime and SHA-256, its length in characters, and a
  coarse index (characters before each block) that turns a character position into a byte offset
  (:meth:`TextFile.byte_offset`), so that a split cut by character fractions (``split_text``'s semantics) is
  found without holding the text. Bad input (not UTF-8, empty) is refused here, before any other work.
- :func:`cut_points` cuts a byte range into pieces of about ``piece`` bytes at *safe* positions: just before a
  space or a newline that follows a non-whitespace character. A pre-token of the word tokenizer
  (``\\w+|[^\\w\\s]``) never holds whitespace, and one of byte-level BPE (GPT-2's pattern) holds whitespace only
  at its start or is all whitespace, so such a position always starts a pre-token: encoding the pieces one by
  one gives exactly the tokens of the whole text, and a tokenizer trained on the pieces is trained on the same
  pre-tokens (tests/test_prepare.py checks both). Only a stretch of ``piece`` bytes without such a position
  (no space or newline after a non-space) is cut at the next character boundary instead.

The pieces are encoded by :mod:`seqlab.data.workers`; :mod:`seqlab.data.lm_tokens` puts it together.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seqlab.data.sources import empty_file_error, not_utf8_error

SCAN_BLOCK = 1 << 24  # bytes read at a time by scan (16 MiB)
# Bytes of text per encoding job (a worker's memory grows with it: tokenizers' encoding of 1 MiB of text at once
# takes ~200 MB, of 64 KiB ~35 MB, at the same speed) and per item fed to tokenizer training (tokenizers
# buffers 256 items).
ENCODE_PIECE = 1 << 16
TRAIN_PIECE = 1 << 16

# A candidate cut: a byte that is not ASCII whitespace, then a space or a newline (cut before the latter).
_CANDIDATE = re.compile(rb"[^\x09-\x0d\x1c-\x20][ \n]")


# ------------------------------------------------------------------------------------------------------
# one pass over a file: identity, validity, length in characters


@dataclass(frozen=True)
class TextFile:
    """A UTF-8 text file, scanned: ``chars`` characters in ``size`` bytes; ``index`` holds (byte offset,
    characters before it) at the start of every scanned block."""

    path: Path
    size: int
    mtime: float
    sha256: str
    chars: int
    index: tuple[tuple[int, int], ...] = field(repr=False)

    def byte_offset(self, char: int) -> int:
        """The byte offset where character number ``char`` starts (``size`` for ``chars``)."""
        if char >= self.chars:
            return self.size
        i = bisect.bisect_right([c for _, c in self.index], char) - 1
        start, before = self.index[i]
        with open(self.path, "rb") as f:
            f.seek(start)
            block = np.frombuffer(f.read(SCAN_BLOCK), dtype=np.uint8)
        starts = np.flatnonzero((block & 0xC0) != 0x80)  # the first byte of every character in the block
        return start + int(starts[char - before])

    def identity(self) -> dict:
        """What a manifest records of the file."""
        return {"path": str(self.path.resolve()), "size": self.size, "mtime": self.mtime, "sha256": self.sha256,
                "chars": self.chars}


def scan(path: Path, bar=None) -> TextFile:
    """Read ``path`` once in blocks: SHA-256, characters (UTF-8 checked), and that it holds some text."""
    digest, index, chars, offset, carry, has_text = hashlib.sha256(), [], 0, 0, b"", False
    stat = path.stat()
    with open(path, "rb") as f:
        while block := f.read(SCAN_BLOCK):
            index.append((offset, chars))
            digest.update(block)
            data = carry + block
            cut = _complete_prefix(data)  # a character cut by the block's end waits for the next block
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError as e:
                raise not_utf8_error(path, data[e.start], offset - len(carry) + e.start, e.reason) from None
            has_text = has_text or not text.isspace() and bool(text)
            chars += len(text)
            carry = data[cut:]
            offset += len(block)
            if bar is not None:
                bar.update(len(block))
    if carry:
        try:
            carry.decode("utf-8")
        except UnicodeDecodeError as e:
            raise not_utf8_error(path, carry[e.start], offset - len(carry) + e.start, e.reason) from None
    if not has_text:
        raise empty_file_error(path)
    return TextFile(path, offset, stat.st_mtime, digest.hexdigest(), chars, tuple(index))


def _complete_prefix(data: bytes) -> int:
    """The length of ``data`` without a trailing incomplete UTF-8 sequence (at most 3 bytes are held back)."""
    end = len(data)
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte & 0xC0 != 0x80:  # the lead byte of the last character (or ASCII)
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return end if need <= back else end - back
    return end  # only continuation bytes: invalid, decode reports it


# ------------------------------------------------------------------------------------------------------
# safe pieces of a byte range


def find_cut(f, pos: int, hi: int, search: int = ENCODE_PIECE) -> int:
    """The first safe cut at or after ``pos`` (before a space or newline that follows a non-whitespace
    character), looked for in the next ``search`` bytes (read a few KB at a time); else the next character
    boundary. At most ``hi``."""
    if pos >= hi:
        return hi
    back = min(pos, 4)  # the character before pos may be up to 4 bytes long
    limit = back + min(search, hi - pos)  # the window's largest size
    f.seek(pos - back)
    window, scanned = f.read(min(limit, back + 4096)), max(back - 1, 0)
    while True:
        for m in _CANDIDATE.finditer(window, scanned):
            cut = m.start() + 1  # the index of the space or newline in window
            if cut >= back and _follows_non_space(window, cut):
                return pos - back + cut
        if len(window) >= limit:
            break
        scanned = len(window) - 1  # a candidate may straddle the end of what was read
        window += f.read(min(limit - len(window), len(window)))
    for i in range(back, len(window)):  # no safe cut near: the next character boundary
        if window[i] & 0xC0 != 0x80:
            return pos - back + i
    return min(hi, pos - back + len(window))


def _follows_non_space(window: bytes, i: int) -> bool:
    prev = window[i - 1]
    if prev < 0x80:
        return True  # _CANDIDATE already excluded ASCII whitespace
    j = i - 1
    while j > 0 and window[j] & 0xC0 == 0x80 and i - j < 4:
        j -= 1
    return not window[j:i].decode("utf-8", errors="replace").isspace()  # U+00A0, U+3000, ... are whitespace


def cut_points(path: Path, lo: int, hi: int, piece: int) -> list[int]:
    """Offsets ``lo = c0 < c1 < ... = hi``: pieces of about ``piece`` bytes cut safely (:func:`find_cut`)."""
    cuts = [lo]
    with open(path, "rb") as f:
        while cuts[-1] + piece < hi:
            cuts.append(find_cut(f, cuts[-1] + piece, hi, search=piece))
            if cuts[-1] >= hi:
                break
    if cuts[-1] < hi:
        cuts.append(hi)
    return cuts


def read_pieces(path: Path, lo: int, hi: int, piece: int = TRAIN_PIECE, bar=None) -> Iterator[str]:
    """The text of bytes ``lo:hi`` of ``path`` as str pieces cut safely, one at a time."""
    cuts = cut_points(path, lo, hi, piece)
    with open(path, "rb") as f:
        f.seek(lo)
        for a, b in zip(cuts, cuts[1:]):
            data = f.read(b - a)
            if bar is not None:
                bar.update(b - a)
            yield data.decode("utf-8")
