"""seqlab: sequence models from AR(p) to the Transformer, written from their equations,
verified against reference implementations.

The public API is re-exported here; heavy submodules are imported lazily so that
``import seqlab`` (and ``seqlab --help``) stays fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> module that defines it (imported on first attribute access)
_EXPORTS: dict[str, str] = {
    "SeqlabError": "seqlab.errors",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seqlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = ["__version__", *_EXPORTS]
