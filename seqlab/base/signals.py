"""Signal handlers, set in one place: every module that changes what SIGINT or SIGTERM does goes through here.

Python runs handlers in the main thread only, and only the main thread may set them: :func:`handling` changes
nothing when called from another thread (a run started from a worker thread keeps the default handlers).
"""

from __future__ import annotations

import contextlib
import signal
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
