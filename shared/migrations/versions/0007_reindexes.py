"""reindexes

Revision ID: 0007
Revises: 0005
Create Date: 2026-11-30 00:55:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reindexes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("source_version", sa.Integer(), nullable=False),
        sa.Column("target_version", sa.Integer(), nullable=False),
        sa.Column("source_model", sa.String(length=100), nullable=False),
        sa.Column("source_dim", sa.Integer(), nullable=False),
        sa.Column("embedding_model", sa.String(length=100), nullable=False),
        sa.Column("embedding_dim", sa.Integer(), nullable=False),
        sa.Column("from_stage", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("failures", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("flipped_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("purged_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("reindexes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_reindexes_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(
            "uq_reindexes_running",
            ["tenant_id"],
            unique=True,
            sqlite_where=sa.text("status = 'running'"),
            postgresql_where=sa.text("status = 'running'"),
        )
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("active_embedding_model", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("active_embedding_dim", sa.Integer(), nullable=True))
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("extractor_version", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("chunker_version", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("chunker_version")
        batch_op.drop_column("extractor_version")
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("active_embedding_dim")
        batch_op.drop_column("active_embedding_model")
    with op.batch_alter_table("reindexes", schema=None) as batch_op:
        batch_op.drop_index("uq_reindexes_running")
        batch_op.drop_index(batch_op.f("ix_reindexes_tenant_id"))
    op.drop_table("reindexes")
