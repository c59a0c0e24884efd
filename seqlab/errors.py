"""The one exception type for bad user input.

Library code raises :class:`SeqlabError` with a message that names the problem and the fix;
the command line prints it as one line, ``error: <message>``, and exits with code 2.
"""


class SeqlabError(ValueError):
    """Bad user input: a message naming the problem and the fix, shown without a traceback."""
