"""Text pipeline (seed 004): Vocab, char/word/BPE tokenizers, save/load, round-trip properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqlab.base.errors import SeqlabError
from seqlab.text import (
    EOS,
    PAD,
    SOS,
    UNK,
    BPETokenizer,
    CharTokenizer,
    Vocab,
    WordTokenizer,
    load_tokenizer,
)
from seqlab.text.tokenizers import UNK_CHAR

CORPUS = [
    "the cat sat on the mat.",
    "The dog sat on the log!",
    "a cat, a dog, and the bird",
]


# --- Vocab -------------------------------------------------------------------------------------


def test_vocab_specials_come_first_with_fixed_ids():
    v = Vocab.build(["b", "a"])
    assert v.tokens[:4] == [PAD, UNK, SOS, EOS]
    assert (v.pad_id, v.unk_id, v.sos_id, v.eos_id) == (0, 1, 2, 3)
    assert v.stoi(PAD) == 0 and v.itos(3) == EOS


def test_vocab_ids_follow_frequency_then_first_occurrence():
    # counts: z 3, b 2, a 2 (b seen before a), c 1: never alphabetical
    v = Vocab.build(["b", "z", "a", "z", "c", "a", "b", "z"])
    assert v.tokens[4:] == ["z", "b", "a", "c"]


def test_vocab_accepts_token_lists_and_ignores_special_strings_in_data():
    v = Vocab.build([["x", "y"], ["y", "<pad>", "<eos>"]])
    assert v.tokens == [PAD, UNK, SOS, EOS, "y", "x"]


def test_vocab_min_freq_and_max_size():
    tokens = ["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d"]
    assert Vocab.build(tokens, min_freq=2).tokens[4:] == ["a", "b", "c"]
    v = Vocab.build(tokens, max_size=6)  # max_size counts the 4 specials
    assert len(v) == 6 and v.tokens[4:] == ["a", "b"]
    assert len(Vocab.build(tokens, max_size=4)) == 4
    with pytest.raises(SeqlabError, match="max_size"):
        Vocab.build(tokens, max_size=3)
    with pytest.raises(SeqlabError, match="min_freq"):
        Vocab.build(tokens, min_freq=0)


def test_vocab_unknown_maps_to_unk_and_decode():
    v = Vocab.build("the cat sat on the mat".split())
    ids = v.encode(["the", "zebra", "mat"])
    assert ids == [4, 1, v.stoi("mat")]
    assert "zebra" not in v and "the" in v
    assert v.decode(ids) == ["the", UNK, "mat"]
    with pytest.raises(SeqlabError, match="out of range"):
        v.itos(len(v))


def test_vocab_json_round_trip(tmp_path):
    v = Vocab.build("ünïcode words and more words".split(), min_freq=1)
    path = v.save(tmp_path / "sub" / "vocab.json")  # missing parent folders are created
    assert Vocab.load(path) == v
    assert Vocab.from_dict(json.loads(path.read_text(encoding="utf-8"))) == v
    assert [p.name for p in path.parent.iterdir()] == ["vocab.json"]  # no temp files left


def test_vocab_rejects_bad_json(tmp_path):
    bad = tmp_path / "v.json"
    bad.write_text('{"kind": "vocab", "tokens": ["a", "b"]}')
    with pytest.raises(SeqlabError, match="special tokens"):
        Vocab.load(bad)
    bad.write_text("not json")
    with pytest.raises(SeqlabError, match="not a valid"):
        Vocab.load(bad)
    with pytest.raises(SeqlabError, match="not found"):
        Vocab.load(tmp_path / "missing.json")


@given(st.lists(st.lists(st.text(max_size=4), max_size=8), max_size=8), st.integers(1, 3))
def test_vocab_round_trip_property(sentences, min_freq):
    v = Vocab.build(sentences, min_freq=min_freq)
    assert Vocab.from_dict(json.loads(json.dumps(v.to_dict()))) == v
    assert len(set(v.tokens)) == len(v)
    for s in sentences:
        assert v.decode(v.encode(s)) == [t if t in v else UNK for t in s]


# --- char and word tokenizers -------------------------------------------------------------------


def test_char_tokenizer_basics():
    tok = CharTokenizer.train(CORPUS)
    assert tok.vocab_size == len(tok.vocab)
    assert (tok.pad_id, tok.unk_id, tok.sos_id, tok.eos_id) == (0, 1, 2, 3)
    assert tok.encode(" ")[0] == 4  # space is the most frequent character
    assert tok.decode(tok.encode("the log sat")) == "the log sat"
    ids = tok.encode("cat£")
    assert ids[-1] == tok.unk_id and tok.decode(ids) == "cat" + UNK_CHAR
    assert tok.decode([tok.sos_id, *tok.encode("cat"), tok.eos_id, tok.pad_id]) == "cat"


def test_word_tokenizer_basics():
    tok = WordTokenizer.train(CORPUS)
    assert tok.encode("the cat.")[:1] == [4]  # "the" is the most frequent word
    assert tok.decode(tok.encode("The dog sat on the mat!")) == "The dog sat on the mat !"
    assert tok.decode(tok.encode("the zebra")) == f"the {UNK}"
    low = WordTokenizer.train(CORPUS, lowercase=True)
    assert "The" not in low.vocab and low.encode("THE Dog") == low.encode("the dog")
    assert len(WordTokenizer.train(CORPUS, min_freq=2).vocab) < len(tok.vocab)
    assert len(WordTokenizer.train(CORPUS, max_size=7).vocab) == 7


def test_tokenizers_refuse_empty_corpus():
    for train in (CharTokenizer.train, WordTokenizer.train, lambda t: BPETokenizer.train(t, 300)):
        with pytest.raises(SeqlabError, match="empty corpus"):
            train(["", "  \n"])


ALPHABET = "abcdefghij ,.\n\tÄöß😀"


@given(st.text(alphabet=ALPHABET))
def test_char_round_trip_from_alphabet(s):
    tok = _char_tok()
    assert tok.decode(tok.encode(s)) == s
    assert tok.unk_id not in tok.encode(s)


@given(st.text(min_size=1))
def test_char_unseen_maps_to_unk(s):
    tok = _char_tok()
    ids = tok.encode(s)
    assert len(ids) == len(s)
    for ch, i in zip(s, ids):
        assert (i == tok.unk_id) == (ch not in ALPHABET)


_CACHE: dict[str, object] = {}


def _char_tok() -> CharTokenizer:
    if "char" not in _CACHE:
        _CACHE["char"] = CharTokenizer.train(ALPHABET)
    return _CACHE["char"]


def _word_tok(lowercase: bool) -> WordTokenizer:
    key = f"word{lowercase}"
    if key not in _CACHE:
        _CACHE[key] = WordTokenizer.train(CORPUS + ["Ünïcödé wörds, naïve café; 42 x_y"], lowercase=lowercase)
    return _CACHE[key]


@settings(max_examples=60)
@given(st.data(), st.booleans())
def test_word_round_trip_from_vocabulary(data, lowercase):
    tok = _word_tok(lowercase)
    words = tok.vocab.tokens[4:]
    chosen = data.draw(st.lists(st.sampled_from(words), max_size=12))
    text = " ".join(chosen)
    assert tok.unk_id not in tok.encode(text)
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=60)
@given(st.text())
def test_word_unknown_maps_to_unk(s):
    tok = _word_tok(False)
    pieces = tok.split(s)
    ids = tok.encode(s)
    assert len(ids) == len(pieces)
    for piece, i in zip(pieces, ids):
        assert (i == tok.unk_id) == (piece not in tok.vocab)


# --- byte-level BPE -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe() -> BPETokenizer:
    from seqlab.data.sources import pydocs_text

    text = pydocs_text()[:100_000]
    return BPETokenizer.train(text.splitlines(keepends=True), vocab_size=500)


def test_bpe_specials_and_size(bpe):
    assert (bpe.pad_id, bpe.unk_id, bpe.sos_id, bpe.eos_id) == (0, 1, 2, 3)
    assert bpe.vocab_size == 500
    ids = bpe.encode("the function returns the value")
    assert len(ids) < len("the function returns the value") / 2  # merges were learned
    assert max(ids) < bpe.vocab_size and min(ids) >= 4


def test_bpe_special_strings_are_plain_text(bpe):
    text = "<pad>x<eos> <sos><unk>"
    ids = bpe.encode(text)
    assert not set(ids) & {0, 1, 2, 3}
    assert bpe.decode(ids) == text
    assert bpe.decode([bpe.sos_id, *bpe.encode("hi"), bpe.eos_id, bpe.pad_id]) == "hi"


@pytest.mark.parametrize(
    "text",
    ["", " ", "  leading and trailing  ", "\r\n\t\x00", "é😀 mixed\u0301 ß", "日本語のテキスト", "a\u200db", "\ufeffBOM"],
)
def test_bpe_round_trip_tricky(bpe, text):
    assert bpe.decode(bpe.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_bpe_round_trip_any_text(bpe, s):
    assert bpe.decode(bpe.encode(s)) == s


def test_bpe_refuses_bad_input(bpe):
    with pytest.raises(SeqlabError, match="vocab_size"):
        BPETokenizer.train(["abc"], vocab_size=100)
    with pytest.raises(SeqlabError, match="surrogate"):
        bpe.encode("a\ud800")


# --- save / load for every kind ------------------------------------------------------------------


def test_save_load_round_trip_each_kind(tmp_path, bpe):
    sample = "The cat sat on the mat, naïvely! 😀"
    for tok in (CharTokenizer.train(CORPUS), WordTokenizer.train(CORPUS, lowercase=True), bpe):
        path = tok.save(tmp_path / f"{tok.kind}.json")
        loaded = load_tokenizer(path)
        assert type(loaded) is type(tok)
        assert loaded.vocab_size == tok.vocab_size
        specials = ("pad_id", "unk_id", "sos_id", "eos_id")
        assert [getattr(loaded, s) for s in specials] == [getattr(tok, s) for s in specials]
        assert loaded.encode(sample) == tok.encode(sample)
        assert loaded.decode(tok.encode(sample)) == tok.decode(tok.encode(sample))
        assert load_tokenizer(tok.to_dict()).encode(sample) == tok.encode(sample)
    assert WordTokenizer.from_dict(WordTokenizer.train(CORPUS, lowercase=True).to_dict()).lowercase


def test_bpe_loads_from_plain_tokenizer_json(tmp_path, bpe):
    from tokenizers import Tokenizer as HFTokenizer

    path = tmp_path / "tokenizer.json"
    path.write_text(bpe.to_json(), encoding="utf-8")
    loaded = load_tokenizer(path)
    assert isinstance(loaded, BPETokenizer)
    text = "x <eos> y"
    assert loaded.encode(text) == bpe.encode(text) and loaded.decode(loaded.encode(text)) == text
    # and the same file is a regular Hugging Face tokenizer
    assert HFTokenizer.from_file(str(path)).decode(bpe.encode("plain text")) == "plain text"


def test_load_tokenizer_errors(tmp_path):
    with pytest.raises(SeqlabError, match="unknown tokenizer kind"):
        load_tokenizer({"kind": "sentencepiece"})
    with pytest.raises(SeqlabError, match="not found"):
        load_tokenizer(tmp_path / "nope.json")
    with pytest.raises(SeqlabError, match="directory"):
        load_tokenizer(tmp_path)
    with pytest.raises(SeqlabError, match="lacks"):
        load_tokenizer({"kind": "char"})


# ------------------------------------------------------------------------------------------------------
# split_words: its array path (texts of _ARRAYS_FROM characters or more) against the regex it stands for

from seqlab.text import tokenizers as _tokenizers  # noqa: E402

# whitespace to one of str.split and the pattern only, word characters by mark or connector, CJK, an emoji
TRICKY = "\x1c\x1f\x85\xa0\u1680\u180e\u200b\u2028\u202f\u3000\ufeff_\u0301\u203f\u4e2d\U0001f600é"


def _by_regex(text: str, lowercase: bool = False) -> list[str]:
    return _tokenizers._WORD_RE.findall(text.lower() if lowercase else text)


def test_split_words_array_path_on_every_ascii_character():
    every = "".join(chr(c) for c in range(128))
    for text in (every * 3, (every + " a,b ") * 3, "plain words only " * 20, "x" * 300):
        assert len(text) >= _tokenizers._ARRAYS_FROM
        assert _tokenizers.split_words(text) == _by_regex(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1_ ,.-'\n\t") + list(TRICKY)), min_size=256, max_size=600),
       st.booleans())
def test_split_words_array_path_is_the_regex(text, lowercase):
    assert _tokenizers.split_words(text, lowercase) == _by_regex(text, lowercase)


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=256, max_size=400), st.booleans())  # any Unicode, lone surrogates included
def test_split_words_on_any_text_is_the_regex(text, lowercase):
    assert _tokenizers.split_words(text, lowercase) == _by_regex(text, lowercase)


def test_generated_text_never_shows_a_special_token_as_u_fffd():
    """decode shows <unk> of a character vocabulary as U+FFFD; text a model generated drops every special token
    (issue #52), and LanguageModel.generate decodes through it."""

    from seqlab.tasks import lm as lm_task

    tok = CharTokenizer.train("abc ab")
    ids = [tok.sos_id, *tok.encode("ab"), tok.unk_id, tok.pad_id, *tok.encode("c"), tok.eos_id]
    assert tok.decode(ids) == "ab\ufffdc" and tok.decode_generated(ids) == "abc"
    lm = object.__new__(lm_task.LanguageModel)
    lm.tokenizer, lm.model, lm.device = tok, None, "cpu"
    original = lm_task.generate
    lm_task.generate = lambda *a, **k: [ids]
    try:
        assert lm.generate("a", max_new_tokens=6) == "abc"
    finally:
        lm_task.generate = original
    bpe = BPETokenizer.train("the cat sat on the mat " * 20, 300)
    assert "\ufffd" not in bpe.decode_generated([bpe.unk_id, *bpe.encode("the cat"), bpe.eos_id])
