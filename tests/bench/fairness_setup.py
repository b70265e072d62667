"""The fairness benchmark's setup: the gateway and an in-process worker on Redis, and tenants A and B."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dramatiq
import redis
from dramatiq.broker import Broker
from dramatiq.middleware import Middleware
from flask import Flask
from sqlalchemy import func, select

from gateway.app import create_app
from ingest_worker import isolation
from ingest_worker.broker import build_broker, start_worker
from ingest_worker.resources import Resources, configure
from shared.db import Database, migrate
from shared.models import Job
from shared.queue import Publisher
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.openai_server import OpenAIServer

REDIS_URL = os.environ.get("INGEST_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
WORKER_THREADS = 2
# How long the worker waits on an empty queue before it polls again, at most: start_worker's default, as
# in deploy/embedded.py (the `dramatiq` command of `make worker` waits up to a second).
WORKER_TIMEOUT_MS = 100
POLL_INTERVAL_S = 0.02


class PutBack(Middleware):
    """Counts the messages the worker skipped, which only the tenant cap does: each went back to its
    queue with a delay, a fetch spent for nothing."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def after_skip_message(self, broker: Broker, message: Any) -> None:
        with self._lock:
            self.count += 1


class FairnessService:
    """The gateway and an in-process worker on Redis, with tenants A and B."""

    def __init__(self, app: Flask, db: Database, cap: int, put_back: PutBack) -> None:
        self.app = app
        self.db = db
        self.cap = cap
        self.put_back = put_back
        with db.transaction() as session:
            self.a = create_tenant(session, "burst")[1]
            self.b = create_tenant(session, "single")[1]

    def upload(self, key: str, pdf: bytes) -> str:
        response = self.app.test_client().post(
            "/v1/documents",
            headers={"Authorization": f"Bearer {key}"},
            data={"file": (io.BytesIO(pdf), "doc.pdf")},
        )
        if response.status_code != 202:
            raise RuntimeError(f"upload answered {response.status_code}: {response.get_json()}")
        return str(response.get_json()["job_id"])

    def wait(self, job_ids: list[str], timeout_s: float = 120) -> dict[str, datetime]:
        """Wait until every job is finished and check they completed; their `finished_at` (UTC)."""
        deadline = time.monotonic() + timeout_s
        while True:
            # The job rows, not the API: the gateway shares this process's CPU with the worker threads,
            # and a query is the cheapest way to watch.
            with self.db.transaction() as session:
                rows = session.execute(
                    select(Job.id, Job.status, Job.finished_at).where(Job.id.in_(job_ids))
                ).all()
            if all(row.finished_at is not None for row in rows):
                failed = [(row.id, row.status) for row in rows if row.status != "completed"]
                if failed:
                    raise RuntimeError(f"jobs did not complete: {failed}")
                # The service stores naive UTC timestamps (shared.models.utcnow).
                return {row.id: row.finished_at.replace(tzinfo=UTC) for row in rows}
            if time.monotonic() > deadline:
                raise RuntimeError(f"jobs unfinished after {timeout_s} s")
            time.sleep(POLL_INTERVAL_S)

    def finished_before(self, job_ids: list[str], moment: datetime) -> int:
        with self.db.transaction() as session:
            count = session.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.id.in_(job_ids), Job.finished_at <= moment.replace(tzinfo=None))
            )
        return int(count or 0)

    def latency_s(self, key: str, pdf: bytes) -> float:
        """Upload one document and wait for it: request sent → the job's `finished_at`."""
        sent = datetime.now(UTC)
        job_id = self.upload(key, pdf)
        return (self.wait([job_id])[job_id] - sent).total_seconds()


@contextlib.contextmanager
def fairness_service(cap: int, provider: OpenAIServer) -> Iterator[FairnessService]:
    """A fresh service for one cap: its own folder, database and Redis namespace, all removed after."""
    # Imported here rather than at the top: importing the actors sets up Dramatiq's global broker,
    # which the rest of `make bench` does not need.
    import ingest_worker.actors as actors

    workdir = Path(tempfile.mkdtemp(prefix="fairness-bench-"))
    namespace = f"fairness-bench-{uuid.uuid4().hex[:8]}"
    settings = Settings.from_env(
        data_dir=str(workdir / "data"),
        database_url="",
        broker_url=REDIS_URL,
        broker_namespace=namespace,
        storage_backend="local",
        storage_dir="",
        qdrant_url="",
        qdrant_path="",
        embedder="openai",
        openai_api_key=provider.api_key,
        openai_base_url=provider.base_url,
        # The local embedder's dimension, so Qdrant stores what it stores by default.
        openai_dimensions=384,
        tenant_max_concurrency=cap,
        worker_threads=WORKER_THREADS,
        log_level="WARNING",
    )
    migrate(settings.effective_database_url)
    resources = Resources(settings)
    configure(resources)
    broker = build_broker(settings)
    put_back = PutBack()
    broker.add_middleware(put_back)
    actors.declare_on(broker)
    worker: dramatiq.Worker | None = None
    try:
        worker = start_worker(broker, threads=WORKER_THREADS, worker_timeout_ms=WORKER_TIMEOUT_MS)
        app = create_app(
            settings,
            publisher=Publisher(broker),
            db=resources.db,
            vectors=resources.vectors,
            embedder=resources.embedder,
        )
        yield FairnessService(app, resources.db, cap, put_back)
    finally:
        # Dramatiq's time-limit watchdog, started by start_worker with the broker, has no way to stop:
        # one idle daemon thread per run stays until this process exits.
        if worker is not None:
            worker.stop()
        broker.close()
        resources.vectors.close()
        resources.db.dispose()
        end_idle_parse_children()
        shutil.rmtree(workdir, ignore_errors=True)
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{namespace}*"))
        if keys:
            client.delete(*keys)
        client.close()


def end_idle_parse_children() -> None:
    """End the parse children the worker threads left idle in the pool (ingest_worker.isolation).

    They would otherwise wait for another call until this process exits; the pool has no public way
    to let them go, and no worker thread uses it any more.
    """
    pool = isolation._POOL
    with pool._lock:
        idle, pool._idle = pool._idle, []
    for child in idle:
        child.stop(kill=False)


@contextlib.contextmanager
def quiet_skips() -> Iterator[None]:
    """Drop Dramatiq's warning for each skipped message: here every one is a message over its tenant's
    cap, counted by `PutBack`, and there are hundreds of them."""

    def keep(record: logging.LogRecord) -> bool:
        return not str(record.msg).endswith("was skipped.")

    logger = logging.getLogger("dramatiq.worker.WorkerThread")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)
