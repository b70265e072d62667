"""A PostgreSQL restart under a running gateway costs a client at most a 503 with Retry-After, never
a 500: while the server is down every request answers 503, and once it is back its normal answer."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from gateway.app import create_app
from shared.db import migrate
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.chaos.servers import PrivatePostgres
from tests.conftest import MODEL_CACHE_DIR, admin_key, auth, tenant_key
from tests.shared.embedders.fakes import FAKE_EMBEDDER
from tests.support.pdfs import text_pdf


@pytest.fixture
def postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of this test's own: the test stops and restarts it. In a folder of its own
    outside pytest's, which the `postgres` user could not enter."""
    with tempfile.TemporaryDirectory(prefix="ingest-pg-") as folder:
        server = PrivatePostgres(Path(folder))
        server.init()
        try:
            migrate(server.url)
            yield server
        finally:
            server.stop()


@pytest.fixture
def gateway(postgres: PrivatePostgres, tmp_path: Path) -> Flask:
    settings = Settings(
        data_dir=str(tmp_path / "data"),
        database_url=postgres.url,
        model_cache_dir=MODEL_CACHE_DIR,
        embedder=FAKE_EMBEDDER,
        max_upload_mb=1,
    )
    return create_app(settings, publisher=Publisher(make_broker(settings)))


class Visitor:
    """A tenant and an admin sending the requests of the test through the app's test client."""

    def __init__(self, app: Flask) -> None:
        self.client = app.test_client()
        self.tenant = auth(tenant_key(app, "restart"))
        self.admin = auth(admin_key(app))
        self.uploads = 0
        self.job_id = ""

    def upload(self) -> Any:
        self.uploads += 1
        pdf = text_pdf([f"upload {self.uploads} around a database restart"])
        return self.client.post(
            "/v1/documents", data={"file": (io.BytesIO(pdf), f"u{self.uploads}.pdf")}, headers=self.tenant
        )

    def everything(self) -> dict[str, Any]:
        """One of each kind of request: an upload, a job, the job list, the admin's tenant list."""
        answers = {"upload": self.upload()}
        if answers["upload"].status_code == 202:
            self.job_id = answers["upload"].get_json()["job_id"]
        answers["job"] = self.client.get(f"/v1/jobs/{self.job_id}", headers=self.tenant)
        answers["jobs"] = self.client.get("/v1/jobs", headers=self.tenant)
        answers["tenants"] = self.client.get("/v1/admin/tenants", headers=self.admin)
        return answers


NORMAL = {"upload": 202, "job": 200, "jobs": 200, "tenants": 200}


def statuses(answers: dict[str, Any]) -> dict[str, int]:
    return {name: answer.status_code for name, answer in answers.items()}


def test_requests_right_after_a_restart_get_their_normal_answer(
    gateway: Flask, postgres: PrivatePostgres
) -> None:
    # Given a gateway whose pooled connections were all used a moment ago
    visitor = Visitor(gateway)
    assert statuses(visitor.everything()) == NORMAL

    # When PostgreSQL restarts (a fast shutdown cuts every connection) and requests follow at once
    postgres.restart()
    answers = [visitor.everything() for _ in range(3)]

    # Then each gets its normal answer: the dead connections are found and replaced in the request
    assert [statuses(a) for a in answers] == [NORMAL] * 3


def test_requests_while_the_database_is_down_answer_503_with_retry_after(
    gateway: Flask, postgres: PrivatePostgres
) -> None:
    # Given a gateway that served requests a moment ago
    visitor = Visitor(gateway)
    assert statuses(visitor.everything()) == NORMAL

    # When PostgreSQL stops
    postgres.stop()
    try:
        down = visitor.everything()
    finally:
        postgres.start()

    # Then every request answers 503 database_unavailable with a Retry-After, none a 500
    assert statuses(down) == dict.fromkeys(NORMAL, 503)
    for answer in down.values():
        assert answer.get_json()["code"] == "database_unavailable"
        assert int(answer.headers["Retry-After"]) >= 1

    # And once it is back, each request gets its normal answer again
    assert statuses(visitor.everything()) == NORMAL
