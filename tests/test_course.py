"""The course's exercises are tests too: every solution passes, every named mistake's planted wrong answer is
named, an unknown wrong answer gets the failing case, and no two answers the checker tells apart coincide.

The solutions and the planted wrong answers live in docs/course/solutions/ (one module per chapter): the site
shows the solutions, the package does not ship them."""

from __future__ import annotations

import copy
import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from seqlab import course
from seqlab.course.checker import _expected, compare

SOLUTIONS = Path(__file__).resolve().parent.parent / "docs" / "course" / "solutions"
EXERCISES = course.exercises()
IDS = [exercise.id for exercise in EXERCISES]


def _chapter_module(chapter: str):
    path = next(SOLUTIONS.glob(f"ch{chapter}_*.py"), None)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(f"course_solutions_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODULES = {chapter: _chapter_module(chapter) for chapter in course.CHAPTERS}


def _solution(exercise):
    module = MODULES[exercise.chapter]
    return getattr(module, exercise.name, None) if module is not None else None


def _planted(exercise) -> dict:
    module = MODULES[exercise.chapter]
    return getattr(module, "PLANTED", {}).get(exercise.id, {}) if module is not None else {}


def test_the_course_has_six_exercises_a_chapter_and_at_least_42():
    counts = {chapter: len(course.exercises(chapter)) for chapter in course.CHAPTERS}
    assert all(n >= 6 for n in counts.values()), counts
    assert len(EXERCISES) >= 42
    assert len(set(IDS)) == len(IDS), "exercise ids are unique"
    for chapter in course.CHAPTERS:
        names = [e.name for e in course.exercises(chapter)]
        assert len(set(names)) == len(names), f"chapter {chapter}: one function name per exercise"
        assert [e.id for e in course.exercises(chapter)] == [f"{chapter}.{i}" for i in range(1, len(names) + 1)]


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_every_exercise_has_its_solution_two_named_mistakes_and_a_planted_answer_for_each(exercise):
    assert _solution(exercise) is not None, f"{exercise.id}: no solution {exercise.name} in {SOLUTIONS}"
    names = [m.name for m in exercise.mistakes]
    assert len(names) >= 2 and len(set(names)) == len(names), f"{exercise.id}: at least two named mistakes"
    assert set(_planted(exercise)) == set(names), f"{exercise.id}: a planted wrong answer for each named mistake"
    assert exercise.section and exercise.signature.startswith(exercise.name + "(") and exercise.statement


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_solution_passes_and_each_planted_mistake_is_named(exercise):
    result = course.check(exercise.id, _solution(exercise))  # the first call also compiles what seqlab's code JITs
    assert result.passed, str(result)
    start = time.perf_counter()
    course.check(exercise.id, _solution(exercise))
    assert time.perf_counter() - start < 2.0, "a check runs in under 2 s (once seqlab's numba kernels are compiled)"
    for name, wrong in _planted(exercise).items():
        result = course.check(exercise.id, wrong)
        assert result.status == "wrong" and result.mistake == name, f"planted {name!r}: {result}"
        assert f'"{name}"' in str(result) and "not passed" in str(result)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_the_named_mistakes_and_the_right_answer_differ_on_every_case(exercise):
    """The sizes are chosen so that no two named mistakes, nor a mistake and the right answer, coincide: the
    name a report gives is the only one that fits."""
    for case, expected in _expected(exercise.id):
        outputs = [("the right answer", expected)]
        for mistake in exercise.mistakes:
            outputs.append((mistake.name, mistake.compute(*copy.deepcopy(case.args), **copy.deepcopy(dict(case.kwargs)))))
        for i, (name_a, a) in enumerate(outputs):
            for name_b, b in outputs[i + 1:]:
                assert compare(a, b, exercise, case) is not None, f"{exercise.id} {case.describe()}: {name_a} = {name_b}"


def _perturbed(value):
    """A wrong answer no named mistake predicts: one element moved."""
    if isinstance(value, torch.Tensor):
        value = value.clone()
        flat = value.view(-1) if value.is_contiguous() else value.reshape(-1)
        if value.dtype == torch.bool:
            flat[-1] = ~flat[-1]
        else:
            flat[-1] += 0.37 if value.is_floating_point() else 3
        return value.view(value.shape) if value.is_contiguous() else flat.view(value.shape)
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.reshape(-1)[-1] += 0.37 if np.issubdtype(value.dtype, np.floating) else 3
        return value
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 0.37 if isinstance(value, float) else value + 3
    if isinstance(value, str):
        return value + "#"
    if isinstance(value, dict):
        key = next(reversed(value))
        return {**value, key: _perturbed(value[key])}
    if isinstance(value, (list, tuple)):
        items = list(value)
        items[-1] = _perturbed(items[-1]) if items else "#"
        return type(value)(items) if isinstance(value, tuple) and not hasattr(value, "_fields") else (
            type(value)(*items) if hasattr(value, "_fields") else items)
    raise TypeError(f"no perturbation for {type(value).__name__}")


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_an_unknown_wrong_answer_gets_the_failing_case(exercise):
    solution = _solution(exercise)
    cases = _expected(exercise.id)
    last = cases[-1][0]

    def wrong(*args, **kwargs):  # right on every case but the last, where one element is off
        out = solution(*args, **kwargs)
        same_case = all(course.checker._same(a, b) for a, b in zip(last.args, args))
        return _perturbed(out) if same_case else out

    result = course.check(exercise.id, wrong)
    assert result.status == "wrong" and result.mistake is None, str(result)
    assert f"case {len(cases)} of {len(cases)}" in str(result) and last.describe() in str(result)
    assert "known mistake" not in str(result)


def _good_attention():
    return _solution(course.exercises("06")[0])


def test_a_function_that_raises_mutates_or_returns_the_wrong_thing_gets_a_sentence():
    good = _good_attention()

    def raises(q, k, v, mask=None):
        return q.view(-1, 7)

    def mutates(q, k, v, mask=None):
        q.mul_(2)
        return good(q / 2, k, v, mask)

    def transposed(q, k, v, mask=None):
        return good(q, k, v, mask).transpose(1, 2)

    def forgets_return(q, k, v, mask=None):
        good(q, k, v, mask)

    said = {f.__name__: str(course.check("06.1", f)) for f in (raises, mutates, transposed, forgets_return)}
    assert "raised RuntimeError" in said["raises"] and "line " in said["raises"] and "Traceback" not in said["raises"]
    assert "changed its input number 1 in place" in said["mutates"]
    assert "has shape (2, 5, 3, 4) where (2, 3, 5, 4) is expected" in said["transposed"]
    assert "None (did the function end without `return`?)" in said["forgets_return"]
    assert all("\n" not in text for text in said.values()), "one short paragraph"
    assert course.check("9.9", good).status == "invalid" and course.check("06.1", 3).status == "invalid"


def test_the_report_never_shows_the_solution():
    import inspect

    good = _good_attention()
    source = inspect.getsource(good)
    for wrong in _planted(course.exercises("06")[0]).values():
        text = str(course.check("06.1", wrong))
        assert not any(line.strip() in text for line in source.splitlines()[1:] if len(line.strip()) > 12)


def test_the_command_line_checks_a_file(seqlab_cli, tmp_path):
    right = tmp_path / "right.py"
    right.write_text((SOLUTIONS / "ch06_transformer.py").read_text(encoding="utf-8"), encoding="utf-8")
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import math, torch\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
                     "    s = q @ k.transpose(-2, -1)\n"
                     "    return torch.softmax(s.masked_fill(~mask, float('-inf')), -1) @ v\n", encoding="utf-8")
    code, out, err = seqlab_cli("course", "check", "06.1", right)
    assert code == 0 and "passed" in out and not err
    code, out, err = seqlab_cli("course", "check", "06.1", wrong)
    assert code == 1 and '"unscaled"' in out
    other = tmp_path / "other.py"
    other.write_text("def attention(q, k, v):\n    return q\n", encoding="utf-8")
    for args in (("06.1", other), ("06.1", tmp_path / "missing.py"), ("9.9", right)):
        code, out, err = seqlab_cli("course", "check", *args)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (args, err)
    broken = tmp_path / "broken.py"
    broken.write_text("def scaled_dot_product_attention(q, k, v, mask=None)\n    return q\n", encoding="utf-8")
    code, out, err = seqlab_cli("course", "check", "06.1", broken)
    assert code == 2 and "line 1" in err and err.count("\n") == 1
    code, out, err = seqlab_cli("course", "exercises", "06")
    assert code == 0 and "06.1" in out and "scaled_dot_product_attention(q, k, v, mask=None)" in out
