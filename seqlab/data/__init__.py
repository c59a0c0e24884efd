"""Data: sources (embedded corpora, downloadable datasets with checksums, user files), splits,
and batching (padding, masks, LM windows, length buckets).

Names are imported lazily, so ``seqlab data list`` does not pay for importing torch.
"""

from __future__ import annotations

from seqlab.base.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "read_text": "seqlab.data.sources",
    "read_text_file": "seqlab.data.sources",
    "split_text": "seqlab.data.sources",
    "list_sources": "seqlab.data.sources",
    "source_names": "seqlab.data.sources",
    "cache_dir": "seqlab.base.io",
    "get": "seqlab.data.download",
    "DATASETS": "seqlab.data.download",
    "pad_batch": "seqlab.data.batching",
    "padding_mask": "seqlab.data.batching",
    "causal_mask": "seqlab.data.batching",
    "lm_windows": "seqlab.data.batching",
    "random_lm_batch": "seqlab.data.batching",
    "bucket_batches": "seqlab.data.batching",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = list(_EXPORTS)
