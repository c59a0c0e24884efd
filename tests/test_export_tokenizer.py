"""Our tokenizers as Hugging Face files (seqlab.text.hf_tokenizer): ``AutoTokenizer.from_pretrained(DIR)`` gives
seqlab's ids and decoded text on the shared corpora, unknown characters included."""

from __future__ import annotations

import unicodedata

import pytest
import regex

transformers = pytest.importorskip("transformers")

from seqlab.data.sources import read_text  # noqa: E402
from seqlab.text import BPETokenizer, CharTokenizer, WordTokenizer  # noqa: E402
from seqlab.text.hf_tokenizer import HF_WORD_PATTERN, hf_tokenizer_files, to_hf_tokenizer  # noqa: E402

# characters no corpus below trains on (so they are <unk> for char and word), special-token strings as text,
# whitespace of every kind, upper case that lower-cases to two code points, a final sigma
ODD = ("Ünïcödé — naïve café 𝔘 “quotes” <eos> literal <pad><sos> x\u2160 \t\n\r\x0b\x0c\u2028 tabs "
       "İstanbul ΟΔΟΣ ς 日本語 🙂 a\u200db ０１２ ½ e\u0301  end\n\n")


def hf_dir(tokenizer, tmp_path, max_len=64):
    for name, text in hf_tokenizer_files(tokenizer, max_len).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(tmp_path)


def corpora(shared_data) -> dict[str, str]:
    return {"tinyshakespeare": (shared_data / "tinyshakespeare" / "input.txt").read_text(encoding="utf-8"),
            "pydocs": read_text("pydocs")}


def check_same(ours, hf, text: str) -> None:
    ids = ours.encode(text)
    theirs = hf(text, add_special_tokens=True)["input_ids"]
    if ids != theirs:
        i = next((i for i, (a, b) in enumerate(zip(ids, theirs)) if a != b), min(len(ids), len(theirs)))
        raise AssertionError(f"ids differ at {i}: {ids[i - 3:i + 5]} vs {theirs[i - 3:i + 5]}")
    with_specials = [ours.sos_id, *ids, ours.eos_id, ours.pad_id]
    assert hf.decode(with_specials, skip_special_tokens=True) == ours.decode(with_specials)
    assert hf.decode(ids) == ours.decode(ids)  # no spaces put between characters, no clean-up of spaces


@pytest.mark.parametrize("kind", ["char", "word", "word-lowercase", "bpe"])
def test_autotokenizer_gives_seqlabs_ids_on_the_shared_corpora(kind, shared_data, tmp_path):
    texts = corpora(shared_data)
    train = texts["tinyshakespeare"][:300_000]
    if kind == "char":
        ours = CharTokenizer.train(train)
    elif kind.startswith("word"):
        ours = WordTokenizer.train(train, lowercase=kind.endswith("lowercase"), min_freq=2)
    else:
        ours = BPETokenizer.train([train], vocab_size=600)
    hf = hf_dir(ours, tmp_path)
    assert type(hf).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")
    for name, text in texts.items():  # pydocs has characters Shakespeare has not: <unk> for char and word
        held_out = text[-200_000:]
        if kind != "bpe":
            assert ours.unk_id in ours.encode(held_out), name
        check_same(ours, hf, held_out)
    check_same(ours, hf, ODD)
    assert (hf.pad_token_id, hf.bos_token_id, hf.eos_token_id) == (ours.pad_id, ours.sos_id, ours.eos_id)


def test_word_pattern_classifies_every_unicode_14_character_as_the_regex_module():
    """\\w spelled out for Oniguruma: each character Python 3.11's Unicode (14) assigns splits the same way."""
    from tokenizers import Regex, pre_tokenizers

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF
             and unicodedata.category(chr(c)) != "Cn" and not chr(c).isspace()]
    text = "".join(chars)
    theirs = [piece for piece, _ in pre_tokenizers.Split(Regex(HF_WORD_PATTERN), "isolated").pre_tokenize_str(text)]
    ours = regex.findall(r"\w+|[^\w\s]", text)
    assert theirs == ours


def test_char_decode_joins_characters_and_shows_unknown_as_replacement_character(tmp_path):
    ours = CharTokenizer.train("ab c")
    hf = hf_dir(ours, tmp_path)
    ids = ours.encode("a b?c")
    assert ids == hf("a b?c")["input_ids"] and ours.unk_id in ids
    assert hf.decode(ids) == ours.decode(ids) == "a b\ufffdc"
    assert to_hf_tokenizer(ours).decode(ids) == "a b\ufffdc"  # the tokenizers library alone agrees


def test_word_decode_joins_with_single_spaces(tmp_path):
    ours = WordTokenizer.train("Hello , world !")
    hf = hf_dir(ours, tmp_path)
    ids = ours.encode("Hello,   world ... new!")
    assert ids == hf("Hello,   world ... new!")["input_ids"]
    assert hf.decode(ids) == ours.decode(ids) == "Hello , world <unk> <unk> <unk> <unk> !"
