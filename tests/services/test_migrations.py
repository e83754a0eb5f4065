"""The migrations build exactly the schema the models describe."""

from __future__ import annotations

from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import app.db.models  # noqa: F401  (registers the tables)
from app.db.engine import open_database


def test_a_migrated_database_matches_the_models(tmp_path: Path) -> None:
    engine = open_database(tmp_path / "data")
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    # FTS5 tables of the search index are made by hand in a migration, not models.
    diff = [d for d in diff if not (d[0] == "remove_table" and d[1].name.startswith("event_fts"))]
    assert diff == []
