"""An open event stream ends within seconds of its key being revoked or its tenant suspended, on
both databases, and the client's reconnect is then told why."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from gateway.api.events import CREDENTIAL_CHECK_S
from gateway.app import create_app
from shared.db import Database
from shared.models import EventStreamLease
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.conftest import admin_key, auth
from tests.gateway.test_gateway_upload import upload
from tests.support.pdfs import text_pdf

PDF = text_pdf(["A page whose events a revoked key must stop seeing."])


class Reader(threading.Thread):
    """Reads a streamed response to its end, as a client would, noting when it ended."""

    def __init__(self, response: Any) -> None:
        super().__init__(daemon=True)
        self.response = response
        self.body = b""
        self.ended_at: float | None = None

    def run(self) -> None:
        for chunk in self.response.response:
            self.body += chunk
        self.ended_at = time.monotonic()


@pytest.fixture
def app(settings: Settings, any_db: Database) -> Flask:
    settings = settings.replace(
        max_upload_mb=1, events_poll_s=0.05, database_url=any_db.engine.url.render_as_string(False)
    )
    return create_app(settings, publisher=Publisher(make_broker(settings)), db=any_db)


def _tenant(app: Flask) -> tuple[str, str]:
    with app.extensions["ingest"].db.transaction() as session:
        tenant, key = create_tenant(session, "acme")
        return tenant.id, key


def _revoke_key(client: FlaskClient, admin: str, tenant_id: str) -> None:
    (item,) = client.get(f"/v1/admin/tenants/{tenant_id}/keys", headers=auth(admin)).get_json()["items"]
    assert client.post(f"/v1/admin/keys/{item['key_id']}/revoke", headers=auth(admin)).status_code == 200


def _suspend(client: FlaskClient, admin: str, tenant_id: str) -> None:
    assert client.post(f"/v1/admin/tenants/{tenant_id}/suspend", headers=auth(admin)).status_code == 200


@pytest.mark.parametrize(
    ("cut_off", "reconnect_status"), [(_revoke_key, 401), (_suspend, 403)], ids=["revoked", "suspended"]
)
def test_an_open_stream_ends_soon_after_its_key_stops_working(
    app: Flask, cut_off: Callable[[FlaskClient, str, str], None], reconnect_status: int
) -> None:
    # Given a tenant streaming the events of a job that stays queued (no worker runs here)
    client, admin = app.test_client(), admin_key(app)
    tenant_id, key = _tenant(app)
    uploaded = upload(client, key, PDF)
    assert uploaded.status_code == 202, uploaded.get_json()
    job_id = uploaded.get_json()["job_id"]
    stream = client.get(f"/v1/jobs/{job_id}/events", headers=auth(key), buffered=False)
    assert stream.status_code == 200
    reader = Reader(stream)
    reader.start()
    reader.join(CREDENTIAL_CHECK_S + 0.5)
    assert reader.is_alive(), "the stream should stay open while the key works"

    # When the admin revokes its key, or suspends the tenant
    cut_at = time.monotonic()
    cut_off(client, admin, tenant_id)

    # Then the stream ends within a few seconds, having sent the job's events until then
    reader.join(CREDENTIAL_CHECK_S + 3)
    assert not reader.is_alive(), "the stream kept going after the key stopped working"
    assert reader.ended_at is not None and reader.ended_at - cut_at <= CREDENTIAL_CHECK_S + 1
    assert b"event: job.queued" in reader.body
    # And its slot comes back once the server closes it
    stream.close()
    with app.extensions["ingest"].db.transaction() as session:
        assert session.query(EventStreamLease).count() == 0
    # And the client's reconnect is told why
    again = client.get(f"/v1/jobs/{job_id}/events", headers={**auth(key), "Last-Event-ID": "1"})
    assert again.status_code == reconnect_status
