"""Chapter 2, tokens and vocabularies, 02.4-02.7: encoding with <sos>, <eos> and <unk>, padding with its mask,
the loss over real tokens, length buckets (docs/tutorials/02-tokens-and-vocabularies.md).

The references are :mod:`seqlab.text.vocab` (``Vocab``'s encoding), :mod:`seqlab.data.batching` (``pad_batch``,
``bucket_batches``), :mod:`seqlab.nn.masks` (True = a real token) and :func:`seqlab.metrics.lm.nll_sum`. The
sentences the cases draw come from :mod:`seqlab.course.ch02_vocabularies` (02.1-02.3).
"""

from __future__ import annotations

import math

import torch

from seqlab.course.ch02_vocabularies import WORDS, _sentences
from seqlab.course.exercise import Case, Exercise, Mistake, generator, randn, rounding
from seqlab.data.batching import bucket_batches, pad_batch
from seqlab.metrics.lm import nll_sum
from seqlab.nn.masks import padding_mask
from seqlab.text.vocab import Vocab

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

EXERCISES: tuple[Exercise, ...] = (ENCODE, PAD, LOSS, BUCKET)
