"""Recovery: a lost hand-off between stages, and a worker killed with SIGKILL in the middle of a stage.
Every job still completes, no stage before the lost one runs again, and no point is duplicated."""

from __future__ import annotations

import io
import os
import signal
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import ingest_worker.actors as actors
from gateway.app import create_app
from ingest_worker import stage_io
from ingest_worker.maintenance import MaintenanceLoop
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from shared.db import Database
from shared.models import Job, JobStage, OutboxMessage, utcnow
from shared.outbox import Relay
from shared.queue import QUEUE_FOR_STAGE, STAGES, Publisher, make_broker
from shared.settings import Settings, child_environment
from shared.vectorstores import open_vector_store
from tests.conftest import MODEL_CACHE_DIR, ROOT, auth, tenant_key
from tests.support.databases import migrate_database
from tests.support.forkserver import Forked, spawn
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.pdfs import text_pdf

pytestmark = pytest.mark.slow


def stage_attempts(db: Database, job_id: str) -> dict[str, int]:
    with db.transaction() as session:
        return dict(
            session.execute(select(JobStage.stage, JobStage.attempts).where(JobStage.job_id == job_id)).all()
        )  # type: ignore[arg-type]


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_status(db: Database, job_id: str) -> tuple[str, str | None]:
    with db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job.status, job.stage


def test_a_lost_hand_off_between_stages_is_resumed(settings: Settings) -> None:
    # Given an embedded service whose maintenance loop resumes hand-offs stalled for 30 s (a window no
    # healthy hand-off comes near, even on a loaded machine)
    settings = settings.replace(handoff_stall_s=30, maintenance_interval_s=0.2)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, text_pdf(["A hand-off that was lost. " * 30]))
        # When its first stage runs and finishes, but the next stage is never enqueued
        policy = actors.STAGE_POLICIES["validate"][0]
        run_stage(
            res, job_id, "validate", stage_io.validate, policy=policy, on_cancel=stage_io.delete_job_points
        )
        with res.db.transaction() as session:  # the first message counts as delivered
            for row in session.scalars(select(OutboxMessage).where(OutboxMessage.job_id == job_id)):
                row.published_at = utcnow()
            # and the stage finished a minute ago, with no hand-off since
            job = session.get(Job, job_id)
            assert job is not None and job.handed_on_at is None
            job.updated_at = utcnow() - timedelta(seconds=60)
    with in_process_service(settings, maintenance=True) as service:
        # Then the sweeper resumes it from the next stage and it completes
        wait_for(
            lambda: job_status(service.resources.db, job_id)[0] == "completed", 60, "the job to complete"
        )
        attempts = stage_attempts(service.resources.db, job_id)
        assert attempts["validate"] == 1 and len(attempts) == 7
        with service.resources.db.transaction() as session:
            assert session.get(Job, job_id).recoveries == 1  # type: ignore[union-attr]


def test_a_crash_between_commit_and_publish_loses_nothing(settings: Settings) -> None:
    # Given a job committed with its outbox row by a process that died before publishing it (its
    # session factory has no relay attached, so nothing publishes after the commit)
    settings = settings.replace(maintenance_interval_s=0.2)
    migrate_database(settings.effective_database_url)
    _, job_id = create_document_job(Resources(settings), text_pdf(["Committed, never published. " * 20]))
    # When a maintenance loop and a worker run, then the relay publishes the row and the job completes
    with in_process_service(settings, maintenance=True) as service:
        wait_for(
            lambda: job_status(service.resources.db, job_id)[0] == "completed", 60, "the job to complete"
        )


# --- A worker process killed in the middle of a stage -------------------------------------------


def worker_env(settings: Settings) -> dict[str, str]:
    return child_environment(
        {"PYTHONPATH": str(ROOT), **settings.replace(model_cache_dir=MODEL_CACHE_DIR).to_env()}
    )


def start_pool(settings: Settings, queues: list[str], log: Path, **env: str) -> Forked:
    """A `dramatiq` pool in its own process group, so a kill takes its children too."""
    return spawn(
        [
            *("-m", "dramatiq", "ingest_worker.actors", "tests.support.slow_stages"),
            *("--processes", "1", "--threads", "1", "-Q", *queues),
        ],
        env={**worker_env(settings), **env},
        cwd=ROOT,
        log=log,
    )


def kill_group(proc: Forked, sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=30)


@pytest.fixture
def process_settings(
    settings: Settings,
    pg_server_url: str,
    pg_db: Database,
    broker_fields: dict[str, str],
    tmp_path: Path,
) -> Settings:
    """The production topology for worker processes: PostgreSQL, each real broker (Redis, then
    RabbitMQ), a local Qdrant folder owned by the index pool, and the fake embedder (the worker
    processes import it by name)."""
    return settings.replace(
        database_url=pg_server_url,
        **broker_fields,
        qdrant_path=str(tmp_path / "qdrant"),
        lease_s=4,
        handoff_stall_s=5,
        maintenance_interval_s=0.5,
    )


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.parametrize("stage", STAGES)
def test_a_worker_killed_in_the_middle_of_a_stage_is_recovered(
    process_settings: Settings, pg_db: Database, tmp_path: Path, stage: str
) -> None:
    settings = process_settings
    markers = tmp_path / "markers"
    markers.mkdir()
    slow = {"SLOW_STAGE": stage, "SLOW_STAGE_S": "60", "SLOW_STAGE_MARKERS": str(markers)}
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")
    pools = {
        "ingest": ["ingest", "ocr"],
        "index": ["index"],
    }
    victim = "index" if QUEUE_FOR_STAGE[stage] == "index" else "ingest"
    running = {
        name: start_pool(settings, queues, tmp_path / f"{name}.log", **slow) for name, queues in pools.items()
    }
    loop = MaintenanceLoop(pg_db, Relay(pg_db.sessions, Publisher(make_broker(settings))), settings)
    loop.start_thread()
    try:
        # Given a job whose `stage` is under way (it pauses there once)
        body = io.BytesIO(text_pdf(["Kill me mid-stage. " * 50, "Second page. " * 50]))
        job_id = (
            app.test_client()
            .post("/v1/documents", headers=auth(key), data={"file": (body, "k.pdf")})
            .get_json()["job_id"]
        )
        wait_for(lambda: (markers / f"{job_id}-{stage}").exists(), 60, f"the {stage} stage to start")
        # When its worker is killed with SIGKILL, and a new one starts in its place
        kill_group(running[victim])
        killed_at = time.monotonic()
        running[victim] = start_pool(settings, pools[victim], tmp_path / f"{victim}.log", **slow)
        # Then the job completes
        wait_for(
            lambda: job_status(pg_db, job_id)[0] == "completed", 90, "the job to complete after the kill"
        )
        recovery_s = time.monotonic() - killed_at
        print(f"{stage}: recovered {recovery_s:.1f}s after SIGKILL")
        # And no stage before the killed one ran again, and every chunk has exactly one point
        attempts = stage_attempts(pg_db, job_id)
        before = STAGES[: STAGES.index(stage)]
        assert all(attempts[s] == 1 for s in before), attempts
        assert attempts[stage] >= 2
        with pg_db.transaction() as session:
            job = session.get(Job, job_id)
            assert job is not None and job.points == job.chunks > 0
        assert recovery_s < 60
    finally:
        loop.stop()
        for proc in running.values():
            kill_group(proc, signal.SIGTERM)
    # The index pool has let go of the embedded store's folder: one point per chunk, none duplicated
    store = open_vector_store(settings)
    try:
        (collection,) = store.collections()
        assert sum(1 for _ in store.records(collection)) == job.chunks
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.redis
def test_sigterm_lets_the_stage_in_flight_finish_and_loses_nothing(
    process_settings: Settings, pg_db: Database, tmp_path: Path
) -> None:
    settings = process_settings
    markers = tmp_path / "markers"
    markers.mkdir()
    slow = {"SLOW_STAGE": "embed", "SLOW_STAGE_S": "3", "SLOW_STAGE_MARKERS": str(markers)}
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")
    ingest = start_pool(settings, ["ingest", "ocr"], tmp_path / "ingest.log", **slow)
    index = start_pool(settings, ["index"], tmp_path / "index.log", **slow)
    try:
        body = io.BytesIO(text_pdf(["Stop me gently. " * 50]))
        job_id = (
            app.test_client()
            .post("/v1/documents", headers=auth(key), data={"file": (body, "t.pdf")})
            .get_json()["job_id"]
        )
        wait_for(lambda: (markers / f"{job_id}-embed").exists(), 60, "the embed stage to start")
        # When the ingest pool is asked to stop in the middle of the embed stage (the signal goes to
        # its main process, which passes it on once; a second SIGTERM makes Dramatiq kill at once)
        ingest.send_signal(signal.SIGTERM)
        # Then it finishes that stage before it exits, and the job completes with nothing redone
        ingest.wait(timeout=60)
        wait_for(lambda: job_status(pg_db, job_id)[0] == "completed", 60, "the job to complete")
        assert stage_attempts(pg_db, job_id)["embed"] == 1
    finally:
        for proc in (ingest, index):
            if proc.poll() is None:
                kill_group(proc, signal.SIGTERM)
