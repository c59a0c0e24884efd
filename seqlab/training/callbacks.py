"""Training callbacks: objects given to :func:`seqlab.train` (``callbacks=[...]``) that the Trainer calls.

A callback has any of ``on_step(row)`` (after every optimiser step: step, loss, lr, tokens per second),
``on_eval(row)`` (after each validation: the validation metrics) and ``on_checkpoint(row)`` (after each
checkpoint: step, dir, best), each given a plain dict. Returning ``False`` from any of them stops training at
the next step boundary, with a checkpoint, as SIGINT does; the run continues with ``resume=True``.

Callbacks run in the main process only; under ``torchrun`` the decision to stop is shared with every process.
The task layer builds its Trainer without knowing of callbacks: :func:`calling` hands them to every Trainer
built in its block.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from seqlab.base.errors import SeqlabError

if TYPE_CHECKING:  # annotations only: torch is needed only to agree across processes
    import torch

HOOKS = ("on_step", "on_eval", "on_checkpoint")
_GIVEN: contextvars.ContextVar[tuple] = contextvars.ContextVar("seqlab_callbacks", default=())


def check(callbacks: Iterable[Any]) -> tuple:
    """The callbacks as a tuple, each one checked to have at least one of :data:`HOOKS`; one object not in a
    list is an error saying so."""
    if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Iterable):
        raise SeqlabError(f"callbacks must be a list of objects with {', '.join(HOOKS)}, got a "
                          f"{type(callbacks).__name__}; give one in a list: callbacks=[...]")
    callbacks = tuple(callbacks)
    for i, cb in enumerate(callbacks):
        if not any(callable(getattr(cb, hook, None)) for hook in HOOKS):
            raise SeqlabError(f"callbacks[{i}] ({type(cb).__name__}) has none of the methods {', '.join(HOOKS)}; "
                              "give objects with at least one of them")
    return callbacks


@contextlib.contextmanager
def calling(callbacks: Iterable[Any]) -> Iterator[None]:
    """Every Trainer built in this block calls ``callbacks``."""
    token = _GIVEN.set(check(callbacks))
    try:
        yield
    finally:
        _GIVEN.reset(token)


class Callbacks:
    """The callbacks of one Trainer: those given, else those of the enclosing :func:`calling` block."""

    def __init__(self, callbacks: Iterable[Any] | None, dist) -> None:
        self.callbacks = check(_GIVEN.get() if callbacks is None else callbacks)
        self.dist = dist
        self.stop_requested = False

    def call(self, hook: str, row: dict[str, Any]) -> None:
        """Each callback's ``hook`` (those that have it) with a copy of ``row``; ``False`` asks to stop."""
        if not self.dist.main:
            return
        for cb in self.callbacks:
            method = getattr(cb, hook, None)
            if callable(method) and method(dict(row)) is False:
                self.stop_requested = True

    def stop_agreed(self, device: torch.device | None) -> bool:
        """Whether a callback asked to stop, agreed by every process (only the main one runs callbacks)."""
        if self.dist.world > 1 and self.callbacks:
            import torch

            flag = torch.tensor([float(self.stop_requested)], device=device)
            torch.distributed.all_reduce(flag)
            self.stop_requested = bool(flag.item())
        return self.stop_requested
