"""End to end on the production topology: PostgreSQL, Redis, an S3 server (weed mini), Qdrant local
mode, and real `dramatiq` worker processes consuming from Redis, laid out by deploy/topology.py
(one pool for ingest and OCR, one single-threaded pool that owns the local Qdrant folder)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from deploy.supervisor import Topology
from deploy.topology import process_specs
from gateway.app import create_app
from ingest_worker.maintenance import MaintenanceLoop
from shared.db import Database
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.tenants import create_tenant
from shared.vectorstores import open_vector_store
from tests.support.pdfs import text_pdf
from tests.support.ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis, pytest.mark.s3]

PAGES = [
    "Glaciers carve valleys as they slowly flow downhill under their own weight. " * 6,
    "A compiler translates source code into machine instructions in several passes. " * 6,
]


@pytest.fixture
def prod_settings(production_settings: Settings, tmp_path: Path) -> Settings:
    return production_settings.replace(
        qdrant_path=str(tmp_path / "qdrant"),
        worker_processes=1,
        webhook_allow_http=True,
        webhook_allowed_hosts="127.0.0.1",
    )


@pytest.fixture
def workers(prod_settings: Settings, tmp_path: Path) -> Iterator[Topology]:
    """The ingest and index pools exactly as the production topology runs them."""
    specs = process_specs(prod_settings, pools=("worker-ingest", "worker-index", "worker-webhooks"))
    topology = Topology([s for s in specs if s.name.startswith("worker-")], tmp_path / "logs")
    topology.start()
    try:
        yield topology
    finally:
        topology.stop()


def gateway(settings: Settings) -> Flask:
    return create_app(settings)


def wait_final(client: Any, location: str, key: str, timeout_s: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = client.get(location, headers={"Authorization": f"Bearer {key}"}).get_json()
        if body["status"] in {"completed", "failed", "dead_lettered", "cancelled"}:
            return body
        time.sleep(0.25)
    raise AssertionError(f"job did not finish within {timeout_s}s: {body}")


def test_upload_completes_through_worker_processes_on_real_services(
    prod_settings: Settings, workers: Topology, tmp_path: Path
) -> None:
    app = gateway(prod_settings)
    client = app.test_client()
    with app.extensions["ingest"].db.transaction() as session:
        tenant, key = create_tenant(session, "acme")
        tenant_id = tenant.id
    # When a client uploads a PDF to the gateway
    response = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(text_pdf(PAGES)), "two.pdf")},
    )
    assert response.status_code == 202
    # Then the worker processes take it to `completed`
    job = wait_final(client, response.headers["Location"], key)
    logs = workers.log("worker-ingest") + workers.log("worker-index")
    assert job["status"] == "completed", (job, logs[-3000:])
    assert job["counters"]["pages"] == 2 and job["counters"]["points"] == job["counters"]["chunks"] > 0
    # And the original is in the S3 bucket under an id-derived key
    storage = app.extensions["ingest"].storage
    assert storage.exists(f"documents/{tenant_id}/{job['document_id']}.pdf")
    # And, once the index pool has let go of the embedded store's folder, the points carry the tenant
    workers.stop()
    store = open_vector_store(prod_settings)
    try:
        (collection,) = store.collections()
        records = list(store.records(collection))
    finally:
        store.close()
    assert len(records) == job["counters"]["points"]
    assert {r.payload["tenant_id"] for r in records} == {tenant_id}
    covered = {p for r in records for p in range(r.payload["page_start"], r.payload["page_end"] + 1)}
    assert covered == {1, 2}


def test_with_the_broker_down_uploads_get_202_and_run_when_it_is_back(
    prod_settings: Settings, workers: Topology
) -> None:
    # Given a gateway whose broker cannot be reached
    down = prod_settings.replace(broker_url=f"redis://127.0.0.1:{free_port()}/0", broker_timeout_s=0.5)
    app = gateway(down)
    client = app.test_client()
    with app.extensions["ingest"].db.transaction() as session:
        _, key = create_tenant(session, "acme")
    # When a client uploads, then it still gets 202 at once
    started = time.monotonic()
    response = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(text_pdf(PAGES[:1])), "one.pdf")},
    )
    # (1.0 s measured on a loaded machine: the publish gives up after broker_timeout_s)
    assert response.status_code == 202 and time.monotonic() - started < 5
    assert (
        client.get(response.headers["Location"], headers={"Authorization": f"Bearer {key}"}).get_json()[
            "status"
        ]
        == "queued"
    )
    # When the maintenance loop runs against the broker that is up
    db = Database(prod_settings.database_url)
    loop = MaintenanceLoop(
        db,
        Relay(db.sessions, Publisher(make_broker(prod_settings))),
        prod_settings.replace(maintenance_interval_s=0.2),
    )
    loop.start_thread()
    try:
        # Then the job runs to completion
        assert wait_final(client, response.headers["Location"], key)["status"] == "completed"
    finally:
        loop.stop()


def test_webhooks_and_the_event_stream_work_across_processes(
    prod_settings: Settings, workers: Topology
) -> None:
    from tests.e2e.test_webhooks_e2e import EVERY_EVENT, parse_sse
    from tests.support.webhook_receiver import receiver

    app = gateway(prod_settings)
    client = app.test_client()
    with app.extensions["ingest"].db.transaction() as session:
        tenant, key = create_tenant(session, "acme")
        secret = str(tenant.webhook_secret)
    db = Database(prod_settings.database_url)
    loop = MaintenanceLoop(
        db,
        Relay(db.sessions, Publisher(make_broker(prod_settings))),
        prod_settings.replace(maintenance_interval_s=0.2),
    )
    loop.start_thread()
    try:
        with receiver([secret]) as hook:
            # When a client uploads with a callback, and the stages and deliveries run in worker processes
            response = client.post(
                "/v1/documents",
                headers={"Authorization": f"Bearer {key}"},
                data={"file": (io.BytesIO(text_pdf(PAGES[:1])), "one.pdf"), "callback_url": hook.url},
            )
            assert response.status_code == 202
            job_id = response.get_json()["job_id"]
            # Then the event stream, read by the gateway from PostgreSQL, shows every event to the end
            stream = client.get(f"/v1/jobs/{job_id}/events", headers={"Authorization": f"Bearer {key}"})
            events = [f["event"] for f in parse_sse(stream.get_data(as_text=True))]
            assert events[0] == "job.queued" and events[-1] == "job.completed"
            # And the receiver gets the queued, started and completed events, each signature verified
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(e["type"] == "job.completed" for e in hook.events):
                time.sleep(0.1)
            types = [e["type"] for e in sorted(hook.events, key=lambda e: e["data"]["seq"])]
            assert types[:2] == EVERY_EVENT[:2] and types[-1] == "job.completed"
            assert len(hook.events) == len(hook.received)
    finally:
        loop.stop()
