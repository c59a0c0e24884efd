"""Our tokenizers as Hugging Face ``tokenizers`` objects: ``tokenizer.json`` + ``tokenizer_config.json``.

``AutoTokenizer.from_pretrained(DIR)`` on the files :func:`hf_tokenizer_files` returns gives the ids
seqlab's ``encode`` gives, and ``decode(ids, skip_special_tokens=True)`` gives seqlab's ``decode`` text
(``<pad>``, ``<sos>``, ``<eos>`` dropped; no spaces put between characters; no clean-up of spaces):

- ``char``  a WordLevel model over the characters; the pre-tokenizer isolates every code point (as
  ``list(text)`` does); an unknown character is ``<unk>``, decoded as U+FFFD by a Replace decoder, and
  a Fuse decoder joins the characters with nothing between them.
- ``word``  a WordLevel model; an optional Lowercase normaliser (Unicode full lower-casing, as
  ``str.lower``); the pre-tokenizer drops whitespace and isolates ``\\w+`` runs and single other
  characters, with ``\\w`` spelled out as the Unicode classes the ``regex`` module uses
  (:data:`WORD_CHARS`); no decoder, so ``tokenizers`` joins the tokens with single spaces.
- ``bpe``   the tokenizer's own ``tokenizer.json`` (it is a ``tokenizers`` object already).

``tokenizer_config.json`` sets ``split_special_tokens`` so that a literal ``"<eos>"`` in the text is
ordinary text, as in seqlab (without it transformers matches special-token strings in the input),
and ``clean_up_tokenization_spaces = false``. ``<unk>`` is an ordinary vocabulary entry, not a
special token, so ``skip_special_tokens`` keeps it (seqlab decodes it as U+FFFD or ``<unk>``).

Known difference: the ``tokenizers`` regex engine (Oniguruma) knows an older Unicode than the ``regex``
module, so a letter assigned in a recent Unicode version (none of Unicode 14, Python 3.11's) is a word
character for seqlab and a symbol for the exported word tokenizer. Every character Unicode 14 assigns
is classified the same (tests/test_export_tokenizer.py checks all of them).
"""

from __future__ import annotations

import json
from typing import Any

from seqlab.base.errors import SeqlabError
from seqlab.text.tokenizers import UNK_CHAR, BPETokenizer, CharTokenizer, Tokenizer, WordTokenizer
from seqlab.text.vocab import EOS, PAD, SOS, UNK

# \w of the regex module (Unicode TR#18 "word"): alphabetic, marks, decimal digits, connector punctuation,
# join controls; Oniguruma's own \w is narrower (no Alphabetic numbers like U+2160 ROMAN NUMERAL ONE)
WORD_CHARS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}"
HF_WORD_PATTERN = rf"[{WORD_CHARS}]+|[^{WORD_CHARS}\s]"  # = tokenizers.WORD_PATTERN, \w+|[^\w\s]
DROPPED = (PAD, SOS, EOS)  # what seqlab's decode leaves out: special tokens for transformers


def to_hf_tokenizer(tokenizer: Tokenizer):
    """A ``tokenizers.Tokenizer`` that encodes and decodes as ``tokenizer`` does (see the module docstring)."""
    from tokenizers import AddedToken
    from tokenizers import Tokenizer as HFTokenizer

    if isinstance(tokenizer, BPETokenizer):
        return HFTokenizer.from_str(tokenizer.to_json())
    if not isinstance(tokenizer, (CharTokenizer, WordTokenizer)):
        raise SeqlabError(f"no Hugging Face tokenizer for a {type(tokenizer).__name__}; "
                          "char, word and bpe tokenizers export")
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers

    vocab = {token: i for i, token in enumerate(tokenizer.vocab.tokens)}
    hf = HFTokenizer(models.WordLevel(vocab, unk_token=UNK))
    if isinstance(tokenizer, CharTokenizer):
        hf.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # one piece per code point
        hf.decoder = decoders.Sequence([decoders.Replace(UNK, UNK_CHAR), decoders.Fuse()])
    else:
        if tokenizer.lowercase:
            hf.normalizer = normalizers.Lowercase()
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),  # whitespace separates, is never a token
            pre_tokenizers.Split(Regex(HF_WORD_PATTERN), behavior="isolated"),
        ])
    # the dropped specials are special added tokens (decode(skip_special_tokens=True) leaves them out)
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in DROPPED])
    return hf


def tokenizer_config(tokenizer: Tokenizer, max_len: int) -> dict[str, Any]:
    """``tokenizer_config.json`` for :func:`to_hf_tokenizer`'s tokenizer: the generic fast tokenizer class,
    the special tokens by role, no clean-up of spaces, special-token strings in the text read as text."""
    roles = {"pad_token": tokenizer.pad_id, "bos_token": tokenizer.sos_id, "eos_token": tokenizer.eos_id}
    tokens = dict(zip(("pad_token", "bos_token", "eos_token"), DROPPED))
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": max_len,
        **{role: tokens[role] for role, i in roles.items() if i is not None},
        "clean_up_tokenization_spaces": False,
        "split_special_tokens": True,
        "add_prefix_space": False,
    }


def hf_tokenizer_files(tokenizer: Tokenizer, max_len: int) -> dict[str, str]:
    """``{file name: text}``: ``tokenizer.json`` and ``tokenizer_config.json`` for a Hugging Face directory."""
    return {"tokenizer.json": to_hf_tokenizer(tokenizer).to_str(),
            "tokenizer_config.json": json.dumps(tokenizer_config(tokenizer, max_len), indent=2) + "\n"}


def from_hf_tokenizer(text: str, source: str = "tokenizer.json") -> Tokenizer:
    """The seqlab tokenizer a ``tokenizer.json`` describes: a BPE model (byte-level BPE; it needs ``<pad>`` and
    ``<unk>``), or a WordLevel model with exactly the pipeline :func:`to_hf_tokenizer` writes for a char or word
    tokenizer (so export -> import gives the same tokenizer back). Anything else is refused."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise SeqlabError(f"{source} is not JSON ({e}); give a Hugging Face tokenizer.json") from None
    kind = raw.get("model", {}).get("type") if isinstance(raw, dict) else None
    if kind == "BPE":
        try:
            return BPETokenizer.from_json(text)
        except SeqlabError as e:
            raise SeqlabError(f"{source}: {e}") from None
    if kind == "WordLevel":
        vocab = raw["model"].get("vocab", {})
        tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
        if sorted(vocab.values()) != list(range(len(vocab))) or tuple(tokens[:4]) != (PAD, UNK, SOS, EOS):
            raise SeqlabError(f"{source}: a WordLevel vocabulary seqlab reads has ids 0..n-1 and starts with "
                              f"{PAD} {UNK} {SOS} {EOS}")
        from seqlab.text.vocab import Vocab

        pipeline = ("normalizer", "pre_tokenizer", "decoder")
        for candidate in (CharTokenizer(Vocab(tokens)), WordTokenizer(Vocab(tokens), lowercase=False),
                          WordTokenizer(Vocab(tokens), lowercase=True)):
            written = json.loads(to_hf_tokenizer(candidate).to_str())
            if all(written[k] == raw.get(k) for k in pipeline):
                return candidate
    raise SeqlabError(f"{source} is a {kind or 'unknown'} tokenizer seqlab does not read; seqlab reads byte-level "
                      "BPE and the char and word tokenizers `seqlab export` writes")
