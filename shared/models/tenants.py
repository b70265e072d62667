"""Tenants, their API keys and the answers kept for idempotent requests."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, new_id, utcnow


class TenantStatus(StrEnum):
    ACTIVE = "active"
    SUSPENDED = "suspended"


class KeyRole(StrEnum):
    TENANT = "tenant"
    ADMIN = "admin"


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
    # Counters the quotas and the lane choice read (shared/job_counters.py): the tenant's active jobs
    # other than reindex jobs, and the bytes of its live documents.
    active_jobs: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    stored_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
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
