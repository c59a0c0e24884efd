"""Sequence tagging (notes: NER, "Many to Many"): one label per token, trained with the token-level NLL
summed over real tokens and divided by their count, scored with entity-level F1 (seqeval-identical,
:func:`seqlab.metrics.ner.entity_f1`, default mode).

Data: CoNLL files (:func:`seqlab.data.conll.read_conll`; the NER tag is the last column). IOB1 files (the
original ``eng.*``) are converted to IOB2, so the model learns, predicts and is scored in IOB2 (what seqeval
and most tools expect); other schemes are kept as written. ``data.tag_scheme = "iobes"`` (Lample et al. 2016's
scheme: ``S-`` single-token entities, ``E-`` their last tokens) or ``"iob2"`` converts every split to that scheme
instead (:func:`seqlab.data.conll.convert_scheme`): the model learns, predicts and is scored in it, and the
entities, hence the entity F1, are the same ones either way. ``data.source = "conll2003"`` reads the cached
``conll2003/iob2/{train,valid,test}.txt``; ``data.train/valid/test`` name CoNLL files (:mod:`seqlab.tasks.splits`).

Words: the vocabulary of the training words (``data.min_freq``, ``data.max_size``; ``data.lowercase``
lowercases words, never tags), frequency-ordered with the specials first; unknown words read as <unk>. With
``train.singleton_unk`` = p > 0 (and ``data.min_freq = 1``) a word seen once in training reads as <unk> with
probability p at each training occurrence (Lample et al. 2016's singleton replacement,
:mod:`seqlab.tasks.singletons`). With
``model.vectors_vocab`` > 0 the vectors' most frequent words follow (:mod:`seqlab.tasks.labelling`) and an unknown
word is looked up lowercased before <unk> (a :class:`~seqlab.text.tokenizers.CaseFoldVocab`).
Tokens are CoNLL's first column at training and whitespace-separated words at prediction, so
``data.tokenizer`` must be "word". Labels: the training tags, "O" first. An unknown tag in a valid/test
file is an error naming ``file:line``. With a Transformer encoder, training sentences longer than
``model.max_len`` are left out (and counted in the log); at prediction and evaluation they are refused.

Splits are read as streamed views of the files (:func:`read_examples`, :class:`seqlab.data.streamed.Streamed`)
and encoded sentence by sentence into indexed token stores in the run directory (``RUN/data/SPLIT.words``,
``.tags`` and, fine-tuning, ``.first``; :mod:`seqlab.data.indexed`), which batches gather from through memory
maps: memory is the stores' index, not the text. Training writes train and valid (reused on ``--resume``),
``evaluate`` encodes the split it scores into a temporary folder, removed afterwards.

``model.arch = "pretrained"`` fine-tunes a BERT-style encoder (:mod:`seqlab.models.pretrained_heads`): the words are
split into the encoder's WordPiece sub-words instead (``model.max_len`` counts those, [CLS] and [SEP]
included), each word's tag sits on its first sub-word, the loss reads only those positions and a word's
prediction is read there.

``model.crf = true`` puts a linear-chain CRF over the tagger's per-word logits (:mod:`seqlab.tasks.tag_output`,
:mod:`seqlab.nn.crf`): the loss is -log p(y | x) summed over sentences, divided by the number of words as above
(the validation loss is the CRF's NLL per token), predictions are Viterbi paths, and the transitions are
constrained by the labels' scheme (IOB2, or BIOES when the labels have E-/S- tags).

``data.digits_to_zero = true`` reads every digit of every word as 0 (Lample et al. 2016's released model,
:func:`zero_digits`): in every split as it is read, so the word vocabulary, the characters and the scores see the
same words, and at prediction (``tag``, ``entities``, ``predict``), which return the tokens as given.

``model.char_dim`` > 0 (recurrent taggers) adds each word's character BiLSTM feature to its embedding (Lample et
al. 2016): the characters of the training words are the run's ``chars.json``, each sentence's character ids are
stored beside its word ids (``RUN/data/SPLIT.chars``, ``.char_lengths``) and batched as (batch, seq, chars)
(:mod:`seqlab.tasks.char_inputs`); words are lowercased by ``data.lowercase``, their characters never.

Run directory: ``vocab.json`` (words; a pretrained run has ``pretrained.json`` and ``wordpiece.json``
instead), ``chars.json`` (with ``model.char_dim`` > 0), ``labels.json`` (tags), the Trainer's checkpoint files.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, cast

import torch
from torch import Tensor, nn

from seqlab.base.config import RunConfig
from seqlab.data.batching import pad_batch, sorted_batches
from seqlab.data.conll import convert_scheme, detect_scheme, iter_conll
from seqlab.data.indexed import lengths_of
from seqlab.data.streamed import Streamed, chunks, counted
from seqlab.base.errors import SeqlabError, named
from seqlab.metrics.entities import get_entities
from seqlab.metrics.ner import entity_f1
from seqlab.models import pretrained_heads
from seqlab.models.pretrained_heads import PretrainedTaggerConfig, SubwordTokenizer
from seqlab.models.tagger import TAGGER_CONFIGS, Tagger
from seqlab.models.token_encoder import PAD_ID
from seqlab.tasks.char_inputs import CharBatch, CharRows, char_batch, char_bounds, char_rows, encode_chars, \
    learning_chars, load_chars, sentence_chars
from seqlab.tasks.labelling import PREDICT_BATCH, Labeller, LabellingTask, Labels, Rows, check_lengths, \
    first_labels, labelling_model, load_labeller, start_embedding
from seqlab.tasks import singletons
from seqlab.tasks.results import Entity
from seqlab.tasks.splits import SPLITS, evaluation_split, max_len, read_splits, scratch_run_dir, split_stores, \
    spooled, stored_splits
from seqlab.nn.crf import CRF
from seqlab.tasks.tag_output import best_tags, constrain, crf_of, loss_sum
from seqlab.text.tokenizers import load_word_vocab
from seqlab.text.vocab import Vocab
from seqlab.training.devices import Dist
from seqlab.training.trainer import RUN_KEYS, Trainer
from seqlab.vectors.start import RunVectors, check_vectors_vocab, extend_vocabulary

# model.arch -> config: lstm, gru, rnn (bidirectional by default), transformer, pretrained (fine-tuned BERT)
MODEL_CONFIGS = {**TAGGER_CONFIGS, "pretrained": PretrainedTaggerConfig}
TRAIN_KEYS = (*RUN_KEYS, "label_smoothing", "singleton_unk")  # the Trainer's, the loss's, the words' train.* keys
BEST_BY = ("loss", "f1")  # the validation metrics train.best_by may name (entity F1 as seqeval scores it)
DATASETS = {"conll2003": ("conll2003/iob2/train.txt", "conll2003/iob2/valid.txt", "conll2003/iob2/test.txt")}
VOCAB = "vocab.json"
_DIGIT = re.compile(r"\d")  # data.digits_to_zero: what reads as 0


# ------------------------------------------------------------------------------------------------------
# data


class Example(NamedTuple):
    """One tagged sentence of a CoNLL file."""

    tokens: tuple[str, ...]
    tags: tuple[str, ...]  # in data.tag_scheme's scheme ("auto": IOB2 when the file is IOB1, else as written)
    written: tuple[str, ...]  # the tags as the file writes them
    path: str  # the file it came from
    line: int  # line of its first token (token i is on line + i)

    def where(self, i: int) -> str:
        """file:line of token i, and the tag as written when it was converted to another scheme."""
        note = f" (written {self.written[i]!r}, read as {self.tags[i]!r})" if self.written[i] != self.tags[i] else ""
        return f"{self.path}:{self.line + i}{note}"


class Encoded(NamedTuple):
    """Sentences as ids: ``words[i]`` has one entry per token (word, or sub-word with ``first``), ``tags[i]``
    one per word (empty lists at prediction); ``first[i]`` is the position of each word's first sub-word
    (None: the ids are the words); ``chars`` each word's characters (``model.char_dim`` > 0, else None)."""

    words: Rows
    tags: Rows
    first: Rows | None = None
    chars: CharRows | None = None


class Batch(NamedTuple):
    ids: Tensor  # batch, seq: word (or sub-word) ids, padding after the real tokens
    mask: Tensor  # batch, seq: True = real token
    tags: Tensor  # batch, seq: tag ids (0 where not scored)
    scored: Tensor  # batch, seq: True = a word's tag is read here (the real tokens, or first sub-words)


def zero_digits(tokens: Sequence[str]) -> tuple[str, ...]:
    """``data.digits_to_zero``: every digit (``\\d``, any Unicode decimal digit) of each token read as 0, as the
    released model of Lample et al. 2016 reads its words (glample/tagger ``zero_digits``): "1996" -> "0000"."""
    return tuple(_DIGIT.sub("0", t) for t in tokens)


def read_examples(path: str, scheme: str = "auto", digits_to_zero: bool = False) -> Streamed[Example]:
    """The sentences of a CoNLL file as a streamed view: one pass checks the file, counts the sentences and tells
    IOB1 from the other schemes; each later pass streams them again, the tags in ``scheme`` (``data.tag_scheme``,
    :func:`~seqlab.data.conll.convert_scheme`: "auto" reads IOB1 as IOB2 and the others as written), with
    ``digits_to_zero`` the tokens' digits as 0 (:func:`zero_digits`: the words and characters every later step
    reads)."""
    count = [0]
    iob1 = detect_scheme(s.tags for s in counted(iter_conll(path), count)) == "IOB1"

    def read() -> Iterator[Example]:
        for s in iter_conll(path):
            tokens = zero_digits(s.tokens) if digits_to_zero else s.tokens
            yield Example(tokens, convert_scheme(s.tags, scheme, iob1), s.tags, str(path), s.line)

    return Streamed(read, (Path(path),), count[0])


def read_data(cfg: RunConfig, splits=SPLITS) -> dict[str, Streamed[Example]]:
    if cfg.data.tokenizer != "word":
        raise SeqlabError(f"data.tokenizer={cfg.data.tokenizer!r}, but tagging labels whitespace-separated words "
                          "(one tag each); set data.tokenizer=word")
    return read_splits(cfg.data, functools.partial(read_examples, scheme=cfg.data.tag_scheme,
                                                   digits_to_zero=cfg.data.digits_to_zero), DATASETS, "tagging",
                       splits)


def words(tokens, lowercase: bool) -> list[str]:
    return [t.lower() for t in tokens] if lowercase else list(tokens)


def encode_sentences(sentences: Sequence[Sequence[str]], vocab: Vocab | SubwordTokenizer,
                     lowercase: bool) -> tuple[list[list[int]], list[list[int]] | None]:
    """Token ids of each sentence and, with a sub-word tokenizer, each word's first sub-word position."""
    if isinstance(vocab, SubwordTokenizer):
        pairs = [vocab.encode_words(list(tokens)) for tokens in sentences]
        return [ids for ids, _ in pairs], [first for _, first in pairs]
    return [vocab.encode(words(tokens, lowercase)) for tokens in sentences], None


def encode_examples(examples: list[Example], vocab: Vocab | SubwordTokenizer, labels: Labels,
                    lowercase: bool) -> Encoded:
    """Token and tag ids; a tag the training data never had is an error naming its file:line."""
    ids, first = encode_sentences([ex.tokens for ex in examples], vocab, lowercase)
    return Encoded(ids, [[labels.id(tag, ex.where(i)) for i, tag in enumerate(ex.tags)] for ex in examples], first)


def encoded_examples(examples: Iterable[Example], vocab: Vocab | SubwordTokenizer, labels: Labels, lowercase: bool,
                     limit: int | None, refuse: bool = False, chars: Vocab | None = None) -> Iterator[dict | None]:
    """Each sentence's ``{"words", "tags"[, "first"][, "chars", "char_lengths"]}`` ids, streamed; a sentence of
    more than ``limit`` tokens (None: no limit) is None (left out), or with ``refuse`` an error naming its
    file:line."""
    for chunk in chunks(examples):
        data = encode_examples(chunk, vocab, labels, lowercase)
        for i, ex in enumerate(chunk):
            if refuse:
                check_lengths(data.words[i:i + 1], limit, lambda _: f"{ex.path}:{ex.line} (a sentence)")
            elif limit is not None and len(data.words[i]) > limit:
                yield None
                continue
            yield {"words": data.words[i], "tags": data.tags[i],
                   **({} if data.first is None else {"first": data.first[i]}),
                   **({} if chars is None else encode_chars(ex.tokens, chars))}


def split_data(cfg: RunConfig, run_dir: Path, views: dict[str, Streamed[Example]], vocab: Vocab | SubwordTokenizer,
               labels: Labels, dist: Dist = Dist(), refuse: bool = False,
               chars: Vocab | None = None) -> dict[str, tuple[Encoded, dict]]:
    """Splits (store name -> examples) encoded into the run's token stores (RUN/data/NAME.*, reused while their
    files are the same) and memory-mapped, with the stores' records (``dropped``: sentences left out as too
    long); with ``chars``, each word's characters too."""
    limit = max_len(cfg)
    bounds = {"words": len(vocab), "tags": len(labels), **char_bounds(chars)}
    if isinstance(vocab, SubwordTokenizer):
        bounds["first"] = limit or 1 << 31  # positions of first sub-words, below the sentence's length
    stores = split_stores(cfg, run_dir, views, bounds,
                          lambda examples: encoded_examples(examples, vocab, labels, cfg.data.lowercase, limit, refuse,
                                                            chars), dist)
    return {name: (Encoded(store["words"], store["tags"], store.get("first"), char_rows(store, chars)), record)
            for name, (store, record) in stores.items()}


def prepare_data(cfg: RunConfig, run_dir: Path, dist: Dist, log=print, vectors: RunVectors | None = None
                 ) -> tuple[nn.Module, Vocab | SubwordTokenizer, Labels, dict[str, Encoded]]:
    """The model, the word vocabulary (or the pretrained encoder's sub-word tokenizer; extended with the words of
    ``vectors``, the run's model.vectors, by model.vectors_vocab), the characters and the tags (built once per run
    directory from the training split, then reloaded), and the encoded train/valid splits."""
    check_vectors_vocab(cfg)
    examples = read_data(cfg, ("train", "valid"))
    d = cfg.data
    pretrained = isinstance(cfg.model, PretrainedTaggerConfig)
    vectors = vectors or RunVectors(cfg)

    def learn(train_tokens: Iterator[Sequence[str]]) -> None:  # the word vocabulary of the training split
        counts: Counter[str] = Counter()  # first-occurrence order breaks ties in frequency, as Vocab.build
        for tokens in train_tokens:
            counts.update(words(tokens, d.lowercase))
        vocab = Vocab.from_counts(counts, min_freq=d.min_freq, max_size=d.max_size or None)
        if cfg.train.singleton_unk:
            singletons.save(run_dir, vocab, counts)
        extend_vocabulary(cfg, vocab, vectors, log).save(run_dir / VOCAB)

    labels = first_labels(run_dir, dist, examples["train"], lambda ex: ex.tokens, lambda ex: ex.tags,
                          None if pretrained else learning_chars(learn, cfg.model, run_dir), first=("O",))
    model, vocab = labelling_model(cfg, run_dir, "n_labels", labels, own_model, write=dist.main)
    chars = load_chars(cfg.model, run_dir)
    data = stored_splits(split_data(cfg, run_dir, examples, vocab, labels, dist, chars=chars), examples,
                         f"longer than model.max_len={max_len(cfg)}", cfg, log)
    constrain(model, labels.names, data["train"].tags, log)  # model.crf = true: the CRF's IOB2/BIOES masks
    return model, vocab, labels, data


def build_model(cfg: RunConfig, vocab_size: int, n_labels: int, n_chars: int | None = None) -> Tagger:
    return Tagger(replace(cfg.model, vocab_size=vocab_size, n_labels=n_labels), n_chars)


def own_model(cfg: RunConfig, run_dir: Path, n_labels: int) -> tuple[Tagger, Vocab]:
    """A tagger for the run's word vocabulary (``vocab.json``; a CaseFoldVocab when extended from vectors) and
    characters (``chars.json``, with ``model.char_dim`` > 0), and the word vocabulary."""
    vocab, chars = load_word_vocab(run_dir / VOCAB), load_chars(cfg.model, run_dir)
    return build_model(cfg, len(vocab), n_labels, None if chars is None else len(chars)), vocab


# ------------------------------------------------------------------------------------------------------
# running the model


def collate(data: Encoded, index: list[int]) -> Batch | CharBatch:
    """Padded ids and mask; tags at the scored positions: every real word, or each word's first sub-word; with
    characters (``data.chars``) each word's character ids too. (Sub-word ids are padded with 0 too: an id of every
    vocabulary, hidden by the mask.) The model reads ``model(ids, mask, *batch[4:])``: the characters when any."""
    ids, mask = pad_batch([data.words[i] for i in index], PAD_ID)  # batch, seq
    if data.first is None:
        tags, _ = pad_batch([data.tags[i] for i in index], 0)  # batch, seq
        if tags.shape != mask.shape:  # prediction: no tags
            tags = torch.zeros_like(ids)  # batch, seq
        return Batch(ids, mask, tags, mask) if data.chars is None else \
            CharBatch(ids, mask, tags, mask, char_batch(data.chars, index))
    tags, scored = pretrained_heads.word_labels([data.first[i] for i in index], [data.tags[i] for i in index],
                                        ids.shape[1])  # batch, seq
    return Batch(ids, mask, tags, scored)


@torch.no_grad()
def run_tagger(model: nn.Module, data: Encoded, device: torch.device, batch_size: int = PREDICT_BATCH,
               max_batches: int | None = None) -> tuple[float, int, dict[int, list[int]]]:
    """(sum of the loss, scored words, {sentence index: predicted tag ids}) over length-sorted batches (all
    of them, or ``max_batches`` spread evenly): token NLL and argmax, or with a CRF sentence NLL and Viterbi
    (:mod:`seqlab.tasks.tag_output`); ``data.tags`` may be empty lists (prediction: no loss)."""
    total, count, predicted = 0.0, 0, {}
    # sorted_batches np.asarray()s its lengths; its Sequence[int] annotation omits ndarray (seqlab/data/batching.py)
    for index in sorted_batches(lengths_of(data.words), batch_size, max_batches):  # type: ignore[arg-type]
        ids, mask, tags, scored, *chars = (t.to(device) for t in collate(data, index))
        logits = model(ids, mask, *chars)  # batch, seq, labels
        if len(data.tags[index[0]]):
            total, count = total + float(loss_sum(model, logits, tags, scored)), count + int(scored.sum())
        for i, best in zip(index, best_tags(model, logits, scored)):
            predicted[i] = best  # words: one tag each, in order
    return total, count, predicted


# ------------------------------------------------------------------------------------------------------
# the training task


class TagTask(LabellingTask):
    """Plugs tagging into :class:`seqlab.training.trainer.Trainer`; items counted are real tokens."""

    collate = staticmethod(collate)

    def __init__(self, model: nn.Module, train: Encoded, valid: Encoded, labels: Labels, eval_batch_size: int,
                 label_smoothing: float = 0.0, replaced: singletons.Singletons | None = None):
        super().__init__(model, train, valid, lengths_of(train.words), int(lengths_of(train.tags).sum()),  # words
                         eval_batch_size, label_smoothing)
        self.labels = labels
        self.replaced = replaced  # train.singleton_unk > 0: training words seen once read as <unk> at times

    def count(self, batch: Batch | CharBatch) -> int:
        return int(batch.scored.sum())

    def loss_sum(self, model: nn.Module, batch: Batch | CharBatch, device: torch.device) -> Tensor:
        ids, mask, tags, scored, *chars = (t.to(device, non_blocking=True) for t in batch)  # chars: [] or [chars]
        if self.replaced is not None and model.training:
            ids = self.replaced.apply(ids)  # batch, seq; the characters stay: the word is still spelled out
        return loss_sum(model, model(ids, mask, *chars), tags, scored, self.label_smoothing)  # over the scored words

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        """NLL per token (with a CRF: its sentence NLL over the words) and entity F1 over the validation
        sentences scored (all, or ``max_batches`` batches)."""
        if not len(self.valid.words):
            return {"loss": math.nan}
        total, count, predicted = run_tagger(model, self.valid, device, self.eval_batch_size, max_batches)
        names = self.labels.names
        gold = [[names[t] for t in self.valid.tags[i]] for i in predicted]
        pred = [[names[t] for t in p] for p in predicted.values()]
        return {"loss": total / count, "f1": entity_f1(gold, pred)["f1"]}


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    if cfg.model.crf and cfg.train.label_smoothing:
        raise SeqlabError(f"train.label_smoothing={cfg.train.label_smoothing} has no CRF form (model.crf = true "
                          "scores whole tag sequences); set train.label_smoothing=0 or model.crf=false")
    singletons.check(cfg, isinstance(cfg.model, PretrainedTaggerConfig))
    vectors = RunVectors(cfg)  # model.vectors, read once for the vocabulary and E
    model, vocab, labels, data = prepare_data(cfg, run_dir, dist, log, vectors)
    start_embedding(cfg, run_dir, resume, model, vocab, "words", log, vectors)
    n_params = cast("Tagger | pretrained_heads.TokenClassifier", model).num_params()  # what labelling_model builds
    log(f"model: {cfg.arch} tagger, {n_params / 1e6:.2f}M parameters; sentences: train "
        f"{len(data['train'].words):,}, valid {len(data['valid'].words):,}; vocabulary {len(vocab):,}; "
        f"{len(labels)} tags")
    task = TagTask(model, data["train"], data["valid"], labels,  # the whole valid split: in prediction's batches
                   eval_batch_size=PREDICT_BATCH if not cfg.train.eval_batches else
                   max(1, cfg.train.batch_size // cfg.train.grad_accum),
                   label_smoothing=cfg.train.label_smoothing,
                   replaced=singletons.load(cfg, run_dir, cast(Vocab, vocab)))
    trainer = Trainer(task, cfg.train, run_dir, dist=dist, log=log)
    return trainer.run(resume)


# ------------------------------------------------------------------------------------------------------
# a trained tagger


Sentences = str | Iterable[str | Sequence[str]]  # one sentence (split at whitespace), or several, each a str or tokens


def token_lists(sentences: Sentences) -> tuple[bool, list[list[str]]]:
    """(whether one sentence was given, the sentences as token lists): a str is one sentence split at
    whitespace, as ``seqlab predict`` splits a line; anything else is a sequence of sentences, each a str (split
    the same way) or a list of token strings. One tokenised sentence goes in a list of its own: ``[tokens]``."""
    if isinstance(sentences, str):
        return True, [sentences.split()]
    if not isinstance(sentences, Iterable):
        raise SeqlabError(f"got a {type(sentences).__name__}; give a sentence as a str (or a list of token "
                          "strings in a list of its own), or several as a list")
    out = []
    for i, s in enumerate(sentences):
        if isinstance(s, str):
            out.append(s.split())
        elif isinstance(s, (list, tuple)) and all(isinstance(t, str) for t in s):
            out.append(list(s))
        else:
            raise SeqlabError(f"sentence {i + 1} is a {type(s).__name__}; give each sentence as a str or a list of "
                              "token strings")
    return False, out


def spans(tokens: Sequence[str], tags: Sequence[str]) -> list[Entity]:
    """The typed entities of a tagged sentence, read as the entity-level F1 reads them (seqeval's default mode,
    :func:`seqlab.metrics.entities.get_entities`: IOB2, IOBES and ill-formed sequences alike), with exclusive
    ends."""
    return [Entity(kind, start, end + 1, " ".join(tokens[start:end + 1]))
            for kind, start, end in get_entities(list(tags))]


class SequenceTagger(Labeller):
    """A trained tagger loaded from a run directory: ``tag``, ``entities``, ``evaluate`` (a split or tagged
    sentences in memory), ``predict`` (the ``seqlab predict`` results), and ``sentence_encoder`` (see
    :class:`~seqlab.tasks.labelling.Labeller`); ``tokenizer`` is the word vocabulary or the sub-word tokenizer."""

    tokenizer: Vocab | SubwordTokenizer

    @functools.cached_property
    def chars(self) -> Vocab | None:
        """The run's character vocabulary (``chars.json``) when its model reads characters, else None."""
        return load_chars(self.config.model, self.run_dir)

    def _tags(self, sentences: list[list[str]], where) -> list[list[str]]:
        """The predicted tags of each sentence; ``where(i)`` names sentence i in messages (empty or too long: an
        error)."""
        if self.config.data.digits_to_zero:  # as the run read its words (the results keep the tokens as given)
            sentences = [list(zero_digits(tokens)) for tokens in sentences]
        ids, first = encode_sentences(sentences, self.tokenizer, self.config.data.lowercase)
        check_lengths(ids, max_len(self.config), where)
        data = Encoded(ids, [[] for _ in ids], first, sentence_chars(sentences, self.chars))
        predicted = run_tagger(self.model, data, self.device)[2]
        return [[self.labels.names[t] for t in predicted[i]] for i in range(len(sentences))]

    def tag(self, sentences: Sentences) -> list[tuple[str, str]] | list[list[tuple[str, str]]]:
        """(token, tag) pairs of each sentence (:func:`token_lists`: a str is one sentence, split at whitespace;
        a list holds sentences, each a str or a list of tokens): one list for a str, a list of lists for a list.
        An empty sentence is an error naming it."""
        single, sentences = token_lists(sentences)
        tags = self._tags(sentences, lambda i: f"sentence {i + 1}")
        pairs = [list(zip(tokens, t)) for tokens, t in zip(sentences, tags)]
        return pairs[0] if single else pairs

    def entities(self, sentences: Sentences) -> list[Entity] | list[list[Entity]]:
        """The typed spans of each sentence's predicted tags (:func:`spans`: ``Entity(type, start, end, text)``,
        token positions, ``end`` exclusive), for sentences as :meth:`tag` takes them: one list for a str, a list
        of lists for a list."""
        tagged = self.tag(sentences)
        one = isinstance(sentences, str)
        tagged_sentences = cast("list[list[tuple[str, str]]]", [tagged] if one else tagged)
        found = [spans([w for w, _ in pairs], [t for _, t in pairs]) for pairs in tagged_sentences]
        return found[0] if one else found

    @staticmethod
    def spans(tokens: Sequence[str], tags: Sequence[str]) -> list[Entity]:
        """The typed entities of one tagged sentence (:func:`spans`; token positions, ``end`` exclusive), for a
        caller that holds its tags already (the web inspector shows both from one :meth:`tag`)."""
        return spans(tokens, tags)

    @property
    def crf(self) -> CRF | None:
        """The model's CRF (``model.crf = true``: its transition, start and end scores), or None."""
        return crf_of(self.model)

    def predict(self, lines: list[str] | None, **options) -> list[dict]:
        """``seqlab predict``'s results, one per line: ``{"tokens": [...], "tags": [...]}``, the line split at
        whitespace, one tag per token. An empty line is an error naming it."""
        if lines is None or options:
            raise SeqlabError(f"a tagger predicts input lines, one sentence each, and takes no {named('beam')} "
                              f"or {named('steps')}")
        sentences = [line.split() for line in lines]
        tags = self._tags(sentences, lambda i: f"input line {i + 1}")
        return [{"tokens": tokens, "tags": t} for tokens, t in zip(sentences, tags)]

    def format_prediction(self, result: dict) -> str:
        return " ".join(result["tags"])

    def evaluate(self, split: str = "test", *, data: Iterable[Sequence[tuple[str, str]]] | None = None) -> dict:
        """Entity-level ``precision``, ``recall``, ``f1`` (micro) and ``per_type`` on a split (seqeval default
        mode), or with ``data`` on tagged sentences in memory, each a list of (token, tag) pairs (written as a
        CoNLL file and read as a split is, in the run's ``data.tag_scheme``); an unknown gold tag is an error
        naming its file:line."""
        if data is None:
            return self._entity_scores(evaluation_split(self.config, split, read_data), split)
        with spooled("tag", data, "data.conll") as path:
            return self._entity_scores(read_examples(str(path), self.config.data.tag_scheme,
                                                     self.config.data.digits_to_zero), "data")

    def _entity_scores(self, examples: Streamed[Example], name: str) -> dict:
        for ex in examples:
            for i, tag in enumerate(ex.tags):
                self.labels.id(tag, ex.where(i))  # a tag the model never saw: error naming its line
        with scratch_run_dir() as scratch:
            data, _ = split_data(self.config, scratch, {f"eval-{name}": examples}, self.tokenizer, self.labels,
                                 refuse=True, chars=self.chars)[f"eval-{name}"]  # too long: error naming its line
            predicted = run_tagger(self.model, data, self.device)[2]
            names = self.labels.names
            return entity_f1([[names[t] for t in data.tags[i]] for i in range(len(data.tags))],
                             [[names[t] for t in predicted[i]] for i in range(len(data.tags))])


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> SequenceTagger:
    return load_labeller(SequenceTagger, run_dir, cfg, device, weights, "n_labels", own_model)
