"""End to end on the embedded topology: in-process broker and worker threads, SQLite, a local object
store and Qdrant local mode, driven through the gateway as a client would. The first test embeds with the
offline model, as `make run` does; the others, about the pipeline's behaviour, with the fake."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from ingest_worker.resources import Resources
from shared.models import JobEvent, JobStage
from shared.queue import Publisher
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.inprocess import in_process_service
from tests.support.pdfs import text_pdf

pytestmark = pytest.mark.slow

PAGES = [
    "Solar panels convert sunlight into electricity using photovoltaic cells. " * 25,
    "The quarterly revenue grew by twelve percent, driven by strong subscription sales. " * 25,
    "Tidal forces from the moon raise ocean bulges that sweep around the planet twice a day. " * 25,
]
TERMINAL = {"completed", "failed", "dead_lettered", "cancelled"}


@pytest.fixture
def service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    """The embedded process's parts, as deploy/embedded.py wires them, with one worker thread."""
    with in_process_service(settings) as service:
        yield service.app, service.resources


@pytest.fixture
def real_service(settings: Settings) -> Iterator[tuple[Flask, Resources]]:
    """The same with the offline model, for the test whose search must understand a paraphrase."""
    with in_process_service(settings.replace(embedder="local")) as service:
        yield service.app, service.resources


def wait_final(client: Any, location: str, key: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(location, headers={"Authorization": f"Bearer {key}"}).get_json()
        if body["status"] in TERMINAL:
            return body  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"job did not finish within {timeout_s}s: {body}")


def new_key(resources: Resources, name: str = "acme") -> tuple[str, str]:
    with resources.db.transaction() as session:
        tenant, key = create_tenant(session, name)
        return tenant.id, key


def test_a_multi_page_pdf_is_ingested_into_qdrant(real_service: tuple[Flask, Resources]) -> None:
    app, resources = real_service
    client = app.test_client()
    tenant_id, key = new_key(resources)
    # When a client uploads a three-page text PDF
    response = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(text_pdf(PAGES)), "three.pdf")},
    )
    assert response.status_code == 202
    # Then the job reaches `completed` with its pages, chunks and points counted
    job = wait_final(client, response.headers["Location"], key)
    assert job["status"] == "completed", job
    assert job["progress"] == 100 and job["error"] is None
    counters = job["counters"]
    assert counters["pages"] == 3 and counters["chunks"] >= 3 and counters["points"] == counters["chunks"]
    # And its events went queued → started → ... → completed with a growing seq
    with resources.db.transaction() as session:
        events = session.execute(
            select(JobEvent.seq, JobEvent.type).where(JobEvent.job_id == job["job_id"]).order_by(JobEvent.id)
        ).all()
    types = [t for _, t in events]
    assert types[0] == "job.queued" and types[1] == "job.started" and types[-1] == "job.completed"
    assert types.count("job.stage_completed") == 7
    seqs = [s for s, _ in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # And the points are in Qdrant with the tenant payload and the right page numbers
    store = resources.vectors
    collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
    records = list(store.records(collection))
    assert len(records) == counters["points"]
    for record in records:
        payload = record.payload
        assert payload["tenant_id"] == tenant_id and payload["job_id"] == job["job_id"]
        page = payload["page_start"]
        assert PAGES[page - 1].split()[0] in payload["text"]
    # And a search finds the page about the moon first
    hits = client.get(
        "/v1/search?q=why are there two tides a day", headers={"Authorization": f"Bearer {key}"}
    )
    assert hits.status_code == 200
    assert hits.get_json()["results"][0]["page_start"] == 3
    # And another tenant's search never sees these chunks, even naming the document
    _, other = new_key(resources, "other")
    for query in ("q=why are there two tides a day", f"q=tides&document_id={job['document_id']}"):
        theirs = client.get(f"/v1/search?{query}", headers={"Authorization": f"Bearer {other}"})
        assert theirs.status_code == 200 and theirs.get_json()["results"] == []


def test_a_message_delivered_twice_does_not_redo_stages_or_duplicate_points(
    service: tuple[Flask, Resources],
) -> None:
    app, resources = service
    broker = app.extensions["ingest"].relay.publisher.broker
    client = app.test_client()
    _, key = new_key(resources)
    response = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(text_pdf(PAGES[:2])), "two.pdf")},
    )
    job_id = response.get_json()["job_id"]
    # When the whole pipeline is published a second time (a relay that died before marking its row)
    Publisher(broker).publish(job_id, "validate")
    job = wait_final(client, response.headers["Location"], key)
    broker.join("ingest")
    broker.join("index")
    # Then every stage ran exactly once and each chunk has exactly one point
    assert job["status"] == "completed"
    with resources.db.transaction() as session:
        attempts = dict(
            session.execute(select(JobStage.stage, JobStage.attempts).where(JobStage.job_id == job_id)).all()
        )
    assert attempts == dict.fromkeys(attempts, 1) and len(attempts) == 7
    store = resources.vectors
    collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
    assert len(list(store.records(collection))) == job["counters"]["chunks"]


def test_a_non_pdf_in_disguise_fails_with_a_code_and_the_worker_carries_on(
    service: tuple[Flask, Resources],
) -> None:
    app, resources = service
    client = app.test_client()
    _, key = new_key(resources)
    bad = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(b"%PDF-1.7\nthis is not really a pdf\n"), "fake.pdf")},
    )
    good = client.post(
        "/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        data={"file": (io.BytesIO(text_pdf(PAGES[:1])), "good.pdf")},
    )
    failed = wait_final(client, bad.headers["Location"], key)
    assert failed["status"] == "failed" and failed["error"]["code"] == "invalid_pdf"
    assert failed["stage"] == "validate" and failed["attempts"] == 1
    assert wait_final(client, good.headers["Location"], key)["status"] == "completed"


def test_deleting_a_document_removes_its_points_and_its_bytes(service: tuple[Flask, Resources]) -> None:
    app, resources = service
    client = app.test_client()
    tenant_id, key = new_key(resources)
    headers = {"Authorization": f"Bearer {key}"}
    up = client.post(
        "/v1/documents", headers=headers, data={"file": (io.BytesIO(text_pdf(PAGES[:1])), "a.pdf")}
    )
    assert wait_final(client, up.headers["Location"], key)["status"] == "completed"
    document_id = up.get_json()["document_id"]
    store = resources.vectors
    collection = store.collection(resources.embedder.model_name, resources.embedder.dimension)
    assert store.count(collection, tenant_id, document_id=document_id) > 0
    # When the client deletes the document
    deleted = client.delete(f"/v1/documents/{document_id}", headers=headers)
    assert deleted.status_code == 202
    # Then the delete job completes, and neither points nor the stored PDF remain
    assert wait_final(client, deleted.headers["Location"], key)["status"] == "completed"
    assert store.count(collection, tenant_id, document_id=document_id) == 0
    assert not resources.storage.exists(f"documents/{tenant_id}/{document_id}.pdf")
    assert client.get("/v1/search?q=solar panels", headers=headers).get_json()["results"] == []


def test_hostile_files_fail_with_their_codes_and_the_worker_carries_on(
    service: tuple[Flask, Resources],
) -> None:
    from tests.ingest_worker.stages.test_hostile import HOSTILE

    app, resources = service
    client = app.test_client()
    _, key = new_key(resources)
    headers = {"Authorization": f"Bearer {key}"}
    # Given every hostile file of the suite, uploaded as a client would, and then a good one
    locations = {}
    for name, make, code in HOSTILE:
        response = client.post("/v1/documents", headers=headers, data={"file": (io.BytesIO(make()), "x.pdf")})
        if response.status_code == 415:  # refused at the door (no %PDF- header at all)
            continue
        assert response.status_code == 202, (name, response.get_json())
        locations[name] = (response.headers["Location"], code)
    good = client.post(
        "/v1/documents", headers=headers, data={"file": (io.BytesIO(text_pdf(PAGES[:1])), "ok.pdf")}
    )
    # Then each hostile job fails with its own code, at once (no retries), and the good one completes
    for name, (location, code) in locations.items():
        job = wait_final(client, location, key)
        assert (job["status"], job["error"]["code"]) == ("failed", code), name
        assert job["attempts"] == 1
    assert wait_final(client, good.headers["Location"], key)["status"] == "completed"
