"""The seqlab modules a call passes through, in order (``from call_trace import trace``; tests/ is on the path).

:func:`trace` runs a callable under ``sys.setprofile`` and records every Python ``call`` event in a ``seqlab``
module (the frame's ``__name__``): the module, the function, whether the call enters the module from another one
(the nearest seqlab frame below it is not in the same module) and whether it runs while a dataclass value is built
(inside the dataclass's generated ``__init__``: its ``__post_init__`` and the checks that calls).

:class:`Trace` reports the calls, the visits (consecutive calls in one module collapse into one visit) and the
re-entries (a visit to a module visited earlier, after the trace had left it for another). :meth:`Trace.entries`
keeps the calls that enter a module from another, outside value construction: a module's calls to its own
functions, once the flow is back in it, are not a new visit there.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

# the methods dataclasses generates (compiled from a string: their code's file name is "<string>")
GENERATED = frozenset({"__init__", "__eq__", "__repr__", "__hash__", "__setattr__", "__delattr__"})


@dataclass(frozen=True)
class Call:
    module: str  # the frame's __name__
    function: str  # the code's name (``<listcomp>``, ``<genexpr>`` for a comprehension)
    enters: bool  # the caller is outside this module
    in_value: bool  # inside a dataclass value's construction


@dataclass(frozen=True)
class Trace:
    """The seqlab calls of a traced call, in order; ``result``: what the call returned, or the exception it
    raised (of the types :func:`trace` was told to catch)."""

    calls: tuple[Call, ...]
    result: Any = None

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(c.module for c in self.calls)

    @property
    def visits(self) -> list[str]:
        """The module of each visit (a run of consecutive calls in one module), in order."""
        m = self.modules
        return [name for i, name in enumerate(m) if i == 0 or m[i - 1] != name]

    @property
    def reentries(self) -> list[tuple[int, str]]:
        """(visit index, module) of each visit to a module visited before."""
        seen: set[str] = set()
        found = []
        for i, module in enumerate(self.visits):
            if module in seen:
                found.append((i, module))
            seen.add(module)
        return found

    def counts(self) -> dict[str, int]:
        return {"calls": len(self.calls), "modules": len(set(self.modules)), "visits": len(self.visits),
                "reentries": len(self.reentries)}

    def entries(self, exempt: Collection[str] = ()) -> Trace:
        """The calls that enter a module from another, leaving out those inside a dataclass value's construction
        and those into ``exempt`` modules: its visits are the modules the flow goes to, in order."""
        return Trace(tuple(c for c in self.calls if c.enters and not c.in_value and c.module not in exempt),
                     self.result)

    def count(self, module: str, function: str) -> int:
        """How many times ``module.function`` was called."""
        return sum(c.module == module and c.function == function for c in self.calls)

    def visits_per_module(self) -> Counter:
        return Counter(self.visits)

    def path(self) -> str:
        """The visits as one line, ``a -> b -> a``, for a failure message."""
        return " -> ".join(m.removeprefix("seqlab.") for m in self.visits)


def _module(frame) -> str:
    name = frame.f_globals.get("__name__", "")
    return name if name == "seqlab" or name.startswith("seqlab.") else ""


def _caller(frame) -> str:
    """The module of the nearest seqlab frame below ``frame`` (a call made through the standard library, such as
    ``contextlib`` entering a generator, counts as its seqlab caller's)."""
    frame = frame.f_back
    while frame is not None and not _module(frame):
        frame = frame.f_back
    return _module(frame) if frame is not None else ""


def trace(fn: Callable[[], Any], *, catch: type[BaseException] | tuple[type[BaseException], ...] = ()) -> Trace:
    """Run ``fn()`` and record each Python call it makes in a seqlab module (the call of ``fn`` itself too, where it
    is in seqlab). An exception of a ``catch`` type ends the trace and becomes its ``result``; any other
    propagates."""
    calls: list[Call] = []
    building = []  # the frame of the dataclass __init__ being run, if any

    def profile(frame, event, arg):
        if event == "return" and building and frame is building[0]:
            building.clear()
        if event != "call":
            return
        module = _module(frame)
        if not module:
            return
        code = frame.f_code
        generated = code.co_filename == "<string>" and code.co_name in GENERATED
        if generated and not building:
            building.append(frame)
        calls.append(Call(module, code.co_name, _caller(frame) != module, bool(building)))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = fn()
    except catch as e:
        result = e
    finally:
        sys.setprofile(previous)
    return Trace(tuple(calls), result)
