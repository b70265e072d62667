"""The metadata stage: write a document's newest metadata into the payload of all its points.

A `metadata` job is queued by every change of a document's metadata (PATCH) and runs on the index
queue, the only one whose workers may open a local Qdrant folder. It re-reads the metadata when it
runs, and so does the index stage of an ingest or reindex job when it upserts; both write again for
as long as the metadata changed while they wrote (`settle`). Whoever writes last therefore read the
newest value after its write, so every point ends with the newest metadata, whatever the interleaving.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select

from ingest_worker.resources import Resources
from ingest_worker.runner import StageResult
from shared.job_events import JobSnapshot
from shared.models import Document, Job

logger = logging.getLogger(__name__)

# A change after every write is a client racing itself; the job its last change queued writes last.
SETTLE_ROUNDS = 5


def newest(res: Resources, document_id: str) -> dict[str, Any] | None:
    """The document's metadata now ({} when it has none); None once the document is deleted."""
    with res.db.transaction() as session:
        document = session.get(Document, document_id)
        if document is None or document.deleted_at is not None:
            return None
        return dict(document.user_metadata or {})


def settle(
    res: Resources,
    tenant_id: str,
    document_id: str,
    collections: Iterable[str],
    written: dict[str, Any] | None,
) -> None:
    """Write the document's newest metadata into its points in `collections` until the value last
    written (`written`: what the caller already wrote, None for nothing) is still the newest."""
    names = list(collections)
    for _ in range(SETTLE_ROUNDS):
        current = newest(res, document_id)
        if current is None or current == written:
            return
        for name in names:
            res.vectors.set_document_metadata(name, tenant_id, document_id, current)
        written = current
    logger.info("metadata of document %s still changing; the newest change's job applies it", document_id)


def apply_metadata(res: Resources, job: JobSnapshot) -> StageResult:
    """Idempotent: writing the newest metadata again changes nothing; a deleted document is skipped."""
    with res.db.transaction() as session:
        rows = session.execute(
            select(Job.embedding_model, Job.embedding_dim).where(Job.document_id == job.document_id)
        ).all()
    store = res.vectors
    collections = {store.collection(m, d) for m, d in rows if m is not None and d is not None}
    settle(res, job.tenant_id, job.document_id, sorted(collections), None)
    return StageResult()
