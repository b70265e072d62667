"""A broker that forgets: Redis flushed in the middle of a 100-job burst. The database still knows
every job, and the sweeper brings each one to `completed`."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
import redis
from sqlalchemy import func, select

from ingest_worker.resources import Resources
from shared.models import Job
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf

pytestmark = pytest.mark.slow

JOBS = 100


def count(resources: Resources, status: str) -> int:
    with resources.db.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(Job).where(Job.status == status)) or 0)


def upload_burst(service: Any, jobs: int, *, then_wait_for: int) -> None:
    """`jobs` uploads of one-page text PDFs (no OCR: tesseract is not what these tests are about), then
    wait until `then_wait_for` of them completed."""
    client: Any = service.app.test_client()
    key = tenant_key(service.app, "acme")
    for n in range(jobs):
        body = io.BytesIO(text_pdf([f"Burst document number {n}, one of {jobs}."]))
        response = client.post("/v1/documents", headers=auth(key), data={"file": (body, "b.pdf")})
        assert response.status_code == 202
    wait_completed(service.resources, then_wait_for, timeout_s=60)


def wait_completed(resources: Resources, jobs: int, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while count(resources, "completed") < jobs and time.monotonic() < deadline:
        time.sleep(0.05)


def assert_one_point_per_chunk(resources: Resources) -> None:
    with resources.db.transaction() as session:
        chunks = session.scalar(select(func.sum(Job.chunks)))
        points = session.scalar(select(func.sum(Job.points)))
    store = resources.vectors
    collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
    assert chunks == points == sum(1 for _ in store.records(collection))


def test_every_job_completes_after_redis_is_flushed_mid_burst(settings: Settings, private_redis: str) -> None:
    settings = settings.replace(
        broker_url=private_redis,
        handoff_stall_s=3,
        lease_s=3,
        maintenance_interval_s=0.5,
        tenant_max_concurrency=0,
    )
    with in_process_service(settings, threads=2, maintenance=True) as service:
        # Given a burst of 100 uploads being processed
        upload_burst(service, JOBS, then_wait_for=10)
        # When Redis loses everything it held
        redis.Redis.from_url(private_redis).flushall()
        flushed_at = time.monotonic()
        lost = JOBS - count(service.resources, "completed")
        # Then every job still completes
        wait_completed(service.resources, JOBS, timeout_s=180)
        print(f"{lost} unfinished jobs recovered {time.monotonic() - flushed_at:.1f}s after the flush")
        assert count(service.resources, "completed") == JOBS
        assert lost > 0
        # With one point per chunk, none lost or duplicated
        assert_one_point_per_chunk(service.resources)


@pytest.mark.rabbitmq
def test_every_job_completes_after_rabbitmq_is_restarted_mid_burst(
    settings: Settings, rabbitmq_node: Any, rabbitmq_url: str, redis_url: str
) -> None:
    settings = settings.replace(
        broker_url=rabbitmq_url,
        tenant_slots_redis_url=redis_url,
        handoff_stall_s=3,
        lease_s=3,
        maintenance_interval_s=0.5,
        tenant_max_concurrency=0,
        bulk_max_concurrency=0,
    )
    with in_process_service(settings, threads=2, maintenance=True) as service:
        # Given a burst of uploads being processed
        upload_burst(service, JOBS // 2, then_wait_for=5)
        # When the RabbitMQ node is stopped and started again
        rabbitmq_node.restart()
        restarted_at = time.monotonic()
        # Then every job still completes, with one point per chunk
        wait_completed(service.resources, JOBS // 2, timeout_s=180)
        print(f"all jobs completed {time.monotonic() - restarted_at:.1f}s after the restart")
        assert count(service.resources, "completed") == JOBS // 2
        assert_one_point_per_chunk(service.resources)
