"""Webhooks and the event stream end to end on the embedded topology: an upload with a callback to a
local receiver gets every event from queued to completed, signed; a failing receiver gets them later
and never holds up the job; a delivery can be sent again; the event stream replays the same events."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.settings import Settings
from shared.tenants import create_tenant
from tests.conftest import auth
from tests.support.inprocess import InProcess, in_process_service
from tests.support.pdfs import text_pdf
from tests.support.webhook_receiver import receiver

pytestmark = pytest.mark.slow

PDF = text_pdf(["Webhooks report every step of the pipeline to the customer's receiver. " * 20])
EVERY_EVENT = ["job.queued", "job.started", *["job.stage_completed"] * 7, "job.completed"]
FINAL = {"completed", "failed", "dead_lettered", "cancelled"}


@pytest.fixture
def service(settings: Settings) -> Iterator[InProcess]:
    local = settings.replace(
        webhook_allow_http=True,
        webhook_allowed_hosts="127.0.0.1",
        webhook_progress_interval_s=0,
        webhook_min_backoff_s=0.05,
        webhook_max_backoff_s=0.2,
        maintenance_interval_s=0.1,
        events_poll_s=0.05,
    )
    with in_process_service(local, maintenance=True) as service:
        yield service


def tenant(service: InProcess, name: str = "acme") -> tuple[str, str]:
    """A tenant's API key and webhook secret."""
    with service.resources.db.transaction() as session:
        row, key = create_tenant(session, name)
        return key, str(row.webhook_secret)


def upload(client: FlaskClient, key: str, callback_url: str) -> str:
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "a.pdf"), "callback_url": callback_url},
        content_type="multipart/form-data",
    )
    assert response.status_code == 202, response.get_json()
    return str(response.get_json()["job_id"])


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout_s}s")


def job_of(client: FlaskClient, key: str, job_id: str) -> dict[str, Any]:
    return client.get(f"/v1/jobs/{job_id}", headers=auth(key)).get_json()  # type: ignore[no-any-return]


def deliveries_of(client: FlaskClient, key: str, job_id: str) -> list[dict[str, Any]]:
    return client.get(f"/v1/jobs/{job_id}/deliveries", headers=auth(key)).get_json()["items"]  # type: ignore[no-any-return]


def settled(client: FlaskClient, key: str, job_id: str, count: int) -> list[dict[str, Any]] | None:
    items = deliveries_of(client, key, job_id)
    done = len(items) >= count and all(d["status"] != "pending" for d in items)
    return items if done else None


def newest_only(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The documented receiver logic (docs/api.md): per job, keep an event only when its seq is newer."""
    latest: dict[str, dict[str, Any]] = {}
    for event in events:
        data = event["data"]
        if data["seq"] > latest.get(data["job_id"], {}).get("seq", 0):
            latest[data["job_id"]] = data
    return latest


def test_a_receiver_gets_every_event_signed_in_seq_order(service: InProcess) -> None:
    client = service.app.test_client()
    key, secret = tenant(service)
    with receiver([secret]) as hook:
        # When a client uploads with a callback to its receiver
        job_id = upload(client, key, hook.url)
        job = wait_for(lambda: (j := job_of(client, key, job_id))["status"] in FINAL and j, "the job ending")
        wait_for(lambda: settled(client, key, job_id, len(EVERY_EVENT)), "every delivery")
        # Then every request's signature verified with standardwebhooks
        assert len(hook.received) == len(EVERY_EVENT)
        assert all(r.event is not None for r in hook.received)
        # And sorted by seq the events run from queued to completed, each seq once
        events = sorted(hook.events, key=lambda e: e["data"]["seq"])
        assert [e["type"] for e in events] == EVERY_EVENT
        seqs = [e["data"]["seq"] for e in events]
        assert seqs == sorted(set(seqs)) and seqs[-1] == job["seq"]
        assert [e["data"]["progress"] for e in events][-1] == 100
        # And a receiver keeping only the newest seq ends on the completed state
        assert newest_only(hook.events)[job_id]["status"] == "completed"


def test_every_webhook_leaves_on_the_fast_path_with_no_sweep(settings: Settings) -> None:
    # Given the service with no maintenance loop: nothing but the relay's fast path publishes
    local = settings.replace(
        webhook_allow_http=True, webhook_allowed_hosts="127.0.0.1", webhook_progress_interval_s=0
    )
    with in_process_service(local, maintenance=False) as service:
        client = service.app.test_client()
        key, secret = tenant(service)
        with receiver([secret]) as hook:
            # When a client uploads with a callback
            job_id = upload(client, key, hook.url)
            # Then every event of the gateway's and the workers' commits reaches the receiver
            wait_for(lambda: len(hook.events) == len(EVERY_EVENT), "every webhook")
            assert sorted(e["type"] for e in hook.events) == sorted(EVERY_EVENT)
            assert job_of(client, key, job_id)["status"] == "completed"


def test_a_receiver_failing_for_a_while_gets_the_events_later_and_can_ask_again(service: InProcess) -> None:
    client = service.app.test_client()
    key, secret = tenant(service)
    with receiver([secret], script=[500] * 6) as hook:
        # Given a receiver that answers 500 to its first six requests
        job_id = upload(client, key, hook.url)
        items = wait_for(lambda: settled(client, key, job_id, len(EVERY_EVENT)), "every delivery")
        # Then every event was delivered in the end, and the log shows the failed attempts
        assert all(d["status"] == "delivered" for d in items)
        answers = [a["response_status"] for d in items for a in d["attempt_log"]]
        assert answers.count(500) == 6 and answers.count(200) == len(EVERY_EVENT)
        retried = [d for d in items if d["attempts"] > 1]
        assert retried and all(d["attempt_log"][0]["error_code"] == "webhook_http_error" for d in retried)
        # When the client asks for the completed event again
        completed = next(d for d in items if d["event_type"] == "job.completed")
        response = client.post(
            f"/v1/jobs/{job_id}/deliveries/{completed['delivery_id']}/redeliver", headers=auth(key)
        )
        assert response.status_code == 202
        again = response.get_json()
        # Then a new delivery of the same event arrives, with the same webhook-id
        wait_for(lambda: settled(client, key, job_id, len(EVERY_EVENT) + 1), "the redelivery")
        ids = [
            r.headers["webhook-id"] for r in hook.received if r.event and r.event["type"] == "job.completed"
        ]
        assert ids == [completed["event_id"]] * 2 and again["event_id"] == completed["event_id"]


def test_a_receiver_failing_for_ever_does_not_hold_up_the_job(service: InProcess, settings: Settings) -> None:
    client = service.app.test_client()
    key, secret = tenant(service)
    with receiver([secret], then=500) as hook:
        # Given a receiver that always answers 500
        job_id = upload(client, key, hook.url)
        # Then the job completes all the same
        job = wait_for(lambda: (j := job_of(client, key, job_id))["status"] in FINAL and j, "the job ending")
        assert job["status"] == "completed" and job["error"] is None
        # And its deliveries are still being retried, none delivered
        items = deliveries_of(client, key, job_id)
        assert items and all(d["status"] in ("pending", "failed") for d in items)
        assert hook.received


def test_the_event_stream_replays_the_job_events_and_resumes(service: InProcess) -> None:
    client = service.app.test_client()
    key, _ = tenant(service)
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(PDF), "a.pdf")},
        content_type="multipart/form-data",
    )
    job_id = response.get_json()["job_id"]
    # When the client opens the stream while the job runs
    stream = client.get(f"/v1/jobs/{job_id}/events", headers=auth(key), buffered=False)
    assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
    frames = parse_sse(b"".join(stream.response).decode())
    # Then it gets every event, ids being the seq, and the stream ends after the final one
    assert [f["event"] for f in frames] == EVERY_EVENT
    assert [int(f["id"]) for f in frames] == [json.loads(f["data"])["data"]["seq"] for f in frames]
    # And resuming from Last-Event-ID gives only what came after it
    middle = frames[4]["id"]
    resumed = client.get(f"/v1/jobs/{job_id}/events", headers={**auth(key), "Last-Event-ID": middle})
    assert [f["id"] for f in parse_sse(resumed.get_data(as_text=True))] == [f["id"] for f in frames[5:]]
    # And a client that has seen the final event is told to stop reconnecting
    done = client.get(f"/v1/jobs/{job_id}/events", headers={**auth(key), "Last-Event-ID": frames[-1]["id"]})
    assert done.status_code == 204
    # And another tenant's key gets 404, for the stream and the delivery log alike
    other, _ = tenant(service, "globex")
    assert client.get(f"/v1/jobs/{job_id}/events", headers=auth(other)).status_code == 404
    assert client.get(f"/v1/jobs/{job_id}/deliveries", headers=auth(other)).status_code == 404


def parse_sse(text: str) -> list[dict[str, str]]:
    frames = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if "data" in fields:
            frames.append(fields)
    return frames
