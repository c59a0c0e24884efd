"""Under ``torchrun``, rank 0 prepares the data while the other ranks wait for a file beside it.

:class:`Beacon` is rank 0's side, :func:`wait_for_beacon` the others': no collective call is made while rank 0
works, so there is no process-group timeout, and a rank learns early when it cannot see rank 0's files
(several nodes without a shared filesystem).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from seqlab.base.errors import SeqlabError, shown
from seqlab.base.io import write_json_atomic


class Beacon:
    """Rank 0's side: a small JSON file beside the data saying who prepares and whether it is done, rewritten
    every ``every`` seconds while preparing (the others take a file that stops changing for
    ``WAIT_STALL_S`` as a rank 0 that is gone)."""

    def __init__(self, path: Path, every: float = 5.0):
        self.path, self.every = Path(path), every
        self.token = uuid.uuid4().hex
        self.doc = {"token": self.token, "host": socket.gethostname(), "pid": os.getpid(), "state": "preparing",
                    "beat": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        write_json_atomic(self.path, self.doc)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.doc["beat"] += 1
            with contextlib.suppress(OSError):
                write_json_atomic(self.path, self.doc)

    def ready(self) -> None:
        self._stop.set()
        self._thread.join()
        write_json_atomic(self.path, {**self.doc, "state": "ready"})

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.path.unlink(missing_ok=True)


WAIT_VISIBLE_S = 30.0  # how long a rank looks for rank 0's file before concluding it cannot see it
WAIT_STALL_S = 1800.0  # how long the file may stay unchanged (rank 0 busy in one call) before giving up


def wait_for_beacon(path: Path, token: str, host: str, rank: int, help_multi_node: str,
                    visible_s: float = WAIT_VISIBLE_S, stall_s: float = WAIT_STALL_S, poll: float = 0.2) -> None:
    """Wait (polling a file, no collective call) until rank 0 says the data is ready. A rank that does not see
    rank 0's file within ``visible_s`` has no shared filesystem with it: the error says what to do instead."""
    start = last_change = time.monotonic()
    seen = None
    while True:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = None
        now = time.monotonic()
        if doc is not None and doc.get("token") == token:
            if doc.get("state") == "ready":
                return
            if doc != seen:
                seen, last_change = doc, now
            elif now - last_change > stall_s:
                raise SeqlabError(f"rank {rank}: rank 0 (host {host}) has not advanced preparing the data for "
                                  f"{stall_s:.0f} s ({shown(path)} unchanged); check rank 0's log")
        elif seen is not None:
            raise SeqlabError(f"rank {rank}: rank 0 (host {host}) stopped preparing the data ({shown(path)} is "
                              "gone); see rank 0's error")
        elif now - start > visible_s:
            raise SeqlabError(f"rank {rank} on host {socket.gethostname()} cannot see {shown(path)}, which rank 0 "
                              f"wrote on host {host}: the nodes share no filesystem there; {help_multi_node}")
        time.sleep(poll)
