"""Fixtures for the service tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app.db.engine import open_database


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """An empty folder for fake executables, to be the whole PATH a test looks on."""
    d = tmp_path / "bin"
    d.mkdir()
    return d


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    """A fresh, migrated database."""
    engine = open_database(tmp_path / "data")
    yield engine
    engine.dispose()
