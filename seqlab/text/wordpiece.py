"""BERT's WordPiece tokenizer (notes: Tokens › Sub-word tokenisation: sub-words, ``##`` marking a word's continuation
pieces), through the Hugging Face ``tokenizers`` library.

:class:`WordPieceTokenizer` reads a BERT-style directory's ``tokenizer.json``, or builds the same tokenizer
from ``vocab.txt`` and the lowercasing flags of ``tokenizer_config.json`` (BERT's normaliser and
pre-tokenizer, ``[CLS] $A [SEP]`` around every text). The pretrained encoders
(:mod:`seqlab.models.pretrained`) and the tasks fine-tuning them (:mod:`seqlab.models.pretrained_heads`) use it.

Shapes: batch; seq (ids, [CLS] and [SEP] included).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from seqlab.base.errors import SeqlabError
from seqlab.base.io import read_json

REDOWNLOAD = "re-download the model, or re-save it with save_pretrained"  # the fix for a damaged file


class WordPieceTokenizer:
    r"""BERT's WordPiece tokenizer through the ``tokenizers`` library (notes: Tokens › Sub-word tokenisation).

    ``encode(text)`` gives ``[CLS] pieces [SEP]`` ids, never padded, truncated to ``max_length`` ids (specials
    included). A ``tokenizer.json`` may carry its own padding/truncation (all-MiniLM-L6-v2's pads every
    sentence to 128): both are replaced, since padding is done per batch, to its longest sentence, by
    :meth:`batch`.

    !!! equation "Tokens › Sub-word tokenisation (beyond the notes)"
        $w = p_1\, \#\#p_2 \cdots \#\#p_k$: a word as the longest vocabulary piece that starts it, then the
        longest continuation pieces; a word no pieces cover becomes [UNK], so the vocabulary stays small.
    """

    def __init__(self, backend, max_length: int) -> None:
        ids = {t: backend.token_to_id(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]")}
        missing = [t for t, i in ids.items() if i is None]
        if missing:
            raise SeqlabError(f"the WordPiece vocabulary lacks {', '.join(missing)}; give a BERT tokenizer")
        try:  # `tokenizers` loads some damaged files (a template naming a missing token, no [UNK] in the model's
            backend.encode("a \u2603q")  # vocabulary), then fails or panics on encode: try a known and an unknown word
        except BaseException as e:  # pyo3's PanicException is a BaseException, not an Exception
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            reason = (str(e).splitlines() or [type(e).__name__])[0]
            raise SeqlabError(f"the WordPiece tokenizer fails to encode a test word ({reason}); {REDOWNLOAD}") from None
        self._tok = backend
        self._tok.no_padding()
        self._tok.enable_truncation(max_length)
        self.max_length = max_length
        self.pad_id, self.cls_id, self.sep_id, self.unk_id = (ids[t] for t in ("[PAD]", "[CLS]", "[SEP]", "[UNK]"))

    @classmethod
    def from_directory(cls, directory: Path, max_length: int) -> WordPieceTokenizer:
        """From ``tokenizer.json`` when present, else from ``vocab.txt`` and ``tokenizer_config.json``."""
        from tokenizers import Tokenizer

        if (directory / "tokenizer.json").is_file():
            try:
                backend = Tokenizer.from_file(str(directory / "tokenizer.json"))
            except Exception as e:  # tokenizers raises a plain Exception for malformed files
                raise SeqlabError(f"cannot read {directory / 'tokenizer.json'} ({e}); re-download it") from None
            if type(backend.model).__name__ != "WordPiece":
                raise SeqlabError(f"{directory / 'tokenizer.json'} is a {type(backend.model).__name__} tokenizer; "
                                  "BERT-style encoders use WordPiece")
            return cls(backend, max_length)
        if (directory / "vocab.txt").is_file():
            return cls(_from_vocab(directory), max_length)
        raise SeqlabError(f"{directory} has neither tokenizer.json nor vocab.txt; add the model's tokenizer files")

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str) -> list[int]:
        """Text -> ids ``[CLS] ... [SEP]`` (at most max_length)."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Many texts at once (in parallel threads inside ``tokenizers``); no padding."""
        texts = list(texts)
        try:
            return [e.ids for e in self._tok.encode_batch(texts)]
        except TypeError:  # tokenizers takes only str that encodes to UTF-8: say which text is not
            for n, text in enumerate(texts):
                if not isinstance(text, str):
                    raise SeqlabError(f"text {n} is a {type(text).__name__}, not a str; pass strings") from None
                bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
                if bad is not None:
                    raise SeqlabError(f"text {n} has a lone surrogate at character {bad} (bytes that are not "
                                      "UTF-8?); give valid UTF-8 text") from None
            raise

    def encode_words(self, words: list[str]) -> tuple[list[int], list[int | None]]:
        """Pre-split words -> (ids, word index of each id, None for [CLS]/[SEP]), for per-word labels
        (a token-classification head labels the first piece of each word)."""
        e = self._tok.encode(list(words), is_pretokenized=True)
        return e.ids, e.word_ids

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def batch(self, id_lists: list[list[int]], device: torch.device | str | None = None) -> tuple[Tensor, Tensor]:
        """Pad to the longest: ids (batch, seq) filled with [PAD], attention_mask (batch, seq) True = real."""
        if not id_lists:
            raise SeqlabError("no sequences to batch; give at least one")
        seq = max(len(ids) for ids in id_lists)
        out = torch.full((len(id_lists), seq), self.pad_id, dtype=torch.long)  # batch, seq
        for row, ids in enumerate(id_lists):
            out[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        lengths = torch.tensor([len(ids) for ids in id_lists])  # batch
        mask = torch.arange(seq)[None, :] < lengths[:, None]  # batch, seq
        return out.to(device), mask.to(device)

    def to_json(self) -> str:
        """The ``tokenizer.json`` text (no padding; truncation at max_length)."""
        return self._tok.to_str()


def _from_vocab(directory: Path):
    """A BERT tokenizer built from ``vocab.txt`` and the lowercasing flags of ``tokenizer_config.json``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    cfg_path = directory / "tokenizer_config.json"
    cfg = read_json(cfg_path, "tokenizer config", REDOWNLOAD, expect=dict) if cfg_path.is_file() else {}
    try:
        lines = (directory / "vocab.txt").read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as e:
        raise SeqlabError(f"{directory / 'vocab.txt'} is not UTF-8 ({e.reason} at byte {e.start}); {REDOWNLOAD}") from None
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline
    vocab = {token: i for i, token in enumerate(lines)}
    for t in ("[UNK]", "[CLS]", "[SEP]"):
        if t not in vocab:
            raise SeqlabError(f"{directory / 'vocab.txt'} lacks {t}; give a BERT vocabulary")
    flags = {"tokenize_chinese_chars": True, "strip_accents": None, "do_lower_case": True}  # key: default
    for key, default in flags.items():
        if not isinstance(cfg.get(key, default), bool) and not (key == "strip_accents" and cfg.get(key) is None):
            raise SeqlabError(f"{cfg_path}: {key} must be true or false{' (or null)' if default is None else ''}, "
                              f"got {cfg[key]!r}; {REDOWNLOAD}")
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=cfg.get("tokenize_chinese_chars", True),
        strip_accents=cfg.get("strip_accents"), lowercase=cfg.get("do_lower_case", True))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    tok.decoder = decoders.WordPiece(prefix="##")
    specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab]
    tok.add_special_tokens(specials)
    return tok
