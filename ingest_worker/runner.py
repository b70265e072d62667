"""The one runner for a unit of work, a whole stage or one part of a stage: claim, lease, stop checks,
run, finish, and one classification of failures.

Each transition is its own short transaction; none is held open while the work runs. A unit whose
job is final is not run; a cancel request, a suspended tenant or a job past its deadline stop it at
the boundary; a unit that is already done or running under a lease is dropped (a whole stage that
is done simply hands the job on; a lost worker's unit comes back through the sweeper, which counts
the recovery). Failures are classified once, in `failures.py`.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from dramatiq.middleware.time_limit import TimeLimitExceeded
from sqlalchemy.orm import Session

from ingest_worker.failures import CancelCleanup, RetryPolicy, cancel, fail, retry_or_dead_letter
from ingest_worker.pipeline_errors import JobCancelledError
from ingest_worker.resources import Resources
from shared import job_stages, jobs
from shared.errors import IngestError, PermanentError, StaleTransitionError
from shared.job_events import JobSnapshot
from shared.jobs import ACTIVE, TERMINAL
from shared.models import Job, JobStatus, Tenant, TenantStatus, utcnow
from shared.queue import HALT, pipeline_of_stage

logger = logging.getLogger(__name__)

S = JobStatus


class JobEndedError(Exception):
    """The job ended (another part failed it) while this unit ran: stop without a trace."""


class Claim(enum.Enum):
    """What a unit's claim found: run it, drop the message, hand the job on (the stage is done), or
    cancel the job here (a cancel request no worker holds)."""

    RUN = "run"
    DROP = "drop"
    HAND_ON = "hand_on"
    CANCEL = "cancel"


class Unit(Protocol):
    """A unit of work of one job: what differs between a whole stage and one part of a stage."""

    job_id: str
    stage: str
    # The job states in which the unit's message runs (or honours a cancel request).
    runs_in: frozenset[JobStatus]

    def __str__(self) -> str: ...

    def claim(self, res: Resources, session: Session, job: Job) -> Claim:
        """Take the unit for this delivery, in the runner's transaction."""

    def renew(self, session: Session, lease_s: float) -> bool:
        """Extend the unit's lease; False once it is no longer held."""

    def work(self, res: Resources) -> Any:
        """The work itself, outside any transaction."""

    def release(self, res: Resources) -> None:
        """Give the unit back when its work stopped without finishing."""

    def finish(self, res: Resources, result: Any) -> str | None:
        """Record the work done; HALT to stop the pipeline, None to hand the job on."""


def run(res: Resources, unit: Unit, *, policy: RetryPolicy, on_cancel: CancelCleanup) -> str | None:
    """Run `unit`; returns HALT to stop the pipeline, None to hand the job on. A failure of the
    claim's transaction (nothing was taken) or of the finish is retried like a failure of the work."""
    try:
        claim = _claim(res, unit)
    except Exception as exc:
        return retry_or_dead_letter(res, unit.job_id, unit.stage, exc, policy)
    if claim is Claim.CANCEL:
        on_cancel(res, unit.job_id)
    if claim is not Claim.RUN:
        return None if claim is Claim.HAND_ON else HALT
    try:
        with _lease(res, unit):
            result = unit.work(res)
    except JobCancelledError:
        unit.release(res)
        cancel(res, unit.job_id, on_cancel)
        return HALT
    except JobEndedError:
        unit.release(res)
        return HALT
    except PermanentError as exc:
        logger.info("job %s failed in %s: %s", unit.job_id, unit, exc.code)
        unit.release(res)
        fail(res, unit.job_id, exc)
        return HALT
    except (Exception, TimeLimitExceeded) as exc:  # TimeLimitExceeded is not an Exception
        _release_if_possible(res, unit)
        return retry_or_dead_letter(res, unit.job_id, unit.stage, exc, policy)
    return _finish(res, unit, result, policy)


def _finish(res: Resources, unit: Unit, result: Any, policy: RetryPolicy) -> str | None:
    """Record the work done. A job that changed state meanwhile (a cancel request as the last stage
    completes) raises on, so the message's next delivery settles the job from its new state, as the
    claim does; any other failure (the database lost) is retried like a failure of the work."""
    try:
        return unit.finish(res, result)
    except StaleTransitionError:
        raise
    except Exception as exc:
        _release_if_possible(res, unit)
        return retry_or_dead_letter(res, unit.job_id, unit.stage, exc, policy)


def _claim(res: Resources, unit: Unit) -> Claim:
    """The unit's claim, in one transaction: the job's state and stop checks decide first."""
    with res.db.transaction() as session:
        job = session.get(Job, unit.job_id)
        if job is None:
            logger.error("job %s does not exist; dropping its %s message", unit.job_id, unit)
            return Claim.DROP
        status = S(job.status)
        if status not in unit.runs_in:
            # Final, or (for a part) queued again for a retry that publishes what is left.
            logger.info("job %s is %s; %s not run", unit.job_id, status, unit)
            return Claim.DROP
        if status == S.CANCEL_REQUESTED:
            if _lease_live(job):
                # A worker is still inside a stage of this job; it stops at its next check and cancels.
                logger.info("job %s: cancel requested while a worker holds it; left to it", job.id)
                return Claim.DROP
            jobs.cancel(session, unit.job_id)
            return Claim.CANCEL
        if failed_on_stop(session, job, status, res.settings):
            return Claim.DROP
        return unit.claim(res, session, job)


def _release_if_possible(res: Resources, unit: Unit) -> None:
    """Give the unit back after a failure; when that fails too (the database is down), its lease
    lapses on its own and the sweeper or the retry takes the unit again."""
    try:
        unit.release(res)
    except Exception:
        logger.warning("job %s: could not give back %s; its lease lapses", unit.job_id, unit, exc_info=True)


# --- Stop checks and leases ---------------------------------------------------------------------


@contextlib.contextmanager
def renewed(renew: Callable[[], bool], *, every_s: float, what: str) -> Iterator[None]:
    """Call `renew` every `every_s` seconds until the block ends or `renew` returns False (the lease
    was taken over or let go). A failed renewal is logged and tried again at the next tick: the
    lease only lapses, and the maintenance loop only resumes the work, when renewals keep failing."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                if not renew():
                    return
            except Exception:
                logger.warning("could not renew the lease of %s", what, exc_info=True)

    thread = threading.Thread(target=loop, name=f"lease {what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def failed_on_stop(session: Session, job: Job, status: JobStatus, settings: Any) -> bool:
    """Fail the job, in the caller's transaction, when `stop_reason` says it must stop; whether it did."""
    reason = stop_reason(session, job, settings)
    if reason is None:
        return False
    jobs.fail(session, job.id, reason, seen=status)
    return True


def stop_reason(session: Session, job: Job, settings: Any) -> IngestError | None:
    """Why a job that is still active must not start its next unit, if it must not."""
    tenant = session.get(Tenant, job.tenant_id)
    if tenant is not None and tenant.status == TenantStatus.SUSPENDED.value:
        return PermanentError("The tenant was suspended while the job ran.", code="tenant_suspended")
    if job.started_at is not None:
        budget = settings.job_deadline_base_s + settings.job_deadline_per_page_s * job.pages
        if utcnow() - job.started_at > timedelta(seconds=budget):
            return PermanentError("The job ran past its deadline.", code="timeout")
    return None


def check_not_cancelled(res: Resources, job_id: str, *, ended: bool = False) -> None:
    """Raise `JobCancelledError` when the job was asked to stop (or is gone), and with `ended`
    `JobEndedError` once it is final: called between batches of a long unit, so a cancel does not
    wait for the whole unit."""
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        status = S(job.status) if job is not None else S.CANCELLED
    if status in (S.CANCEL_REQUESTED, S.CANCELLED):
        raise JobCancelledError()
    if ended and status in TERMINAL:
        raise JobEndedError()


def _lease_live(job: Job) -> bool:
    return job.lease_expires_at is not None and job.lease_expires_at > utcnow()


def _lease(res: Resources, unit: Unit) -> contextlib.AbstractContextManager[None]:
    """Renew the unit's lease while it runs, so the maintenance loop knows this worker lives."""
    lease_s = res.settings.lease_s

    def renew() -> bool:
        with res.db.transaction() as session:
            return unit.renew(session, lease_s)

    return renewed(renew, every_s=lease_s / 3, what=f"job {unit.job_id} {unit}")


# --- A whole stage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageResult:
    """What a stage reports: job counters/fields to record and where its output went."""

    fields: dict[str, Any] = field(default_factory=dict)
    artifact_key: str | None = None
    # The stage goes on in parts, each its own message; the last part finishes it and hands on.
    in_parts: bool = False


StageWork = Callable[[Resources, JobSnapshot], StageResult]


class _Stage:
    """A whole stage of a job as a unit of work; a stage that is already done is not redone."""

    runs_in = ACTIVE

    def __init__(self, job_id: str, stage: str, work: StageWork) -> None:
        self.job_id, self.stage, self._work = job_id, stage, work
        self._snapshot: JobSnapshot | None = None

    def __str__(self) -> str:
        return self.stage

    def claim(self, res: Resources, session: Session, job: Job) -> Claim:
        if job.status == S.RUNNING.value and job.stage == self.stage and job.lease_expires_at is not None:
            # Live: a duplicate. Expired: its worker was lost, and the sweeper resumes the job and
            # counts the recovery, whichever way the broker brought this message back.
            logger.info("job %s: %s is running under a lease; delivery dropped", job.id, self)
            return Claim.DROP
        if not job_stages.claim_stage(session, job.id, self.stage):
            logger.info("job %s: stage %s already done; handing on", job.id, self)
            return Claim.HAND_ON
        self._snapshot = jobs.start(session, job.id, self.stage, lease_s=res.settings.lease_s)
        return Claim.RUN

    def renew(self, session: Session, lease_s: float) -> bool:
        return job_stages.renew_lease(session, self.job_id, self.stage, lease_s=lease_s)

    def work(self, res: Resources) -> StageResult:
        assert self._snapshot is not None
        return self._work(res, self._snapshot)

    def release(self, res: Resources) -> None:
        """Nothing to give back: the job's lease goes with its next transition."""

    def finish(self, res: Resources, result: StageResult) -> str | None:
        if result.in_parts:
            return HALT
        with res.db.transaction() as session:
            jobs.advance(session, self.job_id, self.stage, artifact_key=result.artifact_key, **result.fields)
            if self.stage == pipeline_of_stage(self.stage)[-1]:
                jobs.complete(session, self.job_id)
        return None


def run_stage(
    res: Resources, job_id: str, stage: str, work: StageWork, *, policy: RetryPolicy, on_cancel: CancelCleanup
) -> str | None:
    """Run `stage` of `job_id`; returns HALT to stop the pipeline, None to hand the job on."""
    return run(res, _Stage(job_id, stage, work), policy=policy, on_cancel=on_cancel)
