"""Chapter 2, tokens and vocabularies: a character vocabulary, one BPE merge, a word vocabulary with the special
tokens and min_freq, encoding with <unk>, padding with its mask, length buckets, the loss over real tokens
(docs/tutorials/02-tokens-and-vocabularies.md).

The references are :mod:`seqlab.text.vocab` (``Vocab``: <pad>, <unk>, <sos>, <eos> at ids 0..3, then the tokens
most frequent first, ties by first occurrence), :mod:`seqlab.text.tokenizers` (``CharTokenizer``, ``BPETokenizer``
through Hugging Face ``tokenizers``), :mod:`seqlab.data.batching` (``pad_batch``, ``bucket_batches``),
:mod:`seqlab.nn.masks` (True = a real token) and :func:`seqlab.metrics.lm.nll_sum`.
"""

from __future__ import annotations

import json
import math
from collections import Counter

import torch

from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.data.batching import bucket_batches, pad_batch
from seqlab.metrics.lm import nll_sum
from seqlab.nn.masks import padding_mask
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

# ------------------------------------------------------------------------------------------------------
# 02.4 encoding sentences with <sos>, <eos> and <unk>


ENCODE_SIZES = [(4, 6, 3), (9, 10, 4), (12, 8, 2)]  # (seed, training sentences, sentences to encode)


def _encode_cases() -> list[Case]:
    cases = []
    for seed, train, count in ENCODE_SIZES:
        vocab = Vocab.build(_sentences(seed, train, WORDS[:10])).tokens  # never "and", "big", "red", "hat", "is"
        sentences = _sentences(seed + 100, count)
        sentences[0].append("zyzzyva")  # one unknown word at least
        cases.append(Case((vocab, sentences), {"vocab": len(vocab), "sentences": count}, seed=seed))
    return cases


def _encode(vocab, sentences):
    v = Vocab(vocab)
    return [[Vocab.sos_id, *v.encode(sentence), Vocab.eos_id] for sentence in sentences]


def _encode_unknown_dropped(vocab, sentences):
    return [[i for i in ids if i != Vocab.unk_id] for ids in _encode(vocab, sentences)]


def _encode_unk_as_pad(vocab, sentences):
    return [[Vocab.pad_id if i == Vocab.unk_id else i for i in ids] for ids in _encode(vocab, sentences)]


def _encode_no_sos_eos(vocab, sentences):
    return [ids[1:-1] for ids in _encode(vocab, sentences)]


def _encode_sos_eos_swapped(vocab, sentences):
    return [[Vocab.eos_id, *ids[1:-1], Vocab.sos_id] for ids in _encode(vocab, sentences)]


ENCODE = Exercise(
    id="02.4",
    name="encode_sentences",
    title="Encoding with <sos>, <eos> and <unk>",
    section="Tokens › Vocabulary",
    signature="encode_sentences(vocab, sentences)",
    statement=r"""Turn tokenized sentences into ids, each wrapped in `<sos>` and `<eos>`, unknown tokens as `<unk>`.

`vocab` is a vocabulary as exercise 02.3 returns it: a list of str in id order, `"<pad>"`, `"<unk>"`, `"<sos>"`,
`"<eos>"` first (ids 0 to 3). `sentences` is a list of sentences, each a list of str tokens. Return a list (one per
sentence) of lists of int: the id of `<sos>`, the id of each token (`<unk>`'s id for a token not in `vocab`), the id
of `<eos>`.""",
    reference=_encode,
    cases=_encode_cases,
    mistakes=(
        Mistake("unknown-dropped", "you left out the tokens that are not in the vocabulary; each becomes <unk> = 1 "
                "(a word not in the vocabulary -> <unk>) (Tokens › Vocabulary).", _encode_unknown_dropped),
        Mistake("unk-as-pad", "your unknown tokens get id 0, <pad>'s; a token not in the vocabulary is <unk> = 1 "
                "(padding is left out of the loss, an unknown word is not) (Tokens › Vocabulary).",
                _encode_unk_as_pad),
        Mistake("no-sos-eos", "your sentences lack <sos> = 2 before and <eos> = 3 after (Tokens › Vocabulary).",
                _encode_no_sos_eos),
        Mistake("sos-eos-swapped", "<sos> and <eos> are swapped: a sentence starts with <sos> = 2 and ends with "
                "<eos> = 3 (Tokens › Vocabulary).", _encode_sos_eos_swapped),
    ),
)

# ------------------------------------------------------------------------------------------------------
# 02.5 padding with its mask


PAD_SIZES = [(5, (5, 2, 4), 0), (6, (3, 6, 1, 4), 7), (7, (2, 7), 3)]  # (seed, lengths, pad_id)


def _pad_cases() -> list[Case]:
    cases = []
    for seed, lengths, pad_id in PAD_SIZES:
        g = generator(seed)
        seqs = [torch.randint(4, 12, (n,), generator=g).tolist() for n in lengths]
        seqs[0][1] = pad_id  # a real token equal to pad_id: the mask comes from the lengths
        cases.append(Case((seqs,), {"batch": len(lengths), "seq": max(lengths)}, {"pad_id": pad_id}, seed=seed))
    return cases


def _pad(seqs, pad_id=0):
    return pad_batch(seqs, pad_id=pad_id)


def _pad_mask_inverted(seqs, pad_id=0):
    ids, mask = _pad(seqs, pad_id)
    return ids, ~mask


def _pad_left(seqs, pad_id=0):
    ids, mask = _pad([list(reversed(s)) for s in seqs], pad_id)  # padded after the reversed sequences ...
    return ids.flip(1), mask.flip(1)  # ... and flipped back: the padding before each sequence


def _pad_mask_from_ids(seqs, pad_id=0):
    ids, _ = _pad(seqs, pad_id)
    return ids, padding_mask(ids, pad_id)


PAD = Exercise(
    id="02.5",
    name="pad_batch",
    title="Padding a batch, and its mask",
    section="Tokens › Padding",
    signature="pad_batch(seqs, pad_id=0)",
    statement=r"""Pad sequences of ids to the longest one and return the mask of the real tokens.

`seqs` is a list of lists of int (batch of them, of different lengths); `pad_id` an int. Return `(ids, mask)`: `ids`
a LongTensor (batch, seq), seq the longest length, each sequence from position 0 and `pad_id` after its end;
`mask` a BoolTensor (batch, seq), **True at a real token**, False at padding (seqlab's one convention: True = real /
may attend). The mask comes from the lengths: a token equal to `pad_id` inside a sequence is real.""",
    reference=_pad,
    cases=_pad_cases,
    mistakes=(
        Mistake("mask-inverted", "the mask's polarity is inverted: True marks a real token, False the padding "
                "(seqlab's one mask convention, True = may attend) (Tokens › Padding).", _pad_mask_inverted),
        Mistake("padded-on-the-left", "you padded on the left; each sequence starts at position 0 and the padding "
                "follows its end (Tokens › Padding).", _pad_left),
        Mistake("mask-from-pad-id", "your mask is ids != pad_id, so a real token equal to pad_id counts as "
                "padding; the mask comes from the lengths: False only after each sequence's end (Tokens › "
                "Padding).", _pad_mask_from_ids),
    ),
)

# ------------------------------------------------------------------------------------------------------
# 02.6 the loss over the real tokens


LOSS_SIZES = [(16, 2, 5, 7), (17, 3, 4, 6), (18, 4, 6, 5)]  # (seed, batch, seq, vocab)


def _loss_cases() -> list[Case]:
    cases = []
    for seed, batch, seq, vocab in LOSS_SIZES:
        g = generator(seed)
        logits = randn(g, batch, seq, vocab)
        targets = torch.randint(vocab, (batch, seq), generator=g)
        lengths = torch.randint(1, seq, (batch,), generator=g)
        lengths[0] = seq  # one sentence without padding, the others shorter
        mask = torch.arange(seq)[None, :] < lengths[:, None]
        cases.append(Case((logits, targets, mask), {"batch": batch, "seq": seq, "vocab": vocab}, seed=seed,
                          n=max(vocab, batch * seq),
                          magnitude=2 * logits.abs().max().item() + math.log(vocab)))
    return cases


def _loss(logits, targets, mask):
    total, count = nll_sum(logits, targets, mask)
    return total / count


def _loss_over_padding(logits, targets, mask):
    return _loss(logits, targets, torch.ones_like(mask))


def _loss_sentence_means(logits, targets, mask):
    return torch.stack([_loss(logits[b:b + 1], targets[b:b + 1], mask[b:b + 1]) for b in range(len(mask))]).mean()


def _loss_mask_inverted(logits, targets, mask):
    return _loss(logits, targets, ~mask)


LOSS = Exercise(
    id="02.6",
    name="masked_nll",
    title="The average loss over the real tokens",
    section="Tokens › Padding",
    signature="masked_nll(logits, targets, mask)",
    statement=r"""The loss over the real positions: $\mathcal{L} = \sum_{b,t} m_{bt}(-\log p_{bt}) / \sum_{b,t} m_{bt}$.

`logits` is a float64 tensor (batch, seq, vocab), the scores of the next token at each position; `targets` a
LongTensor (batch, seq), the tokens to predict; `mask` a BoolTensor (batch, seq), True at a real position (False at
padding). $p_{bt}$ is the softmax of `logits[b, t]` over the vocabulary at `targets[b, t]`. Sum over the batch and
the positions before dividing, by the number of real positions. Return a 0-d float64 tensor (or a float).""",
    reference=_loss,
    cases=_loss_cases,
    mistakes=(
        Mistake("mean-over-padding", "you averaged over every position, padding included; the loss counts the "
                "real positions only, sum m_bt (-log p) / sum m_bt (Tokens › Padding).", _loss_over_padding),
        Mistake("mean-of-sentence-means", "you averaged each sentence and then the {batch} sentences, so a short "
                "sentence's tokens weigh more; sum over the whole batch before dividing by its number of real "
                "tokens (Tokens › Padding).", _loss_sentence_means),
        Mistake("mask-inverted", "you averaged over the padding positions: the mask is True at the real tokens "
                "(seqlab's one convention) (Tokens › Padding).", _loss_mask_inverted),
    ),
    # three chained reductions: the log-sum-exp over the vocabulary, the sum over batch x seq, the division; the
    # magnitude bounds |logit| + log-sum-exp of each term
    tolerance=rounding(products=3),
)

# ------------------------------------------------------------------------------------------------------
# 02.7 length buckets


BUCKET_SIZES = [(13, 23, 4), (14, 17, 3), (15, 29, 5)]  # (seed, examples, batch_size): never a whole number of batches


def _bucket_cases() -> list[Case]:
    cases = []
    for seed, count, batch_size in BUCKET_SIZES:
        lengths = torch.randint(1, 12, (count,), generator=generator(seed)).tolist()  # ties in length, surely
        cases.append(Case((lengths, batch_size), {"examples": count, "batch_size": batch_size}, seed=seed))
    return cases


def _bucket(lengths, batch_size):
    return bucket_batches(lengths, batch_size, shuffle=False)


def _bucket_longest_first(lengths, batch_size):
    return bucket_batches([-n for n in lengths], batch_size, shuffle=False)  # ties still by index


def _bucket_not_sorted(lengths, batch_size):
    return bucket_batches([0] * len(lengths), batch_size, shuffle=False)  # every length equal: index order


def _bucket_last_dropped(lengths, batch_size):
    return _bucket(lengths, batch_size)[:-1]  # the cases' last batch is short


BUCKET = Exercise(
    id="02.7",
    name="bucket_batches",
    title="Length buckets",
    section="Tokens › Padding",
    signature="bucket_batches(lengths, batch_size)",
    statement=r"""Group examples into batches of similar length, so that little of each batch is padding.

`lengths` is a list of int, the length of each example (its index is the example's); `batch_size` an int. Sort the
example indices by length, shortest first, ties by index (a stable sort), and cut the sorted list into consecutive
batches of `batch_size` (the last may be smaller). Return a list of batches, each a list of int indices. (This is
seqlab's `bucket_batches` without shuffling; with shuffling, it does the same within random pools.)""",
    reference=_bucket,
    cases=_bucket_cases,
    mistakes=(
        Mistake("longest-first", "your batches go from the longest examples to the shortest; sort by length "
                "ascending, shortest first (Tokens › Padding).", _bucket_longest_first),
        Mistake("not-sorted", "your batches are the examples in their own order, not sorted by length, so a batch "
                "is as long as its longest example (Tokens › Padding).", _bucket_not_sorted),
        Mistake("last-batch-dropped", "you dropped the last batch, which has fewer than batch_size = {batch_size} "
                "examples; every example appears exactly once (Tokens › Padding).", _bucket_last_dropped),
    ),
)

EXERCISES: tuple[Exercise, ...] = (CHARS, BPE, VOCAB, ENCODE, PAD, LOSS, BUCKET)
