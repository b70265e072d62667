"""Jobs: list, read, cancel and retry the caller's jobs (business states, never the broker's)."""

from __future__ import annotations

from typing import Any

from flask import g
from sqlalchemy import select

from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.job_queries import get_job as load_job
from gateway.pagination import next_cursor, page
from gateway.schemas.jobs import JobListArgsSchema, JobListSchema, JobSchema
from gateway.services import services
from shared import operations
from shared.errors import NotFoundError
from shared.job_representation import job_body
from shared.models import Job

blp = Blueprint("jobs", __name__, description="Follow and control jobs")


def _own_job(session: Any, job_id: str) -> Job:
    job = load_job(session, job_id, tenant_id=g.caller.tenant_id)
    if job is None:
        raise NotFoundError("No such job.")
    return job


@blp.route("/v1/jobs", methods=["GET"])
@tenant_required
@blp.arguments(JobListArgsSchema, location="query", as_kwargs=True)
@blp.response(200, JobListSchema)
def list_jobs(
    limit: int, cursor: str | None = None, status: str | None = None, kind: str | None = None
) -> Any:
    """The caller's jobs, newest first, optionally only those in one status or of one kind."""
    stmt = select(Job).where(Job.tenant_id == g.caller.tenant_id)
    if status:
        stmt = stmt.where(Job.status == status)
    if kind:
        stmt = stmt.where(Job.kind == kind)
    with services().db.transaction() as session:
        rows = list(session.scalars(page(stmt, Job, cursor=cursor, limit=limit)))
        return {"items": [job_body(j) for j in rows[:limit]], "next_cursor": next_cursor(rows, limit)}


@blp.route("/v1/jobs/<job_id>", methods=["GET"])
@tenant_required
@blp.response(200, JobSchema)
def get_job(job_id: str) -> Any:
    """The business state of one job: status, stage, progress, counters, error."""
    with services().db.transaction() as session:
        return job_body(_own_job(session, job_id))


@blp.route("/v1/jobs/<job_id>/cancel", methods=["POST"])
@tenant_required
@blp.response(202, JobSchema)
def cancel_job(job_id: str) -> Any:
    """Cancel a job: a queued one at once, a running one at its next stage boundary."""
    with services().db.transaction() as session:
        return job_body(operations.cancel_job(session, _own_job(session, job_id)))


@blp.route("/v1/jobs/<job_id>/retry", methods=["POST"])
@tenant_required
@blp.response(202, JobSchema)
def retry_job(job_id: str) -> Any:
    """Run a failed or dead-lettered job again from the stage it stopped at."""
    svc = services()
    with svc.db.transaction() as session:
        return job_body(operations.retry_job(session, _own_job(session, job_id)))
