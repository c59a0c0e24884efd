"""The one exception type for bad user input, and the check every config repeats.

Library code raises :class:`SeqlabError` with a message that names the problem and the fix;
the command line prints it as one line, ``error: <message>``, and exits with code 2.
"""


class SeqlabError(ValueError):
    """Bad user input: a message naming the problem and the fix, shown without a traceback."""


def check_positive(name: str, value: object) -> None:
    """Refuse a config field that is not a whole number >= 1 (a bool is not a number here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise SeqlabError(f"{name}={value!r} must be a positive whole number; set {name} to 1 or more")


def check_size(name: str, value: object) -> None:
    """A size read from the data (vocab_size, n_labels, ...): None in a run config until the task reads the
    data and sets it with ``dataclasses.replace``; a positive whole number once set."""
    if value is not None:
        check_positive(name, value)
