"""Units done and to do within a long stage (pages read, chunks embedded); why a queued job waits

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 17:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job_stages") as batch:
        batch.add_column(sa.Column("units_done", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("units_total", sa.Integer(), nullable=True))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("waiting", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("waiting")
    with op.batch_alter_table("job_stages") as batch:
        batch.drop_column("units_total")
        batch.drop_column("units_done")
