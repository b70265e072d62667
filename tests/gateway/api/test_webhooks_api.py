"""The tenant's webhook settings over the API: the secret it verifies with, rotation with an overlap,
and a delivery log that only the job's own tenant can read or replay."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select
from standardwebhooks import Webhook

from shared.models import Job, Tenant, WebhookDelivery, utcnow
from shared.webhooks import signed_request, signing_secrets
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import PDF, upload


def test_a_rotation_keeps_the_previous_secret_signing_for_the_overlap(
    app: Flask, client: FlaskClient
) -> None:
    # Given a tenant that reads its secret
    key = tenant_key(app, "acme")
    before = client.get("/v1/webhooks", headers=auth(key)).get_json()
    assert before["secret"].startswith("whsec_") and before["previous_secret_valid_until"] is None
    # When it rotates the secret
    after = client.post("/v1/webhooks/secret/rotate", headers=auth(key)).get_json()
    # Then it has a new secret, the old one still valid for a while
    assert after["secret"] != before["secret"] and after["previous_secret_valid_until"]
    # And a webhook signed now verifies with either secret
    with app.extensions["ingest"].db.transaction() as session:
        keys = signing_secrets(session.scalars(select(Tenant)).one(), utcnow())
    body, headers = signed_request("evt_1", {"type": "job.queued"}, keys, utcnow())
    for secret in (before["secret"], after["secret"]):
        assert Webhook(secret).verify(body, headers) == {"type": "job.queued"}


def test_the_delivery_log_belongs_to_the_jobs_tenant(app: Flask, client: FlaskClient) -> None:
    # Given a job of one tenant, uploaded with a callback URL (its queued event waits for delivery)
    owner = tenant_key(app, "acme")
    job_id = upload(client, owner, PDF, callback_url="https://hooks.invalid/h").get_json()["job_id"]
    items = client.get(f"/v1/jobs/{job_id}/deliveries", headers=auth(owner)).get_json()["items"]
    assert [(d["event_type"], d["status"], d["seq"]) for d in items] == [("job.queued", "pending", 1)]
    delivery_id = items[0]["delivery_id"]
    # When another tenant asks for the log or a redelivery, Then it is told there is no such job
    other = tenant_key(app, "globex")
    assert client.get(f"/v1/jobs/{job_id}/deliveries", headers=auth(other)).status_code == 404
    path = f"/v1/jobs/{job_id}/deliveries/{delivery_id}/redeliver"
    assert client.post(path, headers=auth(other)).status_code == 404
    # And the owner's redelivery is a new delivery of the same event
    again: Any = client.post(path, headers=auth(owner))
    assert again.status_code == 202 and again.get_json()["event_id"] == items[0]["event_id"]
    with app.extensions["ingest"].db.transaction() as session:
        assert session.scalar(select(Job.callback_url)) == "https://hooks.invalid/h"
        assert len(session.scalars(select(WebhookDelivery)).all()) == 2
    # And a delivery id of another job is not found under this one
    assert (
        client.post(
            f"/v1/jobs/{job_id}/deliveries/{delivery_id + 100}/redeliver", headers=auth(owner)
        ).status_code
        == 404
    )
