"""Sentence classification (notes: "Many to One Mapping" and "Sentiment Analysis"): one label per sentence,
trained with the sentence-level NLL summed over sentences and divided by their count, scored with accuracy
and macro-F1 (scikit-learn-identical, :mod:`seqlab.metrics.accuracy`), with a confusion-matrix plot.

Data: labelled-sentence files in any format :func:`seqlab.data.labelled.read_labelled` detects from the
content (SST-2 TSV with a header, ``label sentence`` lines, ``__label__N<TAB>sentence``, PTB trees).
``data.source = "sst2"`` reads the cached sentence-level SST-2 splits (``sst2/sentence_level/{train,dev,test}.txt``:
6,920 / 872 / 1,821 sentences, labels 0/1), ``"sst2-phrases"`` trains on GLUE's 67,349 labelled phrases of the
training sentences' parse trees (``sst2/train.tsv``, the supervision of Tai et al. 2015) and validates and tests on
the same sentences, and ``"sst5"`` the SST-5 trees (``sst5/trees/``, labels 0..4, the
notes' "very offensive" .. "very good"); ``data.train/valid/test`` name files (:mod:`seqlab.tasks.splits`).

Tokens: the run's tokenizer (``data.tokenizer`` word | char | bpe, learned from the training sentences;
``data.lowercase``, ``data.min_freq``, ``data.max_size``); unknown words read as <unk>. With ``model.vectors_vocab``
> 0 (``data.tokenizer = "word"``) the word tokenizer's vocabulary is extended with the vectors' most frequent words
and it looks an unknown word up lowercased before <unk> (:mod:`seqlab.tasks.labelling`). Labels: the training
labels, spelled as in the data, numbers in numeric order. An unknown label in a valid/test file is an error
naming ``file:line``. With a Transformer encoder, training sentences longer than ``model.max_len`` tokens
are left out (and counted in the log); at prediction and evaluation they are refused.

``model.arch = "pretrained"`` fine-tunes a BERT-style encoder (:mod:`seqlab.models.pretrained_heads`, mean pooling
over the real tokens, dropout, a linear layer): the sentences are read with the encoder's own WordPiece
tokenizer (``data.tokenizer`` and ``data.lowercase`` do not apply; ``model.max_len`` counts sub-words,
[CLS] and [SEP] included).

Run directory: ``tokenizer.json`` (a pretrained run has ``pretrained.json`` and ``wordpiece.json`` instead),
``labels.json``, the Trainer's checkpoint files; ``evaluate`` writes ``plots/confusion.png``. The splits are
read as streamed views of the files and encoded sentence by sentence into indexed token stores,
``RUN/data/SPLIT.ids`` and ``SPLIT.label`` (:mod:`seqlab.data.indexed`; train and valid at training, reused on
``--resume``; ``evaluate`` encodes the split it scores into a temporary folder), read through memory maps: memory is the stores'
index, not the text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqlab.base.config import RunConfig
from seqlab.data.batching import pad_batch, sorted_batches
from seqlab.data.indexed import lengths_of
from seqlab.data.labelled import iter_labelled
from seqlab.data.streamed import Streamed, chunks
from seqlab.base.errors import SeqlabError, named
from seqlab.metrics.accuracy import classification_scores, confusion_matrix
from seqlab.models.classifier import CLASSIFIER_CONFIGS, Classifier
from seqlab.models.pretrained_heads import PretrainedClassifierConfig, SequenceClassifier, SubwordTokenizer
from seqlab.models.token_encoder import PAD_ID
from seqlab.tasks.labelling import PREDICT_BATCH, Labeller, LabellingTask, Labels, Rows, check_lengths, \
    first_labels, labelling_model, load_labeller, start_embedding
from seqlab.tasks.trained import texts_given
from seqlab.tasks.splits import SPLITS, evaluation_split, max_len, read_splits, scratch_run_dir, split_stores, \
    spooled, stored_splits
from seqlab.text.tokenizers import Tokenizer, load_tokenizer
from seqlab.training.devices import Dist
from seqlab.training.trainer import RUN_KEYS, Trainer
from seqlab.vectors.start import RunVectors, check_vectors_vocab, extend_vocabulary

# model.arch -> config: lstm, gru, rnn (last/mean/max pooling), transformer, pretrained (fine-tuned BERT)
MODEL_CONFIGS = {**CLASSIFIER_CONFIGS, "pretrained": PretrainedClassifierConfig}
TRAIN_KEYS = (*RUN_KEYS, "label_smoothing")  # the train.* keys used: the Trainer's and the loss's
BEST_BY = ("loss", "accuracy")  # the validation metrics train.best_by may name (sentence accuracy)
DATASETS = {
    "sst2": ("sst2/sentence_level/train.txt", "sst2/sentence_level/dev.txt", "sst2/sentence_level/test.txt"),
    "sst2-phrases": ("sst2/train.tsv", "sst2/sentence_level/dev.txt", "sst2/sentence_level/test.txt"),
    "sst5": ("sst5/trees/train.txt", "sst5/trees/dev.txt", "sst5/trees/test.txt"),
}
TOKENIZER = "tokenizer.json"
CONFUSION_PLOT = Path("plots") / "confusion.png"


# ------------------------------------------------------------------------------------------------------
# data


class Example(NamedTuple):
    """One labelled sentence."""

    text: str
    label: str  # spelled as in the file
    where: str  # file:line


class Encoded(NamedTuple):
    """Sentences as token ids, and their label ids (empty at prediction)."""

    ids: Rows
    labels: list[int] | np.ndarray  # a list, or a split's memory-mapped store: (sentences,)


class Batch(NamedTuple):
    ids: Tensor  # batch, seq: token ids, <pad> after the real tokens
    mask: Tensor  # batch, seq: True = real token
    labels: Tensor  # batch



def read_examples(path: str) -> Streamed[Example]:
    """The labelled sentences of a file as a streamed view (one pass checks and counts them; each later pass
    streams them again)."""
    return Streamed(lambda: (Example(s, y, f"{path}:{n}") for n, s, y in iter_labelled(path)), (Path(path),))


def read_data(cfg: RunConfig, splits=SPLITS) -> dict[str, Streamed[Example]]:
    return read_splits(cfg.data, read_examples, DATASETS, "classification", splits)


def encode_examples(examples: list[Example], tokenizer: Tokenizer | SubwordTokenizer, labels: Labels) -> Encoded:
    """Token and label ids; a label the training data never had is an error naming its file:line."""
    return Encoded([tokenizer.encode(ex.text) for ex in examples], [labels.id(ex.label, ex.where) for ex in examples])


def encoded_examples(examples: Iterable[Example], tokenizer: Tokenizer | SubwordTokenizer, labels: Labels,
                     limit: int | None, refuse: bool = False) -> Iterator[dict | None]:
    """Each sentence's ``{"ids", "label"}`` (the label a one-id sequence), streamed; a sentence with no tokens
    or more than ``limit`` (None: no upper bound) is None (left out), or with ``refuse`` an error naming its
    file:line."""
    for chunk in chunks(examples):
        data = encode_examples(chunk, tokenizer, labels)
        for ids, label, ex in zip(data.ids, data.labels, chunk):
            if refuse:
                check_lengths([ids], limit, lambda _: ex.where)
            elif not ids or (limit is not None and len(ids) > limit):
                yield None
                continue
            yield {"ids": ids, "label": [label]}


def split_data(cfg: RunConfig, run_dir: Path, views: dict[str, Streamed[Example]],
               tokenizer: Tokenizer | SubwordTokenizer, labels: Labels, dist: Dist = Dist(),
               refuse: bool = False) -> dict[str, tuple[Encoded, dict]]:
    """Splits (store name -> examples) encoded into the run's token stores (RUN/data/NAME.ids, NAME.label; reused
    while their files are the same) and memory-mapped, with the stores' records (``dropped``: sentences left
    out)."""
    limit = max_len(cfg)
    stores = split_stores(cfg, run_dir, views, {"ids": tokenizer.vocab_size, "label": len(labels)},
                          lambda examples: encoded_examples(examples, tokenizer, labels, limit, refuse), dist)
    return {name: (Encoded(store["ids"], store["label"].values), record) for name, (store, record) in stores.items()}


def train_tokenizer(cfg: RunConfig, sentences: Iterable[str]) -> Tokenizer:
    """The configured tokenizer trained on the sentences (streamed) as one text, a sentence a line."""
    from seqlab.data.lm_tokens import train_tokenizer as lm_tokenizer  # char | word | bpe from data.*

    def lines() -> Iterator[str]:  # the pieces of "\n".join(sentences), each cut after its line's newline
        previous = None
        for sentence in sentences:
            if previous is not None:
                yield previous + "\n"
            previous = sentence
        if previous is not None:
            yield previous

    return lm_tokenizer(cfg, lines())


def prepare_data(cfg: RunConfig, run_dir: Path, dist: Dist, log=print, vectors: RunVectors | None = None
                 ) -> tuple[nn.Module, Tokenizer | SubwordTokenizer, Labels, dict[str, Encoded]]:
    """The model, the tokenizer (learned from the training split, extended with the words of ``vectors``, the run's
    model.vectors, by model.vectors_vocab; or the pretrained encoder's) and the labels (written once per run
    directory, then reloaded), and the encoded train/valid splits."""
    check_vectors_vocab(cfg)
    examples = read_data(cfg, ("train", "valid"))
    pretrained = isinstance(cfg.model, PretrainedClassifierConfig)
    vectors = vectors or RunVectors(cfg)

    def learn(texts: Iterator[str]) -> None:  # the tokenizer of the training split
        extend_vocabulary(cfg, train_tokenizer(cfg, texts), vectors, log).save(run_dir / TOKENIZER)

    labels = first_labels(run_dir, dist, examples["train"], lambda ex: ex.text, lambda ex: (ex.label,),
                          None if pretrained else learn)
    model, tokenizer = labelling_model(cfg, run_dir, "n_classes", labels, own_model, write=dist.main)
    data = stored_splits(split_data(cfg, run_dir, examples, tokenizer, labels, dist), examples,
                         f"with no tokens or more than model.max_len={max_len(cfg)}", cfg, log)
    return model, tokenizer, labels, data


def build_model(cfg: RunConfig, vocab_size: int, n_classes: int) -> Classifier:
    return Classifier(replace(cfg.model, vocab_size=vocab_size, n_classes=n_classes))


def own_model(cfg: RunConfig, run_dir: Path, n_classes: int) -> tuple[Classifier, Tokenizer]:
    """A classifier for the run's tokenizer (``tokenizer.json``), and the tokenizer."""
    tokenizer = load_tokenizer(run_dir / TOKENIZER)
    return build_model(cfg, tokenizer.vocab_size, n_classes), tokenizer


# ------------------------------------------------------------------------------------------------------
# running the model


def collate(data: Encoded, index: list[int]) -> Batch:
    """Padded ids (sub-word ids too are padded with 0: an id of every vocabulary, hidden by the mask)."""
    ids, mask = pad_batch([data.ids[i] for i in index], PAD_ID)  # batch, seq
    labels = torch.from_numpy(np.asarray(data.labels, dtype=np.int64)[index] if len(data.labels)
                              else np.zeros(len(index), dtype=np.int64))  # batch
    return Batch(ids, mask, labels)


@torch.no_grad()
def run_classifier(model: nn.Module, data: Encoded, device: torch.device, batch_size: int = PREDICT_BATCH,
                   max_batches: int | None = None) -> tuple[float, int, dict[int, np.ndarray]]:
    """(sum of sentence NLL, sentences, {sentence index: class probabilities (classes,)}) over length-sorted
    batches (all, or ``max_batches`` spread evenly); ``data.labels`` may be empty (prediction: no loss)."""
    total, count, probs = 0.0, 0, {}
    # sorted_batches np.asarray()s its lengths; its Sequence[int] annotation omits ndarray (seqlab/data/batching.py)
    for index in sorted_batches(lengths_of(data.ids), batch_size, max_batches):  # type: ignore[arg-type]
        ids, mask, labels = (t.to(device) for t in collate(data, index))
        logits = model(ids, mask).float()  # batch, classes
        if len(data.labels):
            total += float(F.cross_entropy(logits, labels, reduction="sum"))
            count += len(index)
        p = torch.softmax(logits, dim=-1).cpu().numpy()  # batch, classes: ŷ
        for row, i in enumerate(index):
            probs[i] = p[row]
    return total, count, probs


# ------------------------------------------------------------------------------------------------------
# the training task


class ClassifyTask(LabellingTask):
    """Plugs classification into :class:`seqlab.training.trainer.Trainer`; items counted are sentences."""

    collate = staticmethod(collate)

    def __init__(self, model: nn.Module, train: Encoded, valid: Encoded, eval_batch_size: int,
                 label_smoothing: float = 0.0):
        super().__init__(model, train, valid, lengths_of(train.ids), len(train.ids),  # sentences
                         eval_batch_size, label_smoothing)

    def count(self, batch: Batch) -> int:
        return batch.ids.shape[0]

    def loss_sum(self, model: nn.Module, batch: Batch, device: torch.device) -> Tensor:
        ids, mask, labels = (t.to(device, non_blocking=True) for t in batch)
        logits = model(ids, mask)  # batch, classes
        # Σ over sentences of -log ŷ[y] (smoothed with train.label_smoothing)
        return F.cross_entropy(logits.float(), labels, reduction="sum", label_smoothing=self.label_smoothing)

    def validate(self, model: nn.Module, device: torch.device, max_batches: int | None) -> dict[str, float]:
        """Sentence NLL and accuracy over the validation sentences scored (all, or ``max_batches`` batches)."""
        if not len(self.valid.ids):
            return {"loss": math.nan}
        total, count, probs = run_classifier(model, self.valid, device, self.eval_batch_size, max_batches)
        correct = sum(int(np.argmax(p) == self.valid.labels[i]) for i, p in probs.items())
        return {"loss": total / count, "accuracy": correct / count}


def train(cfg: RunConfig, run_dir: Path, *, resume: bool, dist: Dist, log=print) -> dict:
    torch.manual_seed(cfg.train.seed)  # the initial weights
    vectors = RunVectors(cfg)  # model.vectors, read once for the vocabulary and E
    model, tokenizer, labels, data = prepare_data(cfg, run_dir, dist, log, vectors)
    start_embedding(cfg, run_dir, resume, model, tokenizer, "tokens", log, vectors)
    n_params = cast("Classifier | SequenceClassifier", model).num_params()  # what labelling_model builds
    log(f"model: {cfg.arch} classifier, {n_params / 1e6:.2f}M parameters; sentences: train "
        f"{len(data['train'].ids):,}, valid {len(data['valid'].ids):,}; vocabulary {tokenizer.vocab_size:,}; "
        f"{len(labels)} classes")
    task = ClassifyTask(model, data["train"], data["valid"],
                        eval_batch_size=max(1, cfg.train.batch_size // cfg.train.grad_accum),
                        label_smoothing=cfg.train.label_smoothing)
    trainer = Trainer(task, cfg.train, run_dir, dist=dist, log=log)
    return trainer.run(resume)


# ------------------------------------------------------------------------------------------------------
# a trained classifier


def plot_confusion(names: list[str], counts: np.ndarray, out: str | Path, title: str = "") -> Path:
    """Heatmap of counts[gold, predicted] with the count in each cell (rows: gold class, columns: predicted)."""
    from seqlab.views.viz import new_figure, save_figure

    size = 2.5 + 0.55 * len(names)
    fig = new_figure((size + 1.0, size))
    ax = fig.subplots()
    image = ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(len(names)), names, rotation=45 if max(map(len, names)) > 3 else 0)
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    high = counts.max() / 2 if counts.size else 0
    for r in range(counts.shape[0]):
        for c in range(counts.shape[1]):
            ax.text(c, r, str(counts[r, c]), ha="center", va="center", fontsize=8,
                    color="white" if counts[r, c] > high else "black")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if title:
        ax.set_title(title, fontsize=9)
    return save_figure(fig, out)


class SentenceClassifier(Labeller):
    """A trained classifier loaded from a run directory: ``classify``, ``evaluate`` (a split or labelled texts in
    memory), ``predict`` (the ``seqlab predict`` results), and ``sentence_encoder`` (see
    :class:`~seqlab.tasks.labelling.Labeller`)."""

    tokenizer: Tokenizer | SubwordTokenizer  # the run's own, or the pretrained encoder's sub-words

    def probabilities(self, texts: list[str], where) -> list[np.ndarray]:
        """ŷ (classes,) for each text; ``where(i)`` names text i in messages (empty or too long: an error)."""
        ids = [self.tokenizer.encode(text) for text in texts]
        check_lengths(ids, max_len(self.config), where)
        probs = run_classifier(self.model, Encoded(ids, []), self.device)[2]
        return [probs[i] for i in range(len(texts))]

    def classify(self, texts: str | Iterable[str]) -> dict[str, float] | list[dict[str, float]]:
        """Each text's class probabilities, ``{label: p}`` in the label vocabulary's order (labels spelled as in
        the training data): one dict for a str, a list of dicts for a list. An empty text is an error naming
        it."""
        single, items = texts_given(texts)
        out = [self._distribution(p) for p in self.probabilities(items, lambda i: f"text {i + 1}")]
        return out[0] if single else out

    def _distribution(self, p: np.ndarray) -> dict[str, float]:
        return {name: float(q) for name, q in zip(self.labels.names, p)}

    def predict(self, lines: list[str] | None, **options) -> list[dict]:
        """``seqlab predict``'s results, one per line: ``{"label", "probability", "probabilities": {label:
        p}}``, the label spelled as in the training data. An empty line is an error naming it."""
        if lines is None or options:
            raise SeqlabError(f"a classifier predicts input lines, one sentence each, and takes no "
                              f"{named('beam')} or {named('steps')}")
        results = []
        for p in self.probabilities(list(lines), lambda i: f"input line {i + 1}"):
            probabilities = self._distribution(p)
            label = max(probabilities, key=probabilities.__getitem__)  # the first of equals, as argmax
            results.append({"label": label, "probability": probabilities[label], "probabilities": probabilities})
        return results

    def format_prediction(self, result: dict) -> str:
        return f"{result['label']}\t{result['probability']:.4f}"

    def evaluate(self, split: str = "test", *, data: Iterable[tuple[str, str]] | None = None) -> dict:
        """``accuracy`` and ``macro_f1`` on a split, or with ``data`` on (text, label) pairs in memory (written as
        a labelled file and read as a split is); writes RUN/plots/confusion.png. An unknown gold label is an
        error naming its file:line."""
        if data is None:
            return self._scores(evaluation_split(self.config, split, read_data), split)
        with spooled("classify", data, "data.tsv") as path:
            return self._scores(read_examples(str(path)), "data")

    def _scores(self, examples: Streamed[Example], name: str) -> dict:
        for ex in examples:
            self.labels.id(ex.label, ex.where)  # a label the model never saw: error naming its line
        with scratch_run_dir() as scratch:
            data, _ = split_data(self.config, scratch, {f"eval-{name}": examples}, self.tokenizer, self.labels,
                                 refuse=True)[f"eval-{name}"]  # no tokens or too long: error naming its line
            by_index = run_classifier(self.model, data, self.device)[2]
            probs = [by_index[i] for i in range(len(data.ids))]
            gold = [self.labels.names[y] for y in data.labels]
        pred = [self.labels.names[int(np.argmax(p))] for p in probs]
        scores = classification_scores(gold, pred)
        _, counts = confusion_matrix(gold, pred, labels=self.labels.names)
        plot_confusion(self.labels.names, counts, self.run_dir / CONFUSION_PLOT,
                       f"{name}: accuracy {scores['accuracy']:.4f}, macro-F1 {scores['macro_f1']:.4f}")
        return scores


def load(run_dir: Path, cfg: RunConfig, device: str | torch.device | None = None, weights: Path | None = None) -> SentenceClassifier:
    return load_labeller(SentenceClassifier, run_dir, cfg, device, weights, "n_classes", own_model)
