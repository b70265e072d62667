"""`make run` SIGKILLed in the middle of index stages: after each restart the embedded store holds
exactly the expected points, one per chunk (the engine replays its write-ahead log)."""

from __future__ import annotations

import io
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from ingest_worker.stages.index import point_id
from shared.db import Database, migrate
from shared.models import Job, JobStage
from shared.settings import Settings
from shared.tenants import create_tenant
from shared.vectorstores import EdgeStore, open_vector_store
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.forkserver import Forked, spawn
from tests.support.pdfs import text_pdf
from tests.support.ports import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
KILLS = 5


def wait_for(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Embedded:
    """`deploy/embedded.py` (through tests/support/killable_embedded.py) in a process group of its own."""

    def __init__(self, data_dir: Path, markers: Path) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "INGEST_DATA_DIR": str(data_dir),
            "INGEST_HOST": "127.0.0.1",
            "INGEST_PORT": str(self.port),
            "INGEST_EMBEDDER": FAKE_EMBEDDER,
            "INGEST_BROKER_URL": "",
            "INGEST_DATABASE_URL": "",
            "INGEST_QDRANT_URL": "",
            "INGEST_STORAGE_BACKEND": "local",
            "KILL_MARKERS": str(markers),
        }
        self.log = data_dir.parent / "embedded.log"
        self.process: Forked | None = None

    def start(self) -> None:
        self.process = spawn(
            [str(ROOT / "tests" / "support" / "killable_embedded.py")], env=self.env, cwd=ROOT, log=self.log
        )
        wait_for(self.healthy, 60, "the embedded process to answer")

    def healthy(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(self.log.read_text()[-3000:])
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None


def test_sigkill_in_index_stages_loses_and_duplicates_no_point(tmp_path: Path) -> None:
    data_dir, markers = tmp_path / "data", tmp_path / "markers"
    markers.mkdir()
    settings = Settings(data_dir=str(data_dir), embedder=FAKE_EMBEDDER)
    migrate(settings.effective_database_url)
    db = Database(settings.effective_database_url)
    with db.transaction() as session:
        _, key = create_tenant(session, "acme")
    service = Embedded(data_dir, markers)
    rng = random.Random()
    try:
        for n in range(KILLS):
            service.start()
            # Given a document whose index stage has written at least one acknowledged batch
            pages = [f"Document {n} page {p}. " + "words to index " * 120 for p in range(48)]
            answer = httpx.post(
                f"http://127.0.0.1:{service.port}/v1/documents",
                headers={"Authorization": f"Bearer {key}"},
                files={"file": (f"d{n}.pdf", io.BytesIO(text_pdf(pages)), "application/pdf")},
                timeout=30,
            )
            job_id = answer.json()["job_id"]
            acked = markers / f"{job_id}-acked"
            wait_for(acked.exists, 120, "the first acknowledged batch")
            # When the process is SIGKILLed at a random moment before the stage is recorded
            time.sleep(rng.uniform(0, 0.3))
            service.kill()
            assert index_stage(db, job_id) == "running"
            # (the acknowledged batches survived the kill, replayed from the write-ahead log)
            survived = job_points(settings, job_id)
            assert len(survived) >= 16 and all(
                p in {point_id(job_id, i) for i in range(200)} for p in survived
            )
            # Then, restarted, it completes the job
            service.start()
            wait_for(lambda j=job_id: job_status(db, j) == "completed", 120, "the job to complete")
            service.kill()
            # And the store holds exactly one point per chunk of every job, ids as expected
            expected = expected_ids(db)
            store = open_vector_store(settings)
            try:
                assert isinstance(store, EdgeStore)
                (collection,) = store.collections()
                found = [p.id for p in store.records(collection)]
                assert len(found) == len(expected) and set(found) == expected
            finally:
                store.close()
    finally:
        service.kill()
        db.dispose()


def job_status(db: Database, job_id: str) -> str:
    with db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return str(job.status.value if hasattr(job.status, "value") else job.status)


def job_points(settings: Settings, job_id: str) -> list[str]:
    store = open_vector_store(settings)
    try:
        return [p.id for c in store.collections() for p in store.records(c) if p.payload["job_id"] == job_id]
    finally:
        store.close()


def index_stage(db: Database, job_id: str) -> str | None:
    with db.transaction() as session:
        row = session.get(JobStage, (job_id, "index"))
        return None if row is None else row.status


def expected_ids(db: Database) -> set[str]:
    with db.transaction() as session:
        jobs = session.execute(select(Job.id, Job.chunks, Job.points)).all()
    assert all(chunks == points for _, chunks, points in jobs)
    return {point_id(job_id, i) for job_id, chunks, _ in jobs for i in range(chunks)}
