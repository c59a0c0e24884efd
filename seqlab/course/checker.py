"""``check(exercise_id, fn)``: the learner's function against seqlab's own, case by case, and the report.

The learner's function is called on copies of each case's inputs (so the checker sees whether it changed them),
its output compared with the reference's within the exercise's tolerance (an error bound, not a margin: see
:func:`seqlab.course.exercise.rounding`). The first case that differs is reported: its sizes, the first index
where the two differ, expected and actual value; and where the output equals one of the exercise's known
mistakes (computed with the reference on the same case, within the same tolerance), the mistake is named with
the sentence that says what is wrong. A function that raises, returns the wrong type or shape, or changes its
inputs gets a sentence saying so. :func:`check` never raises and never shows the solution.
"""

from __future__ import annotations

import copy
import os
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import torch

from seqlab.base.bounds import u
from seqlab.course.catalogue import find
from seqlab.course.exercise import Case, Exercise, exact, float_name

Status = Literal["passed", "wrong", "invalid"]


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` found: ``status`` "passed", "wrong" (a wrong answer) or "invalid" (no such exercise,
    not a function); ``mistake`` the known mistake recognised, if any; ``case`` the first failing case. Prints as
    one short paragraph (``message``); true when passed."""

    exercise: str
    status: Status
    message: str
    mistake: str | None = None
    case: Case | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:  # a notebook cell ending in check(...) shows the paragraph, not a dataclass
        return self.message


def check(exercise_id: str, fn: Any) -> CheckResult:
    """Call ``fn`` on every case of exercise ``exercise_id`` and compare it with seqlab's implementation.

    Returns a :class:`CheckResult` (never raises): passed, or the first failing case with what differs and,
    where the output is a known mistake, its name and what the notes say."""
    exercise = find(exercise_id)
    if exercise is None:
        return CheckResult(str(exercise_id), "invalid", f"there is no exercise {exercise_id!r}; "
                           "seqlab.course.exercises() lists them (`seqlab course exercises`)")
    head = f"{exercise.id} {exercise.name}"
    if not callable(fn):
        return CheckResult(exercise.id, "invalid", f"{head}: give the function itself, {exercise.signature}, "
                           f"not {_kind(fn)}")
    expected_all = _expected(exercise.id)
    for number, (case, expected) in enumerate(expected_all, 1):
        where = f"case {number} of {len(expected_all)} ({case.describe()})"
        args, kwargs = copy.deepcopy((case.args, dict(case.kwargs)))
        try:
            actual = fn(*args, **kwargs)
        except Exception as error:  # the learner's bug: reported as a sentence, never a traceback
            return CheckResult(exercise.id, "wrong", f"{head}: not passed. On {where}, your function raised "
                               f"{type(error).__name__}: {_one_line(error)}{_line_of(error, fn)}.", case=case)
        changed = _changed_input(case, args, kwargs)
        if changed:
            return CheckResult(exercise.id, "wrong", f"{head}: not passed. On {where}, your function changed its "
                               f"input {changed} in place; compute on a copy (or out of place) and return the "
                               "result.", case=case)
        difference = compare(expected, actual, exercise, case)
        if difference is None:
            continue
        mistake = _recognised(exercise, case, actual)
        text = f"{head}: not passed. On {where}, {difference}."
        if mistake is not None:
            text += f' This is a known mistake, "{mistake.name}": {mistake.sentence(case)}'
        return CheckResult(exercise.id, "wrong", text, mistake=mistake.name if mistake else None, case=case)
    return CheckResult(exercise.id, "passed", f"{head}: passed, equal to seqlab's on all {len(expected_all)} cases"
                       f"{_within(exercise)}.")


@lru_cache(maxsize=None)
def _expected(exercise_id: str) -> list[tuple[Case, Any]]:
    """Each case with seqlab's answer (computed once per process: the cases are fixed)."""
    exercise = find(exercise_id)
    assert exercise is not None
    return [(case, exercise.reference(*copy.deepcopy(case.args), **copy.deepcopy(dict(case.kwargs))))
            for case in exercise.cases()]


def _recognised(exercise: Exercise, case: Case, actual: Any):
    """The first known mistake whose output on ``case`` equals ``actual`` within the tolerance, or None."""
    for mistake in exercise.mistakes:
        args, kwargs = copy.deepcopy((case.args, dict(case.kwargs)))
        try:
            wrong = mistake.compute(*args, **kwargs)
        except Exception:  # a mistake that cannot be formed on this case is not the learner's
            continue
        if compare(wrong, actual, exercise, case) is None or compare(_nan_as_zero(wrong), _nan_as_zero(actual),
                                                                      exercise, case) is None:
            return mistake
    return None


def _nan_as_zero(value: Any) -> Any:
    """A softmax over nothing but -inf gives NaN where seqlab gives 0 (a fully masked row): the same mistake."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.nan_to_num(value, nan=0.0)
    if isinstance(value, tuple):
        return tuple(_nan_as_zero(v) for v in value)
    return value


def _within(exercise: Exercise) -> str:
    return "" if exercise.tolerance is exact else " within the rounding error bound"


# ------------------------------------------------------------------------------------------------------
# comparing an answer with the expected one


def compare(expected: Any, actual: Any, exercise: Exercise, case: Case, what: str = "the output") -> str | None:
    """None when ``actual`` equals ``expected`` (floats within the exercise's tolerance), else a clause saying
    where and how they first differ: "the output at index (0, 2) is 0.81 where 0.41 is expected (...)"."""
    if isinstance(expected, (torch.Tensor, np.ndarray)):
        return _compare_array(expected, actual, exercise, case, what)
    if isinstance(expected, bool) or expected is None:
        if actual is expected or (isinstance(actual, (bool, np.bool_)) and bool(actual) == expected):
            return None
        return f"{what} is {_short(actual)} where {expected!r} is expected"
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return _compare_number(float(expected), actual, exercise, case, what, integral=isinstance(expected, int))
    if isinstance(expected, str):
        if actual == expected:
            return None
        return f"{what} is {_short(actual)} where {_short(expected)} is expected"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return f"{what} is {_kind(actual)} where a dict is expected"
        missing, extra = [k for k in expected if k not in actual], [k for k in actual if k not in expected]
        if missing or extra:
            return (f"{what} has keys {_short(sorted(map(repr, actual)))} where "
                    f"{_short(sorted(map(repr, expected)))} are expected")
        for key in expected:
            difference = compare(expected[key], actual[key], exercise, case, f"{what}[{key!r}]")
            if difference is not None:
                return difference
        return None
    if isinstance(expected, Sequence):
        if not isinstance(actual, Sequence) or isinstance(actual, str):
            return f"{what} is {_kind(actual)} where a {type(expected).__name__} of {len(expected)} is expected"
        if len(actual) != len(expected):
            return f"{what} has {len(actual)} items where {len(expected)} are expected"
        for i, (e, a) in enumerate(zip(expected, actual)):
            difference = compare(e, a, exercise, case, f"{what}[{i}]")
            if difference is not None:
                return difference
        return None
    return None if actual == expected else f"{what} is {_short(actual)} where {_short(expected)} is expected"


def _compare_number(expected: float, actual: Any, exercise: Exercise, case: Case, what: str,
                    integral: bool) -> str | None:
    if isinstance(actual, torch.Tensor) and actual.numel() == 1:
        actual = actual.item()
    if isinstance(actual, np.generic):
        actual = actual.item()
    if not isinstance(actual, (int, float)) or isinstance(actual, bool):
        return f"{what} is {_kind(actual)} where a number is expected"
    tol = 0.0 if integral and isinstance(actual, int) else _tolerance(exercise, case, "float64", abs(expected))
    if abs(float(actual) - expected) <= tol:
        return None
    shown = f"{actual}" if isinstance(actual, int) else f"{actual:.6g}"
    want = f"{int(expected)}" if integral else f"{expected:.6g}"
    return f"{what} is {shown} where {want} is expected" + (f" (tolerance {tol:.2g})" if not integral and tol else "")


def _compare_array(expected: Any, actual: Any, exercise: Exercise, case: Case, what: str) -> str | None:
    kind = "a torch.Tensor" if isinstance(expected, torch.Tensor) else "a numpy array"
    shape = tuple(expected.shape)
    if not isinstance(actual, (torch.Tensor, np.ndarray)):
        return f"{what} is {_kind(actual)} where {kind} of shape {shape} is expected"
    if tuple(actual.shape) != shape:
        return f"{what} has shape {tuple(actual.shape)} where {shape} is expected"
    e, a = _numpy(expected), _numpy(actual)
    if e.dtype == np.bool_ and a.dtype != np.bool_:
        return f"{what} holds {a.dtype} values where a boolean mask (True = may attend) is expected"
    if e.dtype == np.bool_ or np.issubdtype(e.dtype, np.integer):
        bad = a != e
        if not bad.any():
            return None
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        return (f"{what} at index {index} is {a[index].item()!r} where {e[index].item()!r} is expected "
                f"({int(bad.sum())} of {e.size} values differ)")
    if not np.issubdtype(a.dtype, np.floating):
        return f"{what} holds {a.dtype} values where floating-point values are expected"
    ef, af = e.astype(np.float64), a.astype(np.float64)
    tol = _tolerance(exercise, case, str(actual.dtype), np.where(np.isfinite(ef), np.abs(ef), 0.0))  # inf: no slack
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(af - ef) <= tol) & ~(np.isnan(ef) & np.isnan(af)) & ~(af == ef)  # equal infinities: equal
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    at = f" at index {index}" if index else ""
    bound = tol[index] if isinstance(tol, np.ndarray) else tol
    return (f"{what}{at} is {af[index]:.6g} where {ef[index]:.6g} is expected (tolerance {bound:.2g}; "
            f"{int(bad.sum())} of {e.size} values differ)")


def _tolerance(exercise: Exercise, case: Case, dtype: str, magnitude: Any) -> Any:
    """The exercise's bound at ``dtype``, plus rounding each side's final value to it (2u|expected|)."""
    if exercise.tolerance is exact:
        return 0.0
    name = float_name(dtype)
    return exercise.tolerance(case, name) + 2.0 * u(name) * magnitude


def _numpy(x: Any) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.double() if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64) else x).numpy()
    return np.asarray(x)


# ------------------------------------------------------------------------------------------------------
# the sentences for a function that does not return an answer


def _changed_input(case: Case, args: tuple, kwargs: dict) -> str | None:
    """The name (or position) of an input the learner's function changed in place, or None."""
    for i, (before, after) in enumerate(zip(case.args, args)):
        if not _same(before, after):
            return f"number {i + 1}"
    for name, before in case.kwargs.items():
        if not _same(before, kwargs[name]):
            return f"`{name}`"
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):  # as numpy arrays: equal, NaN where NaN
        return isinstance(b, torch.Tensor) and _same(_numpy(a), _numpy(b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return True  # an object without equality: not ours to judge


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a torch.Tensor of shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a numpy array of shape {value.shape}"
    if value is None:
        return "None (did the function end without `return`?)"
    return f"a {type(value).__name__}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:200] + ("..." if len(text) > 200 else "")


def _line_of(error: BaseException, fn: Callable[..., Any]) -> str:
    """" (line 12 of my_attention.py)": the last line of the learner's own code the error passed through."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == code.co_filename]
    if not lines:
        return ""
    name = os.path.basename(code.co_filename)
    return f" (line {lines[-1]} of {name})" if not name.startswith("<") else f" (line {lines[-1]} of your cell)"
