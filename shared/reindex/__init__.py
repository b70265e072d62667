"""Reindexing a tenant: a job per document into a new index version, flipped when every one is in.

Shared by the command line, the admin API and the maintenance loop, so all act through the database
the same way; functions take the caller's session and never commit. The documents' states and their
jobs are in shared/reindex/documents.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from shared.embedders import model_spec, settings_for_model
from shared.errors import ConflictError, InvalidRequestError
from shared.jobs import ACTIVE
from shared.models import Job, JobKind, Reindex, ReindexStatus, Tenant, utcnow
from shared.operations import cancel_job
from shared.pipeline import FROM_STAGES
from shared.reindex.documents import (
    REQUESTED,
    Progress,
    document_states,
    ensure_jobs,
    progress,
    start_stage,
)
from shared.settings import Settings

__all__ = ["FROM_STAGES", "Progress", "advance", "cancel", "plan", "progress", "start"]

R = ReindexStatus


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


def next_version(session: Session, tenant: Tenant) -> int:
    """A version no reindex of the tenant has used."""
    highest = session.scalar(select(func.max(Reindex.target_version)).where(Reindex.tenant_id == tenant.id))
    return max(tenant.active_index_version, highest or 0) + 1


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
            source = active_model(session, settings, tenant)
            reindex = Reindex(
                tenant_id=tenant_id,
                source_version=tenant.active_index_version,
                target_version=next_version(session, tenant),
                source_model=source[0],
                source_dim=source[1],
                embedding_model=target[0],
                embedding_dim=target[1],
                from_stage=from_stage,
                status=R.RUNNING.value,
            )
            session.add(reindex)
        session.flush()
    created = ensure_jobs(session, reindex, window=settings.reindex_window, retry_failed=True)
    now = progress(session, reindex)
    reindex.total, reindex.done, reindex.failed = now.total, now.done, now.failed
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
        target_version=next_version(session, tenant),
        embedding_model=target[0],
        embedding_dim=target[1],
        from_stage=from_stage,
    )
    states = document_states(session, probe)
    starts = [start_stage(session, probe, s.source) for s in states.values() if s.state == "missing"]
    return {
        "resumes": running is not None,
        "active_version": tenant.active_index_version,
        "active_model": list(active_model(session, settings, tenant)),
        "target_model": list(target),
        "documents": Counter(s.state for s in states.values()),
        "jobs_by_first_stage": Counter(start.stage for start in starts),
        # Why some start earlier than asked (an older extractor, another model, a missing artifact...).
        "earlier_than_asked": Counter(start.reason for start in starts if start.reason != REQUESTED),
    }


def advance(session: Session, reindex: Reindex, *, window: int) -> str:
    """One maintenance step: create the next jobs (at most `window` unfinished), record the counts,
    and once every document is final flip the tenant's active version in one UPDATE (or fail the
    reindex, listing the failed documents). Holds the tenant's row lock, so no upload creates a job
    for the old version meanwhile. Returns the reindex's status."""
    session.scalars(select(Tenant).where(Tenant.id == reindex.tenant_id).with_for_update()).one()
    session.refresh(reindex)
    if reindex.status != R.RUNNING.value:
        return reindex.status
    ensure_jobs(session, reindex, window=window)
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


def cancel(session: Session, tenant_id: str) -> Reindex:
    """Stop the tenant's running reindex: its unfinished jobs are cancelled, the active version stays,
    and the maintenance loop deletes the points already written for the abandoned version."""
    session.scalars(select(Tenant).where(Tenant.id == tenant_id).with_for_update()).one()
    reindex = running_reindex(session, tenant_id)
    if reindex is None:
        raise ConflictError("No reindex of this tenant is running.", code="no_reindex_running")
    unfinished = session.scalars(
        select(Job).where(
            Job.tenant_id == tenant_id,
            Job.kind == JobKind.REINDEX.value,
            Job.index_version == reindex.target_version,
            Job.status.in_([s.value for s in ACTIVE]),
        )
    )
    for job in unfinished:
        cancel_job(session, job)
    reindex.status, reindex.finished_at = R.CANCELLED.value, utcnow()
    return reindex


def collections_of(session: Session, tenant_id: str) -> set[tuple[str, int]]:
    """Every (model, dimension) the tenant's points may live in."""
    found: set[tuple[str, int]] = set()
    for r in session.scalars(select(Reindex).where(Reindex.tenant_id == tenant_id)):
        found.update({(r.source_model, r.source_dim), (r.embedding_model, r.embedding_dim)})
    return found
