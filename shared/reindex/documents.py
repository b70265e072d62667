"""A reindex's view of a tenant's documents, and the jobs that bring each into the target version.

A document's state is read from its jobs: done when a reindex job for the target version completed
after its latest upload, pending while one runs, waiting while an upload of it runs (its catch-up
job follows), failed when the target job failed. A job starts at the reindex's first stage, or
earlier when the stored pages or chunks were made by older code than this or an artifact it would
reuse is missing (`start_stage` says why, and the dry run counts the reasons); the stages it skips are
recorded as done, pointing at the artifacts of the job it reindexes. Functions take the caller's
session and never commit.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared import jobs, outbox
from shared.jobs import ACTIVE
from shared.models import Document, Job, JobKind, JobStage, JobStatus, Reindex, StageStatus, utcnow
from shared.pipeline import reused_inputs
from shared.queue import STAGES
from shared.versions import CHUNKER_VERSION, EXTRACTOR_VERSION

logger = logging.getLogger(__name__)

ACTIVE_VALUES = {s.value for s in ACTIVE}


@dataclass
class DocumentState:
    state: str  # done, pending, waiting, failed, missing, unindexed
    source: Job | None = None
    job: Job | None = None


@dataclass
class Progress:
    """Where a reindex stands, counted over the tenant's live documents that are indexed."""

    total: int = 0
    done: int = 0
    failed: int = 0
    by_state: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final(self) -> bool:
        return self.done + self.failed == self.total


def document_states(session: Session, reindex: Reindex) -> dict[str, DocumentState]:
    """The state of each live document of the tenant for this reindex."""
    live = select(Document.id).where(Document.tenant_id == reindex.tenant_id, Document.deleted_at.is_(None))
    by_document: dict[str, list[Job]] = {doc: [] for doc in session.scalars(live)}
    rows = session.scalars(
        select(Job)
        .where(
            Job.tenant_id == reindex.tenant_id,
            Job.document_id.in_(live),
            # Neither makes content a reindex could start from.
            Job.kind.notin_([JobKind.DELETE.value, JobKind.METADATA.value]),
        )
        .order_by(Job.created_at)
    )
    for job in rows:
        by_document[job.document_id].append(job)
    return {doc: _state(reindex, doc_jobs) for doc, doc_jobs in by_document.items()}


def _state(reindex: Reindex, doc_jobs: list[Job]) -> DocumentState:
    uploads = [j.created_at for j in doc_jobs if j.kind == JobKind.INGEST.value]
    since = max(uploads) if uploads else None
    target = [
        j
        for j in doc_jobs
        if j.kind == JobKind.REINDEX.value
        and j.index_version == reindex.target_version
        and (since is None or j.created_at >= since)
    ]
    others = [j for j in doc_jobs if j not in target]
    if any(j.status == JobStatus.COMPLETED.value for j in target):
        return DocumentState("done")
    if any(j.status in ACTIVE_VALUES for j in target):
        return DocumentState("pending")
    if any(j.status in ACTIVE_VALUES for j in others):
        return DocumentState("waiting")
    source = next((j for j in reversed(others) if j.status == JobStatus.COMPLETED.value), None)
    if target:
        return DocumentState("failed", source=source, job=target[-1])
    return DocumentState("missing", source=source) if source is not None else DocumentState("unindexed")


def progress(session: Session, reindex: Reindex) -> Progress:
    states = document_states(session, reindex)
    result = Progress(by_state=Counter(s.state for s in states.values()))
    result.total = sum(n for state, n in result.by_state.items() if state != "unindexed")
    result.done = result.by_state["done"]
    result.failed = result.by_state["failed"]
    result.failures = [
        {
            "document_id": doc,
            "job_id": s.job.id,
            "status": s.job.status,
            "error_code": s.job.error_code,
            "error_message": s.job.error_message,
        }
        for doc, s in states.items()
        if s.state == "failed" and s.job is not None
    ]
    return result


def ensure_jobs(session: Session, reindex: Reindex, *, window: int, retry_failed: bool = False) -> int:
    """Create jobs for documents that have none for the target version (every document, in turn, and
    those uploaded since the reindex started), keeping at most `window` unfinished at once, so the
    bulk queue stays short and no job waits behind thousands; failed ones (all of them) only when
    asked. Returns how many were created."""
    states = document_states(session, reindex)
    room = max(0, window - sum(1 for s in states.values() if s.state == "pending"))
    created = 0
    for doc, state in states.items():
        if state.source is None:
            continue
        if (state.state == "missing" and created < room) or (state.state == "failed" and retry_failed):
            _create_job(session, reindex, doc, state.source)
            created += 1
    return created


def _source_stages(session: Session, source: Job) -> dict[str, str | None]:
    rows = session.execute(
        select(JobStage.stage, JobStage.artifact_key).where(
            JobStage.job_id == source.id, JobStage.status == StageStatus.DONE.value
        )
    ).all()
    return {stage: key for stage, key in rows}


REQUESTED = "as asked"


@dataclass(frozen=True)
class Start:
    """Where a job reindexing a document starts, and why there: `REQUESTED`, or the reason it starts
    earlier than the reindex asked. `missing`: the stages whose artifact it would reuse and found
    no record of."""

    stage: str
    reason: str = REQUESTED
    missing: tuple[str, ...] = ()


def start_stage(session: Session, reindex: Reindex, source: Job | None) -> Start:
    """Where a job reindexing `source` starts: the reindex's first stage, earlier when the stored
    pages or chunks come from older code, its vectors from another model, or an artifact that stage
    and the later ones read is missing."""
    if source is None:
        return Start("extract", "no earlier job to reuse")
    if source.extractor_version != EXTRACTOR_VERSION:
        return Start("extract", "pages from an older extractor")
    start = Start(reindex.from_stage)
    if start.stage == "index" and (source.embedding_model, source.embedding_dim) != (
        reindex.embedding_model,
        reindex.embedding_dim,
    ):
        start = Start("embed", "vectors from another model")
    if start.stage in ("embed", "index") and source.chunker_version != CHUNKER_VERSION:
        start = Start("chunk", "chunks from an older chunker")
    stored = _source_stages(session, source)
    missing = tuple(s for s in reused_inputs(start.stage) if not stored.get(s))
    if missing:
        return Start("extract", f"no stored {', '.join(missing)} artifact", missing)
    return start


def _create_job(session: Session, reindex: Reindex, document_id: str, source: Job) -> Job:
    start = start_stage(session, reindex, source)
    if start.reason != REQUESTED:
        # A missing artifact is a surprise that costs a full re-extract; a change of code or model is not.
        level = logging.WARNING if start.missing else logging.INFO
        logger.log(
            level,
            "reindex %s: document %s starts at %s, not %s (%s)",
            reindex.id,
            document_id,
            start.stage,
            reindex.from_stage,
            start.reason,
        )
    stage = start.stage
    skipped = STAGES[: STAGES.index(stage)]
    stored = _source_stages(session, source)
    job = Job(
        tenant_id=reindex.tenant_id,
        document_id=document_id,
        kind=JobKind.REINDEX.value,
        index_version=reindex.target_version,
        embedding_model=reindex.embedding_model,
        embedding_dim=reindex.embedding_dim,
        pages=source.pages,
        ocr_pages=source.ocr_pages if "extract" in skipped else 0,
        ocr_pages_dropped=source.ocr_pages_dropped if "ocr" in skipped else 0,
        chunks=source.chunks if "chunk" in skipped else 0,
        extractor_version=source.extractor_version if "extract" in skipped else None,
        chunker_version=source.chunker_version if "chunk" in skipped else None,
    )
    session.add(job)
    jobs.record_created(session, job)
    now = utcnow()
    for name in skipped:
        session.add(
            JobStage(
                job_id=job.id,
                stage=name,
                status=StageStatus.DONE.value,
                attempts=0,
                started_at=now,
                finished_at=now,
                artifact_key=stored.get(name),
            )
        )
    outbox.add_message(session, job.id, stage)
    return job
