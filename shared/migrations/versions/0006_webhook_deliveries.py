"""webhook deliveries and secret rotation

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 00:55:00.000000
"""

import base64
import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("tenant_id", sa.String(length=36), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("event_type", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_response_status", sa.Integer(), nullable=True),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("attempt_log", sa.JSON(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("last_attempt_at", sa.DateTime(), nullable=True),
        sa.Column("published_at", sa.DateTime(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index("ix_webhook_deliveries_job_url", ["job_id", "url", "seq"], unique=False)
        batch_op.create_index(batch_op.f("ix_webhook_deliveries_tenant_id"), ["tenant_id"], unique=False)
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("webhook_secret_previous", sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column("webhook_secret_previous_until", sa.DateTime(), nullable=True))
    # Secrets made before signing existed were never shown to anyone; give every tenant one in the
    # Standard Webhooks form (whsec_ + base64) that `standardwebhooks.Webhook` accepts.
    conn = op.get_bind()
    tenants = sa.table("tenants", sa.column("id", sa.String), sa.column("webhook_secret", sa.String))
    for tenant_id, secret in conn.execute(sa.select(tenants.c.id, tenants.c.webhook_secret)).all():
        if not (secret or "").startswith("whsec_"):
            fresh = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
            conn.execute(tenants.update().where(tenants.c.id == tenant_id).values(webhook_secret=fresh))


def downgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("webhook_secret_previous_until")
        batch_op.drop_column("webhook_secret_previous")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_deliveries_tenant_id"))
        batch_op.drop_index("ix_webhook_deliveries_job_url")
        batch_op.drop_index("ix_webhook_deliveries_due")
    op.drop_table("webhook_deliveries")
