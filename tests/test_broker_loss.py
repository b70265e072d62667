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
from tests.inprocess import in_process_service
from tests.pdfs import text_pdf

pytestmark = pytest.mark.slow

JOBS = 100


def count(resources: Resources, status: str) -> int:
    with resources.db.transaction() as session:
        return int(session.scalar(select(func.count()).select_from(Job).where(Job.status == status)) or 0)


def test_every_job_completes_after_redis_is_flushed_mid_burst(settings: Settings, private_redis: str) -> None:
    settings = settings.replace(
        broker_url=private_redis,
        handoff_stall_s=3,
        lease_s=3,
        maintenance_interval_s=0.5,
        tenant_max_concurrency=0,
    )
    with in_process_service(settings, threads=2, maintenance=True) as service:
        resources = service.resources
        client: Any = service.app.test_client()
        key = tenant_key(service.app, "acme")
        # Given a burst of 100 uploads being processed
        for n in range(JOBS):
            # (enough text that no page needs OCR: tesseract is not what this test is about)
            body = io.BytesIO(text_pdf([f"Burst document number {n}, one of a hundred."]))
            assert (
                client.post("/v1/documents", headers=auth(key), data={"file": (body, "b.pdf")}).status_code
                == 202
            )
        deadline = time.monotonic() + 60
        while count(resources, "completed") < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        # When Redis loses everything it held
        redis.Redis.from_url(private_redis).flushall()
        flushed_at = time.monotonic()
        lost = JOBS - count(resources, "completed")
        # Then every job still completes
        deadline = time.monotonic() + 180
        while count(resources, "completed") < JOBS and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"{lost} unfinished jobs recovered {time.monotonic() - flushed_at:.1f}s after the flush")
        assert count(resources, "completed") == JOBS
        assert lost > 0
        # With one point per chunk, none lost or duplicated
        with resources.db.transaction() as session:
            chunks = session.scalar(select(func.sum(Job.chunks)))
            points = session.scalar(select(func.sum(Job.points)))
        store = resources.vectors
        collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
        assert chunks == points == store.client.count(collection, exact=True).count


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
        resources = service.resources
        client: Any = service.app.test_client()
        key = tenant_key(service.app, "acme")
        # Given a burst of uploads being processed
        for n in range(JOBS // 2):
            body = io.BytesIO(text_pdf([f"Burst document number {n}, one of fifty."]))
            response = client.post("/v1/documents", headers=auth(key), data={"file": (body, "b.pdf")})
            assert response.status_code == 202
        deadline = time.monotonic() + 60
        while count(resources, "completed") < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        # When the RabbitMQ node is stopped and started again
        rabbitmq_node.restart()
        restarted_at = time.monotonic()
        # Then every job still completes, with one point per chunk
        deadline = time.monotonic() + 180
        while count(resources, "completed") < JOBS // 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"all jobs completed {time.monotonic() - restarted_at:.1f}s after the restart")
        assert count(resources, "completed") == JOBS // 2
        with resources.db.transaction() as session:
            chunks = session.scalar(select(func.sum(Job.chunks)))
            points = session.scalar(select(func.sum(Job.points)))
        store = resources.vectors
        collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
        assert chunks == points == store.client.count(collection, exact=True).count
