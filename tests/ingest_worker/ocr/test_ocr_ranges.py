"""A large scan's OCR fanned out in page ranges: one hand-off to `chunk`, exactly once, whatever the
deliveries; concurrent finishers on PostgreSQL; a range whose worker is killed is recovered."""

from __future__ import annotations

import io
import signal
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.app import create_app
from ingest_worker import stage_io
from ingest_worker.maintenance import MaintenanceLoop
from ingest_worker.ocr import page_ranges, stage_parts
from ingest_worker.ocr.page_ranges import run_range
from ingest_worker.runner import run_stage
from shared import artifacts
from shared.artifacts import pages_from_json
from shared.db import Database
from shared.models import JobStage, OutboxMessage, StagePart
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.e2e import test_recovery
from tests.e2e.test_recovery import kill_group, start_pool
from tests.shared.test_jobs import new_job
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.ocr_range_jobs import (
    OCR_POLICY,
    SCAN_PAGES,
    hand_offs_to,
    job_row,
    through_extract,
    wait_for,
)
from tests.support.pdfs import scanned_pdf
from tests.support.text_metrics import character_error_rate

pytestmark = pytest.mark.slow

# Worker processes on PostgreSQL and Redis, as the recovery tests run them.
process_settings = test_recovery.process_settings


def test_a_twenty_page_scan_split_in_ranges_completes_with_one_hand_off(settings: Settings) -> None:
    # Given a service whose OCR splits more than 6 pages into ranges of 6, with two worker threads
    settings = settings.replace(ocr_range_pages=6, ocr_dpi=200, maintenance_interval_s=0.2)
    with in_process_service(settings, threads=2, maintenance=True) as service:
        res = service.resources
        # When a 20-page scan is ingested
        _, job_id = create_document_job(res, scanned_pdf(SCAN_PAGES, dpi=200))
        wait_for(
            lambda: job_row(res.db, job_id).status in {"completed", "failed", "dead_lettered"}, 240, "job"
        )
        # Then it completes, its OCR having run as four ranges, and `chunk` was handed on to once
        job = job_row(res.db, job_id)
        assert job.status == "completed", (job.error_code, job.error_message)
        with res.db.transaction() as session:
            parts = session.scalars(select(StagePart).where(StagePart.job_id == job_id)).all()
            assert [p.pages for p in parts] == [list(range(i, min(i + 6, 21))) for i in range(1, 21, 6)]
            assert {p.status for p in parts} == {"done"}
            stage = session.get(JobStage, (job_id, "ocr"))
            assert stage is not None and (stage.parts, stage.parts_done) == (4, 4)
        assert hand_offs_to(res.db, job_id, "chunk") == 1
        # And every page carries its own text
        pages = pages_from_json(res.storage.get_bytes(artifacts.artifact_key(job_id, "pages-final.json")))
        assert [p.number for p in pages] == list(range(1, 21))
        for page, expected in zip(pages, SCAN_PAGES, strict=True):
            assert page.source == "ocr" and character_error_rate(expected, page.text) <= 0.03, page


def test_a_range_delivered_twice_hands_on_exactly_once(settings: Settings) -> None:
    # Given a three-page scan whose OCR was fanned out in ranges of one page
    settings = settings.replace(ocr_range_pages=1, ocr_dpi=200)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, scanned_pdf(SCAN_PAGES[:3], dpi=200))
        through_extract(res, job_id)
        assert job_row(res.db, job_id).lease_expires_at is None
        # When every range runs, and the last one is delivered again (before and after the join)
        for part in (0, 1, 1, 2, 2):
            run_range(res, job_id, part, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        # Then the stage is done and the job was handed on to `chunk` once, with each range read once
        assert hand_offs_to(res.db, job_id, "chunk") == 1
        with res.db.transaction() as session:
            attempts = session.scalars(select(StagePart.attempts).where(StagePart.job_id == job_id)).all()
            stage = session.get(JobStage, (job_id, "ocr"))
            assert stage is not None and stage.status == "done" and stage.parts_done == 3
        assert sorted(attempts) == [1, 1, 1]
        # And a fan-out delivered again later publishes nothing (the stage is done)
        run_stage(
            res, job_id, "ocr", page_ranges.ocr, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points
        )
        with res.db.transaction() as session:
            range_messages = session.scalars(
                select(OutboxMessage).where(OutboxMessage.job_id == job_id, OutboxMessage.part.is_not(None))
            ).all()
        assert len(range_messages) == 3


@pytest.mark.postgres
def test_two_ranges_finishing_at_the_same_moment_hand_on_once(pg_db: Database) -> None:
    # Given a job stage in two parts, both running
    job_id = new_job(pg_db)
    with pg_db.transaction() as session:
        session.add(JobStage(job_id=job_id, stage="ocr"))
        session.flush()
        stage_parts.plan_parts(session, job_id, "ocr", [[1], [2]])
        for part in (0, 1):
            assert stage_parts.claim_part(session, job_id, "ocr", part, lease_s=30) is not None
    # When the first finisher has counted its part but not yet committed, and the second finishes
    first = pg_db.sessions()
    first_last = stage_parts.finish_part(first, job_id, "ocr", 0, artifact_key="a0")
    results: list[bool] = []
    second = threading.Thread(target=lambda: results.append(finish(pg_db, job_id, 1)))
    second.start()
    second.join(timeout=1)
    assert second.is_alive()  # waiting for the first finisher's row lock
    first.commit()
    first.close()
    second.join(timeout=10)
    # Then exactly one of them is the last part
    assert [first_last, *results] == [False, True]


def finish(db: Database, job_id: str, part: int) -> bool:
    with db.transaction() as session:
        return stage_parts.finish_part(session, job_id, "ocr", part, artifact_key=f"a{part}")


@pytest.mark.postgres
@pytest.mark.redis
def test_a_range_whose_worker_is_killed_is_recovered(
    process_settings: Settings, pg_db: Database, tmp_path: Path
) -> None:
    # The next range, prefetched by the killed worker, comes back when Redis notices the worker is
    # gone: after 5 s without its heartbeat rather than the service's 15 (a one-page range takes ~1 s)
    settings = process_settings.replace(redis_heartbeat_timeout_s=5)
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {
        "SLOW_STAGE": "ocr_range",
        "SLOW_STAGE_S": "60",
        "SLOW_STAGE_MARKERS": str(markers),
        "INGEST_OCR_RANGE_PAGES": "1",
        "INGEST_OCR_DPI": "200",
    }
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")
    pools = {"ingest": ["ingest", "ocr"], "index": ["index"]}
    running = {
        name: start_pool(settings, queues, tmp_path / f"{name}.log", **env) for name, queues in pools.items()
    }
    loop = MaintenanceLoop(pg_db, Relay(pg_db.sessions, Publisher(make_broker(settings))), settings)
    loop.start_thread()
    try:
        # Given a three-page scan whose OCR runs in ranges of one page, one range under way
        body = io.BytesIO(scanned_pdf(SCAN_PAGES[:3], dpi=200))
        job_id = (
            app.test_client()
            .post("/v1/documents", headers=auth(key), data={"file": (body, "s.pdf")})
            .get_json()["job_id"]
        )
        wait_for(lambda: (markers / f"{job_id}-ocr_range").exists(), 60, "a range to start")
        # When its worker is killed with SIGKILL, and a new one starts in its place
        kill_group(running["ingest"])
        running["ingest"] = start_pool(settings, pools["ingest"], tmp_path / "ingest.log", **env)
        # Then the job completes, the killed range read a second time and the others once
        wait_for(lambda: job_row(pg_db, job_id).status == "completed", 120, "the job to complete")
        with pg_db.transaction() as session:
            attempts = session.scalars(
                select(StagePart.attempts).where(StagePart.job_id == job_id).order_by(StagePart.part)
            ).all()
        assert sorted(attempts) == [1, 1, 2]
        assert job_row(pg_db, job_id).recoveries == 1
        assert hand_offs_to(pg_db, job_id, "chunk") == 1
    finally:
        loop.stop()
        for proc in running.values():
            kill_group(proc, signal.SIGTERM)
