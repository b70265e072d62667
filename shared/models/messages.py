"""What the service still has to send: the stage outbox, dead letters and webhook deliveries."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, utcnow


class OutboxMessage(Base):
    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_pending", "published_at", "available_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    # The pipeline is published from this stage onwards.
    stage: Mapped[str] = mapped_column(String(20))
    # Set for one part of a stage run in parts: only that part's message is published.
    part: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # Not before this time: a claim or a failed publish pushes it forward.
    available_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    published_at: Mapped[datetime | None] = mapped_column(DateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(String(64))


class DeadLetter(Base):
    """A message whose retries ran out, kept until replayed (the broker's own dead letters expire)."""

    __tablename__ = "dead_letters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    tenant_id: Mapped[str] = mapped_column(String(36), index=True)
    stage: Mapped[str] = mapped_column(String(20))
    actor: Mapped[str] = mapped_column(String(100))
    # The Dramatiq message as plain data (queue, actor, args, options): ids only, no secrets.
    message: Mapped[dict[str, Any]] = mapped_column(JSON)
    error_code: Mapped[str] = mapped_column(String(64))
    error_message: Mapped[str] = mapped_column(Text)
    retries: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    replayed_at: Mapped[datetime | None] = mapped_column(DateTime)


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
    # A progress event not yet sent when a newer event of the same job went to the same endpoint.
    SUPERSEDED = "superseded"


class WebhookDelivery(Base):
    """One event to one endpoint: the webhook outbox and its delivery log, written with the event."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),
        Index("ix_webhook_deliveries_job_url", "job_id", "url", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # The Standard Webhooks message id (`webhook-id`): the same for every attempt and redelivery.
    event_id: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    tenant_id: Mapped[str] = mapped_column(String(36), index=True)
    url: Mapped[str] = mapped_column(Text)
    seq: Mapped[int] = mapped_column(Integer)
    event_type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default=DeliveryStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_response_status: Mapped[int | None] = mapped_column(Integer)
    last_error_code: Mapped[str | None] = mapped_column(String(64))
    # One entry per attempt: {"at", "response_status", "error_code"}.
    attempt_log: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime)
    # When the maintenance loop last handed it to the broker (NULL: not in the broker).
    published_at: Mapped[datetime | None] = mapped_column(DateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
