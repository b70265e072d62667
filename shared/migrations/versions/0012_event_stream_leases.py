"""Leases on open event streams, for the per-tenant cap

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 19:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "event_stream_leases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_event_stream_leases_tenant_expires", "event_stream_leases", ["tenant_id", "expires_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_event_stream_leases_tenant_expires", table_name="event_stream_leases")
    op.drop_table("event_stream_leases")
