"""Sentence embeddings from a pretrained encoder: mean-pooled, L2-normalised; cosine similarity.

:class:`SentenceEncoder` wraps an encoder and its tokenizer, from a BERT-style directory
(:meth:`SentenceEncoder.from_pretrained`) or a fine-tuned run (:func:`seqlab.models.pretrained_heads.sentence_encoder`);
:func:`seqlab.api.open_encoder` opens either from a path.

The Sentence-BERT recipe (Reimers & Gurevych 2019; what sentence-transformers runs for
all-MiniLM-L6-v2): tokenize, encode, average the real tokens' last hidden states
(:func:`seqlab.models.pretrained.mean_pool`), divide by the L2 norm. Sentences are encoded in batches
padded to their longest member; like sentence-transformers they are sorted by length first, so a batch
holds similar lengths and little padding, and the results come back in input order. Padding changes
nothing in a sentence's vector (the mask keeps pad tokens out of attention and out of the mean).

Shapes: sentences; batch; seq; dim (the encoder's d_model).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from seqlab.base.errors import SeqlabError
from seqlab.models.pretrained import BertEncoder, from_pretrained, mean_pool
from seqlab.text.wordpiece import WordPieceTokenizer


def _device(device: str | torch.device | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise SeqlabError(f"device {device} asked for but CUDA is not available; use --device cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        raise SeqlabError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from None


class SentenceEncoder:
    """A pretrained encoder and its tokenizer, turned into one unit vector per sentence."""

    def __init__(self, encoder: BertEncoder, tokenizer: WordPieceTokenizer,
                 device: str | torch.device | None = None) -> None:
        self.device = _device(device)
        self.encoder = encoder.to(self.device).eval()
        self.tokenizer = tokenizer

    @classmethod
    def from_pretrained(cls, name_or_dir: str | Path, device: str | torch.device | None = None) -> SentenceEncoder:
        """From a BERT-style directory or a known model name (see :func:`seqlab.from_pretrained`)."""
        device = _device(device)  # a bad device is refused before the model is read
        return cls(*from_pretrained(name_or_dir), device=device)

    @property
    def dim(self) -> int:
        return self.encoder.cfg.d_model

    def plan(self, sentences: Sequence[str], batch_size: int = 32) -> list[tuple[list[int], list[list[int]]]]:
        """Tokenize and group into batches of similar length: [(rows, id lists)], longest first; ``rows`` are
        the sentences' positions in the input."""
        if isinstance(sentences, str):
            raise SeqlabError("embed takes a list of sentences, not one string; wrap it: embed([text])")
        if batch_size < 1:
            raise SeqlabError(f"batch_size must be >= 1, got {batch_size}")
        id_lists = self.tokenizer.encode_batch(list(sentences))
        order = sorted(range(len(id_lists)), key=lambda i: -len(id_lists[i]))  # longest first
        return [(rows, [id_lists[i] for i in rows])
                for rows in (order[start : start + batch_size] for start in range(0, len(order), batch_size))]

    @torch.inference_mode()
    def embed_batch(self, id_lists: list[list[int]]) -> np.ndarray:
        """One batch, padded to its longest: (batch, dim) float32 unit vectors."""
        ids, mask = self.tokenizer.batch(id_lists, self.device)  # batch, seq
        hidden = self.encoder.encode(ids, mask)  # batch, seq, dim
        return F.normalize(mean_pool(hidden, mask).float(), p=2, dim=-1).cpu().numpy()  # batch, dim

    def embed(self, sentences: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """(sentences, dim) float32 array of mean-pooled, L2-normalised embeddings, in input order."""
        batches = self.plan(sentences, batch_size)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)  # sentences, dim
        for rows, id_lists in batches:
            out[rows] = self.embed_batch(id_lists)
        return out

    def similarity(self, a: str, b: str) -> float:
        """Cosine of the two sentences' embeddings (their dot product, both being unit vectors)."""
        va, vb = self.embed([a, b])
        return float(np.dot(va.astype(np.float64), vb.astype(np.float64)))
