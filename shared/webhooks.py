"""Webhook events: the body every receiver sees, the delivery rows written with each event, signing,
and the relay that hands due deliveries to the broker.

A delivery row is written by `add_deliveries` in the transaction that writes the job's event (the
webhook outbox), so a delivery exists if and only if its change committed. The maintenance loop
publishes due rows (`publish_due`), which also covers retries, lost messages and broker outages.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks import Webhook

from shared.db import transaction
from shared.errors import BrokerUnavailableError
from shared.job_representation import job_body
from shared.models import DeliveryStatus, Tenant, WebhookDelivery, utcnow

logger = logging.getLogger(__name__)

PROGRESS_EVENTS = frozenset({"job.stage_completed"})
TERMINAL_EVENTS = frozenset({"job.completed", "job.failed", "job.cancelled", "job.dead_lettered"})
USER_AGENT = "pdf-ingest-webhooks/1"


def new_secret() -> str:
    """A signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def event_id(job_id: str, seq: int) -> str:
    """The event's stable id (the `webhook-id` header): one per (job, seq)."""
    return f"evt_{job_id.replace('-', '')}_{seq}"


def event_body(event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """What webhooks and the event stream carry for one stored event: the job's body as it was."""
    return {
        "id": event_id(payload["job_id"], payload["seq"]),
        "type": event_type,
        "timestamp": payload["timestamp"],
        "data": job_body(payload),
    }


def add_deliveries(
    session: Session, row: Mapping[str, Any], event_type: str, payload: Mapping[str, Any]
) -> None:
    """Write the delivery of this event to the job's endpoint, in the caller's transaction: the job's
    own callback URL, or else its tenant's default endpoint (none: nothing to deliver)."""
    url = row.get("callback_url")
    if not url:
        tenant = session.get(Tenant, row["tenant_id"])
        url = tenant.default_callback_url if tenant is not None else None
    if not url:
        return
    now = utcnow()
    session.add(
        WebhookDelivery(
            event_id=event_id(row["id"], row["seq"]),
            job_id=row["id"],
            tenant_id=row["tenant_id"],
            url=url,
            seq=row["seq"],
            event_type=event_type,
            payload=event_body(event_type, payload),
            status=DeliveryStatus.PENDING.value,
            attempts=0,
            attempt_log=[],
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
    )


def redeliver(session: Session, delivery: WebhookDelivery) -> WebhookDelivery:
    """A new delivery of the same event (same `webhook-id`, so receivers can tell), due now."""
    now = utcnow()
    again = WebhookDelivery(
        event_id=delivery.event_id,
        job_id=delivery.job_id,
        tenant_id=delivery.tenant_id,
        url=delivery.url,
        seq=delivery.seq,
        event_type=delivery.event_type,
        payload=delivery.payload,
        status=DeliveryStatus.PENDING.value,
        attempts=0,
        attempt_log=[],
        next_attempt_at=now,
        created_at=now,
        updated_at=now,
    )
    session.add(again)
    session.flush()
    return again


def signing_secrets(tenant: Tenant | None, now: datetime) -> list[str]:
    """The secrets that sign now: the tenant's secret, and during a rotation the previous one."""
    if tenant is None or not tenant.webhook_secret:
        return []
    found = [tenant.webhook_secret]
    until = tenant.webhook_secret_previous_until
    if tenant.webhook_secret_previous and until is not None and until > now:
        found.append(tenant.webhook_secret_previous)
    return found


def signed_request(
    msg_id: str, payload: Mapping[str, Any], keys: list[str], at: datetime
) -> tuple[bytes, dict[str, str]]:
    """The body and Standard Webhooks headers; several secrets give space-separated signatures."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    stamp = at.replace(tzinfo=UTC)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(stamp.timestamp())),
        "webhook-signature": " ".join(Webhook(key).sign(msg_id, stamp, body) for key in keys),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
    }
    return body.encode(), headers


def publish_due(
    sessions: sessionmaker[Session],
    publish: Callable[[int], None],
    *,
    republish_after_s: float,
    limit: int = 200,
    ids: list[int] | None = None,
) -> int:
    """Hand deliveries that are due (of `ids`, when given) and not already in the broker to
    `publish`; returns how many.

    Each row is claimed by a compare-and-set on `published_at`, so two relays never publish the
    same row at once; one the broker never ran is published again after `republish_after_s`.
    """
    now = utcnow()
    stale = now - timedelta(seconds=republish_after_s)
    not_in_broker = or_(WebhookDelivery.published_at.is_(None), WebhookDelivery.published_at < stale)
    stmt = select(WebhookDelivery.id).where(
        WebhookDelivery.status == DeliveryStatus.PENDING.value,
        WebhookDelivery.next_attempt_at <= now,
        not_in_broker,
    )
    if ids is not None:
        stmt = stmt.where(WebhookDelivery.id.in_(ids))
    with transaction(sessions) as session:
        due = session.scalars(stmt.order_by(WebhookDelivery.id).limit(limit)).all()
    published = 0
    for delivery_id in due:
        with transaction(sessions) as session:
            claimed = session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id, not_in_broker)
                .values(published_at=now)
            ).rowcount  # type: ignore[attr-defined]
        if not claimed:
            continue
        try:
            publish(delivery_id)
        except BrokerUnavailableError:
            with transaction(sessions) as session:
                session.execute(
                    update(WebhookDelivery).where(WebhookDelivery.id == delivery_id).values(published_at=None)
                )
            logger.warning("broker unavailable; webhook deliveries wait for the next pass")
            break
        published += 1
    return published
