"""The upload contract: 202 with a job id and Location at once; clear 4xx codes for bad requests."""

from __future__ import annotations

import io
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from gateway.app import create_app
from shared.db import Database
from shared.models import Document, Job, OutboxMessage
from shared.queue import QUEUE_INGEST, Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support.databases import migrate_database
from tests.support.pdfs import text_pdf

PDF = text_pdf(["Hello gateway."])


def upload(client: FlaskClient, key: str, data: bytes, **form: Any) -> Any:
    return client.post(
        "/v1/documents",
        headers=auth(key),
        data={"file": (io.BytesIO(data), "report.pdf"), **form},
        content_type="multipart/form-data",
    )


def test_upload_answers_202_with_job_and_location_and_queues_the_job(app: Flask, client: FlaskClient) -> None:
    # Given a tenant
    key = tenant_key(app, "acme")
    # When it uploads a PDF
    response = upload(client, key, PDF)
    # Then it gets 202, a job id, and where to watch it
    assert response.status_code == 202
    body = response.get_json()
    assert body["status"] == "queued" and body["job_id"]
    assert response.headers["Location"] == f"/v1/jobs/{body['job_id']}"
    # And the job, its document and its published outbox row are in the database
    db: Database = app.extensions["ingest"].db
    with db.transaction() as session:
        job = session.get(Job, body["job_id"])
        assert job is not None and job.status == "queued"
        document = session.get(Document, job.document_id)
        assert document is not None and document.size_bytes == len(PDF) and document.filename == "report.pdf"
        row = session.scalars(select(OutboxMessage).where(OutboxMessage.job_id == job.id)).one()
        assert row.published_at is not None
    # And the first stage's message, carrying only the job id, is on the broker
    broker = app.extensions["ingest"].relay.publisher.broker
    assert broker.queues[QUEUE_INGEST].qsize() == 1
    # And the job can be read back
    state = client.get(response.headers["Location"], headers=auth(key)).get_json()
    assert state["status"] == "queued" and state["counters"]["pages"] == 0


def test_the_same_bytes_again_are_a_duplicate_not_new_work(app: Flask, client: FlaskClient) -> None:
    key = tenant_key(app, "acme")
    first = upload(client, key, PDF).get_json()
    second = upload(client, key, PDF)
    assert second.status_code == 200
    assert second.get_json()["duplicate"] is True and second.get_json()["job_id"] == first["job_id"]
    with app.extensions["ingest"].db.transaction() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 1


def test_a_non_pdf_is_refused_with_its_code(app: Flask, client: FlaskClient) -> None:
    response = upload(client, tenant_key(app, "acme"), b"GIF89a not a pdf at all")
    assert response.status_code == 415
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "not_a_pdf"


def test_an_empty_file_and_a_missing_file_are_refused(app: Flask, client: FlaskClient) -> None:
    key = tenant_key(app, "acme")
    assert upload(client, key, b"").get_json()["code"] == "empty_file"
    response = client.post("/v1/documents", headers=auth(key), data={}, content_type="multipart/form-data")
    assert response.status_code == 400 and response.get_json()["code"] == "missing_file"


def test_a_bad_callback_url_is_refused(app: Flask, client: FlaskClient) -> None:
    response = upload(client, tenant_key(app, "acme"), PDF, callback_url="ftp://example.com/x")
    assert response.status_code == 400 and response.get_json()["code"] == "invalid_callback_url"


class GuardedStream(io.RawIOBase):
    """A request body that fails the test if the server reads more than `allowed` bytes of it."""

    def __init__(self, total: int, allowed: int) -> None:
        self.total = total
        self.allowed = allowed
        self.position = 0
        self.read_so_far = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        # The test client measures the body by seeking to its end and back; no byte is read.
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = self.total + offset if whence == 2 else offset
        return self.position

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.total - self.position)
        self.read_so_far += n
        assert self.read_so_far <= self.allowed, "the gateway read an oversized body"
        buffer[:n] = b"\0" * n
        self.position += n
        return n


def test_an_upload_over_the_limit_is_refused_without_reading_it(app: Flask, client: FlaskClient) -> None:
    # Given a 50 MB body announced by its Content-Length (the limit here is 1 MB)
    key = tenant_key(app, "acme")
    body = GuardedStream(total=50 * 1024 * 1024, allowed=0)
    # When it is posted
    response = client.post(
        "/v1/documents",
        headers=auth(key),
        input_stream=body,
        content_type="multipart/form-data; boundary=x",
    )
    # Then it is refused with 413 before a byte of it is read
    assert response.status_code == 413 and response.get_json()["code"] == "upload_too_large"
    assert body.read_so_far == 0


def test_a_file_over_the_tenant_limit_in_a_chunked_body_is_refused(app: Flask, client: FlaskClient) -> None:
    # Given a file just over the 1 MB limit, sent without a Content-Length
    data = b"%PDF-1.7\n" + b"0" * (1024 * 1024 + 100 * 1024)
    response = upload(client, tenant_key(app, "acme"), data)
    assert response.status_code == 413 and response.get_json()["code"] == "upload_too_large"


def test_no_key_or_a_wrong_key_gets_401(client: FlaskClient) -> None:
    assert client.post("/v1/documents").status_code == 401
    response = client.get("/v1/jobs/x", headers=auth("ik_nope"))
    assert response.status_code == 401 and response.get_json()["code"] == "unauthorized"
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_another_tenants_job_is_404(app: Flask, client: FlaskClient) -> None:
    # Given a job of tenant A
    key_a, key_b = tenant_key(app, "a"), tenant_key(app, "b")
    location = upload(client, key_a, PDF).headers["Location"]
    # When tenant B asks for it (a guessed or leaked id), then it does not exist for B
    response = client.get(location, headers=auth(key_b))
    assert response.status_code == 404 and response.get_json()["code"] == "not_found"
    assert client.get(location, headers=auth(key_a)).status_code == 200


def test_search_without_a_qdrant_server_in_the_split_topology_says_so(
    client: FlaskClient, app: Flask
) -> None:
    response = client.get("/v1/search?q=hello", headers=auth(tenant_key(app, "acme")))
    assert response.status_code == 503 and response.get_json()["code"] == "search_requires_qdrant_server"


def test_health_and_readiness(client: FlaskClient) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.get_json()["checks"]["database"] == "ok"


class CommitCheckingPublisher(Publisher):
    """A real publisher that first looks, from another connection, for the job it is publishing."""

    def __init__(self, broker: Any, db: Database) -> None:
        super().__init__(broker)
        self.db = db
        self.seen: list[str | None] = []

    def publish(
        self, job_id: str, from_stage: str, tenant_id: str | None = None, lane: str = "interactive"
    ) -> None:
        with self.db.transaction() as session:
            job = session.get(Job, job_id)
            self.seen.append(job.status if job is not None else None)
        super().publish(job_id, from_stage, tenant_id, lane)


def test_the_job_is_committed_before_its_message_can_be_consumed(settings: Settings) -> None:
    # Given a gateway whose publisher checks the database from a separate connection
    migrate_database(settings.effective_database_url)
    db = Database.from_settings(settings)
    publisher = CommitCheckingPublisher(make_broker(settings), db)
    app = create_app(settings, publisher=publisher, db=db)
    # When a PDF is uploaded
    response = upload(app.test_client(), tenant_key(app, "acme"), PDF)
    # Then at the moment of publishing, the job was already committed and visible to others
    assert response.status_code == 202
    assert publisher.seen == ["queued"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code"),
    [
        (
            b'--x\r\nContent-Disposition: form-data; name="file"\r\n\r\n%PDF',
            "multipart/form-data; boundary=x",
            400,
            "missing_file",
        ),
        (b"garbage without any boundary", "multipart/form-data", 400, "missing_file"),
        (b'{"file": "%PDF-1.7"}', "application/json", 415, "unsupported_media_type"),
        (b"%PDF-1.7 raw body", "application/pdf", 415, "unsupported_media_type"),
    ],
)
def test_malformed_or_wrongly_typed_bodies_get_a_4xx_with_a_code(
    app: Flask, client: FlaskClient, body: bytes, content_type: str, status: int, code: str
) -> None:
    response = client.post(
        "/v1/documents", headers=auth(tenant_key(app, "acme")), data=body, content_type=content_type
    )
    assert response.status_code == status and response.get_json()["code"] == code
    assert response.mimetype == "application/problem+json"
