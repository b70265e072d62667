"""Leases on open event streams: one row per stream, expiring unless the stream renews it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, new_id


class EventStreamLease(Base):
    __tablename__ = "event_stream_leases"
    __table_args__ = (Index("ix_event_stream_leases_tenant_expires", "tenant_id", "expires_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(String(36), ForeignKey("tenants.id", ondelete="CASCADE"))
    # A process that dies without closing its streams stops renewing: their slots come back then.
    expires_at: Mapped[datetime] = mapped_column(DateTime)
