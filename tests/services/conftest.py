"""Fixtures for the service tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """An empty folder for fake executables, to be the whole PATH a test looks on."""
    d = tmp_path / "bin"
    d.mkdir()
    return d
