"""The OCR stage: small workloads in one message; a large scan in page ranges, each its own message.

Ranges are parts of the stage (shared/stage_parts.py): several workers read one scan at once, each
range stores its own artifact, and the last range to finish joins them into the stage's output,
marks the stage done and hands the job on to the next stage through the outbox, all in one
transaction, so the hand-off happens exactly once. The job's own lease is let go while ranges run;
each range holds a lease of its own, and the sweeper gives a dead worker's range back.
"""

from __future__ import annotations

import contextlib
import logging

from dramatiq.middleware.time_limit import TimeLimitExceeded
from sqlalchemy.orm import Session

from ingest_worker.leases import renewed
from ingest_worker.middleware.current_broker import current_broker
from ingest_worker.ocr_reading import (
    document_languages,
    dropped_pages,
    read_pages,
    readings_from_json,
    readings_to_json,
    with_ocr_text,
)
from ingest_worker.resources import Resources
from ingest_worker.runner import (
    CancelCleanup,
    RetryPolicy,
    StageResult,
    cancel,
    check_not_cancelled,
    end,
    failed_on_stop,
    retry_or_dead_letter,
)
from ingest_worker.stages.models import pages_from_json, pages_to_json
from ingest_worker.stages.ocr_confidence import PageReading
from ingest_worker.steps import artifact_key, original
from shared import jobs, outbox, stage_parts
from shared.errors import JobCancelledError, PermanentError, StaleTransitionError
from shared.jobs import JobSnapshot
from shared.models import Job, JobStatus
from shared.outbox import Relay
from shared.queue import Publisher, pipeline_of_stage

logger = logging.getLogger(__name__)

S = JobStatus
STAGE = "ocr"


class JobEndedError(Exception):
    """The job ended (another range failed it) while this range ran: stop without a trace."""


def ocr(res: Resources, job: JobSnapshot) -> StageResult:
    """The stage: OCR the pages without a text layer here, or fan them out in ranges."""
    pages = pages_from_json(res.storage.get_bytes(artifact_key(job.id, "pages.json")))
    wanted = [p.number for p in pages if p.needs_ocr]
    size = res.settings.ocr_range_pages
    if size > 0 and len(wanted) > size:
        return _fan_out(res, job.id, [wanted[i : i + size] for i in range(0, len(wanted), size)])
    readings: dict[int, PageReading] = {}
    if wanted:
        with res.db.transaction() as session:
            languages = document_languages(session, job.document_id, res.settings)
        with original(res, job.document_id) as path:
            readings = read_pages(
                res, path, wanted, languages=languages, check=lambda: check_not_cancelled(res, job.id)
            )
        pages = with_ocr_text(pages, readings)
    key = artifact_key(job.id, "pages-final.json")
    res.storage.put_bytes(key, pages_to_json(pages))
    return StageResult(fields={"ocr_pages_dropped": dropped_pages(readings)}, artifact_key=key)


def _fan_out(res: Resources, job_id: str, ranges: list[list[int]]) -> StageResult:
    """One message per range not done and not held by a live worker (a second fan-out, after a
    recovery, publishes only what is left)."""
    with res.db.transaction() as session:
        todo = stage_parts.plan_parts(session, job_id, STAGE, ranges)
        ids = [outbox.add_message(session, job_id, STAGE, part=n).id for n in todo]
        jobs.await_parts(session, job_id)
    logger.info("job %s: OCR of %s ranges fanned out (%s to publish)", job_id, len(ranges), len(todo))
    _publish(res, ids)
    return StageResult(in_parts=True)


def _publish(res: Resources, ids: list[int]) -> None:
    """The outbox's fast path from this worker; what it cannot publish, the maintenance loop does."""
    broker = current_broker()
    if broker is not None and ids:
        relay = Relay(
            res.db.sessions,
            Publisher(broker),
            interactive_jobs_per_tenant=res.settings.interactive_jobs_per_tenant,
        )
        relay.publish(ids)


def run_range(
    res: Resources, job_id: str, part: int, *, policy: RetryPolicy, on_cancel: CancelCleanup
) -> None:
    """Run one range of a job's OCR; the last range to finish hands the job on."""
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        status = S(job.status) if job is not None else None
        if job is None or status not in (S.RUNNING, S.RETRYING, S.CANCEL_REQUESTED):
            # Final, or queued again for a retry whose fan-out publishes what is left.
            logger.info("job %s is %s; OCR range %s not run", job_id, status, part)
            return
        if status != S.CANCEL_REQUESTED:
            if failed_on_stop(session, job, status, res.settings):
                return
            wanted = stage_parts.claim_part(session, job_id, STAGE, part, lease_s=res.settings.lease_s)
            if wanted is None:
                logger.info("job %s: OCR range %s is done or held by a live worker; dropped", job_id, part)
                return
            if status == S.RETRYING:
                jobs.resume(session, job_id)
        document_id = job.document_id
    if status == S.CANCEL_REQUESTED:
        cancel(res, job_id, on_cancel)
        return
    try:
        with _range_lease(res, job_id, part):
            key = _read_range(res, job_id, document_id, part, wanted)
    except JobCancelledError:
        _release(res, job_id, part)
        cancel(res, job_id, on_cancel)
        return
    except JobEndedError:
        _release(res, job_id, part)
        return
    except PermanentError as exc:
        logger.info("job %s failed in OCR range %s: %s", job_id, part, exc.code)
        _release(res, job_id, part)
        end(res, job_id, exc)
        return
    except (Exception, TimeLimitExceeded) as exc:  # TimeLimitExceeded is not an Exception
        _release(res, job_id, part)
        retry_or_dead_letter(res, job_id, STAGE, exc, policy)
        return
    with res.db.transaction() as session:
        last = stage_parts.finish_part(session, job_id, STAGE, part, artifact_key=key)
        ids = _join(res, session, job_id) if last else []
    _publish(res, ids)


def _read_range(res: Resources, job_id: str, document_id: str, part: int, wanted: list[int]) -> str:
    key = artifact_key(job_id, f"ocr-range-{part}.json")
    if res.storage.exists(key):
        # An earlier attempt read the range and stopped before recording it.
        return key

    def check() -> None:
        with res.db.transaction() as session:
            job = session.get(Job, job_id)
            status = S(job.status) if job is not None else S.CANCELLED
        if status in (S.CANCEL_REQUESTED, S.CANCELLED):
            raise JobCancelledError()
        if status in jobs.TERMINAL:
            raise JobEndedError()

    with res.db.transaction() as session:
        languages = document_languages(session, document_id, res.settings)
    with original(res, document_id) as path:
        readings = read_pages(res, path, wanted, languages=languages, check=check)
    res.storage.put_bytes(key, readings_to_json(readings))
    return key


def _join(res: Resources, session: Session, job_id: str) -> list[int]:
    """The last range: the stage's output from every range's artifact, the stage done and the next
    stage queued in the caller's transaction. Returns the outbox rows to publish."""
    pages = pages_from_json(res.storage.get_bytes(artifact_key(job_id, "pages.json")))
    readings: dict[int, PageReading] = {}
    for key in stage_parts.part_artifacts(session, job_id, STAGE):
        readings.update(readings_from_json(res.storage.get_bytes(key)))
    final = artifact_key(job_id, "pages-final.json")
    res.storage.put_bytes(final, pages_to_json(with_ocr_text(pages, readings)))
    dropped = dropped_pages(readings)
    if jobs.advance(session, job_id, STAGE, artifact_key=final, ocr_pages_dropped=dropped) is None:
        logger.info("job %s: OCR done after the job stopped running; not handed on", job_id)
        with contextlib.suppress(StaleTransitionError):
            jobs.cancel(session, job_id)
        return []
    stages = pipeline_of_stage(STAGE)
    following = stages[stages.index(STAGE) + 1]
    logger.info("job %s: last OCR range done; handing on to %s", job_id, following)
    return [outbox.add_message(session, job_id, following).id]


def _release(res: Resources, job_id: str, part: int) -> None:
    with res.db.transaction() as session:
        stage_parts.release_part(session, job_id, STAGE, part)


def _range_lease(res: Resources, job_id: str, part: int) -> contextlib.AbstractContextManager[None]:
    """Renew the range's lease while it runs, so the sweeper knows its worker lives."""
    lease_s = res.settings.lease_s

    def renew() -> bool:
        with res.db.transaction() as session:
            return stage_parts.renew_part(session, job_id, STAGE, part, lease_s=lease_s)

    return renewed(renew, every_s=lease_s / 3, what=f"job {job_id} OCR range {part}")
