"""Documents: upload (202 with a job at once), list, read, change the metadata of and delete the
caller's documents."""

from __future__ import annotations

from typing import Any

from flask import g, request, url_for
from sqlalchemy import select

from gateway import idempotency, request_checks, upload_form, uploads
from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.idempotency import StoredResponse
from gateway.job_queries import latest_job_of_document
from gateway.pagination import next_cursor, page
from gateway.representations import document_body
from gateway.schemas.common import ListArgsSchema
from gateway.schemas.documents import (
    DocumentListSchema,
    DocumentSchema,
    IdempotencyHeaderSchema,
    MetadataUpdateSchema,
    UploadFormSchema,
    UploadQuerySchema,
    UploadResponseSchema,
)
from gateway.schemas.jobs import JobSchema
from gateway.services import services
from gateway.upload_form import UploadForm
from shared import document_metadata, ocr_languages, operations
from shared.errors import IngestError, InvalidRequestError, NotFoundError, UnsupportedMediaTypeError
from shared.job_representation import job_body
from shared.models import Document
from shared.webhooks.callback_urls import check_setting

blp = Blueprint("documents", __name__, description="Upload and manage PDF documents")

UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": UploadFormSchema,
            # Each file part is a PDF; the metadata part is a JSON text, the form a generated client
            # sends an object in.
            "encoding": {
                "file": {"contentType": "application/pdf"},
                "metadata": {"contentType": "application/json"},
            },
        }
    },
}


def _callback_url(form: UploadForm) -> str | None:
    """The job's callback URL, refused unless https and public (or allow-listed in settings)."""
    url = form.fields.get("callback_url")
    return None if url is None else check_setting(url, services().settings)


def _ocr_languages(form: UploadForm) -> str | None:
    """The upload's OCR languages ("deu+eng"), refused (422 `unknown_ocr_language`) unless each is one
    the service offers (Settings.ocr_available_languages)."""
    value = form.fields.get("ocr_languages")
    return (
        None if value is None else ocr_languages.checked(value, services().settings.ocr_available_languages)
    )


def _metadata(form: UploadForm) -> dict[str, Any] | None:
    """The upload's metadata form field (a JSON object), refused with 400 `invalid_metadata` unless
    valid (shared/document_metadata.py); None when absent."""
    value = form.fields.get("metadata")
    return None if value is None else document_metadata.parse(value)


def _read_form(tenant_id: str, limit_bytes: int) -> UploadForm:
    """The multipart form, its files streamed into storage as it is read; 415 for any other body."""
    if not (request.mimetype or "").startswith("multipart/form-data"):
        raise UnsupportedMediaTypeError()
    svc = services()
    form = upload_form.read(
        request.stream.read,
        request.mimetype_params.get("boundary", ""),
        upload_form.planned_file(svc.storage, tenant_id),
        limit_bytes=limit_bytes,
        max_files=svc.settings.max_files_per_request,
        max_parts=request.max_form_parts or upload_form.DEFAULT_MAX_PARTS,
        max_field_bytes=request.max_form_memory_size or upload_form.DEFAULT_MAX_FIELD_BYTES,
    )
    if not form.files:
        raise upload_form.missing_file()
    return form


def _answer(files: list[uploads.IncomingFile]) -> StoredResponse:
    results = []
    for item in files:
        entry: dict[str, Any] = {"filename": item.filename, "duplicate": item.duplicate}
        if item.error is not None:
            entry["error"] = {"code": item.error.code, "message": item.error.message}
        else:
            job = item.job or {}
            entry.update(
                job_id=job.get("job_id"),
                document_id=item.document_id,
                status=job.get("status"),
                location=url_for("jobs.get_job", job_id=job["job_id"]) if job else None,
            )
        results.append(entry)
    if len(files) == 1:
        item = files[0]
        if item.error is not None:
            raise item.error
        body = {
            **(item.job or {"document_id": item.document_id}),
            "duplicate": item.duplicate,
            "results": results,
        }
        status = 202 if item.new_job else 200
        return StoredResponse(status, body, results[0].get("location"))
    if all(f.error is not None for f in files):
        raise InvalidRequestError("None of the files could be accepted.", code="no_acceptable_files")
    status = 202 if any(f.new_job for f in files) else 200
    return StoredResponse(status, {"results": results}, None)


@blp.route("/v1/documents", methods=["POST"])
@tenant_required
@blp.arguments(UploadQuerySchema, location="query", as_kwargs=True)
@blp.arguments(IdempotencyHeaderSchema, location="headers", as_kwargs=True)
@blp.doc(requestBody=UPLOAD_BODY)
@blp.response(202, UploadResponseSchema)
@blp.alt_response(200, schema=UploadResponseSchema, description="Every file was already there")
def upload_documents(force: bool, idempotency_key: str | None = None) -> Any:
    """Upload one or several PDFs; each gets a queued ingest job at once."""
    svc = services()
    tenant_id = g.caller.tenant_id
    # Before anything reads the body: the key was checked from the headers alone (401 unread).
    limit_mb = g.caller.max_upload_mb or svc.settings.max_upload_mb
    request_checks.limit_body(limit_mb)
    form = _read_form(tenant_id, limit_mb * 1024 * 1024)
    files = form.files
    try:
        callback_url = _callback_url(form)
        languages = _ocr_languages(form)
        metadata = _metadata(form)
        uploads.refuse_nul_filenames(form.nul_filename)
        stored = None
        if idempotency_key:
            stored = idempotency.claim(
                svc.db.sessions,
                tenant_id,
                idempotency_key,
                uploads.fingerprint(files, callback_url, force, languages, metadata),
            )
    except BaseException:
        uploads.discard(svc.storage, files)
        raise
    if stored is not None:
        uploads.discard(svc.storage, files)
        return _replay(stored)
    try:
        uploads.accept(
            svc,
            tenant_id,
            files,
            callback_url=callback_url,
            force=force,
            ocr_languages=languages,
            metadata=metadata,
        )
        answer = _answer(files)
    except BaseException:
        if idempotency_key:
            idempotency.release(svc.db.sessions, tenant_id, idempotency_key)
        raise
    if idempotency_key:
        idempotency.complete(svc.db.sessions, tenant_id, idempotency_key, answer)
    return _replay(answer)


def _replay(stored: StoredResponse) -> Any:
    headers = {"Location": stored.location} if stored.location else {}
    return stored.body, stored.status, headers


@blp.route("/v1/documents", methods=["GET"])
@tenant_required
@blp.arguments(ListArgsSchema, location="query", as_kwargs=True)
@blp.response(200, DocumentListSchema)
def list_documents(limit: int, cursor: str | None = None) -> Any:
    """The caller's live documents, newest first."""
    with services().db.transaction() as session:
        stmt = select(Document).where(Document.tenant_id == g.caller.tenant_id, Document.deleted_at.is_(None))
        rows = list(session.scalars(page(stmt, Document, cursor=cursor, limit=limit)))
        items = [document_body(d, latest_job_of_document(session, d.id)) for d in rows[:limit]]
        return {"items": items, "next_cursor": next_cursor(rows, limit)}


def _own_document(session: Any, document_id: str) -> Document:
    document = session.scalars(
        select(Document).where(Document.id == document_id, Document.tenant_id == g.caller.tenant_id)
    ).first()
    if document is None:
        raise NotFoundError("No such document.")
    return document  # type: ignore[no-any-return]


@blp.route("/v1/documents/<document_id>", methods=["GET"])
@tenant_required
@blp.response(200, DocumentSchema)
def get_document(document_id: str) -> Any:
    """One of the caller's documents, with its latest job."""
    with services().db.transaction() as session:
        document = _own_document(session, document_id)
        return document_body(document, latest_job_of_document(session, document.id))


@blp.route("/v1/documents/<document_id>", methods=["DELETE"])
@tenant_required
@blp.response(202, JobSchema)
def delete_document(document_id: str) -> Any:
    """Delete a document: at once it is gone from lists, and a job removes its bytes and points."""
    svc = services()
    with svc.db.transaction() as session:
        document = _own_document(session, document_id)
        try:
            job = operations.delete_document(session, document)
        except IngestError as exc:
            if exc.code == "document_deleted":
                raise NotFoundError("No such document.") from None
            raise
        body = job_body(job)
    return body, 202, {"Location": url_for("jobs.get_job", job_id=body["job_id"])}


@blp.route("/v1/documents/<document_id>", methods=["PATCH"])
@tenant_required
@blp.arguments(MetadataUpdateSchema)
@blp.response(202, JobSchema)
def change_document_metadata(args: dict[str, Any], document_id: str) -> Any:
    """Replace a document's metadata: at once on the document, and a job writes it into the payload
    of its points (no re-embedding)."""
    metadata = document_metadata.checked(args["metadata"])
    with services().db.transaction() as session:
        document = _own_document(session, document_id)
        if document.deleted_at is not None:
            raise NotFoundError("No such document.")
        body = job_body(operations.change_metadata(session, document, metadata))
    return body, 202, {"Location": url_for("jobs.get_job", job_id=body["job_id"])}
