"""The one exception type for bad user input, the check every config repeats, and how messages show a path.

Library code raises :class:`SeqlabError` with a message that names the problem and the fix;
the command line prints it as one line, ``error: <message>``, and exits with code 2.
"""

import os


class SeqlabError(ValueError):
    """Bad user input: a message naming the problem and the fix, shown without a traceback."""


def shown(path: str | os.PathLike) -> str:
    """A user's path or name as a message shows it: as is, or quoted with escapes when it holds a line break or
    another unprintable character (so the message stays one line)."""
    text = os.fspath(path)
    return text if text.isprintable() else repr(text)


def check_positive(name: str, value: object) -> None:
    """Refuse a config field that is not a whole number >= 1 (a bool is not a number here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SeqlabError(f"{name}={value!r} must be a positive whole number; set {name} to 1 or more")


def check_size(name: str, value: object) -> None:
    """A size read from the data (vocab_size, n_labels, ...): None in a run config until the task reads the
    data and sets it with ``dataclasses.replace``; a positive whole number once set."""
    if value is not None:
        check_positive(name, value)
