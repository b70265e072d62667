"""A process's stream slots are fair across tenants (as `make run` configures them, on both databases),
and a final job's stream is a 204 even when every slot is taken."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from deploy.embedded import STREAM_SLOTS
from gateway.api.events import limit_streams_per_process
from gateway.app import create_app
from gateway.stream_slots import StreamSlots
from shared.db import Database
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.gateway.test_gateway_upload import upload
from tests.support.pdfs import text_pdf

PDF = text_pdf(["A page to stream the events of."])


def test_one_tenant_holds_at_most_half_and_the_last_slot_waits_for_a_newcomer() -> None:
    # Given a process with 8 slots
    slots = StreamSlots(8)

    # When one tenant asks for 6, another for 6, and then a third and a fourth for one each
    first = [slots.acquire("a") for _ in range(6)]
    second = [slots.acquire("b") for _ in range(6)]
    third, fourth = slots.acquire("c"), slots.acquire("d")

    # Then the first gets half, the second all but the last free slot, which goes to the third
    assert first.count(True) == 4 and second.count(True) == 3
    assert third is True and fourth is False
    # And a released slot can be taken again
    slots.release("a")
    assert slots.held("a") == 3 and slots.acquire("d") is True


def test_a_single_slot_goes_to_whoever_asks_first() -> None:
    slots = StreamSlots(1)
    assert slots.acquire("a") and not slots.acquire("a") and not slots.acquire("b")
    slots.release("a")
    assert slots.acquire("b")


@pytest.fixture
def app(settings: Settings, any_db: Database) -> Flask:
    """A gateway with the embedded server's stream slots and the default per-tenant stream cap."""
    settings = settings.replace(
        max_upload_mb=1, events_poll_s=0.05, database_url=any_db.engine.url.render_as_string(False)
    )
    app = create_app(settings, publisher=Publisher(make_broker(settings)), db=any_db)
    limit_streams_per_process(app, STREAM_SLOTS)
    return app


def _job(app: Flask, key: str, pdf: bytes = PDF) -> str:
    response = upload(app.test_client(), key, pdf)
    assert response.status_code == 202, response.get_json()
    return response.get_json()["job_id"]


def _open(app: Flask, job_id: str, key: str, **headers: str) -> Any:
    return app.test_client().get(
        f"/v1/jobs/{job_id}/events", headers={**auth(key), **headers}, buffered=False
    )


def test_two_busy_tenants_leave_a_stream_for_a_third(app: Flask) -> None:
    # Given two tenants each opening as many streams as their cap allows
    cap = app.extensions["ingest"].settings.events_max_streams_per_tenant
    assert 2 * cap >= STREAM_SLOTS  # the case of the embedded server's defaults
    held = []
    for name in ("acme", "globex"):
        key = tenant_key(app, name)
        job_id = _job(app, key)
        held += [_open(app, job_id, key) for _ in range(cap)]

    # When a third tenant opens a stream
    key = tenant_key(app, "initech")
    third = _open(app, _job(app, key), key)

    # Then it is served, and the refusals the busy tenants met were 503s with Retry-After
    try:
        assert third.status_code == 200
        refused = [r for r in held if r.status_code != 200]
        assert refused and {r.status_code for r in refused} == {503}
        assert all(r.get_json()["code"] == "event_streams_busy" for r in refused)
        assert all(int(r.headers["Retry-After"]) > 0 for r in refused)
    finally:
        for response in [*held, third]:
            response.close()


def test_a_final_job_whose_events_were_seen_is_a_204_when_every_slot_is_taken(app: Flask) -> None:
    # Given a tenant whose job is final (cancelled) and who has read its last event
    key = tenant_key(app, "initech")
    done = _job(app, key)
    cancelled = app.test_client().post(f"/v1/jobs/{done}/cancel", headers=auth(key))
    assert cancelled.status_code == 202 and cancelled.get_json()["status"] == "cancelled"
    last_seq = str(cancelled.get_json()["seq"])
    # And every slot of the process taken by streams of other tenants
    held = []
    for index in range(STREAM_SLOTS):
        other = tenant_key(app, f"tenant-{index}")
        held.append(_open(app, _job(app, other), other))
    try:
        assert [r.status_code for r in held] == [200] * STREAM_SLOTS

        # When the client reconnects to the final job's stream
        response = _open(app, done, key, **{"Last-Event-ID": last_seq})

        # Then it is told the stream is over (204, no body), not that the server is busy
        assert response.status_code == 204
        assert response.get_data() == b""
        # While a job that is not final waits for a slot like any stream
        running = _job(app, key, text_pdf(["Another page, of a job that stays queued."]))
        assert _open(app, running, key).status_code == 503
    finally:
        for response in held:
            response.close()
