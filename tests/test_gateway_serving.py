"""The production gateway (gunicorn with deploy/gunicorn.conf.py) as a real server process: limits
answered before the body is read, and no client or tenant can starve the others."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import update

from shared.db import Database
from shared.models import Tenant
from shared.tenants import create_tenant
from tests.body_probe import probe
from tests.pdfs import text_pdf
from tests.starvation import close_all, half_open, latency, open_streams
from tests.test_outbox import closed_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

MB = 1024 * 1024
# Loopback socket buffers take a few MB whether the server reads or not; a server that read the
# body would take all of it.
SOCKET_BUFFERS = 8 * MB


@pytest.fixture
def gateway(pg_db: Database, tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """`make gateway`'s gunicorn on PostgreSQL: a 1 MB service upload limit, 20 streams a tenant."""
    port = closed_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "INGEST_DATABASE_URL": pg_db.engine.url.render_as_string(hide_password=False),
        "INGEST_DATA_DIR": str(tmp_path / "data"),
        "INGEST_EMBEDDER": "fake",
        "INGEST_PORT": str(port),
        "INGEST_MAX_UPLOAD_MB": "1",
        "INGEST_EVENTS_MAX_STREAMS_PER_TENANT": "20",
        # Open streams would hold a graceful stop for its whole timeout.
        "INGEST_GATEWAY_GRACEFUL_TIMEOUT_S": "1",
    }
    command = [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "gateway.wsgi:app"]
    log = (tmp_path / "gunicorn.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        yield base, pg_db
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _tenant(db: Database, name: str, **limits: Any) -> str:
    with db.transaction() as session:
        key = create_tenant(session, name)[1]
        if limits:
            session.execute(update(Tenant).where(Tenant.name == name).values(**limits))
    return key


def _upload(base: str, key: str, data: bytes) -> requests.Response:
    files = {"file": ("a.pdf", data, "application/pdf")}
    return requests.post(f"{base}/v1/documents", headers={"Authorization": f"Bearer {key}"}, files=files)


@pytest.mark.parametrize("expect_continue", [False, True])
def test_an_oversized_or_keyless_body_is_answered_before_it_is_read(
    gateway: tuple[str, Database], expect_continue: bool
) -> None:
    # Given a tenant allowed 3 MB
    base, db = gateway
    port = int(base.rsplit(":", 1)[1])
    key = _tenant(db, "acme", max_upload_mb=3)

    # When it, and a client without a key, announce 300 MB bodies
    keyed = probe(port, 300 * MB, {"Authorization": f"Bearer {key}"}, expect_continue=expect_continue)
    keyless = probe(port, 300 * MB, {}, expect_continue=expect_continue)

    # Then each gets its answer, not a reset, with no more taken than the socket buffers hold
    assert (keyed.status, keyed.reset) == (413, False)
    assert (keyless.status, keyless.reset) == (401, False)
    assert keyed.sent_bytes < SOCKET_BUFFERS and keyless.sent_bytes < SOCKET_BUFFERS


def test_a_tenant_limit_above_the_service_default_takes_a_file_of_that_size(
    gateway: tuple[str, Database],
) -> None:
    # Given a service default of 1 MB and a tenant allowed 3 MB
    base, db = gateway
    key = _tenant(db, "big", max_upload_mb=3)

    # When it uploads a 2 MB PDF
    response = _upload(base, key, text_pdf(["A large one."]) + b"\n" * (2 * MB))

    # Then it is accepted
    assert response.status_code == 202, response.text


def test_open_streams_and_half_sent_requests_do_not_starve_another_tenant(
    gateway: tuple[str, Database],
) -> None:
    # Given one tenant holding 20 event streams and 60 connections that sent half a request line
    base, db = gateway
    port = int(base.rsplit(":", 1)[1])
    noisy, quiet = _tenant(db, "noisy"), _tenant(db, "quiet")
    job_id = _upload(base, noisy, text_pdf(["Streamed."])).json()["job_id"]
    assert _upload(base, quiet, text_pdf(["Listed."])).status_code == 202
    held = open_streams(port, noisy, job_id, 20) + half_open(port, 60)
    try:
        # When another tenant lists its jobs, and the load balancer checks health
        jobs = latency(f"{base}/v1/jobs", {"Authorization": f"Bearer {quiet}"}, 50)
        health = latency(f"{base}/healthz", {}, 10)
    finally:
        close_all(held)

    # Then both answer every time, promptly (a loose bound for a shared machine)
    assert jobs.failures == 0 and health.failures == 0
    assert jobs.p99_ms < 1000, jobs
    assert health.max_ms < 1000, health
