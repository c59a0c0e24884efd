"""Where progress bars go: a tqdm bar only on a terminal or in a notebook.

On a pipe, a file or a CI log a bar is a stream of carriage-return lines (58 KB for 400 steps), so there the
Trainer writes one summary line per evaluation through its log instead (the ``seqlab`` logger from Python, stderr
from the command line). A notebook is told by its IPython kernel, looked up only when IPython is already imported
(a notebook has imported it; anything else never pays for importing it).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel: IPython is imported and its shell has a kernel."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    if get_ipython is None:
        return False
    try:
        shell = get_ipython()
    except Exception:  # an IPython half-imported or shut down: no notebook to draw in
        return False
    return getattr(shell, "kernel", None) is not None


def bars_shown(stream: TextIO | None = None) -> bool:
    """Whether a progress bar on ``stream`` (stderr by default) is drawn in place: a terminal or a notebook."""
    stream = sys.stderr if stream is None else stream
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        terminal = False
    return terminal or in_notebook()


def where_training_is(step: int, total_steps: int, max_minutes: float, started: float) -> str:
    """Where training is, for a summary line that stands for the bar: ``step 250/1000``; under a time budget
    (``train.max_minutes``, the ``wsd-time`` schedule's too, counted from ``started``, a ``time.perf_counter()``)
    ``step 250, 3.2 of 5 min left``: the budget, never a step count (``train.max_steps``, the time schedule's
    ceiling) the run may not reach."""
    if not max_minutes:
        return f"step {step}/{total_steps}"
    left = max(0.0, max_minutes - (time.perf_counter() - started) / 60)
    return f"step {step}, {left:.1f} of {max_minutes:g} min left"
