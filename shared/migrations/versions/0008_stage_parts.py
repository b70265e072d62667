"""stage parts

Revision ID: 0008
Revises: 0005
Create Date: 2026-11-30 00:50:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "stage_parts",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("pages", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_expires_at", sa.DateTime(), nullable=True),
        sa.Column("artifact_key", sa.String(length=255), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("job_id", "stage", "part"),
    )
    with op.batch_alter_table("job_stages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parts", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("parts_done", sa.Integer(), server_default="0", nullable=False))
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("part", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_column("part")
    with op.batch_alter_table("job_stages", schema=None) as batch_op:
        batch_op.drop_column("parts_done")
        batch_op.drop_column("parts")
    op.drop_table("stage_parts")
