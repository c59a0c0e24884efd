"""Shared fixtures. Tests that need ../shared/data skip with a clear reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SEQLAB_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real public datasets (../shared/data); skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared datasets at {SHARED_DATA} (set SEQLAB_SHARED_DATA to point elsewhere)")
    return SHARED_DATA
