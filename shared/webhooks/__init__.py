"""Webhook events: the body every receiver sees, the delivery rows written with each event, signing,
and how the outbox relay hands due deliveries to the broker.

A delivery row is written by `add_deliveries` in the transaction that writes the job's event (the
webhook outbox), so a delivery exists if and only if its change committed. The relay
(shared/outbox.py) publishes it right after that commit, and its sweep in the maintenance loop
publishes what is due later: retries, lost messages, rows left by a broker outage.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, update
from sqlalchemy.orm import Session
from standardwebhooks import Webhook

from shared.errors import BrokerUnavailableError
from shared.job_representation import job_body
from shared.models import DeliveryStatus, Tenant, WebhookDelivery, utcnow
from shared.queue import Publisher

logger = logging.getLogger(__name__)

PROGRESS_EVENTS = frozenset({"job.stage_completed", "job.progress"})
TERMINAL_EVENTS = frozenset({"job.completed", "job.failed", "job.cancelled", "job.dead_lettered"})
USER_AGENT = "pdf-ingest-webhooks/1"
# After the broker refuses a delivery, how long the relay's fast path leaves the broker alone.
UNSENT_QUIET_S = 2.0


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


class WebhookDeliveries:
    """Delivery rows (`webhook_deliveries`) as the relay sees them: each is one `deliver_webhook`
    message. A row is due while pending, its next attempt has come and it is not in the broker; it
    is claimed by a compare-and-set on `published_at`, so two relays never publish it at once, and
    one the broker never ran is published again after `republish_after_s`."""

    name = "webhooks"
    model = WebhookDelivery
    # The claim stamps `published_at`: a published delivery needs no mark of its own.
    marks_sent = False

    def __init__(self, publisher: Publisher, *, republish_after_s: float) -> None:
        self.publisher = publisher
        self.republish_after_s = republish_after_s

    def due(self, now: datetime) -> ColumnElement[bool]:
        stale = now - timedelta(seconds=self.republish_after_s)
        return and_(
            WebhookDelivery.status == DeliveryStatus.PENDING.value,
            WebhookDelivery.next_attempt_at <= now,
            or_(WebhookDelivery.published_at.is_(None), WebhookDelivery.published_at < stale),
        )

    def claim(self, session: Session, row_id: int, now: datetime) -> int | None:
        claimed = session.execute(
            update(WebhookDelivery)
            .where(WebhookDelivery.id == row_id, self.due(now))
            .values(published_at=now)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        return row_id if claimed else None

    def send(self, claim: int) -> None:
        self.publisher.publish_webhook(claim)

    def sent(self, session: Session, items: Sequence[tuple[int, int]]) -> None:
        """Nothing more to mark: `published_at` was set by the claim (`marks_sent` is off)."""

    def unsent(self, session: Session, row_id: int, claim: int, error: BrokerUnavailableError) -> float:
        """Not in the broker after all: due again at once (the relay's quiet time spaces the tries)."""
        logger.warning(
            "webhook delivery %s not published (%s); it waits for the next pass", row_id, error.code
        )
        session.execute(update(WebhookDelivery).where(WebhookDelivery.id == row_id).values(published_at=None))
        return UNSENT_QUIET_S
