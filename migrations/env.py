"""Alembic environment: runs against the connection Angelia hands over at start-up."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import app.db.models  # noqa: F401  (registers the tables on SQLModel.metadata)

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("Angelia's migrations run through app.db.engine.migrate()")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things in place
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
