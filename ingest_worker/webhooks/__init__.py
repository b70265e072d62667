"""Webhook delivery: the `deliver_webhook` actor, which attempts one delivery row and records the outcome.

Retries are scheduled in the row, not in the broker: a failed attempt sets `next_attempt_at` by
capped exponential backoff with full jitter, and the maintenance loop publishes the row again when it
is due, so retries over hours survive restarts and broker outages. Progress events are throttled per
job and endpoint here: one that a newer event of the same job has overtaken is `superseded`, and one
due too soon after the previous progress event waits. Terminal events always go out. Nothing here
touches the job: a receiver that fails for ever cannot hold up or fail the ingest work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import dramatiq
from sqlalchemy import func, select, update

from ingest_worker.broker import get_broker, get_settings
from ingest_worker.resources import current
from ingest_worker.retry_policy import backoff_ms
from ingest_worker.webhooks import sender
from shared import logging as ingest_logging
from shared import metrics
from shared.db import Database
from shared.errors import IngestError, PermanentError, WebhookDeliveryError
from shared.models import DeliveryStatus, Tenant, WebhookDelivery, utcnow
from shared.queue import QUEUE_WEBHOOKS, WEBHOOK_ACTOR
from shared.settings import Settings
from shared.webhooks import PROGRESS_EVENTS, signed_request, signing_secrets
from shared.webhooks.callback_urls import CallbackPolicy, check

logger = logging.getLogger(__name__)

D = DeliveryStatus
GONE = 410
Sender = Callable[..., int]


def _in_flight_s(settings: Settings) -> float:
    """How long a claimed attempt keeps others off the row (longer than any attempt can take)."""
    return 2 * (settings.webhook_connect_timeout_s + settings.webhook_timeout_s) + 30


def _newer_exists(session: Any, row: WebhookDelivery) -> bool:
    return bool(
        session.scalar(
            select(func.count())
            .select_from(WebhookDelivery)
            .where(
                WebhookDelivery.job_id == row.job_id,
                WebhookDelivery.url == row.url,
                WebhookDelivery.seq > row.seq,
                WebhookDelivery.status != D.SUPERSEDED.value,
            )
        )
    )


def _throttled(session: Any, row: WebhookDelivery, settings: Settings, now: Any) -> bool:
    """At most one progress event per job and endpoint every `webhook_progress_interval_s`: one
    that comes sooner waits for its turn, and is superseded if a newer event of the job exists by
    then. True when the row is not to be sent now. Retries and redeliveries are never throttled."""
    if row.attempts > 0 or settings.webhook_progress_interval_s <= 0:
        return False
    if session.scalar(
        select(func.count())
        .select_from(WebhookDelivery)
        .where(WebhookDelivery.event_id == row.event_id, WebhookDelivery.id < row.id)
    ):
        return False
    previous = session.scalar(
        select(func.max(WebhookDelivery.last_attempt_at)).where(
            WebhookDelivery.job_id == row.job_id,
            WebhookDelivery.url == row.url,
            WebhookDelivery.event_type.in_(PROGRESS_EVENTS),
            WebhookDelivery.id != row.id,
        )
    )
    not_before = previous + timedelta(seconds=settings.webhook_progress_interval_s) if previous else None
    waiting = not_before is not None and not_before > now
    waited = row.next_attempt_at > row.created_at
    if (waiting or waited) and _newer_exists(session, row):
        row.status, row.updated_at = D.SUPERSEDED.value, now
        return True
    if waiting and not_before is not None:
        row.next_attempt_at, row.published_at, row.updated_at = not_before, None, now
        return True
    return False


def _claim(db: Database, delivery_id: int, settings: Settings) -> tuple[WebhookDelivery, list[str]] | None:
    """Take the row for one attempt (compare-and-set), with the secrets that sign it."""
    now = utcnow()
    with db.transaction() as session:
        row = session.get(WebhookDelivery, delivery_id)
        if row is None:
            return None
        # The message carries only the delivery id: the rest of this attempt logs the row's ids.
        ingest_logging.bind(job_id=row.job_id, tenant_id=row.tenant_id)
        if row.status != D.PENDING.value:
            return None
        if row.next_attempt_at > now:
            return None
        if row.event_type in PROGRESS_EVENTS and _throttled(session, row, settings, now):
            return None
        claimed = session.execute(
            update(WebhookDelivery)
            .where(
                WebhookDelivery.id == delivery_id,
                WebhookDelivery.status == D.PENDING.value,
                WebhookDelivery.next_attempt_at <= now,
            )
            .values(
                attempts=WebhookDelivery.attempts + 1,
                last_attempt_at=now,
                next_attempt_at=now + timedelta(seconds=_in_flight_s(settings)),
                published_at=None,
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        if not claimed:
            return None
        if settings.webhook_progress_interval_s > 0:
            # Progress events of the job at this endpoint that wait for their turn or for a retry
            # are older news now: the receiver gets this newer state instead.
            session.execute(
                update(WebhookDelivery)
                .where(
                    WebhookDelivery.job_id == row.job_id,
                    WebhookDelivery.url == row.url,
                    WebhookDelivery.seq < row.seq,
                    WebhookDelivery.event_type.in_(PROGRESS_EVENTS),
                    WebhookDelivery.status == D.PENDING.value,
                    WebhookDelivery.next_attempt_at > WebhookDelivery.created_at,
                )
                .values(status=D.SUPERSEDED.value, updated_at=now)
                .execution_options(synchronize_session=False)
            )
        session.refresh(row)
        keys = signing_secrets(session.get(Tenant, row.tenant_id), now)
        session.expunge(row)
        return row, keys


def _attempt(row: WebhookDelivery, keys: list[str], settings: Settings, send: Sender) -> int:
    if not keys:
        raise PermanentError("The tenant has no webhook secret.", code="webhook_secret_missing")
    target = check(row.url, CallbackPolicy.from_settings(settings))
    body, headers = signed_request(row.event_id, row.payload, keys, utcnow())
    return send(
        target,
        body,
        headers,
        timeout_s=settings.webhook_timeout_s,
        connect_timeout_s=settings.webhook_connect_timeout_s,
    )


def deliver(
    db: Database,
    settings: Settings,
    delivery_id: int,
    *,
    send: Sender = sender.post,
) -> str:
    """Attempt delivery `delivery_id` if it is due; returns the row's status afterwards."""
    claimed = _claim(db, delivery_id, settings)
    if claimed is None:
        return "not_due"
    row, keys = claimed
    values: dict[str, Any] = {"updated_at": utcnow()}
    try:
        status = _attempt(row, keys, settings, send)
    except IngestError as exc:
        response = getattr(exc, "response_status", None)
        final = not isinstance(exc, WebhookDeliveryError) or response == GONE
        final = final or row.attempts >= settings.webhook_max_attempts
        values.update(last_error_code=exc.code, last_response_status=response)
        if final:
            values["status"] = D.FAILED.value
            logger.info("webhook %s for job %s failed for good (%s)", delivery_id, row.job_id, exc.code)
        else:
            delay_ms = backoff_ms(
                row.attempts - 1,
                min_ms=int(settings.webhook_min_backoff_s * 1000),
                max_ms=int(settings.webhook_max_backoff_s * 1000),
            )
            values["next_attempt_at"] = utcnow() + timedelta(milliseconds=delay_ms)
            logger.info(
                "webhook %s for job %s failed (%s); attempt %s in %s ms",
                delivery_id,
                row.job_id,
                exc.code,
                row.attempts + 1,
                delay_ms,
            )
    else:
        values.update(
            status=D.DELIVERED.value, delivered_at=utcnow(), last_response_status=status, last_error_code=None
        )
    # The row is claimed by this attempt, so its log can be extended in place.
    values["attempt_log"] = [
        *(row.attempt_log or []),
        {
            "at": row.last_attempt_at.isoformat() + "Z" if row.last_attempt_at else None,
            "response_status": values.get("last_response_status"),
            "error_code": values.get("last_error_code"),
        },
    ]
    with db.transaction() as session:
        session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id).values(**values))
    outcome = str(values.get("status", D.PENDING.value))
    metrics.WEBHOOK_DELIVERIES.labels("retrying" if outcome == D.PENDING.value else outcome).inc()
    return outcome


def _deliver_webhook(delivery_id: int) -> None:
    res = current(get_settings())
    try:
        deliver(res.db, res.settings, delivery_id)
    except Exception:
        # The row stays claimed until its in-flight time passes; the maintenance loop then
        # publishes it again. Retrying the message here would only race that.
        logger.exception("webhook delivery %s could not be attempted", delivery_id)


get_broker()
deliver_webhook = dramatiq.actor(
    _deliver_webhook,
    actor_name=WEBHOOK_ACTOR,
    queue_name=QUEUE_WEBHOOKS,
    max_retries=0,
    time_limit=5 * 60 * 1000,
)
