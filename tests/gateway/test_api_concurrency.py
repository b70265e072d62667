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
from shared.models import Document, Job, Tenant
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf

pytestmark = pytest.mark.postgres

REQUESTS = 50


def post_at_once(app: Any, count: int, headers: dict[str, str], body: bytes) -> list[Any]:
    """`count` clients posting the same upload at the same moment."""
    start = threading.Barrier(count)

    def post(_: int) -> Any:
        client = app.test_client()
        start.wait()
        return client.post("/v1/documents", headers=headers, data={"file": (io.BytesIO(body), "one.pdf")})

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(post, range(count)))


def gateway_on(settings: Settings, pg_server_url: str) -> Any:
    settings = settings.replace(database_url=pg_server_url)
    return create_app(settings, publisher=Publisher(make_broker(settings)))


def counts(db: Database) -> tuple[int, int]:
    with db.transaction() as session:
        jobs = session.scalar(select(func.count()).select_from(Job))
        documents = session.scalar(select(func.count()).select_from(Document))
        return int(jobs or 0), int(documents or 0)


def test_fifty_concurrent_posts_with_one_idempotency_key_create_one_job(
    settings: Settings, pg_server_url: str, pg_db: Database
) -> None:
    # Given a gateway on PostgreSQL
    app = gateway_on(settings, pg_server_url)
    headers = {**auth(tenant_key(app, "acme")), "Idempotency-Key": "same-key"}
    # When fifty clients send the same request at the same moment
    responses = post_at_once(app, REQUESTS, headers, text_pdf(["One and only one."]))
    # Then every one gets the same answer, and exactly one document and one job exist
    assert {r.status_code for r in responses} == {202}
    assert len({r.get_json()["job_id"] for r in responses}) == 1
    assert counts(pg_db) == (1, 1)


def test_concurrent_uploads_of_the_same_bytes_without_a_key_make_one_document(
    settings: Settings, pg_server_url: str, pg_db: Database
) -> None:
    app = gateway_on(settings, pg_server_url)
    responses = post_at_once(app, 10, auth(tenant_key(app, "acme")), text_pdf(["Same bytes."]))
    assert sorted(r.status_code for r in responses) == [200] * 9 + [202]
    assert counts(pg_db) == (1, 1)


def test_concurrent_uploads_beyond_the_quota_are_refused_and_the_counter_holds(
    settings: Settings, pg_server_url: str, pg_db: Database
) -> None:
    # Given a gateway on PostgreSQL whose tenants may have three active jobs
    app = gateway_on(settings.replace(max_active_jobs=3), pg_server_url)
    headers = auth(tenant_key(app, "acme"))
    start = threading.Barrier(12)

    def post(n: int) -> Any:
        client = app.test_client()
        start.wait()
        body = text_pdf([f"Distinct upload number {n}."])
        return client.post("/v1/documents", headers=headers, data={"file": (io.BytesIO(body), "a.pdf")})

    # When twelve distinct uploads arrive at the same moment
    with ThreadPoolExecutor(12) as pool:
        responses = list(pool.map(post, range(12)))

    # Then exactly three are accepted, the others refused, and the counter says three
    assert sorted(r.status_code for r in responses) == [202] * 3 + [429] * 9
    assert counts(pg_db) == (3, 3)
    with pg_db.transaction() as session:
        assert session.scalar(select(Tenant.active_jobs)) == 3
