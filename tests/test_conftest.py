"""The test suite's own guard: under CI a missing reference library fails, naming it, instead of skipping."""

from __future__ import annotations

import pytest

import conftest


def test_a_missing_reference_library_fails_under_ci_and_skips_elsewhere():
    with pytest.raises(pytest.fail.Exception, match="reference library 'no_such_reference' is missing"):
        conftest._importorskip_strict("no_such_reference")
    with pytest.raises(pytest.skip.Exception):
        conftest._importorskip("no_such_reference")
    assert conftest._importorskip_strict("json").dumps([1]) == "[1]"  # a present module is returned
