"""Reindexing a tenant: a job per document into a new index version, flipped when every one is in.

Shared by the command line, the admin API and the maintenance loop, so all act through the database
the same way; functions take the caller's session and never commit. A document's state is read from
its jobs: done when a reindex job for the target version completed after its latest upload, pending
while one runs, waiting while an upload of it runs (its catch-up job follows), failed when the
target job failed. A job starts at the reindex's first stage, or earlier when the stored pages or
chunks were made by older code than this; the stages it skips are recorded as done, pointing at the
artifacts of the job it reindexes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from shared import jobs, outbox
from shared.embeddings import model_spec, settings_for_model
from shared.errors import ConflictError, InvalidRequestError
from shared.jobs import ACTIVE
from shared.models import (
    Document,
    Job,
    JobKind,
    JobStage,
    JobStatus,
    Reindex,
    ReindexStatus,
    StageStatus,
    Tenant,
    utcnow,
)
from shared.queue import STAGES
from shared.settings import Settings
from shared.versions import CHUNKER_VERSION, EXTRACTOR_VERSION

FROM_STAGES = ("embed", "chunk", "extract")
R = ReindexStatus
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


def active_model(session: Session, settings: Settings, tenant: Tenant) -> tuple[str, int]:
    """(model, dimension) of the tenant's active index version."""
    if tenant.active_embedding_model and tenant.active_embedding_dim:
        return tenant.active_embedding_model, tenant.active_embedding_dim
    return model_spec(settings)


def running_reindex(session: Session, tenant_id: str) -> Reindex | None:
    return session.scalars(
        select(Reindex).where(Reindex.tenant_id == tenant_id, Reindex.status == R.RUNNING.value)
    ).first()


def latest_reindex(session: Session, tenant_id: str) -> Reindex | None:
    return session.scalars(
        select(Reindex).where(Reindex.tenant_id == tenant_id).order_by(Reindex.created_at.desc())
    ).first()


def target_of(
    settings: Settings, session: Session, tenant: Tenant, model: str | None, dimension: int | None
) -> tuple[str, int]:
    """The (model, dimension) a reindex asked for `model` and `dimension` writes with."""
    current = active_model(session, settings, tenant)
    if model is None or model == current[0]:
        model = current[0]
        if dimension is None:
            return current
    try:
        return model, model_spec(settings_for_model(settings, model, dimension))[1]
    except ValueError as exc:
        raise InvalidRequestError(str(exc), code="invalid_embedding_model") from None


def start(
    session: Session,
    settings: Settings,
    tenant_id: str,
    *,
    model: str | None = None,
    dimension: int | None = None,
    from_stage: str = "embed",
) -> tuple[Reindex, int]:
    """Start the tenant's reindex, or resume the one running (or the last one that failed with the
    same target): jobs are created only for documents without a finished or running one.
    Returns the reindex and how many jobs were created."""
    if from_stage not in FROM_STAGES:
        raise InvalidRequestError(f"FROM must be one of {', '.join(FROM_STAGES)}.", code="invalid_from_stage")
    tenant = session.scalars(select(Tenant).where(Tenant.id == tenant_id).with_for_update()).one()
    target = target_of(settings, session, tenant, model, dimension)
    reindex = running_reindex(session, tenant_id)
    if reindex is not None and (reindex.embedding_model, reindex.embedding_dim) != target:
        raise ConflictError(
            "Another reindex of this tenant is running (to another model).", code="reindex_running"
        )
    if reindex is None:
        last = latest_reindex(session, tenant_id)
        if (
            last is not None
            and last.status == R.FAILED.value
            and last.source_version == tenant.active_index_version
            and (last.embedding_model, last.embedding_dim) == target
        ):
            reindex = last
            reindex.status, reindex.finished_at, reindex.failures = R.RUNNING.value, None, None
        else:
            highest = session.scalar(
                select(func.max(Reindex.target_version)).where(Reindex.tenant_id == tenant_id)
            )
            source = active_model(session, settings, tenant)
            reindex = Reindex(
                tenant_id=tenant_id,
                source_version=tenant.active_index_version,
                target_version=max(tenant.active_index_version, highest or 0) + 1,
                source_model=source[0],
                source_dim=source[1],
                embedding_model=target[0],
                embedding_dim=target[1],
                from_stage=from_stage,
                status=R.RUNNING.value,
            )
            session.add(reindex)
        session.flush()
    created = ensure_jobs(session, reindex, retry_failed=True)
    return reindex, created


def plan(
    session: Session,
    settings: Settings,
    tenant_id: str,
    *,
    model: str | None = None,
    dimension: int | None = None,
    from_stage: str = "embed",
) -> dict[str, Any]:
    """What `start` would do, without writing anything (a dry run)."""
    tenant = session.get(Tenant, tenant_id)
    assert tenant is not None
    target = target_of(settings, session, tenant, model, dimension)
    running = running_reindex(session, tenant_id)
    probe = running or Reindex(
        tenant_id=tenant_id,
        target_version=tenant.active_index_version + 1,
        embedding_model=target[0],
        embedding_dim=target[1],
        from_stage=from_stage,
    )
    states = document_states(session, probe)
    starts = Counter(_start_stage(session, probe, s.source) for s in states.values() if s.state == "missing")
    return {
        "resumes": running is not None,
        "active_version": tenant.active_index_version,
        "active_model": list(active_model(session, settings, tenant)),
        "target_model": list(target),
        "documents": Counter(s.state for s in states.values()),
        "jobs_by_first_stage": starts,
    }


def document_states(session: Session, reindex: Reindex) -> dict[str, DocumentState]:
    """The state of each live document of the tenant for this reindex."""
    live = select(Document.id).where(Document.tenant_id == reindex.tenant_id, Document.deleted_at.is_(None))
    by_document: dict[str, list[Job]] = {doc: [] for doc in session.scalars(live)}
    rows = session.scalars(
        select(Job)
        .where(
            Job.tenant_id == reindex.tenant_id,
            Job.document_id.in_(live),
            Job.kind != JobKind.DELETE.value,
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


def ensure_jobs(session: Session, reindex: Reindex, *, retry_failed: bool = False) -> int:
    """Create the jobs of documents that have none for the target version (documents uploaded
    since the reindex started, or every document at its start); failed ones only when asked."""
    wanted = {"missing", "failed"} if retry_failed else {"missing"}
    created = 0
    for doc, state in document_states(session, reindex).items():
        if state.state in wanted and state.source is not None:
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


def _start_stage(session: Session, reindex: Reindex, source: Job | None) -> str:
    """Where a job reindexing `source` starts: the reindex's first stage, earlier when the stored
    pages or chunks come from older code or are missing."""
    if source is None or source.extractor_version != EXTRACTOR_VERSION:
        return "extract"
    stage = reindex.from_stage
    if stage == "embed" and source.chunker_version != CHUNKER_VERSION:
        stage = "chunk"
    stored = _source_stages(session, source)
    skipped = STAGES[1 : STAGES.index(stage)]
    if any(not stored.get(s) for s in skipped):
        return "extract"
    return stage


def _create_job(session: Session, reindex: Reindex, document_id: str, source: Job) -> Job:
    stage = _start_stage(session, reindex, source)
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


def advance(session: Session, reindex: Reindex) -> str:
    """One maintenance step: create catch-up jobs, record the counts, and once every document is
    final flip the tenant's active version in one UPDATE (or fail the reindex, listing the failed
    documents). Holds the tenant's row lock, so no upload creates a job for the old version
    meanwhile. Returns the reindex's status."""
    session.scalars(select(Tenant).where(Tenant.id == reindex.tenant_id).with_for_update()).one()
    session.refresh(reindex)
    if reindex.status != R.RUNNING.value:
        return reindex.status
    ensure_jobs(session, reindex)
    now = progress(session, reindex)
    reindex.total, reindex.done, reindex.failed = now.total, now.done, now.failed
    if not now.final:
        return reindex.status
    if now.failed:
        reindex.status, reindex.failures, reindex.finished_at = R.FAILED.value, now.failures, utcnow()
        return reindex.status
    flipped = session.execute(
        update(Tenant)
        .where(Tenant.id == reindex.tenant_id, Tenant.active_index_version == reindex.source_version)
        .values(
            active_index_version=reindex.target_version,
            active_embedding_model=reindex.embedding_model,
            active_embedding_dim=reindex.embedding_dim,
        )
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    if not flipped:
        reindex.status, reindex.finished_at = R.CANCELLED.value, utcnow()
        reindex.failures = [{"error_code": "active_version_changed"}]
        return reindex.status
    reindex.status, reindex.flipped_at, reindex.finished_at = R.FLIPPED.value, utcnow(), utcnow()
    return reindex.status


def collections_of(session: Session, tenant_id: str) -> set[tuple[str, int]]:
    """Every (model, dimension) the tenant's points may live in."""
    found: set[tuple[str, int]] = set()
    for r in session.scalars(select(Reindex).where(Reindex.tenant_id == tenant_id)):
        found.update({(r.source_model, r.source_dim), (r.embedding_model, r.embedding_dim)})
    return found
