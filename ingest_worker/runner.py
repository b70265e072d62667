"""Runs one stage of one job: the state checks and transitions around a stage's work.

Each transition is its own short transaction; none is held open while the work runs. A stage that
is already done is not redone (the pipeline simply carries on); a job that is final stops the
pipeline; a cancel request is honoured before the stage starts. Errors are classified once here:
a `PermanentError` fails the job at once, anything else is retried by Dramatiq until its last
attempt, which dead-letters the job.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dramatiq.middleware import CurrentMessage

from ingest_worker.resources import Resources
from shared import jobs
from shared.errors import IngestError, PermanentError, StaleTransitionError
from shared.jobs import TERMINAL, JobSnapshot
from shared.models import Job, JobStatus, Tenant, TenantStatus
from shared.queue import HALT, pipeline_of_stage

logger = logging.getLogger(__name__)

S = JobStatus


@dataclass(frozen=True)
class StageResult:
    """What a stage reports: job counters/fields to record and where its output went."""

    fields: dict[str, Any] = field(default_factory=dict)
    artifact_key: str | None = None


StageWork = Callable[[Resources, JobSnapshot], StageResult]
CancelCleanup = Callable[[Resources, str], None]


def _is_last_attempt(max_retries: int) -> bool:
    message = CurrentMessage.get_current_message()
    retries = message.options.get("retries", 0) if message is not None else 0
    return int(retries) >= max_retries


def run_stage(
    res: Resources,
    job_id: str,
    stage: str,
    work: StageWork,
    *,
    max_retries: int,
    on_cancel: CancelCleanup,
) -> str | None:
    """Run `stage` of `job_id`; returns HALT to stop the pipeline, None to hand the job on."""
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        if job is None:
            logger.error("job %s does not exist; dropping its %s message", job_id, stage)
            return HALT
        status = JobStatus(job.status)
        if status in TERMINAL:
            logger.info("job %s is %s; %s not run", job_id, status, stage)
            return HALT
        if status == S.CANCEL_REQUESTED:
            jobs.transition(session, job_id, S.CANCELLED, expected=[S.CANCEL_REQUESTED])
            cancelled = True
        else:
            cancelled = False
            tenant = session.get(Tenant, job.tenant_id)
            if tenant is not None and tenant.status == TenantStatus.SUSPENDED.value:
                jobs.transition(
                    session,
                    job_id,
                    S.FAILED,
                    expected=[status],
                    error_code="tenant_suspended",
                    error_message="The tenant was suspended while the job ran.",
                )
                return HALT
            if not jobs.claim_stage(session, job_id, stage):
                logger.info("job %s: stage %s already done; handing on", job_id, stage)
                return None
            snapshot = jobs.start_stage(session, job_id, stage)
    if cancelled:
        on_cancel(res, job_id)
        return HALT

    try:
        result = work(res, snapshot)
    except PermanentError as exc:
        logger.info("job %s failed in %s: %s", job_id, stage, exc.code)
        _end(res, job_id, S.FAILED, exc)
        return HALT
    except Exception as exc:
        error = exc if isinstance(exc, IngestError) else IngestError()
        if _is_last_attempt(max_retries):
            logger.error("job %s: %s failed on its last attempt", job_id, stage, exc_info=True)
            _end(res, job_id, S.DEAD_LETTERED, error)
            return HALT
        logger.warning("job %s: %s failed (%s); retrying", job_id, stage, error.code, exc_info=True)
        _mark_retrying(res, job_id, error)
        raise

    with res.db.transaction() as session:
        if stage == pipeline_of_stage(stage)[-1]:
            jobs.finish_stage(session, job_id, stage, **result.fields)
            _complete(session, job_id)
        else:
            jobs.finish_stage(session, job_id, stage, artifact_key=result.artifact_key, **result.fields)
    return None


def _complete(session: Any, job_id: str) -> None:
    try:
        jobs.transition(session, job_id, S.COMPLETED, expected=[S.RUNNING], progress=100)
    except StaleTransitionError:
        # A cancel request arrived during finalize: the work is done and counted, so the job
        # completes rather than leaving the request hanging.
        jobs.transition(session, job_id, S.COMPLETED, expected=[S.CANCEL_REQUESTED], progress=100)


def _end(res: Resources, job_id: str, to: JobStatus, error: IngestError) -> None:
    with res.db.transaction() as session:
        try:
            jobs.transition(
                session,
                job_id,
                to,
                expected=[S.RUNNING, S.RETRYING, S.CANCEL_REQUESTED],
                error_code=error.code,
                error_message=error.message,
            )
        except StaleTransitionError:
            logger.info("job %s changed state before it could become %s", job_id, to)


def _mark_retrying(res: Resources, job_id: str, error: IngestError) -> None:
    with res.db.transaction() as session, contextlib.suppress(StaleTransitionError):
        jobs.transition(
            session,
            job_id,
            S.RETRYING,
            expected=[S.RUNNING],
            error_code=error.code,
            error_message=error.message,
        )
