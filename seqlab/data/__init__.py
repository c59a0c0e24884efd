"""Data: sources (embedded corpora, downloadable datasets with checksums, user files), splits,
and batching (padding, masks, LM windows, length buckets).

Names are imported lazily, so ``seqlab data list`` does not pay for importing torch.
"""

from __future__ import annotations

import importlib

_EXPORTS: dict[str, str] = {
    "read_text": "seqlab.data.sources",
    "read_text_file": "seqlab.data.sources",
    "split_text": "seqlab.data.sources",
    "list_sources": "seqlab.data.sources",
    "source_names": "seqlab.data.sources",
    "cache_dir": "seqlab.data.download",
    "get": "seqlab.data.download",
    "DATASETS": "seqlab.data.download",
    "pad_batch": "seqlab.data.batching",
    "padding_mask": "seqlab.data.batching",
    "causal_mask": "seqlab.data.batching",
    "lm_windows": "seqlab.data.batching",
    "random_lm_batch": "seqlab.data.batching",
    "bucket_batches": "seqlab.data.batching",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seqlab.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = list(_EXPORTS)
