"""Documents: a tenant's uploaded PDFs, one live row per content."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from shared.models.base import Base, new_id, utcnow


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
    # The client's metadata (checked by shared.document_metadata), copied into every point's payload
    # under `metadata`. The attribute cannot be called `metadata` (SQLAlchemy's), the column is.
    # NULL on documents uploaded before metadata existed: shown as {}.
    user_metadata: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime)
