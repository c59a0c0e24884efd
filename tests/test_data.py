"""Data sources (embedded corpora, files, splits, bad input) and batching (padding, masks, windows, buckets)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqlab.data import batching, bundled, sources
from seqlab.data.batching import bucket_batches, causal_mask, lm_windows, pad_batch, padding_mask, random_lm_batch
from seqlab.data.sources import list_sources, read_text, split_text
from seqlab.base.errors import SeqlabError

# --- embedded corpora ----------------------------------------------------------------------------


def test_pydocs_is_english_prose_and_deterministic():
    text = read_text("pydocs")
    assert len(text) > 100_000
    assert "The " in text and " the " in text
    assert bundled.pydocs_text.__wrapped__() == text  # rebuilt from scratch: identical


def test_pystdlib_is_python_source_and_deterministic():
    text = read_text("pystdlib")
    assert 1_000_000 < len(text) <= bundled.PYSTDLIB_MAX_CHARS
    assert "def " in text and "import " in text
    assert bundled.pystdlib_text.__wrapped__() == text
    files = bundled.pystdlib_files()
    assert files == sorted(files, key=lambda p: p.relative_to(files[0].parent).as_posix())
    parts = {part for f in files for part in f.parts}
    assert not parts & {"site-packages", "test", "tests", "idle_test", "__pycache__"}


def test_list_sources_rows():
    rows = {r["name"]: r for r in list_sources()}
    assert {"pydocs", "pystdlib", "pyprose", "tinyshakespeare", "multi30k", "conll2003", "sst2"} <= set(rows)
    assert rows["pydocs"]["kind"] == "embedded" and rows["pydocs"]["cached"] is True
    assert rows["multi30k"]["kind"] == "download" and isinstance(rows["multi30k"]["cached"], bool)
    assert all(r["description"] for r in rows.values())


# --- user files and bad input ---------------------------------------------------------------------


def test_read_text_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("héllo\nworld\n", encoding="utf-8")
    assert read_text(str(path)) == "héllo\nworld\n"
    assert read_text(path) == "héllo\nworld\n"


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d: d / "missing.txt", r"file not found: .*missing\.txt; check the path"),
        (lambda d: d, r"is a directory .*; give the path of a text file"),
        (lambda d: _write(d / "empty.txt", b""), r"empty\.txt is empty"),
        (lambda d: _write(d / "blank.txt", b" \n\n"), r"blank\.txt is empty"),
        (lambda d: _write(d / "latin1.txt", "caf\xe9 ok".encode("latin-1")), r"not UTF-8: byte 0xe9 at byte offset 3"),
    ],
    ids=["missing", "directory", "empty", "blank", "not-utf8"],
)
def test_read_text_bad_input(tmp_path, make, match):
    _write(tmp_path / "inside.txt", b"x")  # so the directory is not empty
    with pytest.raises(SeqlabError, match=match) as err:
        read_text(str(make(tmp_path)))
    assert "\n" not in str(err.value) and ";" in str(err.value)  # one line: problem; fix


def test_read_text_unknown_name_lists_valid_names():
    with pytest.raises(SeqlabError, match=r"unknown corpus 'shakespear'.*pydocs, pystdlib, pyprose, tinyshakespeare"):
        read_text("shakespear")


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


# --- splits ----------------------------------------------------------------------------------------


def test_split_is_contiguous_in_order_and_deterministic():
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    train, valid, test = split_text(text)
    assert (len(train), len(valid), len(test)) == (900, 50, 50)
    assert train + valid + test == text
    assert split_text(text) == (train, valid, test)
    train, valid, test = split_text(text, (0.5, 0.0, 0.5))
    assert (train, valid, test) == (text[:500], "", text[500:])
    assert split_text(text, [1, 0, 0]) == (text, "", "")


@pytest.mark.parametrize(
    "fractions, match",
    [
        ((0.9, 0.1), "three numbers"),
        ((0.9, -0.1, 0.2), "non-negative"),
        ((0.9, 0.1, 0.1), "sum to 1"),
        ((0.0, 0.5, 0.5), "train fraction must be > 0"),
        (("a", 0.5, 0.5), "three numbers"),
        ((float("nan"), 0.5, 0.5), "non-negative"),
    ],
)
def test_split_validates_fractions(fractions, match):
    with pytest.raises(SeqlabError, match=match):
        split_text("some text here", fractions)


def test_split_too_short():
    with pytest.raises(SeqlabError, match="too short for a valid split"):
        split_text("abc", (0.9, 0.05, 0.05))


# --- batching --------------------------------------------------------------------------------------


def test_pad_batch_pads_to_longest_with_mask():
    ids, mask = pad_batch([[5, 6, 7], [8], [9, 0]], pad_id=0)
    assert ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0], [9, 0, 0]]
    # the mask comes from the lengths: a real token equal to pad_id (row 3) still counts
    assert mask.tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    ids, mask = pad_batch([[1, 2], []], pad_id=-1)
    assert ids.tolist() == [[1, 2], [-1, -1]] and mask.tolist() == [[True, True], [False, False]]


def test_masks_are_reexported_with_one_polarity():
    from seqlab.nn import masks

    assert batching.causal_mask is masks.causal_mask and batching.padding_mask is masks.padding_mask
    m = causal_mask(4)
    assert m.shape == (4, 4) and m.dtype == torch.bool
    assert m.tolist() == [[j <= i for j in range(4)] for i in range(4)]  # True = may attend
    ids, mask = pad_batch([[3, 4], [5]])
    assert torch.equal(padding_mask(ids, 0), mask)


def test_lm_windows_shift_by_one():
    t = np.arange(11)
    x, y = lm_windows(t, seq_len=4)
    assert x.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert y.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    x, y = lm_windows(torch.arange(7), seq_len=3, stride=1)
    assert x.shape == (4, 3) and torch.equal(y, x + 1)
    assert x[-1].tolist() == [3, 4, 5] and y[-1].tolist() == [4, 5, 6]
    with pytest.raises(SeqlabError, match="too short"):
        lm_windows([1, 2, 3], seq_len=3)


def test_random_lm_batch_is_deterministic_from_generator(tmp_path):
    data = np.arange(1000, dtype=np.uint16)
    mm_path = tmp_path / "tokens.bin"
    data.tofile(mm_path)
    mm = np.memmap(mm_path, dtype=np.uint16, mode="r")

    def batch(source, seed):
        return random_lm_batch(source, batch=8, seq_len=16, generator=torch.Generator().manual_seed(seed))

    x, y = batch(data, 0)
    assert x.shape == y.shape == (8, 16) and x.dtype == torch.long
    assert torch.equal(y, x + 1)  # y = t[i+1 : i+T+1]
    assert torch.equal(torch.diff(x, dim=1), torch.ones(8, 15, dtype=torch.long))  # contiguous windows
    torch.manual_seed(123)  # the global RNG plays no part
    x2, y2 = batch(mm, 0)
    assert torch.equal(x, x2) and torch.equal(y, y2)  # same generator seed, memmap or array: same batch
    assert torch.equal(batch(torch.from_numpy(data.astype(np.int64)), 0)[0], x)
    assert not torch.equal(batch(data, 1)[0], x)
    starts = torch.cat([batch(data, s)[0][:, 0] for s in range(50)])
    assert starts.min() >= 0 and starts.max() <= 1000 - 16 - 1


def test_bucket_batches_groups_similar_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, size=1000).tolist()
    batches = bucket_batches(lengths, batch_size=16, shuffle=False)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert all(len(b) == 16 for b in batches[:-1])
    spreads = [max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches]
    assert max(spreads) <= 10

    def padding(bs):
        return sum(len(b) * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in bs)

    shuffled = bucket_batches(lengths, 16, shuffle=True, generator=torch.Generator().manual_seed(0))
    again = bucket_batches(lengths, 16, shuffle=True, generator=torch.Generator().manual_seed(0))
    other = bucket_batches(lengths, 16, shuffle=True, generator=torch.Generator().manual_seed(1))
    assert shuffled == again and shuffled != other
    assert sorted(i for b in shuffled for i in b) == list(range(1000))
    random_batches = [list(range(i, min(i + 16, 1000))) for i in range(0, 1000, 16)]
    assert padding(shuffled) < padding(random_batches) / 5
    with pytest.raises(ValueError, match="Generator"):
        bucket_batches(lengths, 16, shuffle=True)
