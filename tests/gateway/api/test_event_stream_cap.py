"""Event streams: a per-tenant cap shared by every gateway process, slots that come back by
themselves, a bounded stream, and credentials only in the Authorization header."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from gateway import stream_leases
from gateway.app import create_app
from shared.db import Database
from shared.models import EventStreamLease, utcnow
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import upload
from tests.support.pdfs import text_pdf

PDF = text_pdf(["A page to stream the events of."])


def _gateway(settings: Settings, db: Database) -> Flask:
    settings = settings.replace(
        max_upload_mb=1,
        events_max_streams_per_tenant=2,
        events_poll_s=0.05,
        database_url=db.engine.url.render_as_string(False),
    )
    return create_app(settings, publisher=Publisher(make_broker(settings)), db=db)


@pytest.fixture
def gateways(settings: Settings, any_db: Database) -> tuple[Flask, Flask]:
    """Two gateway processes' apps on one database (SQLite and PostgreSQL)."""
    return _gateway(settings, any_db), _gateway(settings, any_db)


def _job(app: Flask, key: str) -> str:
    response = upload(app.test_client(), key, PDF)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["job_id"]  # type: ignore[no-any-return]


def _open(app: Flask, job_id: str, key: str) -> Any:
    return app.test_client().get(f"/v1/jobs/{job_id}/events", headers=auth(key), buffered=False)


def test_a_tenant_beyond_its_stream_cap_is_told_when_to_try_again(gateways: tuple[Flask, Flask]) -> None:
    # Given a tenant holding its two streams, one on each gateway process, and another tenant
    first, second = gateways
    key, other = tenant_key(first, "acme"), tenant_key(first, "globex")
    job_id, other_job = _job(first, key), _job(first, other)
    held = [_open(first, job_id, key), _open(second, job_id, key)]
    assert [r.status_code for r in held] == [200, 200]

    # When it opens a third, on either process
    refused = _open(second, job_id, key)

    # Then it is a 429 with Retry-After, while the other tenant still streams
    assert refused.status_code == 429
    assert refused.get_json()["code"] == "too_many_event_streams"
    assert 1 <= int(refused.headers["Retry-After"]) <= stream_leases.LEASE_S
    alongside = _open(first, other_job, other)
    assert alongside.status_code == 200
    alongside.close()

    # And closing one stream gives its slot back at once
    held.pop().close()
    again = _open(first, job_id, key)
    assert again.status_code == 200
    for response in [*held, again]:
        response.close()


def test_the_slots_of_a_process_that_died_come_back_by_themselves(gateways: tuple[Flask, Flask]) -> None:
    # Given a tenant whose two streams were held by a process that died without closing them
    app = gateways[0]
    key = tenant_key(app, "acme")
    job_id = _job(app, key)
    held = [_open(app, job_id, key), _open(app, job_id, key)]
    assert _open(app, job_id, key).status_code == 429
    db: Database = app.extensions["ingest"].db

    # When their leases lapse unrenewed
    with db.transaction() as session:
        session.execute(update(EventStreamLease).values(expires_at=utcnow() - timedelta(seconds=1)))

    # Then the tenant may open streams again
    fresh = _open(app, job_id, key)
    assert fresh.status_code == 200
    for response in [*held, fresh]:
        response.close()


def test_a_stream_ends_after_its_lifetime_and_tells_the_client_to_resume(
    settings: Settings, sqlite_db: Database
) -> None:
    # Given a gateway whose streams last a second
    app = create_app(
        settings.replace(max_upload_mb=1, events_max_s=1, events_poll_s=0.05),
        publisher=Publisher(make_broker(settings)),
        db=sqlite_db,
    )
    key = tenant_key(app, "acme")
    job_id = _job(app, key)

    # When a client reads a stream of a job that stays queued
    response = app.test_client().get(f"/v1/jobs/{job_id}/events", headers=auth(key))
    body = response.get_data(as_text=True)
    response.close()  # as the HTTP server does once the body ends

    # Then the stream ended by itself, with a retry interval and the seq to resume from
    assert body.startswith("retry: ")
    assert "id: 1\nevent: job.queued" in body
    # And its slot is free again once the server closes it
    with sqlite_db.transaction() as session:
        assert session.query(EventStreamLease).count() == 0


@pytest.mark.parametrize("name", ["api_key", "access_token", "key", "token", "authorization"])
def test_a_credential_in_the_query_string_is_not_accepted(gateways: tuple[Flask, Flask], name: str) -> None:
    # Given a tenant's key and job
    app = gateways[0]
    key = tenant_key(app, "acme")
    job_id = _job(app, key)

    # When a client puts the key in the URL instead of the Authorization header
    response = app.test_client().get(f"/v1/jobs/{job_id}/events?{name}={key}")

    # Then it is not authenticated
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
