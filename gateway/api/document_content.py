"""A document's own content: the chunks and page texts of the version search serves, and the original file.

Every answer is scoped to the caller's tenant (another tenant's document is as unknown as a made-up id).
The chunks and texts come from the artifacts of the job `gateway.document_versions.serving_job` names,
the same rule the document's `indexed` field shows; the file is streamed from object storage.
"""

from __future__ import annotations

from typing import Any

from flask import Response, g
from sqlalchemy import select

from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.content_disposition import attachment
from gateway.document_versions import artifact_key_of, serving_job
from gateway.pagination import decode_cursor, encode_cursor
from gateway.schemas.common import ListArgsSchema
from gateway.schemas.document_content import ChunkListSchema, DocumentTextSchema
from gateway.services import services
from shared.artifacts import load_items
from shared.errors import ConflictError, NotFoundError, ObjectNotFoundError
from shared.models import Document, Job

blp = Blueprint("document_content", __name__, description="Read a document's indexed content and original")

PDF_BINARY = {"type": "string", "format": "binary"}


def _own_live_document(session: Any, document_id: str) -> Document:
    document = session.scalars(
        select(Document).where(Document.id == document_id, Document.tenant_id == g.caller.tenant_id)
    ).first()
    if document is None:
        raise NotFoundError("No such document.")
    if document.deleted_at is not None:
        raise NotFoundError("The document was deleted.", code="document_deleted")
    return document  # type: ignore[no-any-return]


def _serving(session: Any, document: Document) -> Job:
    job = serving_job(session, document)
    if job is None:
        raise ConflictError(
            "No version of the document is indexed yet: its job has not finished.", code="not_indexed"
        )
    return job


def _artifact(key: str, kind: str) -> list[dict[str, Any]]:
    try:
        data = services().storage.get_bytes(key)
    except ObjectNotFoundError:
        raise NotFoundError("The indexed version's content is gone.", code="content_not_found") from None
    return load_items(kind, data)


@blp.route("/v1/documents/<document_id>/chunks", methods=["GET"])
@tenant_required
@blp.arguments(ListArgsSchema, location="query", as_kwargs=True)
@blp.response(200, ChunkListSchema)
def list_chunks(document_id: str, limit: int, cursor: str | None = None) -> Any:
    """The chunks of the indexed version, in document order: each one's pages, sections and text.
    409 `not_indexed` while no version is indexed; 409 `indexed_version_changed` when a cursor's
    version has since been replaced (start again without a cursor)."""
    svc = services()
    with svc.db.transaction() as session:
        job = _serving(session, _own_live_document(session, document_id))
        key = artifact_key_of(session, job, "chunk")
        job_id, index_version = job.id, job.index_version
    after = -1
    if cursor is not None:
        after, cursor_job = decode_cursor(cursor)
        if cursor_job != job_id:
            raise ConflictError(
                "The indexed version changed since this cursor was given out.", code="indexed_version_changed"
            )
    chunks = [c for c in _artifact(key, "chunks") if int(c["index"]) > after]
    page = chunks[:limit]
    return {
        "job_id": job_id,
        "index_version": index_version,
        "items": [_chunk_body(c) for c in page],
        "next_cursor": encode_cursor(int(page[-1]["index"]), job_id) if len(chunks) > limit else None,
    }


def _chunk_body(chunk: dict[str, Any]) -> dict[str, Any]:
    heading = chunk.get("heading")
    return {
        "index": int(chunk["index"]),
        "page_start": int(chunk["page_start"]),
        "page_end": int(chunk["page_end"]),
        "section": heading,
        "sections": list(chunk.get("sections") or ([heading] if heading else [])),
        "token_count": int(chunk["token_count"]),
        "text": str(chunk["text"]),
    }


@blp.route("/v1/documents/<document_id>/text", methods=["GET"])
@tenant_required
@blp.response(200, DocumentTextSchema)
def get_text(document_id: str) -> Any:
    """The text of every page of the indexed version, and whether it came from the PDF's text layer
    or from OCR. 409 `not_indexed` while no version is indexed."""
    svc = services()
    with svc.db.transaction() as session:
        job = _serving(session, _own_live_document(session, document_id))
        key = artifact_key_of(session, job, "ocr")
        job_id, index_version = job.id, job.index_version
    pages = _artifact(key, "pages")
    return {
        "job_id": job_id,
        "index_version": index_version,
        "pages": [{"number": int(p["number"]), "source": p["source"], "text": str(p["text"])} for p in pages],
    }


@blp.route("/v1/documents/<document_id>/file", methods=["GET"])
@tenant_required
@blp.response(200, PDF_BINARY, content_type="application/pdf", description="The original PDF, as uploaded")
def download_file(document_id: str) -> Any:
    """The original file as uploaded, streamed (available from the upload on, indexed or not)."""
    svc = services()
    with svc.db.transaction() as session:
        document = _own_live_document(session, document_id)
        key, filename, size, sha256 = (
            document.object_key,
            document.filename,
            document.size_bytes,
            document.sha256,
        )
    # Opened before the answer starts, so a missing object is an error answer, not a cut-off stream.
    try:
        pieces = svc.storage.stream(key)
    except ObjectNotFoundError:
        raise NotFoundError("The document's file is gone.", code="file_not_found") from None
    headers = {
        "Content-Disposition": attachment(filename),
        "Content-Length": str(size),
        "ETag": f'"{sha256}"',
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, no-store",
    }
    return Response(pieces, status=200, mimetype="application/pdf", headers=headers, direct_passthrough=True)
