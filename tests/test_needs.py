"""A test that needs an optional package skips where it is missing and fails under CI=true (tests/needs.py); no
test skips on ``find_spec`` by itself, which CI would not see."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import needs

TESTS = Path(__file__).resolve().parent


def test_a_missing_module_skips_here_and_fails_under_ci(monkeypatch):
    monkeypatch.setattr(needs, "UNDER_CI", False)
    with pytest.raises(pytest.skip.Exception, match=r"needs no_such_module_xyz: pip install -e '\.\[test\]'"):
        needs.require("json", "no_such_module_xyz", extra="test")
    monkeypatch.setattr(needs, "UNDER_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true: needs no_such_module_xyz"):
        needs.require("no_such_module_xyz", extra="test")
    needs.require("json", extra="test")  # present: nothing happens


def skips_on_find_spec(source: str) -> list[int]:
    """Lines of ``skipif(...)`` calls whose condition calls ``find_spec``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "skipif":
            if any(getattr(sub.func, "attr", getattr(sub.func, "id", None)) == "find_spec"
                   for arg in node.args for sub in ast.walk(arg) if isinstance(sub, ast.Call)):
                lines.append(node.lineno)
    return lines


def test_no_test_skips_on_find_spec_alone():
    planted = "import importlib.util, pytest\nm = pytest.mark.skipif(importlib.util.find_spec('x') is None, reason='')\n"
    assert skips_on_find_spec(planted) == [2]
    found = {p.name: skips_on_find_spec(p.read_text(encoding="utf-8")) for p in sorted(TESTS.glob("*.py"))}
    assert not {k: v for k, v in found.items() if v}, "use @needs(...) (tests/needs.py), which fails under CI"
