"""Lazy re-exports for subpackage ``__init__`` modules (``seqlab.metrics``, ``seqlab.data``): a public name is
imported from the module that defines it on first attribute access, so importing the package stays cheap.
(``seqlab/__init__.py`` spells the same few lines out, so that importing ``seqlab`` loads no other module but
:mod:`seqlab.base.version`.)"""

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
