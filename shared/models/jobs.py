"""Jobs and their stages, stage parts and events."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, new_id, utcnow


class JobKind(StrEnum):
    INGEST = "ingest"
    REINDEX = "reindex"
    DELETE = "delete"
    # Writes a document's changed metadata into its points' payload (no re-embedding).
    METADATA = "metadata"


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    RETRYING = "retrying"
    COMPLETED = "completed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLED = "cancelled"


class StageStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


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
    # Why a job that no worker runs yet waits (see `shared/job_waiting.py`); None while it runs.
    waiting: Mapped[str | None] = mapped_column(String(32))
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
    # Units of a long stage (pages read by OCR, chunks embedded) done so far, of `units_total`.
    units_done: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    units_total: Mapped[int | None] = mapped_column(Integer)


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
    # The unique (job_id, seq) index also serves every lookup by job: no index of job_id alone.
    __table_args__ = (UniqueConstraint("job_id", "seq", name="uq_job_events_job_seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    tenant_id: Mapped[str] = mapped_column(String(36), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
