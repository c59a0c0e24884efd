"""The one exception type for bad user input, the check every config repeats, and how messages show a path.

Library code raises :class:`SeqlabError` with a message that names the problem and the fix;
the command line prints it as one line, ``error: <message>``, and exits with code 2.
"""

import contextlib
import contextvars
import os
from collections.abc import Iterator


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


# ------------------------------------------------------------------------------------------------------
# errors in the caller's words: one message, spelled for the command line or for Python

_CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("seqlab_caller", default="python")

# an argument as each caller writes it: (command line, Python); others are --name-with-dashes / name=
SPELLINGS: dict[str, tuple[str, str]] = {
    "force": ("--force", "force=True"),
    "resume": ("--resume", "resume=True"),
    "last": ("--last", "last=True"),
    "n_words": ("--words", "n_words="),  # seqlab map's --words is KeyedVectors' n_words
}


def spelled(name: str) -> str:
    """``name`` (a parameter of the Python API) as the caller writes it: ``spelled("force")`` is ``--force`` under
    the command line and ``force=True`` from Python; ``spelled("out")`` is ``--out`` or ``out=``."""
    cli, python = SPELLINGS.get(name, (f"--{name.replace('_', '-')}", f"{name}="))
    return cli if _CALLER.get() == "cli" else python


def named(name: str) -> str:
    """The argument ``name`` named, as the caller writes it: ``--dtype`` under the command line, ``dtype`` from
    Python (``named("n_words")`` is ``--words`` or ``n_words``)."""
    cli, _ = SPELLINGS.get(name, (f"--{name.replace('_', '-')}", ""))
    return cli if _CALLER.get() == "cli" else name


def given(name: str, value: object) -> str:
    """``name`` with the ``value`` the caller gave, as they wrote it: ``--out runs/x`` under the command line,
    ``out=runs/x`` from Python (a path shown as :func:`shown` shows it)."""
    text = shown(value) if isinstance(value, (str, os.PathLike)) else repr(value)
    return f"{named(name)} {text}" if _CALLER.get() == "cli" else f"{name}={text}"


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Messages raised inside speak the command line's words (``--force``); the CLI's ``main`` wraps every verb."""
    token = _CALLER.set("cli")
    try:
        yield
    finally:
        _CALLER.reset(token)
