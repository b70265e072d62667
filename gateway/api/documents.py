"""POST /v1/documents: stream an upload into storage and queue its ingest job, answering 202."""

from __future__ import annotations

import hashlib
from typing import IO, Any
from urllib.parse import urlsplit

from flask import Blueprint, g, jsonify, request, url_for
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from gateway.auth import tenant_required
from gateway.representations import job_body
from gateway.services import services
from shared import jobs, outbox
from shared.errors import EmptyFileError, InvalidRequestError, NotAPdfError, UploadTooLargeError
from shared.models import Document, Job, JobKind, Tenant, new_id
from shared.queue import STAGES

bp = Blueprint("documents", __name__)

READ_BYTES = 1024 * 1024
PDF_MAGIC = b"%PDF-"
# A PDF's header may be preceded by a little junk; readers accept it within the first 1 KiB.
MAGIC_WINDOW = 1024


def _measure(stream: IO[bytes], limit: int) -> tuple[str, int]:
    """SHA-256 and size of the uploaded file, checking the magic and the size limit as it reads."""
    digest = hashlib.sha256()
    size = 0
    head = b""
    while chunk := stream.read(READ_BYTES):
        if len(head) < MAGIC_WINDOW:
            head += chunk[: MAGIC_WINDOW - len(head)]
        size += len(chunk)
        if size > limit:
            raise UploadTooLargeError()
        digest.update(chunk)
    if size == 0:
        raise EmptyFileError()
    if PDF_MAGIC not in head:
        raise NotAPdfError()
    stream.seek(0)
    return digest.hexdigest(), size


def _callback_url() -> str | None:
    raw = request.form.get("callback_url") or None
    if raw is None:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequestError(
            "callback_url must be an absolute http(s) URL.", code="invalid_callback_url"
        )
    return raw


@bp.post("/v1/documents")
@tenant_required
def upload_document() -> Any:
    svc = services()
    upload = request.files.get("file")
    if upload is None or (not upload.filename and not upload.stream):
        raise InvalidRequestError("Send the PDF as the multipart field 'file'.", code="missing_file")
    callback_url = _callback_url()
    tenant_id = g.caller.tenant_id
    with svc.db.transaction() as session:
        tenant = session.get(Tenant, tenant_id)
        limit_mb = (tenant.max_upload_mb if tenant else None) or svc.settings.max_upload_mb
    sha256, size = _measure(upload.stream, limit_mb * 1024 * 1024)

    existing = _live_document(tenant_id, sha256)
    if existing is not None:
        return _duplicate_response(*existing)

    document_id = new_id()
    object_key = f"documents/{tenant_id}/{document_id}.pdf"
    svc.storage.put_file(object_key, upload.stream)
    try:
        with svc.db.transaction() as session:
            session.add(
                Document(
                    id=document_id,
                    tenant_id=tenant_id,
                    filename=(upload.filename or "upload.pdf")[:255],
                    sha256=sha256,
                    size_bytes=size,
                    object_key=object_key,
                )
            )
            job = Job(
                tenant_id=tenant_id,
                document_id=document_id,
                kind=JobKind.INGEST.value,
                callback_url=callback_url,
            )
            session.add(job)
            jobs.record_created(session, job)
            message = outbox.add_message(session, job.id, STAGES[0])
            body = job_body(job)
    except IntegrityError:
        # The same bytes were uploaded concurrently and the other request won.
        svc.storage.delete(object_key)
        existing = _live_document(tenant_id, sha256)
        if existing is None:
            raise
        return _duplicate_response(*existing)
    svc.relay.publish([message.id])
    response = jsonify(body)
    response.status_code = 202
    response.headers["Location"] = url_for("jobs.get_job", job_id=body["job_id"])
    return response


def _live_document(tenant_id: str, sha256: str) -> tuple[Document, Job | None] | None:
    with services().db.transaction() as session:
        document = session.scalars(
            select(Document).where(
                Document.tenant_id == tenant_id, Document.sha256 == sha256, Document.deleted_at.is_(None)
            )
        ).first()
        if document is None:
            return None
        job = session.scalars(
            select(Job).where(Job.document_id == document.id).order_by(Job.created_at.desc())
        ).first()
        return document, job


def _duplicate_response(document: Document, job: Job | None) -> Any:
    """The same bytes again: the existing document and its latest job, no new work."""
    body: dict[str, Any] = job_body(job) if job is not None else {"document_id": document.id}
    body["duplicate"] = True
    response = jsonify(body)
    response.status_code = 200
    if job is not None:
        response.headers["Location"] = url_for("jobs.get_job", job_id=job.id)
    return response
