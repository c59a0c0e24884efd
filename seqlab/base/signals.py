"""Signal handlers, set in one place, and the one policy of seqlab for SIGINT and SIGTERM: every module that
changes what they do goes through here.

The policy:

- in a training loop (:class:`StopSignals`), SIGINT (Ctrl-C) and SIGTERM (what schedulers and ``docker stop``
  send) are noted and acted on between steps, so the step in flight finishes and is saved; a second signal stops
  at once (``KeyboardInterrupt``);
- elsewhere, SIGTERM undoes what the blocks it interrupts began (:func:`undoing`), innermost first: a block's
  ``undo`` runs, then the handler of the block around it. The outermost block ends the process with 128 + the
  signal's number, the status the default handler gives (``exit=True``: a run whose start must be undone, as
  ``seqlab train`` holds it), or, where no block ends the process, :class:`Terminated` is raised so that the
  callers' own clean-up runs too (a library call). SIGINT there stays Python's ``KeyboardInterrupt``.

Python runs handlers in the main thread only, and only the main thread may set them: :func:`handling` changes
nothing when called from another thread (a run started from a worker thread keeps the default handlers).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Union

Handler = Union[Callable[[int, Any], Any], int, None]  # a function (signum, frame), signal.SIG_IGN or SIG_DFL


def install(handlers: dict[int, Handler]) -> dict[int, Handler]:
    """Set each signal's handler (main thread only); returns the handlers they replace, to put back later."""
    return {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handling(handler: Handler, *signums: int) -> Iterator[None]:
    """``handler`` for each of ``signums`` during the block, the handlers set before put back after it; outside
    the main thread the block runs with the handlers unchanged."""
    if not in_main_thread():
        yield
        return
    previous = install(dict.fromkeys(signums, handler))
    try:
        yield
    finally:
        install(previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM where no enclosing block ends the process: raised so that the callers' clean-up runs."""


@contextlib.contextmanager
def undoing(undo: Callable[[], None], *, exit: bool = False) -> Iterator[None]:
    """SIGTERM during the block runs ``undo``, then (``exit``) ends the process with 128 + the signal's number,
    or hands the signal to the handler of the block around this one, or, where there is none, raises
    :class:`Terminated` (see the module docstring)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        undo()
        if exit:
            sys.stderr.flush()
            os._exit(128 + signum)  # at once, as by default: raising could land in code that swallows it
        if callable(previous):
            previous(signum, frame)
        raise Terminated()  # what this block began is undone: it cannot go on

    with handling(handler, signal.SIGTERM):
        yield


class StopSignals:
    """The training loop's part of the policy: SIGINT and SIGTERM become a flag checked between steps, so the
    step in flight finishes and is saved; a second signal stops at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum: int | None = None
        self._handling = handling(self._handle, *self.SIGNALS)

    @property
    def flag(self) -> bool:
        return self.signum is not None

    def __enter__(self):
        self._handling.__enter__()
        return self

    def _handle(self, signum, frame):
        if self.signum is not None:  # the second signal: stop at once
            raise KeyboardInterrupt
        self.signum = signum

    def __exit__(self, *exc):
        return self._handling.__exit__(*exc)
