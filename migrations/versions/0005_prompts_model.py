"""Permission prompts know their kind (tool, question, plan) and store the user's answers;
a session remembers the model the user switched it to.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("permission_request") as batch:
        batch.add_column(sa.Column("kind", sa.String(), nullable=False, server_default="tool"))
        batch.add_column(sa.Column("answers", sa.JSON(), nullable=True))
    with op.batch_alter_table("chat_session") as batch:
        batch.add_column(sa.Column("model", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_session") as batch:
        batch.drop_column("model")
    with op.batch_alter_table("permission_request") as batch:
        batch.drop_column("answers")
        batch.drop_column("kind")
