"""Webhook deliveries on both databases: rows written with their event, signed with the tenant secret
(both secrets during a rotation), retried with backoff, throttled, and refused targets never called."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import select
from standardwebhooks import Webhook

from ingest_worker.webhooks import deliver
from shared import jobs, operations
from shared.db import Database
from shared.models import Document, JobEvent, JobStatus, Tenant, WebhookDelivery
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.webhook_receiver import Receiver, receiver

S = JobStatus
LOCAL = {"webhook_allow_http": True, "webhook_allowed_hosts": "127.0.0.1"}


def make_job(db: Database, url: str | None, *, default_url: str | None = None) -> tuple[str, str]:
    """A tenant and a queued job (with its `job.queued` event); returns (job id, tenant secret)."""
    with db.transaction() as session:
        tenant, _ = create_tenant(session, "acme")
        tenant.default_callback_url = default_url
        document = Document(
            tenant_id=tenant.id, filename="a.pdf", sha256="0" * 64, size_bytes=1, object_key="k"
        )
        session.add(document)
        session.flush()
        job = operations.create_job(session, tenant_id=tenant.id, document_id=document.id, callback_url=url)
        return job.id, str(tenant.webhook_secret)


def deliveries(db: Database, job_id: str) -> list[WebhookDelivery]:
    with db.transaction() as session:
        return list(
            session.scalars(
                select(WebhookDelivery).where(WebhookDelivery.job_id == job_id).order_by(WebhookDelivery.id)
            )
        )


def deliver_all(db: Database, settings: Settings, job_id: str) -> list[str]:
    return [deliver(db, settings, d.id) for d in deliveries(db, job_id)]


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver([]) as r:
        yield r


def test_each_committed_transition_gets_one_delivery_and_a_rolled_back_one_none(any_db: Database) -> None:
    # Given a job with a callback URL
    job_id, _ = make_job(any_db, "https://hooks.example/h")
    # When it starts, and then a transition is rolled back
    with any_db.transaction() as session:
        jobs.start(session, job_id, "validate")
    with pytest.raises(RuntimeError), any_db.transaction() as session:
        jobs.advance(session, job_id, "validate", pages=1)
        raise RuntimeError("the worker died before its commit")
    # Then the delivery rows are exactly the committed events: queued and started, in seq order
    rows = deliveries(any_db, job_id)
    with any_db.transaction() as session:
        events = session.execute(select(JobEvent.seq, JobEvent.type).where(JobEvent.job_id == job_id)).all()
    assert [(r.seq, r.event_type) for r in rows] == sorted(events)
    assert [r.event_type for r in rows] == ["job.queued", "job.started"]
    assert rows[1].payload["data"]["status"] == "running" and rows[1].payload["data"]["seq"] == rows[1].seq
    assert all(r.status == "pending" and r.url == "https://hooks.example/h" for r in rows)


def test_the_tenant_default_endpoint_serves_jobs_without_a_callback(any_db: Database) -> None:
    # Given a tenant with a default endpoint, and a job uploaded without a callback URL
    job_id, _ = make_job(any_db, None, default_url="https://tenant.example/all")
    # Then its events go to the default endpoint
    assert [d.url for d in deliveries(any_db, job_id)] == ["https://tenant.example/all"]


def test_no_endpoint_means_no_deliveries(sqlite_db: Database) -> None:
    job_id, _ = make_job(sqlite_db, None)
    assert deliveries(sqlite_db, job_id) == []


def test_a_delivery_is_signed_with_the_tenant_secret(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a job whose callback is a local receiver
    job_id, secret = make_job(sqlite_db, hook.url)
    hook.secrets.append(secret)
    # When its delivery is attempted
    outcome = deliver_all(sqlite_db, settings.replace(**LOCAL), job_id)
    # Then the receiver verified the signature with standardwebhooks and got the event
    assert outcome == ["delivered"]
    (event,) = hook.events
    assert event["type"] == "job.queued" and event["data"]["job_id"] == job_id and event["data"]["seq"] == 1
    assert hook.received[0].headers["webhook-id"] == event["id"]
    row = deliveries(sqlite_db, job_id)[0]
    assert (row.status, row.attempts, row.last_response_status) == ("delivered", 1, 200)


def test_during_a_rotation_both_secrets_sign(sqlite_db: Database, settings: Settings, hook: Receiver) -> None:
    # Given a tenant whose secret was just rotated
    from shared.models import utcnow
    from shared.webhooks import new_secret

    job_id, old = make_job(sqlite_db, hook.url)
    new = new_secret()
    with sqlite_db.transaction() as session:
        tenant = session.scalars(select(Tenant)).one()
        tenant.webhook_secret, tenant.webhook_secret_previous = new, old
        from datetime import timedelta

        tenant.webhook_secret_previous_until = utcnow() + timedelta(hours=1)
    # When an event is delivered
    deliver_all(sqlite_db, settings.replace(**LOCAL), job_id)
    # Then a receiver holding either secret verifies it: two signatures, space-separated
    request = hook.received[0]
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        assert Webhook(secret).verify(request.body, request.headers)["data"]["job_id"] == job_id


def test_a_failing_receiver_is_retried_with_backoff_then_gets_the_event(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a receiver that answers 500 twice
    hook.script = [500, 500]
    job_id, secret = make_job(sqlite_db, hook.url)
    hook.secrets.append(secret)
    fast = settings.replace(**LOCAL, webhook_min_backoff_s=0.01, webhook_max_backoff_s=0.02)
    # When the delivery is attempted until it is no longer pending
    outcomes = []
    while not outcomes or outcomes[-1] == "pending" or outcomes[-1] == "not_due":
        outcomes.append(deliver(sqlite_db, fast, deliveries(sqlite_db, job_id)[0].id))
    # Then it was delivered on the third attempt, and the log shows every attempt
    row = deliveries(sqlite_db, job_id)[0]
    assert row.status == "delivered" and row.attempts == 3
    assert [a["response_status"] for a in row.attempt_log] == [500, 500, 200]
    assert [a["error_code"] for a in row.attempt_log] == ["webhook_http_error", "webhook_http_error", None]
    assert len(hook.events) == 3 and len({e["id"] for e in hook.events}) == 1


def delivery_count(outcome: str) -> float:
    return REGISTRY.get_sample_value("ingest_webhook_deliveries_total", {"outcome": outcome}) or 0.0


def test_every_attempt_is_counted_in_the_metrics_by_outcome(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a receiver that answers 500 once, then 200
    hook.script = [500]
    job_id, _ = make_job(sqlite_db, hook.url)
    fast = settings.replace(**LOCAL, webhook_min_backoff_s=0.01, webhook_max_backoff_s=0.02)
    before = {outcome: delivery_count(outcome) for outcome in ("retrying", "delivered")}
    # When the delivery is attempted until it is no longer pending
    outcomes: list[str] = []
    while not outcomes or outcomes[-1] in ("pending", "not_due"):
        outcomes.append(deliver(sqlite_db, fast, deliveries(sqlite_db, job_id)[0].id))
    # Then the counter shows one attempt to retry and one delivered
    assert delivery_count("retrying") - before["retrying"] == 1
    assert delivery_count("delivered") - before["delivered"] == 1


def test_after_the_retry_budget_the_delivery_fails_for_good(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    hook.then = 503
    job_id, _ = make_job(sqlite_db, hook.url)
    fast = settings.replace(
        **LOCAL, webhook_max_attempts=3, webhook_min_backoff_s=0.01, webhook_max_backoff_s=0.01
    )
    outcomes: list[str] = []
    while not outcomes or outcomes[-1] in ("pending", "not_due"):
        outcomes.append(deliver(sqlite_db, fast, deliveries(sqlite_db, job_id)[0].id))
    row = deliveries(sqlite_db, job_id)[0]
    assert (row.status, row.attempts, row.last_response_status) == ("failed", 3, 503)
    assert len(hook.received) == 3


def test_redirects_are_not_followed(sqlite_db: Database, settings: Settings) -> None:
    with receiver([]) as target, receiver([], redirect_to="") as hook:
        hook.redirect_to = target.url
        job_id, _ = make_job(sqlite_db, hook.url)
        deliver_all(sqlite_db, settings.replace(**LOCAL), job_id)
        row = deliveries(sqlite_db, job_id)[0]
        assert (row.status, row.last_response_status, row.last_error_code) == (
            "pending",
            302,
            "webhook_redirect_refused",
        )
        assert target.received == []


def test_a_delivery_to_a_loopback_address_is_refused_when_not_allow_listed(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a delivery row to 127.0.0.1 (accepted while it was allow-listed)
    job_id, _ = make_job(sqlite_db, hook.url)
    # When it is attempted under a policy that no longer allows it
    outcome = deliver_all(sqlite_db, settings.replace(webhook_allow_http=True), job_id)
    # Then it fails for good without any request reaching the address
    assert outcome == ["failed"] and hook.received == []
    assert deliveries(sqlite_db, job_id)[0].last_error_code == "callback_url_not_allowed"


def test_progress_is_throttled_and_superseded_but_terminal_events_always_go(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a job that ran three stages in quick succession and then completed
    job_id, secret = make_job(sqlite_db, hook.url)
    hook.secrets.append(secret)
    with sqlite_db.transaction() as session:
        jobs.start(session, job_id, "validate")
        jobs.advance(session, job_id, "validate")
    throttled = settings.replace(**LOCAL, webhook_progress_interval_s=3600)
    deliver_all(sqlite_db, throttled, job_id)
    with sqlite_db.transaction() as session:
        for stage in ("extract", "ocr"):
            jobs.start(session, job_id, stage)
            jobs.advance(session, job_id, stage)
    # When the deliveries are attempted with a long progress interval
    deliver_all(sqlite_db, throttled, job_id)
    by_type = [(d.event_type, d.status) for d in deliveries(sqlite_db, job_id)]
    # Then the first progress event went, the next waits, the one it overtook is superseded
    assert by_type == [
        ("job.queued", "delivered"),
        ("job.started", "delivered"),
        ("job.stage_completed", "delivered"),
        ("job.stage_completed", "superseded"),
        ("job.stage_completed", "pending"),
    ]
    # And when the job completes, the waiting progress event is superseded and the terminal one goes
    with sqlite_db.transaction() as session:
        jobs.complete(session, job_id)
    deliver_all(sqlite_db, throttled, job_id)
    statuses = [(d.event_type, d.status) for d in deliveries(sqlite_db, job_id)]
    assert statuses[-2:] == [("job.stage_completed", "superseded"), ("job.completed", "delivered")]
    sent = [e["type"] for e in hook.events]
    assert sent == ["job.queued", "job.started", "job.stage_completed", "job.completed"]


def test_a_progress_event_being_retried_gives_way_to_a_newer_event(
    sqlite_db: Database, settings: Settings, hook: Receiver
) -> None:
    # Given a progress event whose first attempt failed (the receiver answered 500 once)
    job_id, _ = make_job(sqlite_db, hook.url)
    with sqlite_db.transaction() as session:
        jobs.start(session, job_id, "validate")
        jobs.advance(session, job_id, "validate")
        jobs.complete(session, job_id)
    _queued, _started, progress, completed = deliveries(sqlite_db, job_id)
    hook.script = [500]
    local = settings.replace(**LOCAL, webhook_min_backoff_s=60, webhook_max_backoff_s=60)
    assert deliver(sqlite_db, local, progress.id) == "pending"
    # When the newer, final event is delivered
    assert deliver(sqlite_db, local, completed.id) == "delivered"
    # Then the stale progress event is not retried any more
    assert deliveries(sqlite_db, job_id)[2].status == "superseded"
