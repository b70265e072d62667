"""Reindexes: a tenant's moves to a new index version."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, new_id, utcnow


class ReindexStatus(StrEnum):
    RUNNING = "running"
    FLIPPED = "flipped"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Reindex(Base):
    """A tenant's move to a new index version; the maintenance loop flips it when every document is in."""

    __tablename__ = "reindexes"
    __table_args__ = (
        # At most one running reindex per tenant.
        Index(
            "uq_reindexes_running",
            "tenant_id",
            unique=True,
            sqlite_where=text("status = 'running'"),
            postgresql_where=text("status = 'running'"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    source_version: Mapped[int] = mapped_column(Integer)
    target_version: Mapped[int] = mapped_column(Integer)
    source_model: Mapped[str] = mapped_column(String(100))
    source_dim: Mapped[int] = mapped_column(Integer)
    embedding_model: Mapped[str] = mapped_column(String(100))
    embedding_dim: Mapped[int] = mapped_column(Integer)
    # The first stage every job runs at least (embed, chunk or extract).
    from_stage: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20), default=ReindexStatus.RUNNING.value)
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    # The documents whose job failed: [{"document_id", "job_id", "error_code", "error_message"}].
    failures: Mapped[list[Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    flipped_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    # When the other versions' points were deleted after the flip.
    purged_at: Mapped[datetime | None] = mapped_column(DateTime)
