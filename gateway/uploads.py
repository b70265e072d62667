"""Accepting uploaded files: measure and check each, store the new ones, create their jobs at once.

Each file is read once to hash and check it (Werkzeug holds a part up to 1 MiB in memory and spools
a larger one to disk), then streamed into object storage. Documents, jobs and outbox rows for the
whole request commit in one transaction that also holds the tenant's quota check, and the outbox is
published after it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from werkzeug.datastructures import FileStorage

from gateway.services import Services
from shared import job_counters, operations, outbox
from shared.errors import (
    EmptyFileError,
    IngestError,
    InvalidRequestError,
    NotAPdfError,
    UploadTooLargeError,
)
from shared.job_queries import latest_job_of_document
from shared.job_representation import job_body
from shared.models import Document, Job, new_id, utcnow

READ_BYTES = 1024 * 1024
PDF_MAGIC = b"%PDF-"
# Readers accept a PDF header preceded by a little junk, within the first 1 KiB.
MAGIC_WINDOW = 1024


@dataclass
class IncomingFile:
    upload: FileStorage
    filename: str
    sha256: str = ""
    size: int = 0
    error: IngestError | None = None
    # Filled in while accepting.
    document_id: str | None = None
    job: dict[str, Any] | None = None
    duplicate: bool = False
    new_job: bool = False
    object_key: str | None = field(default=None, repr=False)


def measure(stream: IO[bytes], limit_bytes: int) -> tuple[str, int]:
    """SHA-256 and size of a stream, checking the magic and the size limit as it reads."""
    digest = hashlib.sha256()
    size = 0
    head = b""
    while chunk := stream.read(READ_BYTES):
        if len(head) < MAGIC_WINDOW:
            head += chunk[: MAGIC_WINDOW - len(head)]
        size += len(chunk)
        if size > limit_bytes:
            raise UploadTooLargeError()
        digest.update(chunk)
    if size == 0:
        raise EmptyFileError()
    if PDF_MAGIC not in head:
        raise NotAPdfError()
    stream.seek(0)
    return digest.hexdigest(), size


def inspect(uploads: list[FileStorage], limit_bytes: int) -> list[IncomingFile]:
    files = []
    for upload in uploads:
        if "\x00" in (upload.filename or ""):
            # PostgreSQL cannot store NUL in text.
            raise InvalidRequestError("A filename contains a NUL character.", code="invalid_filename")
        item = IncomingFile(upload=upload, filename=(upload.filename or "upload.pdf")[:255])
        try:
            item.sha256, item.size = measure(upload.stream, limit_bytes)
        except IngestError as exc:
            item.error = exc
        files.append(item)
    return files


def fingerprint(
    files: list[IncomingFile],
    callback_url: str | None,
    force: bool,
    ocr_languages: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> str:
    """What makes two requests "the same" for an Idempotency-Key."""
    parts = [[f.filename, f.sha256, f.size, f.error.code if f.error else None] for f in files]
    request = [parts, callback_url, force] + ([ocr_languages] if ocr_languages else [])
    request += [metadata] if metadata is not None else []
    return hashlib.sha256(json.dumps(request).encode()).hexdigest()


def _live_documents(session: Session, tenant_id: str, digests: set[str]) -> dict[str, tuple[str, Job | None]]:
    """The tenant's live documents with these digests: id and latest job, by digest."""
    if not digests:
        return {}
    rows = session.execute(
        select(Document.id, Document.sha256).where(
            Document.tenant_id == tenant_id, Document.sha256.in_(digests), Document.deleted_at.is_(None)
        )
    ).all()
    return {sha: (doc_id, latest_job_of_document(session, doc_id)) for doc_id, sha in rows}


def accept(
    svc: Services,
    tenant_id: str,
    files: list[IncomingFile],
    *,
    callback_url: str | None,
    force: bool,
    ocr_languages: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> None:
    """Create the documents and jobs for the acceptable files; fills each file's outcome.

    New documents are read in `ocr_languages` (checked by the caller), else the tenant's languages,
    else the service's; a forced new job for an existing document takes `ocr_languages` when given.
    `metadata` (checked by the caller) goes the same way: on new documents, and replacing a forced
    one's; a duplicate keeps its own (PATCH changes it).
    """
    for attempt in range(2):
        try:
            _accept_once(
                svc,
                tenant_id,
                files,
                callback_url=callback_url,
                force=force,
                ocr_languages=ocr_languages,
                metadata=metadata,
            )
            return
        except IntegrityError:
            # The same bytes were uploaded concurrently and the other request won: try again,
            # which finds its document and answers "duplicate".
            for item in files:
                if item.object_key:
                    svc.storage.delete(item.object_key)
                item.object_key = item.document_id = item.job = None
                item.duplicate = item.new_job = False
            if attempt == 1:
                raise


def _accept_once(
    svc: Services,
    tenant_id: str,
    files: list[IncomingFile],
    *,
    callback_url: str | None,
    force: bool,
    ocr_languages: str | None,
    metadata: dict[str, Any] | None,
) -> None:
    valid = [f for f in files if f.error is None]
    seen: dict[str, IncomingFile] = {}
    new_files: list[IncomingFile] = []
    forced: list[IncomingFile] = []
    duplicates: list[IncomingFile] = []
    existing: dict[str, tuple[str, Job | None]] = {}
    try:
        # One transaction for the lookup, the rows and the quotas: the tenant row share-locked first
        # (a reindex flip waits for these jobs), the counters written last (operations.reserve).
        with svc.db.transaction() as session:
            tenant = operations.lock_tenant(session, tenant_id)
            existing = _live_documents(session, tenant_id, {f.sha256 for f in valid})
            for item in valid:
                if item.sha256 in existing:
                    (forced if force else duplicates).append(item)
                    item.document_id, item.duplicate = existing[item.sha256][0], True
                elif item.sha256 in seen:
                    duplicates.append(item)  # the same bytes twice in one request
                else:
                    seen[item.sha256] = item
                    new_files.append(item)
            languages = ocr_languages or tenant.ocr_languages or svc.settings.ocr_languages
            rows = []
            for item in new_files:
                item.document_id = new_id()
                item.object_key = f"documents/{tenant_id}/{item.document_id}.pdf"
                svc.storage.put_file(item.object_key, item.upload.stream, size=item.size)
                rows.append(
                    dict(
                        id=item.document_id,
                        tenant_id=tenant_id,
                        filename=item.filename,
                        sha256=item.sha256,
                        size_bytes=item.size,
                        object_key=item.object_key,
                        ocr_languages=languages,
                        metadata=metadata or {},
                        created_at=utcnow(),
                    )
                )
            if rows:
                session.execute(insert(Document.__table__), rows)
                job_counters.note(session, tenant_id, stored_bytes=sum(f.size for f in new_files))
            if forced and (ocr_languages or metadata is not None):
                changes: dict[str, Any] = {"ocr_languages": ocr_languages} if ocr_languages else {}
                changes.update({"user_metadata": metadata} if metadata is not None else {})
                session.execute(
                    update(Document)
                    .where(Document.id.in_([f.document_id for f in forced]))
                    .values(**changes)
                    .execution_options(synchronize_session=False)
                )
            targets = [*new_files, *forced]
            job_rows = operations.create_ingest_jobs(
                session, tenant, [str(item.document_id) for item in targets], callback_url=callback_url
            )
            for item, job_row in zip(targets, job_rows, strict=True):
                item.job = job_body(job_row)
                item.new_job = True
            # The quota counters last, right before the commit: their row lock is this tenant's
            # uploads' one meeting point, so the claim is taken before it.
            outbox.claim_added(session)
            operations.reserve(session, tenant, svc.settings)
    except BaseException:
        for item in new_files:
            if item.object_key:
                svc.storage.delete(item.object_key)
        raise
    for item in duplicates:
        if item.sha256 not in existing:  # a repeat within the request: point at its first copy
            first = seen[item.sha256]
            item.document_id, item.job = first.document_id, first.job
        else:
            job = existing[item.sha256][1]
            item.job = job_body(job) if job is not None else None
        item.duplicate = True
