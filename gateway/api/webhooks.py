"""Webhooks: a job's delivery log and redelivery, and the tenant's default endpoint and signing secret."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import g
from sqlalchemy import select

from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.job_queries import get_job
from gateway.representations import delivery_body, webhook_settings_body
from gateway.schemas.webhooks import (
    DeliveryListSchema,
    DeliverySchema,
    WebhookSettingsSchema,
    WebhookSettingsUpdateSchema,
)
from gateway.services import services
from shared import webhooks
from shared.errors import NotFoundError
from shared.models import Tenant, WebhookDelivery, utcnow
from shared.webhooks.callback_urls import check_setting

blp = Blueprint("webhooks", __name__, description="Webhook deliveries and endpoint settings")


def _own_job_id(session: Any, job_id: str) -> str:
    if get_job(session, job_id, tenant_id=g.caller.tenant_id) is None:
        raise NotFoundError("No such job.")
    return job_id


@blp.route("/v1/jobs/<job_id>/deliveries", methods=["GET"])
@tenant_required
@blp.response(200, DeliveryListSchema)
def list_deliveries(job_id: str) -> Any:
    """Every webhook delivery of the job's events, in order, with attempts and the last answer."""
    with services().db.transaction() as session:
        _own_job_id(session, job_id)
        rows = session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.job_id == job_id).order_by(WebhookDelivery.id)
        )
        return {"items": [delivery_body(d) for d in rows]}


@blp.route("/v1/jobs/<job_id>/deliveries/<int:delivery_id>/redeliver", methods=["POST"])
@tenant_required
@blp.response(202, DeliverySchema)
def redeliver(job_id: str, delivery_id: int) -> Any:
    """Send one of the job's events again (a new delivery with the same webhook-id)."""
    svc = services()
    with svc.db.transaction() as session:
        _own_job_id(session, job_id)
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.job_id != job_id:
            raise NotFoundError("No such delivery.")
        # The relay publishes it once this commits; when the broker is down, its sweep does.
        return delivery_body(webhooks.redeliver(session, delivery))


def _tenant(session: Any) -> Tenant:
    return session.get(Tenant, g.caller.tenant_id)  # type: ignore[no-any-return]


@blp.route("/v1/webhooks", methods=["GET"])
@tenant_required
@blp.response(200, WebhookSettingsSchema)
def get_settings() -> Any:
    """The default endpoint and the secret that signs every webhook."""
    with services().db.transaction() as session:
        return webhook_settings_body(_tenant(session))


@blp.route("/v1/webhooks", methods=["PUT"])
@tenant_required
@blp.arguments(WebhookSettingsUpdateSchema)
@blp.response(200, WebhookSettingsSchema)
def set_settings(args: dict[str, Any]) -> Any:
    """Set (or clear, with null) the endpoint that receives events of jobs without a callback_url."""
    svc = services()
    url = check_setting(args["default_callback_url"], svc.settings)
    with svc.db.transaction() as session:
        tenant = _tenant(session)
        tenant.default_callback_url = url
        return webhook_settings_body(tenant)


@blp.route("/v1/webhooks/secret/rotate", methods=["POST"])
@tenant_required
@blp.response(200, WebhookSettingsSchema)
def rotate_secret() -> Any:
    """A new signing secret; the previous one signs too (a second signature) for a while."""
    svc = services()
    with svc.db.transaction() as session:
        tenant = _tenant(session)
        tenant.webhook_secret_previous = tenant.webhook_secret
        tenant.webhook_secret_previous_until = utcnow() + timedelta(
            hours=svc.settings.webhook_secret_overlap_h
        )
        tenant.webhook_secret = webhooks.new_secret()
        return webhook_settings_body(tenant)
