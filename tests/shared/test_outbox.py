"""The transactional outbox: rows commit with the job; one relay publishes stage messages and webhook
deliveries right after the commit, and its sweep whatever that left, once the broker is up."""

from __future__ import annotations

import pytest
from dramatiq import Message
from dramatiq.broker import Broker
from sqlalchemy import select, update

from shared import jobs, outbox
from shared.db import Database
from shared.models import Job, OutboxMessage, Tenant, WebhookDelivery
from shared.outbox import Relay
from shared.queue import (
    ACTOR_FOR_STAGE,
    QUEUE_INGEST,
    QUEUE_OCR,
    QUEUE_WEBHOOKS,
    WEBHOOK_ACTOR,
    Publisher,
    make_broker,
)
from shared.settings import Settings
from tests.shared.test_jobs import new_job
from tests.support.ports import free_port


def add_row(db: Database, job_id: str) -> int:
    with db.transaction() as session:
        return outbox.add_message(session, job_id, "validate").id


def pending(db: Database) -> list[int]:
    with db.transaction() as session:
        return list(session.scalars(select(OutboxMessage.id).where(OutboxMessage.published_at.is_(None))))


def test_relay_publishes_the_pipeline_from_the_rows_stage(sqlite_db: Database, settings: Settings) -> None:
    # Given a committed job with its outbox row, and the in-process broker
    broker = make_broker(settings)
    job_id = new_job(sqlite_db)
    row_id = add_row(sqlite_db, job_id)
    # When the relay publishes it
    published = Relay(sqlite_db.sessions, Publisher(broker)).publish([row_id])
    # Then the first stage's message (job id only, the rest chained behind it) is on the queue
    assert published == 1 and pending(sqlite_db) == []
    queued = broker.queues[QUEUE_INGEST]
    assert queued.qsize() == 1
    from dramatiq import Message

    message = Message.decode(queued.get())
    assert message.actor_name == ACTOR_FOR_STAGE["validate"] and message.args == (job_id,)
    assert message.options["pipe_target"]["actor_name"] == ACTOR_FOR_STAGE["extract"]


def test_a_row_is_published_once_even_when_both_paths_run(sqlite_db: Database, settings: Settings) -> None:
    # Given a row already published by the fast path
    broker = make_broker(settings)
    relay = Relay(sqlite_db.sessions, Publisher(broker))
    row_id = add_row(sqlite_db, new_job(sqlite_db))
    assert relay.publish([row_id]) == 1
    # When the sweep and the fast path run again
    assert relay.publish_pending() == 0
    assert relay.publish([row_id]) == 0
    # Then the message went out once
    assert broker.queues[QUEUE_INGEST].qsize() == 1


@pytest.mark.redis
def test_broker_outage_keeps_the_row_until_the_broker_is_back(
    sqlite_db: Database, settings: Settings, redis_url: str, broker_namespace: str
) -> None:
    # Given a broker that cannot be reached
    down = Settings(broker_url=f"redis://127.0.0.1:{free_port()}/0", broker_timeout_s=0.5)
    row_id = add_row(sqlite_db, new_job(sqlite_db))
    # When the relay tries to publish
    assert Relay(sqlite_db.sessions, Publisher(make_broker(down))).publish([row_id]) == 0
    # Then the row is still pending, with the error recorded and a later retry time
    assert pending(sqlite_db) == [row_id]
    with sqlite_db.transaction() as session:
        row = session.get(OutboxMessage, row_id)
        assert row is not None and row.last_error == "broker_unavailable" and row.attempts == 1
        row.available_at = row.created_at  # due again now
    # When the broker is back, the sweep publishes it
    up = Settings(broker_url=redis_url, broker_namespace=broker_namespace)
    broker = make_broker(up)
    assert Relay(sqlite_db.sessions, Publisher(broker)).publish_pending() == 1
    assert pending(sqlite_db) == []
    assert broker.client.llen(f"{broker_namespace}:{QUEUE_INGEST}") == 1  # type: ignore[attr-defined]


class BrokenPublisher(Publisher):
    def publish(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("an unexpected fault in the broker client")


def test_the_fast_path_never_fails_the_caller_after_its_commit(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given a committed row and a publisher that fails in an unexpected way
    row_id = add_row(sqlite_db, new_job(sqlite_db))
    # When the fast path runs, then it reports nothing published instead of raising
    assert Relay(sqlite_db.sessions, BrokenPublisher(make_broker(settings))).publish([row_id]) == 0
    # And the row waits for the sweep, which publishes it once the publisher works
    assert pending(sqlite_db) == [row_id]
    with sqlite_db.transaction() as session:
        row = session.get(OutboxMessage, row_id)
        assert row is not None
        row.available_at = row.created_at
    assert Relay(sqlite_db.sessions, Publisher(make_broker(settings))).publish_pending() == 1


def test_a_part_row_publishes_that_part_and_stamps_a_running_jobs_hand_off(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given a running job with an outbox row for part 3 of its OCR stage
    broker = make_broker(settings)
    job_id = new_job(sqlite_db)
    with sqlite_db.transaction() as session:
        jobs.start(session, job_id, "ocr")
        row_id = outbox.add_message(session, job_id, "ocr", part=3).id
    # When a relay without any worker middleware publishes it
    assert Relay(sqlite_db.sessions, Publisher(broker)).publish([row_id]) == 1
    # Then that part's message alone is on the OCR queue, and the job's hand-off is recorded
    from dramatiq import Message

    message = Message.decode(broker.queues[QUEUE_OCR].get())
    assert (message.actor_name, message.args) == ("ocr_range", (job_id, 3))
    assert "pipe_target" not in message.options
    with sqlite_db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.handed_on_at is not None


def hooked_job(db: Database) -> str:
    """A queued job whose tenant has a default webhook endpoint, so every event has a delivery."""
    job_id = new_job(db)
    with db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        tenant = session.get(Tenant, job.tenant_id)
        assert tenant is not None
        tenant.default_callback_url = "https://example.com/hook"
    return job_id


def delivery_rows(db: Database, job_id: str) -> list[WebhookDelivery]:
    with db.transaction() as session:
        return list(
            session.scalars(
                select(WebhookDelivery).where(WebhookDelivery.job_id == job_id).order_by(WebhookDelivery.id)
            )
        )


def attached_relay(db: Database, settings: Settings) -> Broker:
    """An in-process broker, and a relay on it attached to the database's session factory."""
    broker = make_broker(settings)
    Relay.from_settings(db.sessions, Publisher(broker), settings).attach(db.sessions)
    return broker


def test_an_attached_relay_publishes_a_commits_rows_of_every_kind_at_once(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given a relay attached to the session factory, and a job with a webhook endpoint
    job_id = hooked_job(sqlite_db)
    broker = attached_relay(sqlite_db, settings)
    # When one transaction moves the job on (an event, so a delivery) and queues a stage message
    with sqlite_db.transaction() as session:
        jobs.cancel_queued(session, job_id)
        outbox.add_message(session, job_id, "validate")
    # Then, with no sweep, both are in the broker and marked published
    assert pending(sqlite_db) == []
    assert broker.queues[QUEUE_INGEST].qsize() == 1
    delivery = delivery_rows(sqlite_db, job_id)[-1]
    assert delivery.event_type == "job.cancelled" and delivery.published_at is not None
    message = Message.decode(broker.queues[QUEUE_WEBHOOKS].get_nowait())
    assert (message.actor_name, message.args) == (WEBHOOK_ACTOR, (delivery.id,))


def test_rows_of_a_rolled_back_transaction_are_never_published(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given an attached relay
    job_id = new_job(sqlite_db)
    broker = attached_relay(sqlite_db, settings)
    # When a transaction that added a row fails
    with pytest.raises(RuntimeError), sqlite_db.transaction() as session:
        outbox.add_message(session, job_id, "validate")
        raise RuntimeError("the request failed after the row was flushed")
    # Then nothing went out, and nothing is left to go out
    assert broker.queues[QUEUE_INGEST].qsize() == 0 and pending(sqlite_db) == []


@pytest.mark.postgres
def test_rows_committed_inside_another_open_transaction_wait_for_it(
    pg_db: Database, settings: Settings
) -> None:
    # Given an attached relay and a job with a webhook endpoint
    job_id = hooked_job(pg_db)
    broker = attached_relay(pg_db, settings)
    # When a transaction commits while another of the same thread holds the job's row locked
    with pg_db.transaction() as outer:
        outer.execute(update(Job).where(Job.id == job_id).values(attempts=Job.attempts + 1))
        with pg_db.transaction() as inner:
            outbox.add_message(inner, job_id, "validate")
        # Then its rows wait (the relay would block on the lock the outer transaction holds)
        assert broker.queues[QUEUE_INGEST].qsize() == 0
    # And they go out as soon as the outer one ends
    assert broker.queues[QUEUE_INGEST].qsize() == 1 and pending(pg_db) == []


def test_the_sweep_publishes_due_deliveries_beside_stage_messages(
    sqlite_db: Database, settings: Settings
) -> None:
    # Given a job with a delivery and a stage message, committed with no relay attached
    job_id = hooked_job(sqlite_db)
    with sqlite_db.transaction() as session:
        jobs.cancel_queued(session, job_id)
        outbox.add_message(session, job_id, "validate")
    # When the relay's sweep runs
    broker = make_broker(settings)
    assert Relay.from_settings(sqlite_db.sessions, Publisher(broker), settings).publish_pending() == 2
    # Then both went out, the delivery once, marked in its row
    assert broker.queues[QUEUE_INGEST].qsize() == 1 and broker.queues[QUEUE_WEBHOOKS].qsize() == 1
    assert [d.published_at is not None for d in delivery_rows(sqlite_db, job_id)] == [True]
    assert Relay.from_settings(sqlite_db.sessions, Publisher(broker), settings).publish_pending() == 0
