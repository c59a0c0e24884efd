"""seqlab's one lazy-loading mechanism: a module's public name imported from the module that defines it on first
attribute access, so importing the module stays cheap (``seqlab`` itself, ``seqlab.metrics``, ``seqlab.data``,
``seqlab.serve``'s app, which needs the serve extra, and the PyTorch word-vector models, which need torch)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``exports`` ({name: defining module});
    a name, once imported, is cached in ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(list(namespace) + list(exports))

    return __getattr__, __dir__
