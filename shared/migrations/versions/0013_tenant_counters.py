"""Tenant counters: active jobs and stored bytes, kept with the changes they count

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 20:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ACTIVE = "('queued', 'running', 'retrying', 'cancel_requested')"


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("active_jobs", sa.Integer(), server_default="0", nullable=False))
        batch.add_column(sa.Column("stored_bytes", sa.BigInteger(), server_default="0", nullable=False))
    op.execute(
        "UPDATE tenants SET active_jobs = (SELECT count(*) FROM jobs WHERE jobs.tenant_id = tenants.id"
        f" AND jobs.status IN {ACTIVE} AND jobs.kind != 'reindex')"
    )
    op.execute(
        "UPDATE tenants SET stored_bytes = (SELECT coalesce(sum(size_bytes), 0) FROM documents"
        " WHERE documents.tenant_id = tenants.id AND documents.deleted_at IS NULL)"
    )


def downgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("stored_bytes")
        batch.drop_column("active_jobs")
