"""Concurrent duplicates on PostgreSQL: one Idempotency-Key, fifty simultaneous requests, one job."""

from __future__ import annotations

import io
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import func, select

from gateway.app import create_app
from shared.db import Database
from shared.models import Document, Job
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.pdfs import text_pdf

pytestmark = pytest.mark.postgres

REQUESTS = 50


def test_fifty_concurrent_posts_with_one_idempotency_key_create_one_job(
    settings: Settings, pg_server_url: str, pg_db: Database
) -> None:
    # Given a gateway on PostgreSQL
    settings = settings.replace(database_url=pg_server_url)
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")
    body = text_pdf(["One and only one."])
    start = threading.Barrier(REQUESTS)

    def post(_: int) -> Any:
        client = app.test_client()
        start.wait()
        return client.post(
            "/v1/documents",
            headers={**auth(key), "Idempotency-Key": "same-key"},
            data={"file": (io.BytesIO(body), "one.pdf")},
        )

    # When fifty clients send the same request at the same moment
    with ThreadPoolExecutor(REQUESTS) as pool:
        responses = list(pool.map(post, range(REQUESTS)))
    # Then every one gets the same answer, and exactly one document and one job exist
    assert {r.status_code for r in responses} == {202}
    assert len({r.get_json()["job_id"] for r in responses}) == 1
    with pg_db.transaction() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 1
        assert session.scalar(select(func.count()).select_from(Document)) == 1


def test_concurrent_uploads_of_the_same_bytes_without_a_key_make_one_document(
    settings: Settings, pg_server_url: str, pg_db: Database
) -> None:
    settings = settings.replace(database_url=pg_server_url)
    app = create_app(settings, publisher=Publisher(make_broker(settings)))
    key = tenant_key(app, "acme")
    body = text_pdf(["Same bytes."])
    start = threading.Barrier(10)

    def post(_: int) -> Any:
        client = app.test_client()
        start.wait()
        return client.post("/v1/documents", headers=auth(key), data={"file": (io.BytesIO(body), "x.pdf")})

    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(post, range(10)))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [202]
    with pg_db.transaction() as session:
        assert session.scalar(select(func.count()).select_from(Document)) == 1
        assert session.scalar(select(func.count()).select_from(Job)) == 1
