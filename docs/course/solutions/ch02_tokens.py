"""Chapter 2's solutions, one function per exercise (named as the exercise asks), and the planted wrong answers:
each usual mistake written as a learner writes it, which the checker must name (tests/test_course.py).

The site shows each solution in a collapsed block under its exercise; the notebooks never contain them."""

from collections import Counter

import torch

def char_encode(train_text, text, min_freq):
    counts = Counter(train_text)  # every character, spaces too, in first-occurrence order
    # sorted() is stable: characters seen equally often keep the order they were first seen in
    chars = [ch for ch, c in sorted(counts.items(), key=lambda item: -item[1]) if c >= min_freq]
    ids = {ch: i for i, ch in enumerate(["<pad>", "<unk>", "<sos>", "<eos>", *chars])}
    return [ids.get(ch, 1) for ch in text]  # 1 = <unk>


def bpe_merge(words):
    counts = Counter()
    for word in words:  # each occurrence of a word counts
        for pair in zip(word, word[1:]):  # adjacent symbols within the word, never across two
            counts[pair] += 1
    best = max(counts.values())
    pair = min(p for p, c in counts.items() if c == best)  # ties: first in code point order

    def merged(word):
        out, i = [], 0
        while i < len(word):  # left to right: each a followed by b becomes ab
            if word[i:i + 2] == pair[0] + pair[1]:
                out.append(pair[0] + pair[1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        return out

    return pair, [merged(word) for word in words]


def build_vocab(sentences, min_freq):
    counts = Counter(token for sentence in sentences for token in sentence)  # first-occurrence order
    ranked = sorted(counts.items(), key=lambda item: -item[1])  # stable: ties stay in first-occurrence order
    return ["<pad>", "<unk>", "<sos>", "<eos>", *(token for token, c in ranked if c >= min_freq)]


def encode_sentences(vocab, sentences):
    ids = {token: i for i, token in enumerate(vocab)}
    sos, eos, unk = ids["<sos>"], ids["<eos>"], ids["<unk>"]
    return [[sos, *(ids.get(token, unk) for token in sentence), eos] for sentence in sentences]


def pad_batch(seqs, pad_id=0):
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)  # batch, seq
    mask = torch.zeros(len(seqs), width, dtype=torch.bool)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[b, :len(s)] = True  # from the length, not from the ids
    return ids, mask


def masked_nll(logits, targets, mask):
    logp = torch.log_softmax(logits, dim=-1)  # batch, seq, vocab
    nll = -logp.gather(-1, targets[..., None])[..., 0]  # batch, seq
    return (nll * mask).sum() / mask.sum()  # over the real positions of the whole batch


def bucket_batches(lengths, batch_size):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])  # stable: ties by index
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


# ------------------------------------------------------------------------------------------------------
# planted wrong answers: exercise id -> {mistake name: a learner's function with that mistake}

SPECIALS = ["<pad>", "<unk>", "<sos>", "<eos>"]  # ids 0, 1, 2, 3


def _by_frequency(counts, min_freq):
    return [t for t, c in sorted(counts.items(), key=lambda tc: -tc[1]) if c >= min_freq]


def _pairs(words):
    counts = Counter()
    for word in words:
        for pair in zip(word, word[1:]):
            counts[pair] += 1
    return counts


def _apply(word, pair):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _char_alphabetical(train_text, text, min_freq):
    counts = Counter(train_text)
    vocab = SPECIALS + sorted(ch for ch, c in counts.items() if c >= min_freq)
    ids = {ch: i for i, ch in enumerate(vocab)}
    return [ids.get(ch, 1) for ch in text]


def _char_unknown_dropped(train_text, text, min_freq):
    vocab = SPECIALS + _by_frequency(Counter(train_text), min_freq)
    ids = {ch: i for i, ch in enumerate(vocab)}
    return [ids[ch] for ch in text if ch in ids]


def _char_strict(train_text, text, min_freq):
    counts = Counter(train_text)
    vocab = SPECIALS + [t for t, c in sorted(counts.items(), key=lambda tc: -tc[1]) if c > min_freq]
    ids = {ch: i for i, ch in enumerate(vocab)}
    return [ids.get(ch, 1) for ch in text]


def _bpe_ties_other_way(words):
    counts = _pairs([list(w) for w in words])
    best = max(counts.values())
    pair = max(p for p, c in counts.items() if c == best)
    return pair, [_apply(list(w), pair) for w in words]


def _bpe_word_types(words):
    counts = _pairs([list(w) for w in set(words)])  # each distinct word once
    best = max(counts.values())
    pair = min(p for p, c in counts.items() if c == best)
    return pair, [_apply(list(w), pair) for w in words]


def _bpe_across_words(words):
    counts = _pairs([list("".join(words))])  # one stream: the last letter of a word pairs with the next's first
    best = max(counts.values())
    pair = min(p for p, c in counts.items() if c == best)
    return pair, [_apply(list(w), pair) for w in words]


def _vocab_alphabetical(sentences, min_freq):
    counts = Counter(token for sentence in sentences for token in sentence)
    return SPECIALS + sorted(t for t, c in counts.items() if c >= min_freq)


def _vocab_specials_last(sentences, min_freq):
    return build_vocab(sentences, min_freq)[4:] + SPECIALS


def _vocab_strict(sentences, min_freq):
    counts = Counter(token for sentence in sentences for token in sentence)
    return SPECIALS + [t for t, c in counts.most_common() if c > min_freq]


def _vocab_ties_alphabetical(sentences, min_freq):
    counts = Counter(token for sentence in sentences for token in sentence)
    return SPECIALS + [t for t in sorted(counts, key=lambda t: (-counts[t], t)) if counts[t] >= min_freq]


def _encode_with(unknown=1, wrap=(2, 3), drop_unknown=False):
    def encode(vocab, sentences):
        ids = {token: i for i, token in enumerate(vocab)}
        out = []
        for sentence in sentences:
            body = [ids[t] for t in sentence if t in ids] if drop_unknown else [ids.get(t, unknown) for t in sentence]
            out.append([wrap[0], *body, wrap[1]] if wrap else body)
        return out

    return encode


def _pad_mask_inverted(seqs, pad_id=0):
    ids, mask = pad_batch(seqs, pad_id)
    return ids, mask == 0  # True at the padding


def _pad_left(seqs, pad_id=0):
    width = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in seqs])
    mask = torch.tensor([[False] * (width - len(s)) + [True] * len(s) for s in seqs])
    return ids, mask


def _pad_mask_from_ids(seqs, pad_id=0):
    ids, _ = pad_batch(seqs, pad_id)
    return ids, ids != pad_id


def _nll_over_padding(logits, targets, mask):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _nll_sentence_means(logits, targets, mask):
    nll = -torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    return ((nll * mask).sum(1) / mask.sum(1)).mean()


def _nll_mask_inverted(logits, targets, mask):
    nll = -torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    padding = mask.logical_not()
    return (nll * padding).sum() / padding.sum()


def _bucket_longest_first(lengths, batch_size):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def _bucket_not_sorted(lengths, batch_size):
    order = list(range(len(lengths)))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def _bucket_last_dropped(lengths, batch_size):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order) - batch_size + 1, batch_size)]  # whole ones only


PLANTED = {
    "02.1": {
        "alphabetical": _char_alphabetical,
        "unknown-dropped": _char_unknown_dropped,
        "min-freq-strict": _char_strict,
    },
    "02.2": {
        "ties-other-way": _bpe_ties_other_way,
        "counted-once-per-word": _bpe_word_types,
        "pairs-across-words": _bpe_across_words,
    },
    "02.3": {
        "alphabetical": _vocab_alphabetical,
        "specials-not-first": _vocab_specials_last,
        "min-freq-strict": _vocab_strict,
        "ties-alphabetical": _vocab_ties_alphabetical,
    },
    "02.4": {
        "unknown-dropped": _encode_with(drop_unknown=True),
        "unk-as-pad": _encode_with(unknown=0),
        "no-sos-eos": _encode_with(wrap=None),
        "sos-eos-swapped": _encode_with(wrap=(3, 2)),
    },
    "02.5": {
        "mask-inverted": _pad_mask_inverted,
        "padded-on-the-left": _pad_left,
        "mask-from-pad-id": _pad_mask_from_ids,
    },
    "02.6": {
        "mean-over-padding": _nll_over_padding,
        "mean-of-sentence-means": _nll_sentence_means,
        "mask-inverted": _nll_mask_inverted,
    },
    "02.7": {
        "longest-first": _bucket_longest_first,
        "not-sorted": _bucket_not_sorted,
        "last-batch-dropped": _bucket_last_dropped,
    },
}
