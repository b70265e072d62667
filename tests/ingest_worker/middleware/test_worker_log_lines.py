"""Worker log lines: the webhook actor's records carry the delivery's job and tenant (not the delivery
id as a job id), and a message the tenant cap puts back is counted and logged at debug, without
Dramatiq's "was skipped" warning."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import dramatiq
import pytest
from dramatiq import Worker
from dramatiq.brokers.stub import StubBroker
from prometheus_client import REGISTRY

from ingest_worker.middleware.log_context import LogContext
from ingest_worker.middleware.tenant_concurrency import LocalSlots, TenantConcurrency
from ingest_worker.webhooks import deliver
from shared import logging as ingest_logging
from shared.db import Database
from shared.queue import webhook_message
from shared.settings import Settings
from tests.ingest_worker.webhooks.test_webhooks import LOCAL, deliveries, make_job


class Records(logging.Handler):
    """Every record at or above `level` that reaches the logger, with the bound ids stamped on."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.addFilter(ingest_logging.ContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def worker_records() -> Iterator[Records]:
    handler = Records(logging.INFO)
    logger = logging.getLogger("dramatiq")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def test_webhook_log_lines_carry_the_job_and_tenant_of_the_delivery(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given a delivery to a receiver that refuses connections, and the log context of its message
    job_id, _ = make_job(sqlite_db, "http://127.0.0.1:9/hook")
    row = deliveries(sqlite_db, job_id)[0]
    handler = Records(logging.INFO)
    logging.getLogger("ingest_worker.webhooks").addHandler(handler)
    message = dramatiq.broker.MessageProxy(webhook_message(row.id))
    LogContext().before_process_message(StubBroker(), message)
    try:
        # When the webhook actor attempts it and logs the failure
        deliver(sqlite_db, settings.replace(**LOCAL), row.id)
    finally:
        logging.getLogger("ingest_worker.webhooks").removeHandler(handler)
        ingest_logging.clear()
    # Then its lines name the job and tenant of the delivery, and the message
    assert handler.records, "the failed attempt was not logged"
    for record in handler.records:
        assert (record.job_id, record.tenant_id) == (job_id, row.tenant_id)  # type: ignore[attr-defined]
        assert record.message_id == message.message_id  # type: ignore[attr-defined]


def put_backs(queue: str) -> float:
    return REGISTRY.get_sample_value("ingest_tenant_cap_put_backs_total", {"queue": queue}) or 0.0


def test_a_message_over_the_tenant_cap_is_put_back_quietly_and_counted(worker_records: Records) -> None:
    # Given a worker whose tenants may run one message at a time, and a tenant's message running
    broker = StubBroker()
    broker.add_middleware(TenantConcurrency(LocalSlots(), cap=1, slot_ttl_ms=5000, requeue_delay_ms=(50, 50)))
    release, started, ran = threading.Event(), threading.Event(), []

    @dramatiq.actor(broker=broker, queue_name="capped", max_retries=0)
    def work(n: int) -> None:
        ran.append(n)
        started.set()
        release.wait(5)

    before = put_backs("capped")
    worker = Worker(broker, worker_threads=2, worker_timeout=50)
    worker.start()
    try:
        work.send_with_options(args=(1,), tenant_id="t1")
        assert started.wait(5)
        # When a second message of the same tenant arrives while the first runs
        work.send_with_options(args=(2,), tenant_id="t1")
        deadline = time.monotonic() + 5
        while put_backs("capped") == before:
            assert time.monotonic() < deadline, "the second message was never put back"
            time.sleep(0.02)
        release.set()
        broker.join("capped")
        worker.join()
    finally:
        release.set()
        worker.stop()
    # Then it was put back, counted, and ran once the slot was free
    assert sorted(ran) == [1, 2]
    # And Dramatiq's worker logged no warning about it
    assert not [r for r in worker_records.records if "was skipped" in r.getMessage()]
