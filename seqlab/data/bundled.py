"""The corpora bundled with every Python, no network needed (``data.source = pydocs | pystdlib``, listed by
:mod:`seqlab.data.sources`, which also serves ``pyprose``, built from these by :mod:`seqlab.data.prose`;
``seqlab data list`` calls their kind "embedded").

The text depends on the Python version (it comes from the running interpreter) but is identical from run to run.
"""

from __future__ import annotations

import functools
import os
import sysconfig
from pathlib import Path

# Folders of the standard library left out of `pystdlib`: installed third-party packages, the
# regression tests (`test/`, and `tests/`, `idle_test/` inside packages such as idlelib, tkinter,
# ctypes, unittest, lib2to3, distutils; they contain deliberately odd or undecodable files), the
# build configuration (`config-3.X-...`) and bytecode caches.
PYSTDLIB_SKIP_DIRS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})
PYSTDLIB_MAX_CHARS = 8_000_000  # cap: whole files in sorted path order until the next would pass it


@functools.cache
def pydocs_text() -> str:
    """``pydoc_data.topics.topics`` values joined with newlines in sorted key order."""
    from pydoc_data.topics import topics

    return "\n".join(topics[key] for key in sorted(topics))


def pystdlib_files() -> list[Path]:
    """The standard library's ``.py`` files in sorted relative-path order, without
    :data:`PYSTDLIB_SKIP_DIRS`, ``config-*`` folders and the machine-generated ``_sysconfigdata*`` files."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in PYSTDLIB_SKIP_DIRS and not d.startswith("config-")]
        files += [Path(dirpath, f) for f in filenames if f.endswith(".py") and not f.startswith("_sysconfigdata")]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


@functools.cache
def pystdlib_text() -> str:
    """The files of :func:`pystdlib_files` joined with newlines, each read as UTF-8 (files that are
    not UTF-8 are skipped), up to :data:`PYSTDLIB_MAX_CHARS`."""
    parts, size = [], 0
    for path in pystdlib_files():
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if size + len(text) > PYSTDLIB_MAX_CHARS:
            break
        parts.append(text)
        size += len(text) + 1
    return "\n".join(parts)
