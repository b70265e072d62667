"""Runs one stage of one job: the state checks and transitions around a stage's work.

Each transition is its own short transaction; none is held open while the work runs. A stage that
is already done is not redone (the pipeline simply carries on); a job that is final stops the
pipeline; a cancel request, a suspended tenant or a job past its deadline stop it at the stage
boundary. Errors are classified once, here: a `PermanentError` fails the job at once; anything else
is retried with capped, fully jittered backoff (a provider's Retry-After is honoured), and the last
attempt dead-letters the job with a `dead_letters` row that keeps the message for a replay.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import dramatiq
from dramatiq.middleware import CurrentMessage
from dramatiq.middleware.time_limit import TimeLimitExceeded

from ingest_worker.leases import renewed
from ingest_worker.resources import Resources
from ingest_worker.retry_policy import backoff_ms
from shared import jobs
from shared.errors import (
    IngestError,
    JobCancelledError,
    PermanentError,
    ProcessingTimeoutError,
    StaleTransitionError,
    StorageUnavailableError,
    TransientError,
    VectorStoreUnavailableError,
)
from shared.jobs import TERMINAL, JobSnapshot
from shared.models import DeadLetter, Job, JobStatus, Tenant, TenantStatus, utcnow
from shared.queue import HALT, pipeline_of_stage

logger = logging.getLogger(__name__)

S = JobStatus


@dataclass(frozen=True)
class StageResult:
    """What a stage reports: job counters/fields to record and where its output went."""

    fields: dict[str, Any] = field(default_factory=dict)
    artifact_key: str | None = None
    # The stage goes on in parts, each its own message; the last part finishes it and hands on.
    in_parts: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    min_backoff_ms: int
    max_backoff_ms: int
    # Retries while a service we run (object storage, the vector store) is unavailable: the input is
    # not at fault, so the job waits out the outage (within its deadline) instead of dead-lettering
    # after the few retries meant for errors of its own.
    outage_retries: int = 20


# The errors that say a service we run is down, not that something is wrong with the job.
OUTAGES = (StorageUnavailableError, VectorStoreUnavailableError)


StageWork = Callable[[Resources, JobSnapshot], StageResult]
CancelCleanup = Callable[[Resources, str], None]


def _current_retries() -> int:
    message = CurrentMessage.get_current_message()
    return int(message.options.get("retries", 0)) if message is not None else 0


def failed_on_stop(session: Any, job: Job, status: JobStatus, settings: Any) -> bool:
    """Fail the job, in the caller's transaction, when `stop_reason` says it must stop; whether it did."""
    reason = stop_reason(session, job, settings)
    if reason is None:
        return False
    jobs.fail(session, job.id, reason, seen=status)
    return True


def stop_reason(session: Any, job: Job, settings: Any) -> IngestError | None:
    """Why a job that is still active must not start its next stage, if it must not."""
    tenant = session.get(Tenant, job.tenant_id)
    if tenant is not None and tenant.status == TenantStatus.SUSPENDED.value:
        return PermanentError("The tenant was suspended while the job ran.", code="tenant_suspended")
    if job.started_at is not None:
        budget = settings.job_deadline_base_s + settings.job_deadline_per_page_s * job.pages
        if utcnow() - job.started_at > timedelta(seconds=budget):
            return PermanentError("The job ran past its deadline.", code="timeout")
    return None


def _lease_live(job: Job) -> bool:
    return job.lease_expires_at is not None and job.lease_expires_at > utcnow()


def _held_by_another_worker(job: Job, stage: str) -> bool:
    """A duplicate delivery of a stage that a live worker is running right now."""
    return job.status == S.RUNNING.value and job.stage == stage and _lease_live(job)


def _lease(res: Resources, job_id: str, stage: str) -> contextlib.AbstractContextManager[None]:
    """Renew the job's lease while the stage runs, so the maintenance loop knows this worker lives."""
    lease_s = res.settings.lease_s

    def renew() -> bool:
        with res.db.transaction() as session:
            return jobs.renew_lease(session, job_id, stage, lease_s=lease_s)

    return renewed(renew, every_s=lease_s / 3, what=f"job {job_id} {stage}")


def check_not_cancelled(res: Resources, job_id: str) -> None:
    """Raise `JobCancelledError` when the job was asked to stop: called between batches of a long
    stage, so a cancel does not wait for the whole stage."""
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        if job is None or job.status in (S.CANCEL_REQUESTED.value, S.CANCELLED.value):
            raise JobCancelledError()


def run_stage(
    res: Resources,
    job_id: str,
    stage: str,
    work: StageWork,
    *,
    policy: RetryPolicy,
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
        cancelled = status == S.CANCEL_REQUESTED
        if cancelled and _lease_live(job):
            # A worker is still inside a stage of this job; it stops at its next check and cancels.
            logger.info("job %s: cancel requested while another worker holds it; left to that worker", job_id)
            return HALT
        if cancelled:
            jobs.cancel(session, job_id)
        else:
            if failed_on_stop(session, job, status, res.settings):
                return HALT
            if _held_by_another_worker(job, stage):
                logger.info(
                    "job %s: %s is running under a live lease elsewhere; duplicate dropped", job_id, stage
                )
                return HALT
            if not jobs.claim_stage(session, job_id, stage):
                logger.info("job %s: stage %s already done; handing on", job_id, stage)
                return None
            snapshot = jobs.start(session, job_id, stage, lease_s=res.settings.lease_s)
    if cancelled:
        on_cancel(res, job_id)
        return HALT

    try:
        with _lease(res, job_id, stage):
            result = work(res, snapshot)
    except JobCancelledError:
        cancel(res, job_id, on_cancel)
        return HALT
    except PermanentError as exc:
        logger.info("job %s failed in %s: %s", job_id, stage, exc.code)
        end(res, job_id, exc)
        return HALT
    except (Exception, TimeLimitExceeded) as exc:  # TimeLimitExceeded is not an Exception
        return retry_or_dead_letter(res, job_id, stage, exc, policy)

    if result.in_parts:
        return HALT
    with res.db.transaction() as session:
        jobs.advance(session, job_id, stage, artifact_key=result.artifact_key, **result.fields)
        if stage == pipeline_of_stage(stage)[-1]:
            jobs.complete(session, job_id)
    return None


def retry_or_dead_letter(
    res: Resources, job_id: str, stage: str, exc: BaseException, policy: RetryPolicy
) -> str:
    """A transient failure: raise `dramatiq.Retry` with backoff, or dead-letter on the last attempt."""
    error = classify(exc)
    retries = _current_retries()
    limit = max(policy.max_retries, policy.outage_retries if isinstance(error, OUTAGES) else 0)
    if retries >= limit:
        logger.error("job %s: %s failed on its last attempt (%s)", job_id, stage, error.code, exc_info=exc)
        _dead_letter(res, job_id, stage, error, retries)
        return HALT
    delay = backoff_ms(
        retries,
        min_ms=policy.min_backoff_ms,
        max_ms=policy.max_backoff_ms,
        retry_after_s=getattr(error, "retry_after_s", None),
    )
    logger.warning(
        "job %s: %s failed (%s); retry %s in %s ms",
        job_id,
        stage,
        error.code,
        retries + 1,
        delay,
        exc_info=exc,
    )
    _mark_retrying(res, job_id, error)
    message = CurrentMessage.get_current_message()
    if message is not None:
        # Dramatiq's Retries middleware would stop at the actor's own count.
        message.options["max_retries"] = limit
    raise dramatiq.Retry(error.code, delay=delay) from exc


def classify(exc: BaseException) -> IngestError:
    """Any failure as one of ours: a time limit is a `timeout`, an unknown error is internal."""
    if isinstance(exc, IngestError):
        return exc
    if isinstance(exc, TimeLimitExceeded):
        return ProcessingTimeoutError()
    return TransientError("An internal error occurred; the work will be retried.", code="internal_error")


def cancel(res: Resources, job_id: str, on_cancel: CancelCleanup) -> None:
    with res.db.transaction() as session, contextlib.suppress(StaleTransitionError):
        jobs.cancel(session, job_id)
    on_cancel(res, job_id)


def end(res: Resources, job_id: str, error: IngestError) -> None:
    with res.db.transaction() as session:
        try:
            jobs.fail(session, job_id, error)
        except StaleTransitionError:
            logger.info("job %s changed state before it could become %s", job_id, S.FAILED)


def _dead_letter(res: Resources, job_id: str, stage: str, error: IngestError, retries: int) -> None:
    """The job becomes `dead_lettered` and its message is kept, in one transaction."""
    message = CurrentMessage.get_current_message()
    with res.db.transaction() as session:
        try:
            snapshot = jobs.dead_letter(session, job_id, error)
        except StaleTransitionError:
            logger.info("job %s changed state before it could be dead-lettered", job_id)
            return
        body = message.asdict() if message is not None else {}
        body.get("options", {}).pop("traceback", None)
        session.add(
            DeadLetter(
                job_id=job_id,
                tenant_id=snapshot.tenant_id,
                stage=stage,
                actor=body.get("actor_name", ""),
                message=body,
                error_code=error.code,
                error_message=error.message,
                retries=retries,
            )
        )


def _mark_retrying(res: Resources, job_id: str, error: IngestError) -> None:
    with res.db.transaction() as session, contextlib.suppress(StaleTransitionError):
        jobs.retry(session, job_id, error)
