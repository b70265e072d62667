"""Fairness between tenants on the production path: one tenant's upload while another's burst waits.

    python -m tests.bench.fairness [--jobs 50] [--caps 2,0,1]

The worker runs in this process on the real Redis broker (a private key namespace) with 2 threads;
the gateway is the Flask app publishing on that broker, with SQLite, a local object store and Qdrant
local mode in a temporary folder. Embeddings come from the tests' OpenAI-compatible server on
127.0.0.1, which answers at once: what is measured is how the worker's threads are shared between
tenants, not onnxruntime.

For each value of the per-tenant cap (INGEST_TENANT_MAX_CONCURRENCY), on a fresh service, tenant B
uploads one document alone three times (idle), then tenant A uploads a burst of documents one request
after another and B uploads one more as soon as A's last is accepted. B's latency runs from its
upload request to its job's `finished_at`; A's jobs finished before B's upload and before B's job are
counted from their own rows. `measure_fairness` returns the numbers (`make bench` uses it); `main`
prints them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
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
from tests.bench.documents import prose_pages
from tests.openai_server import OpenAIServer
from tests.pdfs import text_pdf

REDIS_URL = os.environ.get("INGEST_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
WORKER_THREADS = 2
# How long the worker waits on an empty queue before it polls again, at most: start_worker's default, as
# in deploy/embedded.py (the `dramatiq` command of `make worker` waits up to a second).
WORKER_TIMEOUT_MS = 100
BURST_JOBS = 50
IDLE_RUNS = 3
# The default cap, no cap (what the default buys), and a cap below the worker's thread count (what a
# cap can buy on this worker: one of A's messages in progress at most leaves B a thread).
CAPS = (2, 0, 1)
PAGES = 3
WORDS_PER_PAGE = 280
POLL_INTERVAL_S = 0.02
# The goal: tenant B's upload under another tenant's burst takes at most this many times its idle time.
GOAL_RATIO = 2.0


@dataclass(frozen=True)
class FairnessRun:
    """Tenant B's latency alone and right after tenant A's burst, with one value of the cap."""

    cap: int  # INGEST_TENANT_MAX_CONCURRENCY (0: no cap)
    idle_s: tuple[float, ...]  # B alone, one upload after another
    burst_s: float  # B's upload sent right after A's burst was accepted → B's job finished
    burst_jobs: int
    submit_s: float  # A's first upload sent → A's last upload accepted
    done_at_upload: int  # A's jobs finished when B's upload was sent
    done_before: int  # A's jobs finished before B's job
    drained_s: float  # A's first upload sent → A's last job finished
    put_back: int  # messages the worker put back in their queue for being over their tenant's cap

    @property
    def idle_median_s(self) -> float:
        return statistics.median(self.idle_s)

    @property
    def ratio(self) -> float:
        return self.burst_s / self.idle_median_s


@dataclass(frozen=True)
class Fairness:
    """Every run of the fairness benchmark, and how it was set up."""

    runs: list[FairnessRun]
    worker_threads: int
    worker_timeout_ms: int
    pages: int  # of every document, A's and B's


TABLE_HEADER = (
    "| INGEST_TENANT_MAX_CONCURRENCY | B alone (median of 3) | B right after A's burst | ratio | "
    "A's jobs done when B was sent | when B finished | A's burst drained in | messages put back |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- |"
)


def table_row(run: FairnessRun) -> str:
    verdict = "within" if run.ratio <= GOAL_RATIO else "over"
    return (
        f"| {run.cap or '0 (no cap)'} | {run.idle_median_s:.2f} s | {run.burst_s:.2f} s "
        f"| {run.ratio:.1f}x ({verdict} {GOAL_RATIO:g}x) | {run.done_at_upload}/{run.burst_jobs} "
        f"| {run.done_before}/{run.burst_jobs} | {run.drained_s:.1f} s | {run.put_back} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=BURST_JOBS)
    parser.add_argument("--caps", default=",".join(map(str, CAPS)))
    args = parser.parse_args()
    result = measure_fairness(caps=tuple(int(c) for c in args.caps.split(",")), burst_jobs=args.jobs)
    print(TABLE_HEADER)
    for run in result.runs:
        print(table_row(run))
    print("\nB alone, each run:", "; ".join(f"cap {r.cap}: {_seconds(r.idle_s)}" for r in result.runs))
    print("A's uploads accepted in:", "; ".join(f"cap {r.cap}: {r.submit_s:.1f} s" for r in result.runs))


def _seconds(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def measure_fairness(caps: tuple[int, ...] = CAPS, burst_jobs: int = BURST_JOBS) -> Fairness:
    """Run the two-tenant scenario once per cap, each on a fresh service.

    Leaves nothing behind but Dramatiq's idle time-limit watchdogs: worker threads stopped, parse
    children ended, folders removed, Redis keys deleted.
    """
    # Distinct bytes for every upload: the same bytes again would be answered as a duplicate.
    documents = (text_pdf(prose_pages(PAGES, WORDS_PER_PAGE, seed=1000 + n)) for n in range(10**6))
    runs = []
    with OpenAIServer() as provider, _quiet_skips():
        for cap in caps:
            with _service(cap, provider) as service:
                runs.append(service.scenario(documents, burst_jobs))
    return Fairness(runs, WORKER_THREADS, WORKER_TIMEOUT_MS, PAGES)


class _PutBack(Middleware):
    """Counts the messages the worker skipped, which only the tenant cap does: each went back to its
    queue with a delay, a fetch spent for nothing."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def after_skip_message(self, broker: Broker, message: Any) -> None:
        with self._lock:
            self.count += 1


class _Service:
    """The gateway and an in-process worker on Redis, with tenants A and B."""

    def __init__(self, app: Flask, db: Database, cap: int, put_back: _PutBack) -> None:
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

    def scenario(self, documents: Iterator[bytes], burst_jobs: int) -> FairnessRun:
        # Not timed: the first job of each tenant starts the parse children and creates the collection.
        self.latency_s(self.a, next(documents))
        self.latency_s(self.b, next(documents))
        idle = tuple(self.latency_s(self.b, next(documents)) for _ in range(IDLE_RUNS))
        # Generated beforehand, so nothing but the uploads sits between A's burst and B's upload.
        burst = [next(documents) for _ in range(burst_jobs)]
        mine = next(documents)
        put_back_before = self.put_back.count
        started = datetime.now(UTC)
        backlog = [self.upload(self.a, pdf) for pdf in burst]
        sent = datetime.now(UTC)
        job_id = self.upload(self.b, mine)
        finished = self.wait([job_id])[job_id]
        drained = max(self.wait(backlog).values())
        return FairnessRun(
            cap=self.cap,
            idle_s=idle,
            burst_s=(finished - sent).total_seconds(),
            burst_jobs=burst_jobs,
            submit_s=(sent - started).total_seconds(),
            done_at_upload=self.finished_before(backlog, sent),
            done_before=self.finished_before(backlog, finished),
            drained_s=(drained - started).total_seconds(),
            put_back=self.put_back.count - put_back_before,
        )


@contextlib.contextmanager
def _service(cap: int, provider: OpenAIServer) -> Iterator[_Service]:
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
    put_back = _PutBack()
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
        yield _Service(app, resources.db, cap, put_back)
    finally:
        # Dramatiq's time-limit watchdog, started by start_worker with the broker, has no way to stop:
        # one idle daemon thread per run stays until this process exits.
        if worker is not None:
            worker.stop()
        broker.close()
        resources.vectors.close()
        resources.db.engine.dispose()
        _end_idle_parse_children()
        shutil.rmtree(workdir, ignore_errors=True)
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{namespace}*"))
        if keys:
            client.delete(*keys)
        client.close()


def _end_idle_parse_children() -> None:
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
def _quiet_skips() -> Iterator[None]:
    """Drop Dramatiq's warning for each skipped message: here every one is a message over its tenant's
    cap, counted by `_PutBack`, and there are hundreds of them."""

    def keep(record: logging.LogRecord) -> bool:
        return not str(record.msg).endswith("was skipped.")

    logger = logging.getLogger("dramatiq.worker.WorkerThread")
    logger.addFilter(keep)
    try:
        yield
    finally:
        logger.removeFilter(keep)


if __name__ == "__main__":
    main()
