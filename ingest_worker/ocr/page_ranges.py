"""The OCR stage: small workloads in one message; a large scan in page ranges, each its own message.

Ranges are parts of the stage (ingest_worker/ocr/stage_parts.py): several workers read one scan at once, each
range stores its own artifact, and the last range to finish joins them into the stage's output,
marks the stage done and hands the job on to the next stage through the outbox, all in one
transaction, so the hand-off happens exactly once. The job's own lease is let go while ranges run;
each range holds a lease of its own, and the sweeper gives a dead worker's range back.
"""

from __future__ import annotations

import contextlib
import logging

from sqlalchemy.orm import Session

from ingest_worker import job_progress
from ingest_worker.ocr import stage_parts
from ingest_worker.ocr.reading import (
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
    Claim,
    RetryPolicy,
    StageResult,
    check_not_cancelled,
    run,
)
from ingest_worker.stage_io import original
from ingest_worker.stage_progress import StageProgress
from ingest_worker.stages.ocr_confidence import PageReading
from shared import jobs, outbox
from shared.artifacts import artifact_key, pages_from_json, pages_to_json
from shared.errors import StaleTransitionError
from shared.job_events import JobSnapshot
from shared.job_hand_offs import await_parts
from shared.jobs import ACTIVE
from shared.models import Job, JobStatus
from shared.pipeline import artifact_of
from shared.queue import pipeline_of_stage

logger = logging.getLogger(__name__)

S = JobStatus
STAGE = "ocr"


def ocr(res: Resources, job: JobSnapshot) -> StageResult:
    """The stage: OCR the pages without a text layer here, or fan them out in ranges."""
    pages = pages_from_json(res.storage.get_bytes(artifact_key(job.id, artifact_of("extract"))))
    wanted = [p.number for p in pages if p.needs_ocr]
    size = res.settings.ocr_range_pages
    if size > 0 and len(wanted) > size:
        return _fan_out(res, job.id, [wanted[i : i + size] for i in range(0, len(wanted), size)])
    readings: dict[int, PageReading] = {}
    if wanted:
        with res.db.transaction() as session:
            languages = document_languages(session, job.document_id, res.settings)
        progress = StageProgress(res, job.id, STAGE)
        progress.begin(len(wanted))
        with original(res, job.document_id) as path:
            readings = read_pages(
                res,
                path,
                wanted,
                languages=languages,
                check=lambda: check_not_cancelled(res, job.id),
                progress=progress,
            )
        pages = with_ocr_text(pages, readings)
    key = artifact_key(job.id, artifact_of(STAGE))
    res.storage.put_bytes(key, pages_to_json(pages))
    return StageResult(fields={"ocr_pages_dropped": dropped_pages(readings)}, artifact_key=key)


def _fan_out(res: Resources, job_id: str, ranges: list[list[int]]) -> StageResult:
    """One message per range neither done nor running (a second fan-out, after a retry, publishes
    only what is left; the sweeper gives back and publishes a lost worker's range)."""
    with res.db.transaction() as session:
        todo = stage_parts.plan_parts(session, job_id, STAGE, ranges)
        if len(todo) == len(ranges):  # the first fan-out: no range has counted its pages yet
            job_progress.begin_units(session, job_id, STAGE, sum(len(r) for r in ranges))
        for n in todo:
            outbox.add_message(session, job_id, STAGE, part=n)
        await_parts(session, job_id)
    # The relay attached to the worker's sessions publishes the range messages on commit.
    logger.info("job %s: OCR of %s ranges fanned out (%s to publish)", job_id, len(ranges), len(todo))
    return StageResult(in_parts=True)


class _Range:
    """One page range of a job's OCR as a unit of work: it holds a lease of its own, and the last
    range to finish hands the job on."""

    stage = STAGE
    # Not queued: a job queued again for a retry fans out again and publishes what is left.
    runs_in = ACTIVE - {S.QUEUED}

    def __init__(self, job_id: str, part: int) -> None:
        self.job_id, self.part = job_id, part
        self._pages: list[int] = []
        self._document_id = ""

    def __str__(self) -> str:
        return f"OCR range {self.part}"

    def claim(self, res: Resources, session: Session, job: Job) -> Claim:
        wanted = stage_parts.claim_part(session, job.id, STAGE, self.part, lease_s=res.settings.lease_s)
        if wanted is None:
            logger.info("job %s: %s is done or running; dropped", job.id, self)
            return Claim.DROP
        if job.status == S.RETRYING.value:
            jobs.resume(session, job.id)
        self._pages, self._document_id = wanted, job.document_id
        return Claim.RUN

    def renew(self, session: Session, lease_s: float) -> bool:
        return stage_parts.renew_part(session, self.job_id, STAGE, self.part, lease_s=lease_s)

    def work(self, res: Resources) -> str:
        return _read_range(res, self.job_id, self._document_id, self.part, self._pages)

    def release(self, res: Resources) -> None:
        with res.db.transaction() as session:
            stage_parts.release_part(session, self.job_id, STAGE, self.part)

    def finish(self, res: Resources, key: str) -> None:
        with res.db.transaction() as session:
            last = stage_parts.finish_part(session, self.job_id, STAGE, self.part, artifact_key=key)
            if last:
                _join(res, session, self.job_id)


def run_range(
    res: Resources, job_id: str, part: int, *, policy: RetryPolicy, on_cancel: CancelCleanup
) -> None:
    """Run one range of a job's OCR; the last range to finish hands the job on."""
    run(res, _Range(job_id, part), policy=policy, on_cancel=on_cancel)


def _read_range(res: Resources, job_id: str, document_id: str, part: int, wanted: list[int]) -> str:
    key = artifact_key(job_id, f"ocr-range-{part}.json")
    if res.storage.exists(key):
        # An earlier attempt read the range and stopped before recording it.
        return key
    with res.db.transaction() as session:
        languages = document_languages(session, document_id, res.settings)
    progress = StageProgress(res, job_id, STAGE)
    with original(res, document_id) as path:
        readings = read_pages(
            res,
            path,
            wanted,
            languages=languages,
            check=lambda: check_not_cancelled(res, job_id, ended=True),
            progress=progress,
        )
    progress.flush()  # the range's last pages count before the range is recorded
    res.storage.put_bytes(key, readings_to_json(readings))
    return key


def _join(res: Resources, session: Session, job_id: str) -> None:
    """The last range: the stage's output from every range's artifact, the stage done and the next
    stage queued in the caller's transaction (the relay publishes it on commit)."""
    pages = pages_from_json(res.storage.get_bytes(artifact_key(job_id, artifact_of("extract"))))
    readings: dict[int, PageReading] = {}
    for key in stage_parts.part_artifacts(session, job_id, STAGE):
        readings.update(readings_from_json(res.storage.get_bytes(key)))
    final = artifact_key(job_id, artifact_of(STAGE))
    res.storage.put_bytes(final, pages_to_json(with_ocr_text(pages, readings)))
    dropped = dropped_pages(readings)
    if jobs.advance(session, job_id, STAGE, artifact_key=final, ocr_pages_dropped=dropped) is None:
        logger.info("job %s: OCR done after the job stopped running; not handed on", job_id)
        with contextlib.suppress(StaleTransitionError):
            jobs.cancel(session, job_id)
        return
    stages = pipeline_of_stage(STAGE)
    following = stages[stages.index(STAGE) + 1]
    logger.info("job %s: last OCR range done; handing on to %s", job_id, following)
    outbox.add_message(session, job_id, following)
