"""Fine-tuning a pretrained BERT-style encoder (:mod:`seqlab.models.pretrained`) for tagging and classification.

Two heads on the encoder's last hidden states H = Encoder(X^0) (notes: Transformer; BERT, Devlin et al.
2019, section 4 "token-level / sequence-level tasks"):

    token classification     logits_t = W · dropout(h_t) + b          at every sub-word t; a word's label sits on
                             its FIRST sub-word (BERT's CoNLL recipe): the loss reads only those positions and
                             a word's prediction is the argmax there (notes: NER, many to many)
    sequence classification  s = (1/T) Σ_t m_t h_t  (mean over the T real tokens, :func:`mean_pool`), or with
                             model.pooling = "cls" BERT's pooler s = tanh(W_p h_[CLS] + b_p) (W_p, b_p from
                             the checkpoint; the form BertForSequenceClassification computes)
                             logits = W · dropout(s) + b                (notes: many to one)

With ``model.crf = true`` the token classifier's logits at the first sub-words are the emission scores of a
linear-chain CRF (:mod:`seqlab.nn.crf`): trained with the sentence NLL, predicting by Viterbi.

Both train with the notes' NLL (the tasks sum it over labelled words / sentences and divide by their count).

The run keeps what the model needs without the original directory: ``pretrained.json`` (the name or directory
it was fine-tuned from, and the encoder's :class:`BertConfig`) and ``wordpiece.json`` (the tokenizer).
:class:`SubwordTokenizer` turns text, or pre-split words, into the ``[CLS] pieces [SEP]`` ids the tasks batch.

Shapes: batch; seq (sub-words, [CLS] and [SEP] included); d_model; labels; classes; words.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from seqlab.base.errors import SeqlabError, check_size
from seqlab.base.io import read_json, write_json_atomic
from seqlab.models.pretrained import BertConfig, BertEncoder, from_pretrained, mean_pool, read_weights, \
    resolve_pretrained
from seqlab.models.sentence import SentenceEncoder
from seqlab.nn.crf import CRF
from seqlab.nn.dropout import Dropout
from seqlab.text.wordpiece import WordPieceTokenizer

PRETRAINED, WORDPIECE = "pretrained.json", "wordpiece.json"  # files of a fine-tuned run directory
POOLINGS = ("mean", "cls")  # the sequence classifier's sentence vector


# ------------------------------------------------------------------------------------------------------
# configs


@dataclass(frozen=True, kw_only=True)
class PretrainedConfig:
    """``model.arch = "pretrained"``: a BERT-style encoder loaded from ``pretrained``, fine-tuned with a head."""

    pretrained: str = "all-MiniLM-L6-v2"  # a BERT-style directory, or a known model name (an installed package)
    dropout: float = 0.1  # replaces the checkpoint's (embeddings, attention, FFN, residuals); also before the head
    max_len: int = 128  # most sub-words per sentence, [CLS] and [SEP] included; longer training sentences are left out

    def __post_init__(self) -> None:
        if not self.pretrained:
            raise SeqlabError("model.pretrained is empty; give a BERT-style directory or all-MiniLM-L6-v2")
        if not 0.0 <= self.dropout < 1.0:
            raise SeqlabError(f"model.dropout={self.dropout} is outside [0, 1); use e.g. 0.1, or 0 to turn it off")
        if self.max_len < 3:
            raise SeqlabError(f"model.max_len={self.max_len} leaves no room for a word beside [CLS] and [SEP]; "
                              "use e.g. 128")


@dataclass(frozen=True, kw_only=True)
class PretrainedTaggerConfig(PretrainedConfig):
    """The encoder + a per-sub-word linear layer read at each word's first sub-word."""

    n_labels: int | None = None  # tags in the label vocabulary (from the training data; None until read)
    crf: bool = False  # a linear-chain CRF over the first sub-words' logits (seqlab.nn.crf): Viterbi predictions

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("n_labels", self.n_labels)


@dataclass(frozen=True, kw_only=True)
class PretrainedClassifierConfig(PretrainedConfig):
    """The encoder + pooling (mean over the real tokens, or BERT's [CLS] pooler) + dropout + a linear layer."""

    n_classes: int | None = None  # classes in the label vocabulary (from the training data; None until read)
    pooling: str = "mean"  # mean: average of the real tokens' states; cls: BERT's pooler, tanh(W_p h_[CLS] + b_p)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_size("n_classes", self.n_classes)
        if self.pooling not in POOLINGS:
            raise SeqlabError(f"model.pooling={self.pooling!r} is not available; use one of {', '.join(POOLINGS)}")


# ------------------------------------------------------------------------------------------------------
# the tokenizer of a fine-tuned run


class SubwordTokenizer:
    """The encoder's WordPiece tokenizer, as the tagging and classification tasks use it.

    Sequences longer than ``max_len`` sub-words come back with ``max_len + 1`` ids (truncated there), so the
    tasks' length checks leave them out in training and refuse them at prediction. Text without any piece
    (an empty line) gives ``[]``, which the tasks treat as empty input.
    """

    def __init__(self, tokenizer_json: str, max_len: int) -> None:
        from tokenizers import Tokenizer

        self.json, self.max_len = tokenizer_json, max_len
        self.wordpiece = WordPieceTokenizer(Tokenizer.from_str(tokenizer_json), max_len + 1)
        self.pad_id, self.unk_id = self.wordpiece.pad_id, self.wordpiece.unk_id
        self.unk = self.wordpiece._tok.id_to_token(self.unk_id)  # "[UNK]", a special token of the vocabulary

    @property
    def vocab_size(self) -> int:
        return self.wordpiece.vocab_size

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str) -> list[int]:
        """Text -> ``[CLS] pieces [SEP]`` ids; ``[]`` when the text has no piece."""
        ids = self.wordpiece.encode(text)
        return ids if len(ids) > 2 else []

    def encode_words(self, words: list[str]) -> tuple[list[int], list[int]]:
        """Pre-split words -> (``[CLS] pieces [SEP]`` ids, position of each word's first sub-word).

        A word the normaliser erases (a lone control or zero-width character) is read as ``[UNK]``, so every
        word has a position and gets a tag. No words: ``([], [])``.
        """
        if not words:
            return [], []
        ids, word_ids = self.wordpiece.encode_words(words)
        if len(ids) > self.max_len:
            return ids, []  # too long: the caller leaves it out or refuses it
        present = set(word_ids)
        if len(present - {None}) < len(words):
            words = [w if i in present else self.unk for i, w in enumerate(words)]
            ids, word_ids = self.wordpiece.encode_words(words)
            if len(ids) > self.max_len:
                return ids, []
        first, seen = [], set()
        for position, w in enumerate(word_ids):
            if w is not None and w not in seen:
                seen.add(w)
                first.append(position)
        return ids, first

    def sentence_tokenizer(self) -> WordPieceTokenizer:
        """A WordPiece tokenizer truncating at ``max_len`` (sentence embeddings, as sentence-transformers does)."""
        from tokenizers import Tokenizer

        return WordPieceTokenizer(Tokenizer.from_str(self.json), self.max_len)


# ------------------------------------------------------------------------------------------------------
# the heads


class _Head(nn.Module):
    """A pretrained encoder, dropout, and one linear layer W: d_model -> n_out (labels or classes), b."""

    def __init__(self, cfg: PretrainedConfig, encoder: BertEncoder, n_out: int) -> None:
        super().__init__()
        if n_out is None or n_out < 1:  # a model needs the sizes read from the data (n_labels or n_classes)
            raise SeqlabError(f"the head needs n_labels / n_classes >= 1, got {n_out}")
        self.cfg = cfg
        self.encoder = encoder
        self.dropout = Dropout(cfg.dropout)
        self.head = nn.Linear(encoder.cfg.d_model, n_out)  # W: d_model -> n_out, b
        _init_head(self.head)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class TokenClassifier(_Head):
    r"""logits_t = W · dropout(h_t) + b over the encoder's per-sub-word states h_t (BERT's NER head); with
    ``cfg.crf`` also ``crf``, the CRF over the first sub-words' logits.

    !!! equation "Pretrained encoders › Fine-tuning (beyond the notes)"
        $\mathrm{logits}_t = W\, \mathrm{dropout}(h_t) + b$: a new linear layer on the pretrained encoder's
        states, read at each word's first sub-word; the whole model is then trained briefly on the task."""

    def __init__(self, cfg: PretrainedTaggerConfig, encoder: BertEncoder) -> None:
        super().__init__(cfg, encoder, cfg.n_labels)
        self.crf = CRF(cfg.n_labels) if cfg.crf else None  # transitions: labels, labels

    def forward(self, ids: Tensor, padding: Tensor | None = None) -> Tensor:
        """ids (batch, seq), padding (batch, seq) True = real -> logits (batch, seq, labels); real positions do
        not depend on the padding (attention never looks at padded keys)."""
        h = self.encoder.encode(ids, padding)  # batch, seq, d_model
        return self.head(self.dropout(h))  # batch, seq, labels


class SequenceClassifier(_Head):
    r"""logits = W · dropout(s) + b with s the mean over the real tokens (Sentence-BERT pooling) or, with
    pooling "cls", BERT's pooler tanh(W_p h_[CLS] + b_p).

    !!! equation "Pretrained encoders › Fine-tuning (beyond the notes)"
        $\mathrm{logits} = W\, \mathrm{dropout}(s) + b,\ s = \frac{\sum_t m_t h_t}{\sum_t m_t}$: the sentence head
        on the mean of the real tokens' states ($m_t = 1$ for a real token; Sentence-BERT's pooling), the default.
        default: model.pooling = "mean" for classify/pretrained

    !!! equation "Pretrained encoders › Fine-tuning (beyond the notes)"
        $\mathrm{logits} = W\, \mathrm{dropout}(s) + b,\ s = \tanh(W_p h_{[CLS]} + b_p)$: the sentence head on
        BERT's pooled [CLS] state.
        option: model.pooling = "cls" for classify/pretrained

    !!! departure "Pretrained encoders › Fine-tuning"
        notes: transfer learning of word embeddings: learn them on a huge corpus, then fine-tune, that is,
        train on your data for a very short time.
        seqlab: a whole pretrained encoder (all-MiniLM-L6-v2 or any BERT-style directory) with a new linear
        head, every weight trained for a few epochs (``ner-minilm``, ``sentiment-minilm``: 3); a sentence is
        pooled by the mean of its tokens' states, not BERT's [CLS] pooler.
        default: model.pooling = "mean" for classify/pretrained"""

    def __init__(self, cfg: PretrainedClassifierConfig, encoder: BertEncoder) -> None:
        super().__init__(cfg, encoder, cfg.n_classes)
        d = encoder.cfg.d_model
        self.pooler = nn.Linear(d, d) if cfg.pooling == "cls" else None  # W_p, b_p: d_model -> d_model
        if self.pooler is not None:
            _init_head(self.pooler)

    def forward(self, ids: Tensor, padding: Tensor | None = None) -> Tensor:
        """ids (batch, seq), padding (batch, seq) True = real -> logits (batch, classes); padding changes nothing."""
        h = self.encoder.encode(ids, padding)  # batch, seq, d_model
        if self.pooler is not None:
            return self.head(self.dropout(torch.tanh(self.pooler(h[:, 0]))))  # batch, classes
        if padding is None:
            padding = torch.ones(ids.shape, dtype=torch.bool, device=ids.device)  # batch, seq
        return self.head(self.dropout(mean_pool(h, padding)))  # batch, classes


def _init_head(head: nn.Linear) -> None:
    """BERT's initialisation of a new head: N(0, 0.02) weights, zero bias."""
    nn.init.normal_(head.weight, std=0.02)
    nn.init.zeros_(head.bias)


HEADS = {PretrainedTaggerConfig: TokenClassifier, PretrainedClassifierConfig: SequenceClassifier}


# ------------------------------------------------------------------------------------------------------
# a run directory: start from the pretrained directory, reload from the run's own files


def start(cfg: PretrainedTaggerConfig | PretrainedClassifierConfig, run_dir: Path,
          write: bool) -> tuple[nn.Module, SubwordTokenizer]:
    """The head on the pretrained encoder (its weights) and the tokenizer; ``write`` saves ``pretrained.json``
    and ``wordpiece.json`` into ``run_dir`` (rank 0)."""
    encoder, wordpiece = from_pretrained(cfg.pretrained, dropout=cfg.dropout)
    _check_max_len(cfg, encoder.cfg)
    if write:
        write_json_atomic(run_dir / PRETRAINED, {"kind": "pretrained", "source": str(cfg.pretrained),
                                                 "directory": str(resolve_pretrained(cfg.pretrained).resolve()),
                                                 "encoder": dataclasses.asdict(encoder.cfg)})
        write_json_atomic(run_dir / WORDPIECE, {"kind": "wordpiece", "tokenizer": wordpiece.to_json()})
    model = HEADS[type(cfg)](cfg, encoder.train())
    if getattr(model, "pooler", None) is not None:
        _load_pooler(model.pooler, resolve_pretrained(cfg.pretrained))
    return model, SubwordTokenizer(wordpiece.to_json(), cfg.max_len)


def _load_pooler(pooler: nn.Linear, directory: Path) -> None:
    """BERT's pooler (W_p, b_p) from the checkpoint; a checkpoint without one keeps the fresh initialisation."""
    tensors = read_weights(directory)
    for prefix in ("", "bert."):
        w, b = tensors.get(prefix + "pooler.dense.weight"), tensors.get(prefix + "pooler.dense.bias")
        if w is not None and b is not None:
            if tuple(w.shape) != tuple(pooler.weight.shape):
                raise SeqlabError(f"{directory}: {prefix}pooler.dense.weight has shape {tuple(w.shape)}, the "
                                  f"encoder gives {tuple(pooler.weight.shape)}")
            with torch.no_grad():
                pooler.weight.copy_(w)
                pooler.bias.copy_(b)
            return


def reload(cfg: PretrainedTaggerConfig | PretrainedClassifierConfig,
           run_dir: Path) -> tuple[nn.Module, SubwordTokenizer]:
    """The head and encoder rebuilt from ``run_dir``'s own files (random weights: load the checkpoint next)."""
    saved = read_json(run_dir / PRETRAINED, "pretrained encoder")
    tok = read_json(run_dir / WORDPIECE, "WordPiece tokenizer")
    if not (isinstance(saved, dict) and saved.get("kind") == "pretrained" and isinstance(saved.get("encoder"), dict)
            and isinstance(tok, dict) and tok.get("kind") == "wordpiece" and isinstance(tok.get("tokenizer"), str)):
        raise SeqlabError(f"{run_dir} has a damaged {PRETRAINED} or {WORDPIECE}; retrain the run")
    try:
        bert = BertConfig(**saved["encoder"])
    except TypeError as e:
        raise SeqlabError(f"{run_dir / PRETRAINED} does not describe an encoder ({e}); retrain the run") from None
    bert = dataclasses.replace(bert, dropout=cfg.dropout)
    _check_max_len(cfg, bert)
    return HEADS[type(cfg)](cfg, BertEncoder(bert)), SubwordTokenizer(tok["tokenizer"], cfg.max_len)


def _check_max_len(cfg: PretrainedConfig, bert: BertConfig) -> None:
    if cfg.max_len > bert.max_len:
        raise SeqlabError(f"model.max_len={cfg.max_len} is more than the encoder's {bert.max_len} positions; "
                          f"set model.max_len <= {bert.max_len}")


def sentence_encoder(model: TokenClassifier | SequenceClassifier, tokenizer: SubwordTokenizer,
                     device: torch.device) -> SentenceEncoder:
    """The fine-tuned encoder as a :class:`~seqlab.models.sentence.SentenceEncoder` (mean-pooled, L2-normalised)."""
    return SentenceEncoder(model.encoder, tokenizer.sentence_tokenizer(), device=device)


# ------------------------------------------------------------------------------------------------------
# words <-> first sub-words


def word_labels(first: list[list[int]], tags: list[list[int]], seq: int) -> tuple[Tensor, Tensor]:
    """Per-sub-word targets from per-word tags: (tags (batch, seq), scored (batch, seq)) with word k's tag at
    its first sub-word ``first[row][k]`` and scored True there only (the loss reads nothing else)."""
    target = torch.zeros(len(first), seq, dtype=torch.long)  # batch, seq
    scored = torch.zeros(len(first), seq, dtype=torch.bool)  # batch, seq
    for row, positions in enumerate(first):
        index = torch.tensor(positions, dtype=torch.long)  # words
        scored[row, index] = True
        if len(tags[row]):
            target[row, index] = torch.tensor(tags[row], dtype=torch.long)
    return target, scored
