"""Accepting uploaded files: store the new ones, create their jobs at once.

Each file part arrives already hashed, counted and checked (gateway/upload_form.py), its bytes in an
open object writer under a key chosen before they arrived. Documents, jobs and outbox rows for the
whole request commit in one transaction that also holds the tenant's quota check, and the outbox is
published after it; a new file's writer commits inside it, and every other writer (duplicates, and
all of them on a failure) is aborted, so only an accepted file becomes an object.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from gateway import hot_locks
from gateway.job_queries import latest_job_of_document
from gateway.services import Services
from shared import insert_batch, job_counters, operations, outbox
from shared.errors import DatabaseUnavailableError, IngestError, InvalidRequestError
from shared.job_representation import job_body
from shared.models import Document, Job, utcnow
from shared.storage import ObjectStorage, ObjectWriter

logger = logging.getLogger(__name__)


@dataclass
class IncomingFile:
    filename: str
    # Chosen before the bytes arrived: the document's id and object key should the file be new.
    planned_id: str = ""
    object_key: str = field(default="", repr=False)
    writer: ObjectWriter | None = field(default=None, repr=False)
    sha256: str = ""
    size: int = 0
    error: IngestError | None = None
    stored: bool = False  # the writer committed: the object exists under `object_key`
    # Filled in while accepting.
    document_id: str | None = None
    job: dict[str, Any] | None = None
    duplicate: bool = False
    new_job: bool = False

    def abort(self) -> None:
        """Drop the bytes written, if the writer is still open."""
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.abort()


def refuse_nul_filenames(nul_filename: bool) -> None:
    if nul_filename:
        # PostgreSQL cannot store NUL in text.
        raise InvalidRequestError("A filename contains a NUL character.", code="invalid_filename")


def discard(storage: ObjectStorage, files: list[IncomingFile]) -> None:
    """Leave no object behind for these files: abort open writers, delete committed objects. A
    failure here is logged, not raised, so the error that led here is the one answered."""
    for item in files:
        try:
            item.abort()
            if item.stored:
                storage.delete(item.object_key)
                item.stored = False
        except Exception:
            logger.warning(
                "could not remove the object of a refused upload: %s", item.object_key, exc_info=True
            )


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

    def attempt() -> None:
        _accept_once(
            svc,
            tenant_id,
            files,
            callback_url=callback_url,
            force=force,
            ocr_languages=ocr_languages,
            metadata=metadata,
        )

    try:
        try:
            # A transaction whose connection died with the server (a restart, a failover) before
            # its COMMIT is run once more from its start (shared/db.py), a new file's object kept.
            svc.db.retrying(attempt)
        except IntegrityError:
            # The same bytes were uploaded concurrently and the other request won: try again,
            # which finds its document and answers "duplicate" (and removes this copy's object).
            # An object stored for a file that is still new is kept for the second try.
            attempt()
    except DatabaseUnavailableError as exc:
        if exc.maybe_committed:
            # The connection was lost during the COMMIT: the documents may exist, so their objects
            # stay (the client's retry finds them as duplicates); only open writers are dropped.
            for item in files:
                item.abort()
        else:
            discard(svc.storage, files)
        raise
    except BaseException:
        discard(svc.storage, files)
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
    for item in files:  # a second try starts from nothing of the first but its stored objects
        item.document_id = item.job = None
        item.duplicate = item.new_job = False
    valid = [f for f in files if f.error is None]
    seen: dict[str, IncomingFile] = {}
    new_files: list[IncomingFile] = []
    forced: list[IncomingFile] = []
    duplicates: list[IncomingFile] = []
    existing: dict[str, tuple[str, Job | None]] = {}
    # One transaction for the lookup, the rows and the quotas: the tenant row share-locked first
    # (a reindex flip waits for these jobs), the counters written last (operations.reserve).
    with svc.db.transaction() as session:
        tenant, found = operations.lock_tenant_finding(session, tenant_id, {f.sha256 for f in valid})
        existing = {sha: (doc_id, latest_job_of_document(session, doc_id)) for sha, doc_id in found.items()}
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
            item.document_id = item.planned_id
            if not item.stored:  # else stored by a first try that lost a race on another file
                assert item.writer is not None
                item.writer.commit()
                item.writer, item.stored = None, True
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
            insert_batch.add(session, Document.__table__, rows)
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
        session.flush()
        # The COMMIT leaves right after the UPDATE's answer, before anything yields to another request.
        with hot_locks.holding():
            operations.reserve(session, tenant, svc.settings)
    # Bytes already stored under another document never become an object of their own (only now:
    # a second try may find a document that the first found gone).
    discard(svc.storage, [*duplicates, *forced])
    for item in duplicates:
        if item.sha256 not in existing:  # a repeat within the request: point at its first copy
            first = seen[item.sha256]
            item.document_id, item.job = first.document_id, first.job
        else:
            job = existing[item.sha256][1]
            item.job = job_body(job) if job is not None else None
        item.duplicate = True
