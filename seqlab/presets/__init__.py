"""The presets: package data, one TOML file each (read by :mod:`seqlab.base.config` without importing this package).

``seqlab.presets()`` lists them. Importing this package (``importlib.resources.files("seqlab.presets")``) makes
``seqlab.presets`` this module instead of that function, so the module answers the call the same way.
"""

import sys as _sys
import types as _types


class _CallablePresets(_types.ModuleType):
    def __call__(self) -> list[str]:
        """The names of the presets, sorted (what :func:`seqlab.api.presets` returns)."""
        from seqlab.base.config import preset_names

        return preset_names()


_sys.modules[__name__].__class__ = _CallablePresets
