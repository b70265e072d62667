"""The embedded gateway's waitress server as `make run` configures it: event streams take at most
their share of its threads, and connections that never finish a request cost no thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from flask import Flask

from deploy.embedded import SERVER_OPTIONS
from deploy.waitress_server import make_server
from gateway.api.events import limit_streams_per_process
from gateway.app import create_app
from shared.db import Database
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from tests.conftest import auth, tenant_key
from tests.support.pdfs import text_pdf
from tests.support.starvation import close_all, half_open, latency, open_streams

THREADS = 6
SLOTS = 3


@pytest.fixture
def served(settings: Settings, sqlite_db: Database) -> Iterator[tuple[Flask, int]]:
    """A gateway on a waitress server with the embedded options: 6 threads, 3 of them for streams."""
    settings = settings.replace(events_max_streams_per_tenant=50, events_poll_s=0.1)
    app = create_app(settings, publisher=Publisher(make_broker(settings)), db=sqlite_db)
    limit_streams_per_process(app, SLOTS)
    server = make_server(app, host="127.0.0.1", port=0, threads=THREADS, **SERVER_OPTIONS)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield app, server.effective_port
    server.close()
    thread.join(5)


def _job(app: Flask, port: int, key: str) -> str:
    files = {"file": ("a.pdf", text_pdf(["Streamed."]), "application/pdf")}
    response = requests.post(f"http://127.0.0.1:{port}/v1/documents", headers=auth(key), files=files)
    assert response.status_code == 202, response.text
    return response.json()["job_id"]  # type: ignore[no-any-return]


def test_streams_beyond_the_servers_share_of_threads_are_told_to_come_back(served: Any) -> None:
    # Given a server whose streams may hold 3 of its 6 threads, all held: two by one tenant (its
    # share) and the last by another
    app, port = served
    noisy, busy, quiet = tenant_key(app, "noisy"), tenant_key(app, "busy"), tenant_key(app, "quiet")
    job_id, busy_job, quiet_job = _job(app, port, noisy), _job(app, port, busy), _job(app, port, quiet)
    held = open_streams(port, noisy, job_id, SLOTS - 1) + open_streams(port, busy, busy_job, 1)
    try:
        # When the first opens one more, while 40 connections sit on half a request line
        extra = requests.get(f"http://127.0.0.1:{port}/v1/jobs/{job_id}/events", headers=auth(noisy))
        held += half_open(port, 40)
        # Then the extra stream is a 503 with Retry-After
        assert extra.status_code == 503
        assert extra.json()["code"] == "event_streams_busy"
        assert int(extra.headers["Retry-After"]) > 0
        # As is a stream of a tenant holding none, the server's streams being all taken
        late = requests.get(f"http://127.0.0.1:{port}/v1/jobs/{quiet_job}/events", headers=auth(quiet))
        assert late.status_code == 503

        # And another tenant's requests and health checks are still answered, promptly
        jobs = latency(f"http://127.0.0.1:{port}/v1/jobs", auth(quiet), 30)
        health = latency(f"http://127.0.0.1:{port}/healthz", {}, 10)
    finally:
        close_all(held)
    assert jobs.failures == 0 and health.failures == 0
    assert jobs.p99_ms < 1000, jobs
    assert health.max_ms < 1000, health
