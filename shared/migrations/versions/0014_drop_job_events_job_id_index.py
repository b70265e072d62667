"""Drop the index of job_events.job_id alone: the unique (job_id, seq) index serves the same lookups,
and every event (an upload writes one, a job about ten) no longer updates a second index

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 00:45:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_job_events_job_id", table_name="job_events")


def downgrade() -> None:
    op.create_index("ix_job_events_job_id", "job_events", ["job_id"])
