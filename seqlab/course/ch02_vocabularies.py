"""Chapter 2, tokens and vocabularies, 02.1-02.3: a character vocabulary, one BPE merge, a word vocabulary with
the special tokens and min_freq (docs/tutorials/02-tokens-and-vocabularies.md).

The references are :mod:`seqlab.text.vocab` (``Vocab``: <pad>, <unk>, <sos>, <eos> at ids 0..3, then the tokens
most frequent first, ties by first occurrence) and :mod:`seqlab.text.tokenizers` (``CharTokenizer``,
``BPETokenizer`` through Hugging Face ``tokenizers``). The sentences the cases draw live here;
:mod:`seqlab.course.ch02_batching` (02.4-02.7) uses them too.
"""

from __future__ import annotations

import json
from collections import Counter

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator
from seqlab.text.tokenizers import BPETokenizer, CharTokenizer
from seqlab.text.vocab import SPECIALS, Vocab

WORDS = ("the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "zebra", "and", "big", "red", "hat", "is")


def _draw(g: torch.Generator, items: tuple[str, ...] | str, count: int) -> list[str]:
    """``count`` items drawn with Zipf-like weights 1/rank (a few frequent, many rare), with ``g``."""
    weights = torch.tensor([1.0 / (rank + 1) for rank in range(len(items))], dtype=torch.float64)
    return [items[i] for i in torch.multinomial(weights, count, replacement=True, generator=g).tolist()]


def _sentences(seed: int, count: int, words: tuple[str, ...] = WORDS) -> list[list[str]]:
    g = generator(seed)
    lengths = torch.randint(2, 8, (count,), generator=g).tolist()
    return [_draw(g, words, n) for n in lengths]


# ------------------------------------------------------------------------------------------------------
# 02.1 characters: a vocabulary and encoding


CHAR_SIZES = [(1, 40, 2), (5, 60, 3), (2, 50, 2)]  # (seed, characters of training text, min_freq)


def _char_cases() -> list[Case]:
    cases = []
    for seed, length, min_freq in CHAR_SIZES:
        g = generator(seed)
        train = "".join(_draw(g, "e tanoisrhdlcum", length))
        # every character of the training text once, in a random order, and X and Q, which it never has
        seen = sorted(set(train))
        text = "X" + "".join(seen[i] for i in torch.randperm(len(seen), generator=g).tolist()) + "Q"
        cases.append(Case((train, text, min_freq), {"train": length, "text": len(text), "min_freq": min_freq},
                          seed=seed))
    return cases


def _char_encode(train_text, text, min_freq):
    return CharTokenizer.train(train_text, min_freq=min_freq).encode(text)


def _char_alphabetical(train_text, text, min_freq):
    tokens = CharTokenizer.train(train_text, min_freq=min_freq).vocab.tokens
    return CharTokenizer(Vocab([*SPECIALS, *sorted(tokens[len(SPECIALS):])])).encode(text)


def _char_unknown_dropped(train_text, text, min_freq):
    tokenizer = CharTokenizer.train(train_text, min_freq=min_freq)
    return [i for i in tokenizer.encode(text) if i != tokenizer.unk_id]


def _char_strict(train_text, text, min_freq):
    return _char_encode(train_text, text, min_freq + 1)  # count > min_freq is count >= min_freq + 1


CHARS = Exercise(
    id="02.1",
    name="char_encode",
    title="A character vocabulary and encoding",
    section="Tokens › Vocabulary",
    signature="char_encode(train_text, text, min_freq)",
    statement=r"""Build the character vocabulary of `train_text` and encode `text` with it, as `CharTokenizer` does.

`train_text` and `text` are str, `min_freq` an int. Every character is a token (spaces too). The vocabulary starts
with the four special tokens `<pad>` = 0, `<unk>` = 1, `<sos>` = 2, `<eos>` = 3; then come the characters of
`train_text` seen **at least** `min_freq` times, the most frequent first, ties broken by first occurrence in
`train_text`. Return the ids of the characters of `text` (a list of int, one per character, no `<sos>`/`<eos>`);
a character not in the vocabulary is `<unk>`.""",
    reference=_char_encode,
    cases=_char_cases,
    mistakes=(
        Mistake("alphabetical", "your ids follow the characters' alphabetical (code point) order; after the four "
                "special tokens, ids follow frequency, most frequent first, ties by first occurrence (Tokens › "
                "Vocabulary).", _char_alphabetical),
        Mistake("unknown-dropped", "you left out the characters that are not in the vocabulary; each becomes "
                "<unk> = 1, so the ids keep one per character (Tokens › Vocabulary).", _char_unknown_dropped),
        Mistake("min-freq-strict", "you kept only the characters seen more than min_freq = {min_freq} times; "
                "min_freq keeps those seen at least that often (count >= min_freq) (Tokens › Vocabulary).",
                _char_strict),
    ),
)

# ------------------------------------------------------------------------------------------------------
# 02.2 one BPE merge


BPE_SIZES = [(20, 5, "abcde"), (27, 6, "ehlnorst"), (23, 7, "adgimsu")]  # (seed, distinct words, letters)
# the seeds are chosen so that the right merge, the ties broken the other way, the words counted once each and the
# pairs counted across words are four different pairs


def _bpe_words(seed: int, distinct: int, letters: str) -> list[str]:
    g = generator(seed)
    pool = []
    for _ in range(distinct):
        length = int(torch.randint(2, 6, (1,), generator=g))
        pool.append("".join(letters[int(i)] for i in torch.randint(len(letters), (length,), generator=g)))
    repeats = torch.randint(1, 4, (distinct,), generator=g).tolist()
    words = [w for w, r in zip(pool, repeats) for _ in range(r)]
    return [words[i] for i in torch.randperm(len(words), generator=g).tolist()]


def _bpe_cases() -> list[Case]:
    cases = []
    for seed, distinct, letters in BPE_SIZES:
        words = _bpe_words(seed, distinct, letters)
        cases.append(Case((words,), {"words": len(words), "distinct": distinct, "letters": len(letters)}, seed=seed))
    return cases


def _one_merge(texts: list[str]) -> BPETokenizer:
    """seqlab's BPE with one merge: 256 bytes + 4 specials + 1 (each text a pre-token of its own)."""
    return BPETokenizer.train(texts, vocab_size=BPETokenizer.BYTES + len(SPECIALS) + 1)


def _merge_of(tokenizer: BPETokenizer) -> tuple[str, str]:
    merge = json.loads(tokenizer.to_json())["model"]["merges"][0]  # ["a", "b"], or "a b" in older tokenizers
    left, right = merge if isinstance(merge, list) else merge.split(" ")
    return left, right


def _pieces(tokenizer: BPETokenizer, words: list[str]) -> list[list[str]]:
    return [[tokenizer.decode([i]) for i in tokenizer.encode(word)] for word in words]


def _bpe(words):
    tokenizer = _one_merge(words)
    return _merge_of(tokenizer), _pieces(tokenizer, words)


def _mirror(text: str) -> str:
    """a <-> z, b <-> y, ...: reverses the order of the letters, so the tie rule picks the other end."""
    return "".join(chr(ord("a") + ord("z") - ord(c)) for c in text)


def _bpe_ties_other_way(words):
    tokenizer = _one_merge([_mirror(w) for w in words])
    left, right = _merge_of(tokenizer)
    return (_mirror(left), _mirror(right)), [[_mirror(p) for p in w] for w in _pieces(tokenizer, [_mirror(w)
                                                                                                  for w in words])]


def _bpe_word_types(words):
    tokenizer = _one_merge(list(dict.fromkeys(words)))  # each distinct word once
    return _merge_of(tokenizer), _pieces(tokenizer, words)


def _bpe_across_words(words):
    tokenizer = _one_merge(["".join(words)])  # one run of letters: pairs across the words' boundaries count
    return _merge_of(tokenizer), _pieces(tokenizer, words)


BPE = Exercise(
    id="02.2",
    name="bpe_merge",
    title="One byte-pair-encoding merge",
    section="Tokens › Sub-word tokenisation (beyond the notes)",
    signature="bpe_merge(words)",
    statement=r"""Learn BPE's first merge, $(a, b)^\ast = \arg\max_{(a, b)} \operatorname{count}(a\,b)$, and apply it.

`words` is a list of str (lowercase ASCII letters; a word that appears several times is counted each time). Each
word starts as the list of its characters. Count every pair of adjacent symbols **within** each word (never across
two words), over all the words; the merge is the most frequent pair. On a tie, seqlab (Hugging Face `tokenizers`)
takes the pair that comes first in code point order, by its left symbol, then its right. Return `(pair, pieces)`:
`pair` the tuple `(a, b)` of two one-character str, and `pieces` the words after the merge, a list (one per word, in
order) of lists of str, each occurrence of `a` followed by `b` joined into `ab`, from left to right. The cases'
most frequent pair occurs at least twice.""",
    reference=_bpe,
    cases=_bpe_cases,
    mistakes=(
        Mistake("ties-other-way", "your merge breaks the tie between the most frequent pairs the other way; seqlab "
                "(Hugging Face tokenizers) takes the pair first in code point order, left symbol then right "
                "(Tokens › Sub-word tokenisation).", _bpe_ties_other_way),
        Mistake("counted-once-per-word", "you counted each distinct word once; a word that appears several times in "
                "the training text counts that many times (count(a b) over all {words} words) (Tokens › Sub-word "
                "tokenisation).", _bpe_word_types),
        Mistake("pairs-across-words", "you counted pairs across the boundary between two words; BPE counts pairs "
                "within the pre-tokens (the words) only (Tokens › Sub-word tokenisation).", _bpe_across_words),
    ),
    follows="seqlab's byte-level BPE, trained with Hugging Face tokenizers: its tie rule (the pair first in the "
            "symbols' order) decides between equal counts; the notes do not teach BPE.",
)

# ------------------------------------------------------------------------------------------------------
# 02.3 the word vocabulary


VOCAB_SIZES = [(0, 9, 2), (4, 12, 3), (2, 7, 2)]  # (seed, sentences, min_freq)
# the seeds are chosen so that the corpus has a token seen exactly min_freq times and ties in frequency whose first
# occurrences are not in alphabetical order: every named mistake changes the vocabulary


def _vocab_cases() -> list[Case]:
    return [Case((_sentences(seed, count), min_freq), {"sentences": count, "min_freq": min_freq}, seed=seed)
            for seed, count, min_freq in VOCAB_SIZES]


def _vocab(sentences, min_freq):
    return Vocab.build(sentences, min_freq=min_freq).tokens


def _vocab_alphabetical(sentences, min_freq):
    tokens = _vocab(sentences, min_freq)
    return [*SPECIALS, *sorted(tokens[len(SPECIALS):])]


def _vocab_specials_last(sentences, min_freq):
    tokens = _vocab(sentences, min_freq)
    return [*tokens[len(SPECIALS):], *SPECIALS]


def _vocab_strict(sentences, min_freq):
    return _vocab(sentences, min_freq + 1)


def _vocab_ties_alphabetical(sentences, min_freq):
    counts = Counter(token for sentence in sentences for token in sentence)
    # the same counts met in alphabetical order: from_counts breaks ties by the order it meets the tokens
    return Vocab.from_counts(Counter(dict(sorted(counts.items()))), min_freq=min_freq).tokens


VOCAB = Exercise(
    id="02.3",
    name="build_vocab",
    title="A vocabulary with the special tokens and min_freq",
    section="Tokens › Vocabulary",
    signature="build_vocab(sentences, min_freq)",
    statement=r"""Build seqlab's vocabulary of a tokenized corpus: the special tokens, then the tokens by frequency.

`sentences` is a list of sentences, each a list of str tokens; `min_freq` an int. Return the vocabulary's tokens in
id order, a list of str (the index of a token is its id): first the four special tokens `"<pad>"`, `"<unk>"`,
`"<sos>"`, `"<eos>"` (ids 0 to 3), then every token seen **at least** `min_freq` times, the most frequent first;
tokens seen equally often come in the order of their first occurrence in the corpus (sentence by sentence, left to
right).""",
    reference=_vocab,
    cases=_vocab_cases,
    mistakes=(
        Mistake("alphabetical", "your ids follow alphabetical order; after the special tokens, ids follow "
                "frequency, most frequent first, never alphabetical (Tokens › Vocabulary).", _vocab_alphabetical),
        Mistake("specials-not-first", "the special tokens are not first: <pad>, <unk>, <sos>, <eos> are ids 0 to 3 "
                "in every vocabulary, the corpus' tokens follow them (Tokens › Vocabulary).", _vocab_specials_last),
        Mistake("min-freq-strict", "you kept only the tokens seen more than min_freq = {min_freq} times; min_freq "
                "keeps those seen at least that often (count >= min_freq) (Tokens › Vocabulary).", _vocab_strict),
        Mistake("ties-alphabetical", "tokens seen equally often are in alphabetical order; seqlab breaks ties by "
                "first occurrence in the corpus, so the same text always gives the same ids (Tokens › "
                "Vocabulary).", _vocab_ties_alphabetical),
    ),
    follows="seqlab's ids: the notes number words by their place in a constructed dictionary and only name "
            "<unk>; seqlab puts <pad>, <unk>, <sos>, <eos> at ids 0 to 3 and the words most frequent first, "
            "leaving out those seen fewer than min_freq times (departure Tokens › Vocabulary).",
)

EXERCISES: tuple[Exercise, ...] = (CHARS, BPE, VOCAB)
