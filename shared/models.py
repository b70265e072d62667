"""SQLAlchemy 2.0 typed models: tenants, keys, documents, jobs, stages, events, the outbox, webhook
deliveries and reindexes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    """Naive UTC now: every timestamp is stored as UTC without a zone (SQLite has none)."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return str(uuid.uuid4())


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}


class TenantStatus(StrEnum):
    ACTIVE = "active"
    SUSPENDED = "suspended"


class KeyRole(StrEnum):
    TENANT = "tenant"
    ADMIN = "admin"


class JobKind(StrEnum):
    INGEST = "ingest"
    REINDEX = "reindex"
    DELETE = "delete"


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"
    # A progress event not yet sent when a newer event of the same job went to the same endpoint.
    SUPERSEDED = "superseded"


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    COMPLETED = "completed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLED = "cancelled"


class ReindexStatus(StrEnum):
    RUNNING = "running"
    FLIPPED = "flipped"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StageStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    status: Mapped[str] = mapped_column(String(20), default=TenantStatus.ACTIVE.value)
    # Limits: NULL means "the service default from settings".
    max_active_jobs: Mapped[int | None] = mapped_column(Integer)
    max_upload_mb: Mapped[int | None] = mapped_column(Integer)
    max_pages: Mapped[int | None] = mapped_column(Integer)
    max_storage_mb: Mapped[int | None] = mapped_column(Integer)
    webhook_secret: Mapped[str | None] = mapped_column(String(100))
    # During a rotation the previous secret signs too (a second signature), until this time.
    webhook_secret_previous: Mapped[str | None] = mapped_column(String(100))
    webhook_secret_previous_until: Mapped[datetime | None] = mapped_column(DateTime)
    default_callback_url: Mapped[str | None] = mapped_column(Text)
    active_index_version: Mapped[int] = mapped_column(Integer, default=1)
    # The embedding model and dimension of the active version; NULL means the service's default
    # embedder (a tenant that was never reindexed).
    active_embedding_model: Mapped[str | None] = mapped_column(String(100))
    active_embedding_dim: Mapped[int | None] = mapped_column(Integer)
    # Tesseract languages ("deu+eng") for the tenant's uploads that name none; NULL: the service's.
    ocr_languages: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id"), index=True)
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(20), default=KeyRole.TENANT.value)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class Document(Base):
    __tablename__ = "documents"
    __table_args__ = (
        # One live document per (tenant, content): the same bytes again are a duplicate.
        Index(
            "uq_documents_live_sha",
            "tenant_id",
            "sha256",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    # Display only: never used as a path.
    filename: Mapped[str] = mapped_column(String(255))
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    object_key: Mapped[str] = mapped_column(String(255))
    page_count: Mapped[int | None] = mapped_column(Integer)
    # The tesseract languages the document is read in, fixed at upload (the upload's, else the
    # tenant's, else the service's), so retries and reindexes read it the same way. NULL on documents
    # uploaded before languages were chosen: the service's default.
    ocr_languages: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key", name="uq_jobs_tenant_idempotency_key"),
        Index("ix_jobs_tenant_status", "tenant_id", "status"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20), default=JobKind.INGEST.value)
    status: Mapped[str] = mapped_column(String(20), default=JobStatus.QUEUED.value)
    stage: Mapped[str | None] = mapped_column(String(20))
    progress: Mapped[int] = mapped_column(Integer, default=0)
    pages: Mapped[int] = mapped_column(Integer, default=0)
    ocr_pages: Mapped[int] = mapped_column(Integer, default=0)
    # Pages OCR read only low-confidence words on (photographs, drawings, noise): they yield no text.
    ocr_pages_dropped: Mapped[int] = mapped_column(Integer, default=0)
    chunks: Mapped[int] = mapped_column(Integer, default=0)
    points: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    callback_url: Mapped[str | None] = mapped_column(Text)
    embedding_model: Mapped[str | None] = mapped_column(String(100))
    embedding_dim: Mapped[int | None] = mapped_column(Integer)
    index_version: Mapped[int] = mapped_column(Integer, default=1)
    # The code versions that made the job's pages and chunks (a reindex redoes older ones).
    extractor_version: Mapped[str | None] = mapped_column(String(32))
    chunker_version: Mapped[str | None] = mapped_column(String(32))
    # A version that only grows: every transition bumps it in the same statement.
    seq: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Set while a worker runs one of the job's stages, renewed while it lives; an expired lease
    # means the worker died, and the maintenance loop resumes the job.
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    # When a worker last handed the job on to its next stage's message (after the broker took it);
    # a finished stage with no hand-off after it means the hand-off was lost.
    handed_on_at: Mapped[datetime | None] = mapped_column(DateTime)
    # How many times the maintenance loop has resumed this job after a lost worker or message.
    recoveries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cancel_requested_at: Mapped[datetime | None] = mapped_column(DateTime)


class JobStage(Base):
    __tablename__ = "job_stages"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    stage: Mapped[str] = mapped_column(String(20), primary_key=True)
    status: Mapped[str] = mapped_column(String(20), default=StageStatus.RUNNING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    artifact_key: Mapped[str | None] = mapped_column(String(255))
    # A stage run in parts (the page ranges of a large scan's OCR): how many there are and how many
    # have finished; the part whose increment reaches `parts` is the last and hands the job on.
    parts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    parts_done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class StagePart(Base):
    """One part of a stage that runs as several messages at once (a page range of a scan's OCR)."""

    __tablename__ = "stage_parts"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    stage: Mapped[str] = mapped_column(String(20), primary_key=True)
    part: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The page numbers this part covers.
    pages: Mapped[list[int]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default=StageStatus.QUEUED.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Set while a worker runs the part, renewed while it lives (the job's own lease stays free).
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    artifact_key: Mapped[str | None] = mapped_column(String(255))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


class JobEvent(Base):
    __tablename__ = "job_events"
    __table_args__ = (UniqueConstraint("job_id", "seq", name="uq_job_events_job_seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    tenant_id: Mapped[str] = mapped_column(String(36), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


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


class IdempotencyRecord(Base):
    """The first answer to a request sent with an Idempotency-Key, replayed for its repeats."""

    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    # SHA-256 over what the request carried (files' digests and form fields).
    fingerprint: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    response_location: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


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
