"""OCR languages on tenants and documents; pages dropped for low OCR confidence on jobs

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 15:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tenants") as batch:
        batch.add_column(sa.Column("ocr_languages", sa.String(length=100), nullable=True))
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("ocr_languages", sa.String(length=100), nullable=True))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("ocr_pages_dropped", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("ocr_pages_dropped")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("ocr_languages")
    with op.batch_alter_table("tenants") as batch:
        batch.drop_column("ocr_languages")
