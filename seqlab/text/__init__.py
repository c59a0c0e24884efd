"""Text pipeline (notes: Tokens): the vocabulary with <pad> <unk> <sos> <eos>, and char, word and
byte-level BPE tokenizers behind one interface (``encode``, ``decode``, ``save``, :func:`load_tokenizer`)."""

from seqlab.text.tokenizers import (
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    WordTokenizer,
    load_tokenizer,
    split_words,
)
from seqlab.text.vocab import EOS, PAD, SOS, SPECIALS, UNK, Vocab

__all__ = [
    "BPETokenizer",
    "CharTokenizer",
    "EOS",
    "PAD",
    "SOS",
    "SPECIALS",
    "Tokenizer",
    "UNK",
    "Vocab",
    "WordTokenizer",
    "load_tokenizer",
    "split_words",
]
