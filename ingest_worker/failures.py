"""How a unit of work ends when it does not finish: one classification of failures, and the state each
leads to.

A `PermanentError` fails the job at once; anything else is retried with capped, fully jittered backoff
(a provider's Retry-After is honoured), and the last attempt dead-letters the job with a
`dead_letters` row that keeps the message for a replay. A cancel request honoured mid-work cancels it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import dramatiq
from dramatiq.middleware import CurrentMessage
from dramatiq.middleware.time_limit import TimeLimitExceeded

from ingest_worker.pipeline_errors import ProcessingTimeoutError
from ingest_worker.resources import Resources
from ingest_worker.retry_policy import backoff_ms
from shared import jobs
from shared.errors import (
    DatabaseUnavailableError,
    IngestError,
    StaleTransitionError,
    StorageUnavailableError,
    TransientError,
    VectorStoreUnavailableError,
)
from shared.models import DeadLetter, JobStatus
from shared.queue import HALT

logger = logging.getLogger(__name__)

S = JobStatus


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    min_backoff_ms: int
    max_backoff_ms: int
    # Retries while a service we run (object storage, the vector store, the database) is unavailable:
    # the input is not at fault, so the job waits out the outage (within its deadline) instead of
    # dead-lettering after the few retries meant for errors of its own.
    outage_retries: int = 20


# The errors that say a service we run is down, not that something is wrong with the job.
OUTAGES = (StorageUnavailableError, VectorStoreUnavailableError, DatabaseUnavailableError)

CancelCleanup = Callable[[Resources, str], None]


def classify(exc: BaseException) -> IngestError:
    """Any failure as one of ours: a time limit is a `timeout`, an unknown error is internal."""
    if isinstance(exc, IngestError):
        return exc
    if isinstance(exc, TimeLimitExceeded):
        return ProcessingTimeoutError()
    return TransientError("An internal error occurred; the work will be retried.", code="internal_error")


def _current_retries() -> int:
    message = CurrentMessage.get_current_message()
    return int(message.options.get("retries", 0)) if message is not None else 0


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
    try:
        with res.db.transaction() as session, contextlib.suppress(StaleTransitionError):
            jobs.retry(session, job_id, error)
    except DatabaseUnavailableError:
        # Not recorded while the database is down; the message is retried all the same.
        logger.warning("job %s: the retry of %s could not be recorded (database unavailable)", job_id, stage)
    message = CurrentMessage.get_current_message()
    if message is not None:
        # Dramatiq's Retries middleware would stop at the actor's own count.
        message.options["max_retries"] = limit
    raise dramatiq.Retry(error.code, delay=delay) from exc


def cancel(res: Resources, job_id: str, on_cancel: CancelCleanup) -> None:
    """The work stopped for a cancel request: the job is cancelled and its output cleaned up."""
    with res.db.transaction() as session, contextlib.suppress(StaleTransitionError):
        jobs.cancel(session, job_id)
    on_cancel(res, job_id)


def fail(res: Resources, job_id: str, error: IngestError) -> None:
    """A permanent error: the job fails at once, unless it changed state meanwhile."""
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
