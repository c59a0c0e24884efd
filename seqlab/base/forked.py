"""A call run in a forked process beside this one, its result (or its error) sent back: work that would leave a
core idle (a vocabulary pass over half a text, a file written while this process draws a plot).

The child starts from a copy of this process (fork: nothing is pickled on the way in; arrays are shared
copy-on-write) and sends back the call's return value, pickled. Where the system cannot fork, the call runs in
this process when its result is asked for: the same result, one after another. Ctrl-C and SIGTERM are the
parent's to handle (:meth:`Forked.close` ends the child, whose call unwinds: its ``finally`` blocks run); the
child never runs the handlers the fork copied.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from typing import Any

from seqlab.base.errors import SeqlabError


class Forked:
    """``fn(*args)`` started in a forked process; :meth:`result` waits for its value (a SeqlabError the call
    raised is raised again with its message; any other failure, or a child that dies, is named with ``what``,
    the work in a few words); :meth:`close` ends a child still running (call it in a ``finally``)."""

    def __init__(self, fn: Callable[..., Any], *args: Any, what: str = "the worker's task"):
        import multiprocessing

        self.fn, self.args, self.what, self.process = fn, args, what, None
        if "fork" not in multiprocessing.get_all_start_methods():
            return
        context = multiprocessing.get_context("fork")
        self.receiving, sending = context.Pipe(duplex=False)
        self.process = context.Process(target=_child, args=(sending, fn, args), daemon=True)
        self.process.start()
        sending.close()

    def result(self) -> Any:
        if self.process is None:
            return self.fn(*self.args)
        try:
            kind, value = self.receiving.recv()
        except EOFError:
            self.process.join()
            raise SeqlabError(f"the worker process {self.what} ended without a result (exit code "
                              f"{self.process.exitcode}); run again") from None
        self.process.join()
        if kind == "done":
            return value
        if kind == "error":
            raise SeqlabError(value)
        raise RuntimeError(f"the worker process {self.what} failed: {value}")

    def close(self) -> None:
        if self.process is None:
            return
        self.receiving.close()
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()


def _child(sending, fn: Callable[..., Any], args: tuple) -> None:
    from seqlab.base import signals

    signals.install({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: _unwind})
    try:
        result = ("done", fn(*args))
    except SeqlabError as e:
        result = ("error", str(e))
    except BaseException as e:  # noqa: BLE001 (any failure is reported to the parent, which raises it)
        result = ("failed", f"{type(e).__name__}: {e}")
    with contextlib.suppress(OSError):  # the parent stopped listening: it is ending this worker
        sending.send(result)
    sending.close()


def _unwind(signum: int, frame: Any) -> None:
    """SIGTERM in a worker (the parent's :meth:`Forked.close`): unwind the call, so that its ``finally`` blocks
    remove what it was writing (a temporary file), then end."""
    raise SystemExit(128 + signum)
